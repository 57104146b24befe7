"""A model fuzzer: hypothesis mutations of valid DxDispatch models (any field, any JSON type)."""

from __future__ import annotations

import copy
import io
import math
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from dml2onnx import dxdispatch, limits
from dml2onnx.errors import Dml2OnnxError
from dml2onnx.executor import Executor
from dml2onnx.jsonvalues import load_jsonc

ROOT = Path(__file__).resolve().parent.parent
SEEDS = [load_jsonc(p.read_text()) for p in sorted((ROOT / "models").glob("*.json"))]

JSON_VALUES = st.one_of(
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
def mutated_models(draw: st.DrawFn) -> dict[str, Any]:
    model = copy.deepcopy(draw(st.sampled_from(SEEDS)))
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


def run_model(model: Any, folder: Path) -> int:
    """What `dml2onnx run` would exit with; anything other than a Dml2OnnxError propagates."""
    quiet = io.StringIO()
    try:
        with limits.bytes_limit(2**24):  # 16 MiB: the fuzzer may not make us allocate more
            parsed = dxdispatch.parse(model, folder, folder / "model.json")
            Executor(parsed, "cpu", out=quiet, log=quiet, write_files=False).run()
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
