"""DML_OPERATOR_PADDING and PADDING1 (dml2onnx/ops/padding.py): the pages' four examples, what
DirectML's own API computed where they are silent (padding wider than the input keeps folding;
PADDING's FLOAT value converted to integer types; WRAP), validation, the nodes each target emits,
and properties over random shapes, paddings, modes and types against the numpy reference, bit for
bit. The matrix (dml2onnx/cases/padding.py) runs them on every EP present and through DirectML's API."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_slice import every_variant

from dml2onnx import lowering
from dml2onnx.backends import dmlapi
from dml2onnx.cases.slice import data
from dml2onnx.core import dtypes, operator_table
from dml2onnx.core.errors import format_path
from dml2onnx.ops import padding, registry
from strategies import SEEDS
from support import EPS, make_desc, refusal, tensor

TYPES = [t.name for t in operator_table.OPERATORS["PADDING1"].support[0].tensors["InputTensor"].types]
MODES = ("CONSTANT", "EDGE", "REFLECTION", "SYMMETRIC", "WRAP")
X = np.array([[1, 2, 3, 4], [5, 6, 7, 8], [1, 2, 3, 4], [5, 6, 7, 8]], np.float32).reshape(1, 1, 4, 4)


def pad(
    op: str, x: np.ndarray, mode: str, starts: list[int], ends: list[int], value: Any = 0, dtype: str = "FLOAT32"
) -> np.ndarray:
    out = [n + s + e for n, s, e in zip(x.shape, starts, ends, strict=True)]
    fields: dict[str, Any] = {"InputTensor": tensor(dtype, x.shape), "OutputTensor": tensor(dtype, out), "PaddingMode": mode}
    fields |= {"PaddingValue": value} if op == "PADDING" else {"PaddingValueDataType": dtype, "PaddingValue": value}
    fields |= {"DimensionCount": x.ndim, "StartPadding": starts, "EndPadding": ends}
    return every_variant(op, fields, {"InputTensor": x})


PAGE = {
    "CONSTANT": [[9] * 10, [9, 9, 1, 2, 3, 4, 9, 9, 9, 9], [9, 9, 5, 6, 7, 8, 9, 9, 9, 9], [9, 9, 1, 2, 3, 4, 9, 9, 9, 9]]
    + [[9, 9, 5, 6, 7, 8, 9, 9, 9, 9]]
    + [[9] * 10] * 3,
    "EDGE": [[1, 1, 1, 2, 3, 4, 4, 4, 4, 4]] * 2
    + [[5, 5, 5, 6, 7, 8, 8, 8, 8, 8], [1, 1, 1, 2, 3, 4, 4, 4, 4, 4]]
    + [[5, 5, 5, 6, 7, 8, 8, 8, 8, 8]] * 4,
    "REFLECTION": [[7, 6, 5, 6, 7, 8, 7, 6, 5, 6], [3, 2, 1, 2, 3, 4, 3, 2, 1, 2]] * 4,
    "SYMMETRIC": [[2, 1, 1, 2, 3, 4, 4, 3, 2, 1]] * 2
    + [[6, 5, 5, 6, 7, 8, 8, 7, 6, 5], [2, 1, 1, 2, 3, 4, 4, 3, 2, 1]]
    + [[6, 5, 5, 6, 7, 8, 8, 7, 6, 5]] * 2
    + [[2, 1, 1, 2, 3, 4, 4, 3, 2, 1], [6, 5, 5, 6, 7, 8, 8, 7, 6, 5]],
}


@pytest.mark.parametrize("op", ["PADDING", "PADDING1"])
@pytest.mark.parametrize("mode", list(PAGE))
def test_page_examples(op: str, mode: str) -> None:
    got = pad(op, X, mode, [0, 0, 1, 2], [0, 0, 3, 4], 9.0 if op == "PADDING" else 9)
    assert got[0, 0].tolist() == PAGE[mode]


# -- where the pages are silent: DirectML's results (measured through its API) --------------------------------

WIDE = {  # a 3-element input padded by 7 and 8
    "REFLECTION": [2, 3, 2, 1, 2, 3, 2, 1, 2, 3, 2, 1, 2, 3, 2, 1, 2, 3],
    "SYMMETRIC": [1, 1, 2, 3, 3, 2, 1, 1, 2, 3, 3, 2, 1, 1, 2, 3, 3, 2],
    "EDGE": [1] * 8 + [2] + [3] * 9,
    "WRAP": [3, 1, 2] * 6,
}


@pytest.mark.parametrize("mode", list(WIDE))
def test_padding_wider_than_the_input_keeps_folding(mode: str) -> None:
    assert pad("PADDING1", np.array([1, 2, 3], np.int32), mode, [7], [8], dtype="INT32").tolist() == WIDE[mode]
    assert pad("PADDING1", np.array([5], np.uint8), mode, [2], [2], dtype="UINT8").tolist() == [5] * 5  # one element


CONVERSIONS = {  # PADDING's FLOAT value, as DirectML wrote it (dml2onnx.ops.diagonal_matrix.converted_value)
    "UINT8": [(10.6, 10), (-10.6, 246), (300.0, 44), (-1.0, 255), (1e10, 0), (float("nan"), 0)],
    "INT16": [(70000.0, 4464), (-10.6, -10), (float("inf"), 0)],
    "INT32": [(1e10, -(2**31)), (float("nan"), -(2**31)), (-10.6, -10)],
    "UINT32": [(1e10, 1410065408), (5e9, 705032704), (-1.0, 2**32 - 1), (float("nan"), 0)],
    "INT64": [(1e10, 10**10), (float("nan"), -(2**63)), (2.0**63, -(2**63))],
    "UINT64": [(-10.6, 2**64 - 10), (float("nan"), 2**63), (2.0**63, 2**63)],
}


@pytest.mark.parametrize("dtype", list(CONVERSIONS))
def test_float_value_on_integer_types(dtype: str) -> None:
    for value, want in CONVERSIONS[dtype]:
        got = pad("PADDING", np.zeros(1, dtype.lower()), "CONSTANT", [1], [0], value, dtype)
        assert got[0].item() == want, (dtype, value, got)


def test_float16_value_rounds_and_overflows() -> None:
    got = pad("PADDING", np.zeros(1, np.float16), "CONSTANT", [3], [0], 10.6, "FLOAT16")
    assert got[0] == np.float16(10.6015625)
    assert np.isinf(pad("PADDING", np.zeros(1, np.float16), "CONSTANT", [1], [0], 70000.0, "FLOAT16")[0])


def test_bytes_move_exactly() -> None:
    rng = np.random.default_rng(9)
    for dtype in TYPES:
        x = data(rng, (2, 4), dtypes.BY_NAME[dtype])
        for mode in MODES[1:]:
            got = pad("PADDING1", x, mode, [1, 3], [2, 5], 0, dtype)
            assert got[1:3, 3:7].tobytes() == x.tobytes()
    big = np.array([2**53 + 1, 2**64 - 1], np.uint64)
    assert pad("PADDING1", big, "CONSTANT", [1], [1], 2**63 + 3, "UINT64").tolist() == [
        2**63 + 3,
        2**53 + 1,
        2**64 - 1,
        2**63 + 3,
    ]


_why = dmlapi.missing()


@pytest.mark.skipif(_why is not None, reason=f"DirectML's API under Wine is not set up ({_why})")
def test_directml_computes_the_same() -> None:
    for mode, want in WIDE.items():
        fields = {"InputTensor": tensor("INT32", [3]), "OutputTensor": tensor("INT32", [18]), "PaddingMode": mode}
        fields |= {"PaddingValue": 0.0, "DimensionCount": 1, "StartPadding": [7], "EndPadding": [8]}
        got = dmlapi.execute(make_desc("PADDING", fields), {"InputTensor": np.array([1, 2, 3], np.int32)}).output
        assert got.tolist() == want, mode
    for dtype, pairs in CONVERSIONS.items():
        for value, want in pairs:
            fields = {"InputTensor": tensor(dtype, [1]), "OutputTensor": tensor(dtype, [2]), "PaddingMode": "CONSTANT"}
            fields |= {"PaddingValue": value, "DimensionCount": 1, "StartPadding": [1], "EndPadding": [0]}
            got = dmlapi.execute(make_desc("PADDING", fields), {"InputTensor": np.zeros(1, dtype.lower())}).output
            assert got[0].item() == want, (dtype, value, got)


# -- validation -------------------------------------------------------------------------------------------------

BASE = {
    "InputTensor": tensor("FLOAT32", [2, 3]),
    "OutputTensor": tensor("FLOAT32", [3, 6]),
    "PaddingMode": "CONSTANT",
    "PaddingValue": 0.0,
    "DimensionCount": 2,
    "StartPadding": [1, 1],
    "EndPadding": [0, 2],
}
BASE1 = {k: v for k, v in BASE.items() if k != "PaddingValue"} | {"PaddingValueDataType": "FLOAT32", "PaddingValue": 0}


@pytest.mark.parametrize(
    ("op", "fields", "path", "text"),
    [
        (
            "PADDING",
            BASE | {"OutputTensor": tensor("FLOAT32", [3, 5])},
            "desc.OutputTensor.Sizes[1]",
            "StartPadding[1] + EndPadding[1]",
        ),
        ("PADDING", BASE | {"OutputTensor": tensor("FLOAT16", [3, 6])}, "desc.OutputTensor.DataType", "same DataType"),
        ("PADDING", BASE | {"OutputTensor": tensor("FLOAT32", [1, 3, 6])}, "desc.OutputTensor.Sizes", "same DimensionCount"),
        ("PADDING", BASE | {"EndPadding": [0]}, "desc.EndPadding", "must have DimensionCount (2) elements"),
        ("PADDING", BASE | {"DimensionCount": 1, "StartPadding": [1]}, "desc.DimensionCount", "InputTensor's DimensionCount"),
        ("PADDING", BASE | {"PaddingMode": "MIRROR"}, "desc.PaddingMode", ""),
        ("PADDING1", BASE1 | {"PaddingValueDataType": "INT32"}, "desc.PaddingValueDataType", "must be OutputTensor's DataType"),
        ("PADDING1", BASE1 | {"PaddingValue": "x"}, "desc.PaddingValue", ""),
    ],
)
def test_invalid(op: str, fields: dict[str, Any], path: str, text: str) -> None:
    e = refusal(op, fields)
    assert format_path(e.path).startswith(path) and text in str(e), (format_path(e.path), str(e))


def test_feature_levels() -> None:
    four = {"InputTensor": tensor("FLOAT32", [1, 1, 2, 3]), "OutputTensor": tensor("FLOAT32", [1, 1, 3, 6]), "DimensionCount": 4}
    four |= {"StartPadding": [0, 0, 1, 1], "EndPadding": [0, 0, 0, 2], "PaddingMode": "SYMMETRIC"}
    assert "needs feature level 3_0" in str(refusal("PADDING", BASE | four, level="2_1"))
    assert "needs feature level 6_4" in str(refusal("PADDING", BASE | {"PaddingMode": "WRAP"}, level="6_3"))
    int64 = BASE | {"InputTensor": tensor("INT64", [2, 3]), "OutputTensor": tensor("INT64", [3, 6])}
    assert "feature level 5_0 allows it" in str(refusal("PADDING", int64, level="4_1"))


def test_nodes() -> None:
    def nodes(fields: dict[str, Any], target: str) -> list[str]:
        return [n.op_type for n in lowering.lower(make_desc("PADDING1", fields), "t", target=target).graph.node]

    assert nodes(BASE1, "portable") == ["Pad"]  # FLOAT32: the CUDA EP has Pad
    int8 = BASE1 | {"InputTensor": tensor("INT8", [2, 3]), "OutputTensor": tensor("INT8", [3, 6]), "PaddingValueDataType": "INT8"}
    assert "Pad" not in nodes(int8, "portable") and nodes(int8, "dml") == ["Pad"]
    symmetric = BASE1 | {"PaddingMode": "SYMMETRIC"}  # no ONNX mode: Gather on every target
    assert "Gather" in nodes(symmetric, "dml") and "Pad" not in nodes(symmetric, "dml")


# -- properties ----------------------------------------------------------------------------------------------------


@st.composite
def cases(draw: st.DrawFn) -> tuple[str, dict[str, Any], dict[str, np.ndarray]]:
    op = draw(st.sampled_from(["PADDING", "PADDING1"]))
    dtype = draw(st.sampled_from(TYPES))
    mode = draw(st.sampled_from(MODES))
    shape = [draw(st.integers(1, 4)) for _ in range(draw(st.integers(1, 5)))]
    starts = [draw(st.integers(0, 5)) for _ in shape]
    ends = [draw(st.integers(0, 5)) for _ in shape]
    out = [n + s + e for n, s, e in zip(shape, starts, ends, strict=True)]
    fields: dict[str, Any] = {"InputTensor": tensor(dtype, shape), "OutputTensor": tensor(dtype, out), "PaddingMode": mode}
    if op == "PADDING":
        fields["PaddingValue"] = draw(st.sampled_from([9.0, -10.6, 300.0, 1e10, float("nan"), -0.0]))
    else:
        t = dtypes.BY_NAME[dtype]
        pool: list[Any] = [7.5, -0.0, "nan"] if t.is_float else [int(np.iinfo(t.numpy).max), int(np.iinfo(t.numpy).min), 3]
        fields |= {"PaddingValueDataType": dtype, "PaddingValue": draw(st.sampled_from(pool))}
    fields |= {"DimensionCount": len(shape), "StartPadding": starts, "EndPadding": ends}
    rng = np.random.default_rng(draw(SEEDS))
    return op, fields, {"InputTensor": data(rng, tuple(shape), dtypes.BY_NAME[dtype])}


@EPS
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=cases())
def test_every_candidate_matches_reference(ep: str, case: tuple[str, dict[str, Any], dict[str, np.ndarray]]) -> None:
    op, fields, feeds = case
    every_variant(op, fields, feeds, ep)


@settings(max_examples=60, deadline=None)
@given(case=cases())
def test_reference_matches_the_folding(case: tuple[str, dict[str, Any], dict[str, np.ndarray]]) -> None:
    """numpy's pad against the folding the page describes, one element at a time: outside the
    input, a position mirrors (or wraps) back until it lands inside; CONSTANT gives the value."""
    op, fields, feeds = case
    desc = make_desc(op, fields)
    got = registry.family(op).reference(desc, feeds)
    x, mode = feeds["InputTensor"], fields["PaddingMode"]

    def fold(i: int, n: int) -> int | None:
        while not 0 <= i < n:
            if mode == "CONSTANT":
                return None
            if mode == "EDGE":
                return min(max(i, 0), n - 1)
            if mode == "WRAP":
                i = i + n if i < 0 else i - n
            elif mode == "REFLECTION":
                i = (0 if n == 1 else -i) if i < 0 else (n - 1 if n == 1 else 2 * (n - 1) - i)
            else:  # SYMMETRIC
                i = -i - 1 if i < 0 else 2 * n - 1 - i
        return i

    fill = padding.value(desc).tobytes()
    for c in np.ndindex(got.shape):
        at = [fold(i - s, n) for i, s, n in zip(c, fields["StartPadding"], x.shape, strict=True)]
        want = fill if None in at else x[tuple(at)].tobytes()
        assert got[c].tobytes() == want, (c, at)
