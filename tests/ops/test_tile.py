"""DML_OPERATOR_TILE (dml2onnx/ops/tile.py): the page's example, validation with DirectML's
refusals, the nodes each target emits (Expand steps of at most 8 dimensions, Tile where the EP
has it), and properties over random shapes, repeats and types against the numpy reference, bit
for bit. The matrix (dml2onnx/cases/tile.py) runs them on every EP present and through DirectML's
API."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_slice import every_variant

from dml2onnx import lowering
from dml2onnx.cases.slice import data
from dml2onnx.core import dtypes, operator_table
from dml2onnx.core.errors import format_path
from dml2onnx.ops import registry
from strategies import SEEDS
from support import EPS, make_desc, refusal, tensor

TYPES = [t.name for t in operator_table.OPERATORS["TILE"].support[0].tensors["InputTensor"].types]


def tile(x: np.ndarray, repeats: list[int], dtype: str = "FLOAT32") -> np.ndarray:
    out = [n * r for n, r in zip(x.shape, repeats, strict=True)]
    fields = {
        "InputTensor": tensor(dtype, x.shape),
        "OutputTensor": tensor(dtype, out),
        "RepeatsCount": x.ndim,
        "Repeats": repeats,
    }
    return every_variant("TILE", fields, {"InputTensor": x})


def test_page_example() -> None:
    x = np.array([1, 2, 3, 4, 5, 6], np.float32).reshape(1, 1, 2, 3)
    got = tile(x, [1, 1, 3, 3])
    assert got[0, 0].tolist() == [[1, 2, 3] * 3, [4, 5, 6] * 3] * 3


def test_bytes_move_exactly() -> None:
    rng = np.random.default_rng(4)
    for dtype in TYPES:
        x = data(rng, (2, 3), dtypes.BY_NAME[dtype])
        assert tile(x, [2, 3], dtype).tobytes() == np.tile(x, (2, 3)).tobytes()


def test_eight_dimensions_repeated_take_several_expand_steps() -> None:
    x = np.arange(16, dtype=np.int8).reshape(2, 1, 2, 1, 2, 1, 2, 1)
    got = tile(x, [2] * 8, "INT8")
    assert got.tobytes() == np.tile(x, [2] * 8).tobytes()
    model = lowering.lower(make_desc("TILE", _fields(x, [2] * 8, "INT8")), "t", target="portable")
    expands = [n for n in model.graph.node if n.op_type == "Expand"]
    assert len(expands) > 1
    shapes = {i.name: i for i in model.graph.initializer}
    assert all(len(np.frombuffer(shapes[n.input[1]].raw_data, np.int64)) <= 8 for n in expands)


def _fields(x: np.ndarray, repeats: list[int], dtype: str) -> dict[str, Any]:
    out = [n * r for n, r in zip(x.shape, repeats, strict=True)]
    return {"InputTensor": tensor(dtype, x.shape), "OutputTensor": tensor(dtype, out), "RepeatsCount": x.ndim, "Repeats": repeats}


BASE = {"InputTensor": tensor("FLOAT32", [2, 3]), "OutputTensor": tensor("FLOAT32", [4, 3]), "RepeatsCount": 2, "Repeats": [2, 1]}


@pytest.mark.parametrize(
    ("fields", "path", "text"),
    [
        (BASE | {"OutputTensor": tensor("FLOAT32", [4, 6])}, "desc.OutputTensor.Sizes[1]", "InputTensor.Sizes[1] * Repeats[1]"),
        (BASE | {"Repeats": [2, 0], "OutputTensor": tensor("FLOAT32", [4, 3])}, "desc.Repeats[1]", "at least 1"),
        (BASE | {"RepeatsCount": 1, "Repeats": [2]}, "desc.RepeatsCount", "InputTensor's DimensionCount"),
        (BASE | {"OutputTensor": tensor("FLOAT16", [4, 3])}, "desc.OutputTensor.DataType", "same DataType"),
        (BASE | {"OutputTensor": tensor("FLOAT32", [1, 4, 3])}, "desc.OutputTensor.Sizes", "same DimensionCount"),
    ],
)
def test_invalid(fields: dict[str, Any], path: str, text: str) -> None:
    e = refusal("TILE", fields)
    assert format_path(e.path).startswith(path) and text in str(e), (format_path(e.path), str(e))


def test_nodes() -> None:
    def nodes(dtype: str, target: str) -> list[str]:
        fields = BASE | {"InputTensor": tensor(dtype, [2, 3]), "OutputTensor": tensor(dtype, [4, 3])}
        return [n.op_type for n in lowering.lower(make_desc("TILE", fields), "t", target=target).graph.node]

    assert nodes("FLOAT32", "portable") == ["Tile"]  # the CUDA EP has Tile for FLOAT32
    assert "Expand" in nodes("UINT8", "portable") and nodes("UINT8", "dml") == ["Tile"]


@st.composite
def cases(draw: st.DrawFn) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    dtype = draw(st.sampled_from(TYPES))
    shape = [draw(st.integers(1, 3)) for _ in range(draw(st.integers(1, 8)))]
    repeats = [draw(st.integers(1, 3)) for _ in shape]
    rng = np.random.default_rng(draw(SEEDS))
    x = data(rng, tuple(shape), dtypes.BY_NAME[dtype])
    return _fields(x, repeats, dtype), {"InputTensor": x}


@EPS
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=cases())
def test_every_candidate_matches_reference(ep: str, case: tuple[dict[str, Any], dict[str, np.ndarray]]) -> None:
    every_variant("TILE", *case, ep)


@settings(max_examples=60, deadline=None)
@given(case=cases())
def test_reference_is_numpy_tile(case: tuple[dict[str, Any], dict[str, np.ndarray]]) -> None:
    fields, feeds = case
    got = registry.family("TILE").reference(make_desc("TILE", fields), feeds)
    assert got.tobytes() == np.tile(feeds["InputTensor"], fields["Repeats"]).tobytes()
