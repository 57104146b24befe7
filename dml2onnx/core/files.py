"""Every file that a model or an argument names is read or written here.

Model files are downloaded and shared, so their file names are hostile input. Whatever a name
holds, the answer is a result or a `PathRefused` with one line of reason, never a traceback, a
hang or a replaced device:
- a name is checked as text first (NUL, unpaired surrogates, over-long names and components);
- only regular files are read from names in a model, checked on the opened file, and opened
  without blocking and without the side effects that opening a device can have;
- only regular files are replaced, with their mode kept; links are written through, not over;
- writes are whole or not at all: a temporary file in the same folder, then a rename.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import tempfile
from pathlib import Path

from dml2onnx.core.errors import one_line

# Linux's limits (NAME_MAX, PATH_MAX): most file systems allow no more, and a name past them
# fails in the kernel with ENAMETOOLONG anyway. Checking them first gives a clearer message.
NAME_MAX = 255
PATH_MAX = 4096

_SHOWN_CHARS = 60  # how much of a name an error message repeats


class PathRefused(Exception):
    """A file name or the file it names cannot be used; the message is one line."""


def shown(name: str | Path) -> str:
    """A name as an error message quotes it: control characters, NULs and surrogates escaped
    (the message stays one printable line), and a long name shortened in the middle, keeping
    its end, where the file's own name is."""
    text = str(name)
    if len(text) > _SHOWN_CHARS:
        head, tail = text[: _SHOWN_CHARS // 3], text[-(_SHOWN_CHARS - _SHOWN_CHARS // 3) :]
        return f"'{one_line(head)}...{one_line(tail)}' ({len(text)} characters)"
    return f"'{one_line(text)}'"


def check_name(name: str | Path, *, from_model: bool = True) -> None:
    """Refuses a name no file can have. Names from a model must be Unicode text; names from
    the command line may hold the surrogate escapes Python gives undecodable bytes in argv."""
    text = str(name)
    if not text:
        raise PathRefused("is empty")
    if "\0" in text:
        raise PathRefused(f"{shown(text)} contains a NUL character, which no file name can hold")
    if from_model:
        lone = next((c for c in text if 0xD800 <= ord(c) <= 0xDFFF), None)
        if lone is not None:
            raise PathRefused(f"{shown(text)} contains an unpaired surrogate (U+{ord(lone):04X}), which is not text")
    try:
        raw = os.fsencode(text)
    except UnicodeEncodeError as e:
        raise PathRefused(f"{shown(text)} cannot be encoded as a file name: {e.reason}") from None
    if len(raw) >= PATH_MAX:
        raise PathRefused(f"{shown(text)} is {len(raw)} bytes long; a path may have at most {PATH_MAX - 1}")
    longest = max(raw.split(b"/"), key=len)
    if len(longest) > NAME_MAX:
        raise PathRefused(f"{shown(text)} has a component of {len(longest)} bytes; a file name may have at most {NAME_MAX}")


_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISLNK, "a symbolic link"),
)


def kind(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "a regular file")


def _reason(e: OSError) -> str:
    if e.errno == errno.ELOOP:
        return "too many levels of symbolic links"
    return e.strerror or str(e)


def read_regular(
    name: str | Path, limit: int, what: str = "the limit", *, pipes: bool = False, label: str | None = None
) -> bytes:
    """The bytes of the regular file `name`, at most `limit` of them.

    The file is opened with O_PATH (Linux), which opens nothing behind the name (no device's
    open routine runs: a watchdog is not armed, a tape not rewound), then checked with fstat
    and reopened through /proc/self/fd, so the file read is the file checked. The read itself
    is non-blocking, for the /proc and /sys files that would wait.

    `pipes` (for a file named on the command line, the user's own choice): FIFOs and character
    devices are read too, up to `limit`, so that `dml2onnx run /dev/stdin` works. `label` is the
    name as the user wrote it, for messages (default: `name`).
    """
    check_name(name, from_model=not pipes)
    path = os.fspath(name)
    label = path if label is None else label
    try:
        fd = _open_checked(path, label, pipes)
    except OSError as e:
        raise PathRefused(f"cannot read {shown(label)}: {_reason(e)}") from None
    try:
        size = os.fstat(fd).st_size
        if size > limit:
            raise PathRefused(f"{shown(label)} ({size} bytes) is larger than {what}")
        chunks, total = [], 0
        while True:
            try:
                chunk = os.read(fd, min(1 << 24, limit + 1 - total))
            except BlockingIOError:
                if pipes:  # a FIFO's writer has not written yet: wait for it, as `cat` would
                    os.set_blocking(fd, True)
                    continue
                raise PathRefused(f"{shown(label)} cannot be read without waiting") from None
            except OSError as e:
                raise PathRefused(f"cannot read {shown(label)}: {_reason(e)}") from None
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)
            total += len(chunk)
            if total > limit:
                raise PathRefused(f"{shown(label)} is larger than {what}")
    finally:
        os.close(fd)


def _open_checked(path: str, label: str, pipes: bool) -> int:
    """A read-only, non-blocking descriptor of `path`, which must be a regular file (or, with
    `pipes`, also a FIFO or character device): PathRefused otherwise, OSError if it fails."""
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | getattr(os, "O_CLOEXEC", 0)
    o_path = getattr(os, "O_PATH", 0)
    if o_path:
        probe = os.open(path, o_path | getattr(os, "O_CLOEXEC", 0))
        try:
            mode = os.fstat(probe).st_mode
            _check_readable(mode, label, pipes)
            if stat.S_ISFIFO(mode):
                # A FIFO opened without blocking reads as empty until its writer opens it: wait
                # for the writer in the open instead, as `cat` does.
                flags &= ~os.O_NONBLOCK
            try:
                fd = os.open(f"/proc/self/fd/{probe}", flags)
            except FileNotFoundError:  # no /proc: open the name again, checked again below
                fd = os.open(path, flags)
        finally:
            os.close(probe)
    else:
        st = os.stat(path)  # before the open: refuse devices without opening them
        _check_readable(st.st_mode, label, pipes)
        fd = os.open(path, flags)
    try:
        _check_readable(os.fstat(fd).st_mode, label, pipes)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _check_readable(mode: int, path: str, pipes: bool) -> None:
    if stat.S_ISREG(mode) or (pipes and (stat.S_ISFIFO(mode) or stat.S_ISCHR(mode))):
        return
    raise PathRefused(f"{shown(path)} is {kind(mode)}, not a regular file")


def writable_target(target: str | Path, *, from_model: bool = True) -> Path:
    """The file that writing `target` will replace or create, after checking that it may:
    links are followed (the link stays, its file gets the data); an existing file must be a
    regular file; the nearest existing folder above it must be a folder."""
    check_name(target, from_model=from_model)
    try:
        real = Path(os.path.realpath(target))
        check_name(real, from_model=False)
        try:
            st = os.lstat(real)
        except (FileNotFoundError, NotADirectoryError):
            _check_folders(real.parent)
        else:
            if not stat.S_ISREG(st.st_mode):
                raise PathRefused(f"{shown(target)} is {kind(st.st_mode)}; only regular files are replaced")
    except OSError as e:
        raise PathRefused(f"cannot write {shown(target)}: {_reason(e)}") from None
    return real


def _check_folders(folder: Path) -> None:
    for above in (folder, *folder.parents):
        try:
            st = os.stat(above)
        except (FileNotFoundError, NotADirectoryError):
            continue
        if not stat.S_ISDIR(st.st_mode):
            raise PathRefused(f"{shown(above)} is {kind(st.st_mode)}, not a folder")
        return


def write_atomic(target: str | Path, data: bytes, *, from_model: bool = True) -> Path:
    """Writes `data` to `target` whole or not at all and returns the file written (the link's
    file when `target` is a symbolic link). A replaced file keeps its mode (and, for root, its
    owner); a new one gets the mode a plain open() would give it. Folders it had to create are
    removed again if the write fails. Raises PathRefused, or OSError for a failure of the
    write itself."""
    real = writable_target(target, from_model=from_model)
    created = _make_folders(real.parent)
    fd, tmp = tempfile.mkstemp(dir=real.parent, prefix=f".{real.name[:200]}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            _copy_mode(f.fileno(), real)
        # The target was checked before the data was written; check again just before the
        # rename, so that a device put there meanwhile is refused, not replaced.
        writable_target(real, from_model=False)
        os.replace(tmp, real)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        for folder in reversed(created):
            try:
                folder.rmdir()
            except OSError:
                break
        raise
    return real


def _make_folders(folder: Path) -> list[Path]:
    missing = []
    for above in (folder, *folder.parents):
        if os.path.isdir(above):
            break
        missing.append(above)
    created: list[Path] = []
    try:
        for path in reversed(missing):
            path.mkdir()
            created.append(path)
    except BaseException:
        for path in reversed(created):
            path.rmdir()
        raise
    return created


def _copy_mode(fd: int, real: Path) -> None:
    try:
        st = os.stat(real)
    except FileNotFoundError:
        os.fchmod(fd, 0o666 & ~_umask())
        return
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        # Before the mode: a chown clears set-id bits. A file system without owners refuses it,
        # and there the mode is what matters.
        with contextlib.suppress(OSError):
            os.fchown(fd, st.st_uid, st.st_gid)
    os.fchmod(fd, stat.S_IMODE(st.st_mode))


def _umask() -> int:
    """The process's umask, read without changing it where Linux allows (os.umask sets it)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def npy_bytes(array_bytes: bytes, descr: str, shape: tuple[int, ...]) -> bytes:
    """An NPY 1.0 file, header padded to a multiple of 64 bytes as DxDispatch writes it."""
    dims = "".join(f"{d}," for d in shape)
    header = f"{{'descr':'{descr}', 'fortran_order':False, 'shape':({dims}), }}"
    pad = 64 - (10 + len(header) + 1) % 64
    header += " " * (pad % 64) + "\n"
    return b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header.encode("latin1") + array_bytes


def refuse_outside(target: str | Path, allow_any_path: bool) -> None:
    """A writeFile target or `export -o` must stay inside the current folder unless
    --allow-any-path is given. The name must have passed `check_name`."""
    if not allow_any_path and not inside_current_folder(target):
        raise PathRefused(f"{shown(target)} is outside the current folder (pass --allow-any-path to write there)")


def inside_current_folder(target: str | Path) -> bool:
    """True when `target` (relative to the current folder) stays inside it, links resolved.
    The name must have passed `check_name`."""
    here = Path(os.path.realpath(os.getcwd()))
    # realpath, not Path.resolve: it answers a link loop with the unresolved name (resolve raises).
    return Path(os.path.realpath(here / Path(target))).is_relative_to(here)
