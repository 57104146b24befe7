"""DML_OPERATOR_DIAGONAL_MATRIX and DIAGONAL_MATRIX1 (dml2onnx/ops/diagonal_matrix.py): the pages'
examples and, where they are silent, what DirectML's own API computed; validation; the
candidates and the nodes each target emits; and properties over random shapes, types, offsets,
fill ranges and values against the numpy reference, bit for bit. The matrix
(dml2onnx/cases/diagonal_matrix.py) runs them on every EP present and through DirectML's API."""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dml2onnx import lowering
from dml2onnx.backends import dmlapi, runtime
from dml2onnx.core import operator_table
from dml2onnx.core.errors import format_path
from dml2onnx.graph import dml_ep
from dml2onnx.graph.builder import DEFAULT_OPSET
from dml2onnx.lowering import choices
from dml2onnx.ops import registry
from dml2onnx.ops.diagonal_matrix import ROWS
from strategies import SEEDS
from support import EPS, make_desc, refusal, run_cli, tensor

DM, DM1 = "DIAGONAL_MATRIX", "DIAGONAL_MATRIX1"
INT_MIN, INT_MAX = -(2**31), 2**31 - 1
TYPES = [t.name for t in operator_table.OPERATORS[DM].support[0].tensors["OutputTensor"].types]
X = np.array([[4, 7, 3, 7, 9], [1, 2, 8, 6, 9], [9, 4, 1, 8, 7], [4, 3, 4, 2, 4]], np.float32)


def every_variant(op: str, fields: dict[str, Any], feeds: dict[str, np.ndarray] | None = None, ep: str = "cpu") -> np.ndarray:
    """The reference, after checking that every candidate on every target that runs on `ep`
    gives its bytes (the `dml` target: the static DirectML EP check)."""
    feeds = feeds or {}
    desc = make_desc(op, fields)
    want = registry.family(op).reference(desc, feeds)
    out = desc.tensor("OutputTensor")
    assert want.dtype == out.data_type.numpy and want.shape == out.sizes
    for variant in choices.available(desc, DEFAULT_OPSET):
        for target in ("portable", ep, "dml"):
            model = lowering.lower(desc, "t", target=target, variant=variant)
            assert dml_ep.check(model) == [], (target, variant)
            if target == "dml":
                continue
            got = runtime.create(model, "t", ep).run(feeds)
            assert got.dtype == want.dtype and got.tobytes() == want.tobytes(), (target, variant, got, want)
    return want


def dm(sizes: list[int], offset: int, value: float, dtype: str = "FLOAT32") -> np.ndarray:
    return every_variant(DM, {"OutputTensor": tensor(dtype, sizes), "Offset": offset, "Value": value})


def dm1(sizes: list[int], begin: int, end: int, value: Any, dtype: str = "FLOAT32", x: np.ndarray | None = None) -> np.ndarray:
    fields = {
        "OutputTensor": tensor(dtype, sizes),
        "ValueDataType": dtype,
        "Value": value,
        "DiagonalFillBegin": begin,
        "DiagonalFillEnd": end,
    }
    if x is None:
        return every_variant(DM1, fields)
    return every_variant(DM1, fields | {"InputTensor": tensor(dtype, sizes)}, {"InputTensor": x.astype(dtype.lower())})


# -- the pages' examples ------------------------------------------------------------------------------


def test_diagonal_matrix_page_examples() -> None:
    assert dm([1, 1, 3, 3], 0, 1.0).tolist() == [[[[1, 0, 0], [0, 1, 0], [0, 0, 1]]]]
    assert dm([1, 1, 3, 3], 1, 1.0).tolist() == [[[[0, 1, 0], [0, 0, 1], [0, 0, 0]]]]
    assert dm([1, 1, 3, 2], -1, 1.0).tolist() == [[[[0, 0], [1, 0], [0, 1]]]]
    assert dm([1, 1, 3, 2], -3, 1.0).tolist() == [[[[0, 0], [0, 0], [0, 0]]]]


def test_diagonal_matrix1_page_examples() -> None:
    # the page's first example prints ones for Value 7: DirectML writes 7
    assert dm1([4, 5], 0, 1, 7).tolist() == (np.eye(4, 5) * 7).tolist()
    strip = [[7, 7, 7, 0, 0], [0, 7, 7, 7, 0], [0, 0, 7, 7, 7], [0, 0, 0, 7, 7]]
    assert dm1([4, 5], 0, 3, 7).tolist() == strip
    assert dm1([4, 5], INT_MIN, 1, 0, x=X).tolist() == np.triu(X, 1).tolist()
    assert dm1([4, 5], 1, 0, 0, x=X).tolist() == (X * np.eye(4, 5)).tolist()


# -- where the pages are silent: what DirectML's API computed (DirectML.dll of onnxruntime-directml
# 1.24.4 under Wine) ---------------------------------------------------------------------------------


def test_leading_dimensions_are_a_batch_of_the_same_matrix() -> None:
    got = dm([2, 3, 4], 1, 2.5)
    assert got.tolist() == [np.eye(3, 4, 1).__mul__(2.5).tolist()] * 2
    got = dm1([2, 2, 3, 4], -1, 1, 5, dtype="INT16")
    assert (got == np.where(np.isin(np.subtract.outer(np.arange(4), np.arange(3)).T, (-1, 0)), 5, 0)).all()


@pytest.mark.parametrize("offset", [3, 4, -3, -5, INT_MAX, INT_MIN])
def test_offsets_beyond_the_matrix_fill_nothing(offset: int) -> None:
    want = np.eye(3, 4, 3) if offset == 3 else np.zeros((3, 4))
    assert dm([3, 4], offset, 1.0).tolist() == want.tolist()


# DIAGONAL_MATRIX's FLOAT Value in each type, as DirectML converted it (x64's float conversions)
CONVERSIONS = {
    "INT32": [(10.6, 10), (-10.6, -10), (1e10, INT_MIN), (float("nan"), INT_MIN), (float("inf"), INT_MIN), (2.0**31, INT_MIN)],
    "INT16": [(300.0, 300), (70000.0, 4464), (-1.0, -1), (1e10, 0)],
    "INT8": [(300.0, 44), (65519.0, -17), (-10.6, -10), (float("nan"), 0)],
    "UINT16": [(-10.6, 65526), (70000.0, 4464), (2.0**31 - 128, 65408), (-(2.0**31), 0)],
    "UINT8": [(-1.0, 255), (300.0, 44), (255.9, 255), (-0.9, 0), (2.0**31 - 128, 128), (1e10, 0)],
    "UINT32": [(-1.0, 2**32 - 1), (5e9, 705032704), (1e10, 1410065408), (-1e10, 2884901888), (4294967295.0, 0), (1e19, 0)],
    "INT64": [(1e10, 10**10), (-10.6, -10), (1e19, -(2**63)), (float("nan"), -(2**63)), (-(2.0**63), -(2**63))],
    "UINT64": [
        (-10.6, 2**64 - 10),
        (1e19, 9999999980506447872),
        (9.3e18, 9300000300729368576),
        (1.9e19, 2**63),
        (float("nan"), 2**63),
    ],
    "FLOAT16": [(10.6, 10.6015625), (65519.0, 65504.0), (65520.0, math.inf), (1e10, math.inf), (2.98e-8, 0.0)],
    "FLOAT64": [(10.6, float(np.float32(10.6))), (3.4e38, float(np.float32(3.4e38)))],
}


@pytest.mark.parametrize(("dtype", "value", "want"), [(t, v, w) for t, pairs in CONVERSIONS.items() for v, w in pairs])
def test_value_conversion(dtype: str, value: float, want: float) -> None:
    got = dm([2, 2], 0, value, dtype)
    assert got[0, 0].item() == want and got[0, 1].item() == 0


def test_signed_zero_and_nan_values_stay() -> None:
    assert np.signbit(dm([2, 2], 0, -0.0)).tolist() == [[True, False], [False, True]]
    nan = dm1([2, 3], 0, 1, {"UInt16": 0x7E01}, "FLOAT16")
    assert nan.view(np.uint16).tolist() == [[0x7E01, 0, 0], [0, 0x7E01, 0]]
    x = np.array([[-0.0, 1.0, -0.0], [2.0, -0.0, -0.0]], np.float32)
    assert np.signbit(dm1([2, 3], 0, 1, 5.0, x=x)).tolist() == [[False, False, True], [False, False, True]]
    assert np.signbit(dm1([2, 3], 1, INT_MAX, 0.0, x=x)).tolist() == [[True, False, False], [False, True, False]]


def test_fill_ranges() -> None:
    assert dm1([4, 5], 2, 2, 5, x=X).tolist() == X.tolist()  # Begin == End: nothing
    inverted = np.where(
        (np.arange(5)[None] - np.arange(4)[:, None] >= 3) | (np.arange(5)[None] - np.arange(4)[:, None] < -1), 5, X
    )
    assert dm1([4, 5], 3, -1, 5, x=X).tolist() == inverted.tolist()
    assert dm1([4, 5], INT_MIN, INT_MAX, 5).tolist() == [[5] * 5] * 4
    assert dm1([4, 5], INT_MAX, INT_MIN, 5, x=X).tolist() == X.tolist()
    assert dm1([4, 5], 1, INT_MAX, 0, x=X).tolist() == np.tril(X).tolist()


def test_64_bit_values_and_inputs_exactly() -> None:
    x = np.array([[2**53 + 1, 5, 6], [7, 8, 2**63 + 1]], np.uint64)
    got = dm1([2, 3], 0, 1, 2**64 - 1, "UINT64", x=x)
    assert got.tolist() == [[2**64 - 1, 5, 6], [7, 2**64 - 1, 2**63 + 1]]
    assert dm1([2, 3], -1, 1, -(2**63), "INT64")[1].tolist() == [-(2**63), -(2**63), 0]


_why = dmlapi.missing()


@pytest.mark.skipif(_why is not None, reason=f"DirectML's API under Wine is not set up ({_why})")
def test_directml_converts_values_so() -> None:
    for dtype, pairs in CONVERSIONS.items():
        for value, want in pairs:
            desc = make_desc(DM, {"OutputTensor": tensor(dtype, [2, 2]), "Offset": 0, "Value": value})
            got = dmlapi.execute(desc, {}).output
            assert got[0, 0].item() == want, (dtype, value, got[0, 0])


# -- candidates and graphs -------------------------------------------------------------------------------


def test_the_dml_target_emits_eye_like_and_trilu() -> None:
    def nodes(op: str, fields: dict[str, Any], target: str) -> list[str]:
        return [n.op_type for n in lowering.lower(make_desc(op, fields), "t", target=target).graph.node]

    eye = {"OutputTensor": tensor("INT8", [2, 3, 4]), "Offset": -1, "Value": 1.0}
    assert nodes(DM, eye, "dml") == ["ConstantOfShape", "EyeLike", "Expand"]
    assert "EyeLike" not in nodes(DM, eye, "portable") and "EyeLike" not in nodes(DM, eye | {"Value": 2.0}, "dml")
    tri = {
        "InputTensor": tensor("UINT16", [3, 4]),
        "OutputTensor": tensor("UINT16", [3, 4]),
        "ValueDataType": "UINT16",
        "Value": 0,
        "DiagonalFillBegin": INT_MIN,
        "DiagonalFillEnd": 2,
    }
    assert nodes(DM1, tri, "dml") == ["Trilu"]
    assert nodes(DM1, tri | {"DiagonalFillBegin": 0, "DiagonalFillEnd": INT_MAX}, "dml") == ["Trilu"]
    assert "Trilu" not in nodes(DM1, tri | {"Value": 1}, "dml")
    assert "Trilu" not in nodes(DM1, tri | {"DiagonalFillBegin": 0}, "dml")
    eye1 = {"OutputTensor": tensor("FLOAT16", [3, 4]), "ValueDataType": "FLOAT16", "Value": 1}
    assert nodes(DM1, eye1 | {"DiagonalFillBegin": 2, "DiagonalFillEnd": 3}, "dml") == ["ConstantOfShape", "EyeLike"]


@pytest.mark.parametrize("dtype", TYPES)
def test_graphs_on_every_ep(dtype: str) -> None:
    """Every candidate on every target passes the static DirectML EP check, and the `portable`
    and `cuda` graphs use EyeLike, Trilu and Where only on the types the CPU and CUDA EPs take
    (EyeLike: FLOAT, DOUBLE, INT32, INT64, UINT64; Trilu on the CPU EP: FLOAT, FLOAT16, DOUBLE,
    INT32, INT64; Where: onnxruntime's cuda/tensor/where.cc)."""
    allowed = {
        "EyeLike": {1, 11, 6, 7, 13},
        "Trilu": {1, 10, 11, 6, 7},
        "Where": {1, 10, 11, 6, 7, 2},
    }
    for op, fields in (
        (DM, {"OutputTensor": tensor(dtype, [2, 3, 4]), "Offset": 1, "Value": 1.0}),
        (DM, {"OutputTensor": tensor(dtype, [3, 4]), "Offset": 0, "Value": 3.0}),
        (
            DM1,
            {
                "OutputTensor": tensor(dtype, [3, 4]),
                "ValueDataType": dtype,
                "Value": 0,
                "DiagonalFillBegin": INT_MIN,
                "DiagonalFillEnd": 1,
            },
        ),
    ):
        for with_input in (False, True) if op == DM1 else (False,):
            f = fields | ({"InputTensor": fields["OutputTensor"]} if with_input else {})
            desc = make_desc(op, f)
            for variant in choices.available(desc, DEFAULT_OPSET):
                for target in ("portable", "cuda", "dml"):
                    model = lowering.lower(desc, "t", target=target, variant=variant)
                    assert dml_ep.check(model) == [], (op, dtype, variant, target)
                    if target == "dml":
                        continue
                    types = {v.name: v.type.tensor_type.elem_type for v in (*model.graph.input, *model.graph.value_info)}
                    types |= {i.name: i.data_type for i in model.graph.initializer}
                    for node in model.graph.node:
                        if node.op_type in allowed:
                            data = node.input[1] if node.op_type == "Where" else node.output[0]
                            assert types.get(data, 1) in allowed[node.op_type], (op, dtype, variant, target, node.op_type)


# -- validation -----------------------------------------------------------------------------------------


BASE1 = {
    "InputTensor": tensor("FLOAT32", [3, 4]),
    "OutputTensor": tensor("FLOAT32", [3, 4]),
    "ValueDataType": "FLOAT32",
    "Value": 1,
    "DiagonalFillBegin": 0,
    "DiagonalFillEnd": 1,
}


@pytest.mark.parametrize(
    ("op", "fields", "path", "text"),
    [
        (DM1, BASE1 | {"ValueDataType": "INT32"}, "desc.ValueDataType", "must be OutputTensor's DataType"),
        (DM1, BASE1 | {"InputTensor": tensor("FLOAT16", [3, 4])}, "desc.InputTensor.DataType", "same DataType"),
        (DM1, BASE1 | {"InputTensor": tensor("FLOAT32", [4, 3])}, "desc.InputTensor.Sizes", "same Sizes"),
        (DM1, BASE1 | {"InputTensor": tensor("FLOAT32", [1, 3, 4])}, "desc.InputTensor.Sizes", "same DimensionCount"),
        (DM1, BASE1 | {"OutputTensor": tensor("FLOAT32", [12])}, "desc.OutputTensor", "2 to 4"),
        (DM1, BASE1 | {"DiagonalFillEnd": 2**31}, "desc.DiagonalFillEnd", "INT"),
        (DM1, BASE1 | {"DiagonalFillBegin": 0.5}, "desc.DiagonalFillBegin", "INT"),
        (DM, {"OutputTensor": tensor("FLOAT32", [2, 2, 2, 2, 2]), "Offset": 0, "Value": 1.0}, "desc.OutputTensor", "2 to 4"),
        (DM, {"OutputTensor": tensor("FLOAT32", [2, 2]), "Offset": -(2**31) - 1, "Value": 1.0}, "desc.Offset", "INT"),
        (DM, {"OutputTensor": tensor("FLOAT32", [2, 2]), "Offset": 0}, "desc.Value", "required"),
    ],
)
def test_invalid(op: str, fields: dict[str, Any], path: str, text: str) -> None:
    e = refusal(op, fields)
    assert format_path(e.path).startswith(path) and text in str(e), (format_path(e.path), str(e))


def test_invalid_model_exits_2(tmp_path: Any) -> None:
    model = {
        "resources": {"y": {"initialValuesDataType": "INT32", "initialValues": [0, 0, 0, 0]}},
        "dispatchables": {
            "eye": {"type": "DML_OPERATOR_DIAGONAL_MATRIX1", "desc": BASE1 | {"OutputTensor": tensor("INT32", [2, 2])}}
        },
        "commands": [{"type": "dispatch", "dispatchable": "eye", "bindings": {"OutputTensor": "y"}}],
    }
    del model["dispatchables"]["eye"]["desc"]["InputTensor"]
    path = tmp_path / "m.json"
    path.write_text(json.dumps(model))
    code, _, err = run_cli("run", str(path))
    assert code == 2 and "dispatchables.eye.desc.ValueDataType" in err, err


def test_rows_are_the_adopted_operators() -> None:
    assert set(ROWS) == set(registry.family("DIAGONAL_MATRIX").operators)


# -- properties ------------------------------------------------------------------------------------------

EDGES = (0, 1, -1, 2, -3, 7, -7, INT_MIN, INT_MAX, INT_MIN + 1, INT_MAX - 1)


def _typed_pool(dtype: np.dtype) -> list[Any]:
    if dtype.kind == "f":
        return [0, -0.0, 1, 7.5, "nan", "-inf"]
    info = np.iinfo(dtype)
    pool = [0, 1, int(info.min), int(info.max)]
    return pool + ([2**53 + 1] if dtype.itemsize == 8 and dtype.kind == "u" else [])


@st.composite
def cases(draw: st.DrawFn) -> tuple[str, dict[str, Any], dict[str, np.ndarray]]:
    op = draw(st.sampled_from([DM, DM1]))
    dtype = draw(st.sampled_from(TYPES))
    rank = draw(st.integers(2, 4))
    shape = tuple(draw(st.integers(1, 6)) for _ in range(rank))
    fields: dict[str, Any] = {"OutputTensor": tensor(dtype, shape)}
    feeds: dict[str, np.ndarray] = {}
    bound = st.one_of(st.sampled_from(EDGES), st.integers(-8, 8))
    if op == DM:
        value = draw(st.sampled_from([1.0, -0.0, 2.5, -10.6, 300.0, 1e10, float("nan"), 2.0**63, -1.0]))
        return op, fields | {"Offset": draw(bound), "Value": value}, feeds
    fields |= {"ValueDataType": dtype, "Value": draw(st.sampled_from(_typed_pool(np.dtype(dtype.lower()))))}
    fields |= {"DiagonalFillBegin": draw(bound), "DiagonalFillEnd": draw(bound)}
    if draw(st.booleans()):
        fields["InputTensor"] = tensor(dtype, shape)
        rng = np.random.default_rng(draw(SEEDS))
        pool = _typed_pool(np.dtype(dtype.lower()))
        feeds["InputTensor"] = (
            np.array(
                [float(v) if isinstance(v, str) else v for v in rng.choice(np.array(pool, dtype=object), size=shape).ravel()],
                dtype=object,
            )
            .astype(dtype.lower())
            .reshape(shape)
        )
    return op, fields, feeds


@EPS
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=cases())
def test_every_candidate_matches_reference(ep: str, case: tuple[str, dict[str, Any], dict[str, np.ndarray]]) -> None:
    op, fields, feeds = case
    every_variant(op, fields, feeds, ep)


@settings(max_examples=60, deadline=None)
@given(case=cases())
def test_reference_matches_the_pages_pseudocode(case: tuple[str, dict[str, Any], dict[str, np.ndarray]]) -> None:
    """The reference against the pages' loops, element by element, in Python integers."""
    op, fields, feeds = case
    desc = make_desc(op, fields)
    got = registry.family(op).reference(desc, feeds)
    from dml2onnx.ops.diagonal_matrix import value

    v = value(desc).tobytes()
    for index in np.ndindex(got.shape):
        y, x = index[-2:]
        if op == DM:
            use = y + fields["Offset"] == x
        else:
            begin, end, top_x = fields["DiagonalFillBegin"], fields["DiagonalFillEnd"], x - y
            use = (end >= begin) ^ (top_x >= begin) ^ (top_x < end)
        other = feeds["InputTensor"][index].tobytes() if "InputTensor" in feeds else bytes(got.itemsize)
        assert got[index].tobytes() == (v if use else other), (index, got[index])
