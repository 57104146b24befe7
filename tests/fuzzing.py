"""A model fuzzer: hypothesis mutations of valid DxDispatch models (any field, any JSON type),
and hostile file names in every path-like field (sourcePath, targetPath)."""

from __future__ import annotations

import contextlib
import copy
import io
import math
import os
import socket
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from dml2onnx.core import limits
from dml2onnx.core.errors import Dml2OnnxError
from dml2onnx.core.files import npy_bytes
from dml2onnx.core.jsonvalues import load_jsonc
from dml2onnx.formats import dxdispatch
from dml2onnx.run.executor import Executor

ROOT = Path(__file__).resolve().parent.parent
SEEDS = [load_jsonc(p.read_text()) for p in sorted((ROOT / "models").glob("*.json"))]

# Names that a hostile model may hold where a file name belongs. The relative ones name the
# special files that `hostile_folder` makes; the absolute ones are real devices, which must be
# refused before they are opened (sources) or written (targets, never with --allow-any-path here).
FOLDER_NAMES = ["fifo", "sock", "dir", "chardev", "link-fifo", "link-chardev", "loop", "dangling", "data.npy", "link-data"]
HOSTILE_PATHS = [
    *FOLDER_NAMES,
    "a\0b.npy",
    "x\ud800.npy",
    "x\udcff",
    "a\nb.npy",
    "a" * 10_000,
    "a" * 256 + ".npy",
    "d/" * 2100 + "x",
    "\u00e9" * 128,
    "/dev/zero",
    "/dev/null",
    "/dev/full",
    "/",
    ".",
    "",
    "dir/",
    "data.npy/x",
]

JSON_VALUES = st.one_of(
    st.sampled_from(HOSTILE_PATHS),
    st.none(),
    st.booleans(),
    st.sampled_from([0, 1, -1, 2, 3, 7, 8, 9, 2**31, 2**32 - 1, 2**32, 2**63, 2**64, -(2**63) - 1, 10**30]),
    st.integers(-10, 70000),
    st.sampled_from([0.5, -0.0, 1e-45, 3.4e38, 1e308, 1.0, 65504.0]),
    st.sampled_from(
        [
            "",
            "nan",
            "inf",
            "-inf",
            "FLOAT32",
            "INT64",
            "UINT8",
            "UNKNOWN",
            "DECREASING",
            "BUFFER",
            "OWNED_BY_DML",
            "ACTIVATION_RELU",
            "ARGMAX",
            "ONE_HOT",
            "x",
            "../escape.npy",
            "/abs.npy",
            "deferred",
            "dispatch",
            "print",
            "writeFile",
            "DML_OPERATOR_ACTIVATION_HARDMAX1",
        ]
    ),
    st.lists(st.integers(-2, 9), max_size=9),
    st.just({}),
    st.just([]),
    st.dictionaries(
        st.sampled_from(["Type", "Desc", "name", "value", "valueCount", "DataType", "Sizes"]), st.integers(0, 4), max_size=3
    ),
)


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(node, dict):
        for k, v in node.items():
            out += _paths(v, prefix + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out += _paths(v, prefix + (i,))
    return out


@st.composite
def mutated_models(draw: st.DrawFn, start: dict[str, Any] | None = None) -> dict[str, Any]:
    model = copy.deepcopy(draw(st.sampled_from(SEEDS)) if start is None else start)
    for _ in range(draw(st.integers(1, 3))):
        paths = [p for p in _paths(model) if p]
        if not paths:
            break
        path = draw(st.sampled_from(paths))
        parent = model
        for part in path[:-1]:
            parent = parent[part]
        key = path[-1]
        action = draw(st.sampled_from(["replace", "replace", "delete", "add", "number"]))
        if action == "delete":
            del parent[key]
        elif action == "add" and isinstance(parent, dict):
            parent[draw(st.sampled_from(["Extra", "Axes", "bindings", "Strides", "sizeInBytes", "type"]))] = draw(JSON_VALUES)
        elif action == "number" and isinstance(parent[key], int) and not isinstance(parent[key], bool):
            parent[key] = parent[key] + draw(st.sampled_from([-1, 1, 2**32, -(2**32)]))
        else:
            parent[key] = draw(JSON_VALUES)
    return model


@st.composite
def models_with_hostile_paths(draw: st.DrawFn, local_targets_only: bool = False) -> dict[str, Any]:
    """A seed model reading an initializer from, and/or writing a resource to, a hostile name,
    then mutated as `mutated_models` does."""
    model = copy.deepcopy(draw(st.sampled_from(SEEDS)))
    names = FOLDER_NAMES if local_targets_only else HOSTILE_PATHS
    if draw(st.booleans()):
        resource = draw(st.sampled_from(sorted(model["resources"])))
        model["resources"][resource] = {"initialValues": {"sourcePath": draw(st.sampled_from(HOSTILE_PATHS))}}
        if draw(st.booleans()):
            model["resources"][resource]["initialValuesDataType"] = "FLOAT32"
    if draw(st.booleans()) or not any("sourcePath" in str(r) for r in model["resources"].values()):
        resource = draw(st.sampled_from(sorted(model["resources"])))
        model["commands"].append({"type": "writeFile", "resource": resource, "targetPath": draw(st.sampled_from(names))})
    if draw(st.booleans()):
        model = draw(_mutations(model))
    return model


@st.composite
def _mutations(draw: st.DrawFn, model: dict[str, Any]) -> dict[str, Any]:
    return draw(mutated_models(start=model))


@contextlib.contextmanager
def hostile_folder(base: Path) -> Iterator[Path]:
    """`base`, made the current folder, holding the special files FOLDER_NAMES name: a FIFO, a
    socket, a folder, a character device (a copy of /dev/null, as root), links to them, a link
    loop, a dangling link and a real .npy. Afterwards, each must still be what it was."""
    (base / "data.npy").write_bytes(npy_bytes(bytes(range(36)), "<f4", (9,)))
    os.mkfifo(base / "fifo")
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(base / "sock"))
    sock.close()
    (base / "dir").mkdir()
    if os.geteuid() == 0:
        os.mknod(base / "chardev", stat.S_IFCHR | 0o666, os.makedev(1, 3))
    for link, to in [
        ("link-fifo", "fifo"),
        ("link-chardev", "chardev"),
        ("loop", "loop"),
        ("dangling", "nowhere"),
        ("link-data", "data.npy"),
    ]:
        (base / link).symlink_to(to)
    kinds = {name: stat.S_IFMT((base / name).lstat().st_mode) for name in FOLDER_NAMES if os.path.lexists(base / name)}
    old = Path.cwd()
    os.chdir(base)
    try:
        yield base
    finally:
        os.chdir(old)
    after = {name: stat.S_IFMT((base / name).lstat().st_mode) for name in kinds if os.path.lexists(base / name)}
    assert after == kinds, f"special files replaced: {kinds} -> {after}"


def run_model(model: Any, folder: Path, write_files: bool = False, allow_any_path: bool = False) -> int:
    """What `dml2onnx run` would exit with; anything other than a Dml2OnnxError propagates."""
    quiet = io.StringIO()
    try:
        with limits.bytes_limit(2**24):  # 16 MiB: the fuzzer may not make us allocate more
            parsed = dxdispatch.parse(model, folder, folder / "model.json")
            Executor(parsed, "cpu", out=quiet, log=quiet, write_files=write_files, allow_any_path=allow_any_path).run()
    except Dml2OnnxError as e:
        message = str(e)
        assert "\n" not in message and message, message
        assert e.exit_status == 2 or "ONNX Runtime" in message or "EP" in message, message
        return e.exit_status
    return 0


def is_finite_json(value: Any) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, dict):
        return all(is_finite_json(v) for v in value.values())
    if isinstance(value, list):
        return all(is_finite_json(v) for v in value)
    return True
