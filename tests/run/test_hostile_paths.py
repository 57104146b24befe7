"""Hostile file names in models and arguments: NULs, surrogates, over-long names, special files,
folders and links. Each is refused with exit 2 and one line naming the JSON path (or -o), in well
under a second, with nothing created, replaced or left behind; written files keep their mode."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import stat
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from dml2onnx.core import files
from dml2onnx.core.jsonvalues import load_jsonc
from support import run_cli, write_model

ROOT = Path(__file__).resolve().parents[2]
SOURCE = "resources.input.initialValues.sourcePath"
TARGET = "commands[7].targetPath"
IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0
needs_root = pytest.mark.skipif(not IS_ROOT, reason="making device nodes (mknod) needs root")


def model_with(source: str | None = None, target: str | None = None) -> dict[str, Any]:
    """models/argmax.json with its input read from `source` and/or a writeFile to `target`
    (command 7)."""
    model = load_jsonc((ROOT / "models" / "argmax.json").read_text())
    if source is not None:
        model["resources"]["input"] = {"initialValuesDataType": "FLOAT32", "initialValues": {"sourcePath": source}}
    if target is not None:
        model["commands"].append({"type": "writeFile", "resource": "all", "targetPath": target})
    return model


@contextlib.contextmanager
def deadline(seconds: int) -> Iterator[None]:
    """Fails instead of hanging: a blocked open() or read() is interrupted by the alarm."""

    def expired(*_: Any) -> None:
        raise TimeoutError(f"still running after {seconds} s: a hang")

    old = signal.signal(signal.SIGALRM, expired)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def listing(folder: Path) -> dict[str, tuple[int, int]]:
    """Every entry under `folder`: (file type and mode, size), links not followed."""
    out = {}
    for path in sorted(folder.rglob("*")):
        st = path.lstat()
        out[str(path.relative_to(folder))] = (st.st_mode, st.st_size if stat.S_ISREG(st.st_mode) else 0)
    return out


def refused(folder: Path, model: dict[str, Any], json_path: str, rule: str, *extra: str) -> None:
    """Runs the model from `folder` (the current folder too) and checks the refusal."""
    path = write_model(folder, model, "hostile.json")
    before = listing(folder)
    started = time.monotonic()
    with deadline(10):
        status, out, err = run_cli("run", path, "-q", *extra)
    elapsed = time.monotonic() - started
    assert status == 2 and out == "", err
    assert err.startswith(f"dml2onnx: error: {json_path}: ") and rule in err and err.count("\n") == 1, err
    assert elapsed < 1.0, f"{elapsed:.2f} s"
    assert listing(folder) == before


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


def make_fifo(path: Path) -> None:
    os.mkfifo(path)


def make_socket(path: Path) -> None:
    s = socket.socket(socket.AF_UNIX)
    s.bind(str(path))
    s.close()


def make_null_device(path: Path) -> None:
    os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, 3))  # what /dev/null is


def make_full_device(path: Path) -> None:
    os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, 7))  # what /dev/full is


# --- names no file can have -------------------------------------------------------------------

BAD_NAMES = [
    ("a\0b.npy", "contains a NUL character"),
    ("x\ud800.npy", "unpaired surrogate (U+D800)"),
    ("x\udcff.npy", "unpaired surrogate (U+DCFF)"),
    ("a" * 10_000 + ".npy", "10004 bytes long; a path may have at most 4095"),
    ("d/" * 2100 + "x.npy", "a path may have at most 4095"),
    ("a" * 300 + ".npy", "a component of 304 bytes; a file name may have at most 255"),
    ("\u00e9" * 200 + ".npy", "a component of 404 bytes"),  # 200 characters, but 400 bytes in UTF-8
]


@pytest.mark.parametrize(("name", "rule"), BAD_NAMES, ids=[r for _, r in BAD_NAMES])
def test_impossible_names_are_refused_as_sources(name: str, rule: str, here: Path) -> None:
    refused(here, model_with(source=name), SOURCE, rule)


@pytest.mark.parametrize(("name", "rule"), BAD_NAMES, ids=[r for _, r in BAD_NAMES])
@pytest.mark.parametrize("allow", [False, True])
def test_impossible_names_are_refused_as_targets(name: str, rule: str, allow: bool, here: Path) -> None:
    refused(here, model_with(target=name), TARGET, rule, *(["--allow-any-path"] if allow else []))


def test_names_in_messages_stay_one_short_line() -> None:
    assert files.shown("a\nb\0c\ud800") == "'a\\nb\\x00c\\ud800'"
    long = files.shown("/very/long/" + "x" * 500 + "/the-file.npy")
    assert long.endswith("/the-file.npy' (524 characters)") and len(long) < 100


# --- special files named as initializers --------------------------------------------------------

SPECIAL_SOURCES: list[tuple[str, Callable[[Path], None], str, bool]] = [
    ("fifo", make_fifo, "is a FIFO, not a regular file", False),
    ("sock", make_socket, "is a socket, not a regular file", False),
    ("dir", Path.mkdir, "is a directory, not a regular file", False),
    ("null", make_null_device, "is a character device, not a regular file", True),
]


@pytest.mark.parametrize(("name", "make", "rule", "root"), SPECIAL_SOURCES, ids=[s[0] for s in SPECIAL_SOURCES])
@pytest.mark.parametrize("through_link", [False, True])
def test_special_files_are_not_read(
    name: str, make: Callable[[Path], None], rule: str, root: bool, through_link: bool, here: Path
) -> None:
    if root and not IS_ROOT:
        pytest.skip("mknod needs root")
    make(here / name)
    source = name
    if through_link:
        (here / "link").symlink_to(name)
        source = "link"
    refused(here, model_with(source=source), SOURCE, f"'{source}' {rule}")


@pytest.mark.parametrize(
    ("device", "rule"), [("/dev/zero", "is a character device"), ("/dev/null", "is a character device"), ("/", "is a directory")]
)
def test_system_devices_are_not_read(device: str, rule: str, here: Path) -> None:
    refused(here, model_with(source=device), SOURCE, rule)


def test_links_that_lead_nowhere(here: Path) -> None:
    (here / "loop").symlink_to("loop")
    refused(here, model_with(source="loop"), SOURCE, "too many levels of symbolic links")
    (here / "dangling").symlink_to("nowhere.npy")
    refused(here, model_with(source="dangling"), SOURCE, "No such file or directory")


def test_a_fifo_with_a_writer_is_refused_without_reading(here: Path) -> None:
    """Even with data waiting in it, a FIFO is refused (before, the read never ended)."""
    make_fifo(here / "fifo")
    writer = os.open(here / "fifo", os.O_RDWR | os.O_NONBLOCK)  # O_RDWR: open without a reader
    try:
        os.write(writer, np.arange(4, dtype=np.float32).tobytes())
        refused(here, model_with(source="fifo"), SOURCE, "is a FIFO")
    finally:
        os.close(writer)


def test_a_regular_file_through_a_link_is_read(here: Path) -> None:
    np.save(here / "data.npy", np.array([4, 0, 1, 3, 9, 2, 5, 6, 7], dtype=np.float32))
    (here / "link.npy").symlink_to("data.npy")
    status, out, err = run_cli("run", write_model(here, model_with(source="link.npy")), "-q")
    assert status == 0, err
    assert "Resource 'all': 4" in out  # where the 9 is


def test_procfs_files_that_would_block_are_refused(here: Path) -> None:
    """/proc/kmsg is a 'regular' file whose read waits for kernel messages (root only)."""
    if not IS_ROOT or not os.path.exists("/proc/kmsg"):
        pytest.skip("needs root and /proc/kmsg")
    try:
        os.close(os.open("/proc/kmsg", os.O_RDONLY | os.O_NONBLOCK))
    except OSError as e:
        pytest.skip(f"/proc/kmsg cannot be opened here: {e.strerror}")
    path = write_model(here, model_with(source="/proc/kmsg"), "hostile.json")
    with deadline(10):
        status, _, err = run_cli("run", path, "-q")
    # Whether or not kernel messages are waiting, the read ends on one that would wait.
    assert status == 2 and err == f"dml2onnx: error: {SOURCE}: '/proc/kmsg' cannot be read without waiting\n", err


def test_npy_headers_past_numpys_limit_are_refused(here: Path) -> None:
    header = b"{'descr': '<f4', 'fortran_order': False, 'shape': (1,)}" + b" " * 20_000 + b"\n"
    (here / "big.npy").write_bytes(b"\x93NUMPY\x02\x00" + len(header).to_bytes(4, "little") + header + bytes(4))
    refused(here, model_with(source="big.npy"), SOURCE, "a header of 20056 bytes (numpy reads at most 10000)")


# --- special files named as writeFile targets ----------------------------------------------------

SPECIAL_TARGETS: list[tuple[str, Callable[[Path], None], str, bool]] = [
    ("fifo", make_fifo, "is a FIFO; only regular files are replaced", False),
    ("sock", make_socket, "is a socket; only regular files are replaced", False),
    ("dir", Path.mkdir, "is a directory; only regular files are replaced", False),
    ("full", make_full_device, "is a character device; only regular files are replaced", True),
    ("null", make_null_device, "is a character device; only regular files are replaced", True),
]


@pytest.mark.parametrize(("name", "make", "rule", "root"), SPECIAL_TARGETS, ids=[s[0] for s in SPECIAL_TARGETS])
@pytest.mark.parametrize("through_link", [False, True])
@pytest.mark.parametrize("allow", [False, True])
def test_special_files_are_never_replaced(
    name: str, make: Callable[[Path], None], rule: str, root: bool, through_link: bool, allow: bool, here: Path
) -> None:
    """As root, renaming over a device node used to turn it into a regular file. These device
    nodes are copies of /dev/full and /dev/null made in the test's folder."""
    if root and not IS_ROOT:
        pytest.skip("mknod needs root")
    make(here / name)
    kind_before = stat.S_IFMT((here / name).lstat().st_mode)
    target = name
    if through_link:
        (here / "link").symlink_to(name)
        target = "link"
    refused(here, model_with(target=target), TARGET, rule, *(["--allow-any-path"] if allow else []))
    assert stat.S_IFMT((here / name).lstat().st_mode) == kind_before


def test_a_file_where_a_folder_must_be(here: Path) -> None:
    (here / "file").write_bytes(b"x")
    refused(here, model_with(target="file/sub/out.npy"), TARGET, "is a regular file, not a folder")
    _, _, err = run_cli("run", write_model(here, model_with(target="file/sub/out.npy")), "-q")
    assert "/file'" in err and "sub" not in err  # names the file in the way, not the target


def test_a_link_target_is_written_through_and_stays_a_link(here: Path) -> None:
    (here / "real.bin").write_bytes(b"old")
    os.chmod(here / "real.bin", 0o640)
    (here / "link.bin").symlink_to("real.bin")
    status, _, err = run_cli("run", write_model(here, model_with(target="link.bin")))
    assert status == 0, err
    assert (here / "link.bin").is_symlink() and os.readlink(here / "link.bin") == "real.bin"
    assert np.frombuffer((here / "real.bin").read_bytes(), np.uint32).tolist() == [7]
    assert stat.S_IMODE((here / "real.bin").stat().st_mode) == 0o640
    assert f"written to '{here / 'real.bin'}'" in err


@pytest.mark.parametrize("mode", [0o644, 0o600, 0o640, 0o444, 0o755])
def test_an_overwritten_file_keeps_its_mode(mode: int, here: Path) -> None:
    (here / "out.npy").write_bytes(b"old")
    os.chmod(here / "out.npy", mode)
    assert run_cli("run", write_model(here, model_with(target="out.npy")), "-q")[0] == 0
    assert stat.S_IMODE((here / "out.npy").stat().st_mode) == mode
    assert np.load(here / "out.npy").tolist() == [7]


@pytest.mark.parametrize("umask", [0o022, 0o077, 0o002])
def test_a_new_file_gets_what_the_umask_gives(umask: int, here: Path) -> None:
    old = os.umask(umask)
    try:
        assert run_cli("run", write_model(here, model_with(target="sub/out.npy")), "-q")[0] == 0
        assert run_cli("export", str(ROOT / "models" / "argmax.json"), "-o", "onnx")[0] == 0
    finally:
        os.umask(old)
    assert stat.S_IMODE((here / "sub" / "out.npy").stat().st_mode) == 0o666 & ~umask
    assert stat.S_IMODE((here / "onnx" / "argmax_all.onnx").stat().st_mode) == 0o666 & ~umask


@pytest.mark.skipif(not IS_ROOT, reason="changing a file's owner needs root")
def test_root_keeps_an_overwritten_files_owner(here: Path) -> None:
    (here / "out.bin").write_bytes(b"old")
    os.chown(here / "out.bin", 1234, 5678)
    assert run_cli("run", write_model(here, model_with(target="out.bin")), "-q")[0] == 0
    st = (here / "out.bin").stat()
    assert (st.st_uid, st.st_gid) == (1234, 5678)


def test_a_device_put_there_during_the_write_is_not_replaced(here: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The target is checked again right before the rename."""
    real_mkstemp = files.tempfile.mkstemp

    def mkstemp_then_fifo(*args: Any, **kwargs: Any) -> tuple[int, str]:
        made = real_mkstemp(*args, **kwargs)
        make_fifo(here / "out.bin")
        return made

    monkeypatch.setattr(files.tempfile, "mkstemp", mkstemp_then_fifo)
    with pytest.raises(files.PathRefused, match="is a FIFO"):
        files.write_atomic(here / "out.bin", b"data")
    assert stat.S_ISFIFO((here / "out.bin").lstat().st_mode) and sorted(p.name for p in here.iterdir()) == ["out.bin"]


def test_a_failed_write_removes_the_folders_it_made(here: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def full(*_: Any) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(files.os, "replace", full)
    with pytest.raises(OSError):
        files.write_atomic(here / "a" / "b" / "out.bin", b"data")
    assert list(here.iterdir()) == []


def test_a_write_that_fails_at_run_time_is_a_one_line_runtime_failure(here: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def full(*_: Any) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(files.os, "replace", full)
    status, _, err = run_cli("run", write_model(here, model_with(target="out.npy")), "-q")
    assert status == 1 and err == f"dml2onnx: error: {TARGET}: cannot write 'out.npy': No space left on device\n"
    assert sorted(p.name for p in here.iterdir()) == ["hostile.json"] or "out.npy" not in os.listdir(here)


# --- export -o, inspect, and the model file itself ----------------------------------------------

MODEL = str(ROOT / "models" / "argmax.json")


@pytest.mark.parametrize(
    ("output", "rule"),
    [
        ("a" * 10_000, "10000 bytes long"),
        ("a" * 300, "a component of 300 bytes"),
        ("o\0ut", "contains a NUL character"),
        ("file", "'file' is a regular file, not a folder"),
        ("fifo", "'fifo' is a FIFO, not a folder"),
    ],
)
def test_export_output_folder_that_cannot_be(output: str, rule: str, here: Path) -> None:
    (here / "file").write_bytes(b"x")
    make_fifo(here / "fifo")
    before = listing(here)
    status, out, err = run_cli("export", MODEL, "-o", output)
    assert status == 2 and out == "" and err.startswith("dml2onnx: error: -o ") and rule in err, err
    assert err.count("\n") == 1 and listing(here) == before


def test_export_refuses_every_file_before_writing_any(here: Path) -> None:
    """argmax.json has several dispatchables: one .onnx name taken by a FIFO stops them all."""
    (here / "out").mkdir()
    make_fifo(here / "out" / "argmax_all.onnx")
    before = listing(here)
    status, _, err = run_cli("export", MODEL, "-o", "out")
    assert status == 2 and "argmax_all.onnx' is a FIFO; only regular files are replaced" in err, err
    assert listing(here) == before


def test_export_over_a_file_keeps_its_mode(here: Path) -> None:
    assert run_cli("export", MODEL, "-o", "out")[0] == 0
    os.chmod(here / "out" / "argmax_all.onnx", 0o604)
    assert run_cli("export", MODEL, "-o", "out")[0] == 0
    assert stat.S_IMODE((here / "out" / "argmax_all.onnx").stat().st_mode) == 0o604


def test_inspect_and_run_refuse_folders_and_sockets_as_the_model(here: Path) -> None:
    (here / "dir.onnx").mkdir()
    make_socket(here / "sock.json")
    with deadline(10):
        status, _, err = run_cli("inspect", "dir.onnx", "--text")
        assert status == 2 and "'dir.onnx' is a directory, not a regular file" in err, err
        status, _, err = run_cli("run", "sock.json")
        assert status == 2 and "'sock.json' is a socket, not a regular file" in err, err


def test_the_model_may_come_through_a_pipe(here: Path) -> None:
    """A model named on the command line may be a FIFO or /dev/stdin, the user's own choice;
    it is read up to the model size limit. The writer comes late: the reader waits for it (a FIFO
    opened without blocking would read as empty until then)."""
    make_fifo(here / "model.json")
    text = (ROOT / "models" / "argmax.json").read_bytes()
    pid = os.fork()
    if pid == 0:  # the writer
        try:
            time.sleep(0.5)
            fd = os.open(here / "model.json", os.O_WRONLY)
            os.write(fd, text)
            os.close(fd)
        finally:
            os._exit(0)
    try:
        with deadline(60):  # generous: a loaded machine may take seconds to reach the open
            status, out, err = run_cli("run", "model.json", "-q")
    finally:  # never left waiting on a writer that no reader will open the FIFO for
        if os.waitpid(pid, os.WNOHANG) == (0, 0):
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
    assert status == 0 and "Resource 'all': 7" in out, err


@pytest.mark.parametrize("text", ["", " \n\t", "\ufeff"])
def test_an_empty_model_file_says_so(here: Path, text: str) -> None:
    (here / "model.json").write_text(text, encoding="utf-8")
    status, _, err = run_cli("run", "model.json")
    assert status == 2 and err == "dml2onnx: error: 'model.json' is empty: a DxDispatch model is one JSON object\n", err


def test_an_endless_device_as_the_model_stops_at_the_limit(here: Path) -> None:
    with deadline(10):
        status, _, err = run_cli("run", "/dev/zero")
    assert status == 2 and "'/dev/zero' is larger than 256 MiB" in err, err
