"""RELU_GRAD, CLIP_GRAD and CLIP_GRAD1 (dml2onnx/ops/gradients.py): by hand, what DirectML's own
API computed (onnxruntime-directml 1.24.4 under Wine) at the boundaries (x = 0, x == Min, x == Max),
for NaN and infinite inputs and gradients, integer bounds; validation; properties over random
shapes, types and special values against the numpy reference. The matrix
(dml2onnx/cases/gradients.py) runs them on every EP present and through DirectML's API."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dml2onnx import lowering
from dml2onnx.cases.gradients import _params
from dml2onnx.core import dtypes, operator_table
from dml2onnx.core.desc import parse_operator_desc
from dml2onnx.core.errors import ModelError, format_path
from dml2onnx.graph import dml_ep
from dml2onnx.ops import gradients, registry
from strategies import FLOAT_SPECIALS, SEEDS, element_values, shapes
from support import EPS, assert_matches_reference, lowered_and_reference, make_desc, refusal, tensor

OUT = "OutputGradientTensor"
NAMES = ("InputTensor", "InputGradientTensor", OUT)


def grad(op: str, dtype: str, x: list[Any], dy: list[Any], **params: Any) -> tuple[np.ndarray, np.ndarray]:
    a, g = np.array([x], dtype=dtype.lower()), np.array([dy], dtype=dtype.lower())
    fields = {n: tensor(dtype, a.shape) for n in NAMES} | params
    return lowered_and_reference("cpu", op, fields, {"InputTensor": a, "InputGradientTensor": g})


# -- by hand: what DirectML's API computed --------------------------------------------------------


@pytest.mark.parametrize("dtype", ["FLOAT32", "FLOAT16"])
def test_relu_grad_passes_where_x_is_positive(dtype: str) -> None:
    """dy where x > 0: 0 at x = 0 and -0, and for a NaN x; a NaN or infinite dy elsewhere gives 0.
    FLOAT32's smallest subnormal is positive (not flushed); in FLOAT16 it is 0."""
    x = [-np.inf, -1.0, -0.0, 0.0, 1e-45, 1.0, np.inf, np.nan, -1.0, 2.0, -2.0, 0.0]
    dy = [5.0, 5.0, 5.0, 5.0, 5.0, 5.0, 5.0, 5.0, np.nan, np.nan, np.inf, -np.inf]
    tiny = 5.0 if dtype == "FLOAT32" else 0.0
    want = [0.0, 0.0, 0.0, 0.0, tiny, 5.0, 5.0, 0.0, 0.0, np.nan, 0.0, 0.0]
    got, ref = grad("ACTIVATION_RELU_GRAD", dtype, x, dy)
    np.testing.assert_array_equal(got[0], want)
    np.testing.assert_array_equal(ref[0], want)
    assert not np.signbit(got[0][:5]).any()  # +0 where it does not pass


@pytest.mark.parametrize("dtype", ["INT8", "INT16", "INT32"])
def test_relu_grad_of_integers(dtype: str) -> None:
    info = np.iinfo(dtype.lower())
    lo, hi = int(info.min), int(info.max)
    got, ref = grad("ACTIVATION_RELU_GRAD", dtype, [lo, -1, 0, 1, hi], [lo, hi, -7, lo, -3])
    assert got.tolist() == ref.tolist() == [[0, 0, 0, lo, -3]]


@pytest.mark.parametrize("op", ["ELEMENT_WISE_CLIP_GRAD", "ELEMENT_WISE_CLIP_GRAD1"])
def test_clip_grad_is_zero_at_the_bounds(op: str) -> None:
    """Min < x < Max exclusive, as the pages say (x <= Min or x >= Max: 0); NaN x: 0."""
    x = [-2.0, -1.5, -1.4999999, 0.0, 2.25, 2.2500002, 2.2499998, 3.0, np.nan, -np.inf, np.inf, 1.0]
    dy = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, np.nan]
    params = {"Min": -1.5, "Max": 2.25} | ({"MinMaxDataType": "FLOAT32"} if op.endswith("1") else {})
    got, ref = grad(op, "FLOAT32", x, dy, **params)
    want = [0.0, 0.0, 3.0, 4.0, 0.0, 0.0, 7.0, 0.0, 0.0, 0.0, 0.0, np.nan]
    np.testing.assert_array_equal(got[0], want)
    np.testing.assert_array_equal(ref[0], want)


@pytest.mark.parametrize(
    ("lo", "hi", "want"),
    [
        # FLOAT16 tensors: the FLOAT bounds rounded to FLOAT16 first (0.09997 and 0.1 are both 0.0999756)
        (0.09997, 0.1, [0.0, 0.0, 0.0]),
        (0.09997, 2.0, [0.0, 1.0, 0.0]),
        (0.99999, 1.00001, [0.0, 0.0, 0.0]),
    ],
)
def test_clip_grad_float16_bounds_as_directml(lo: float, hi: float, want: list[float]) -> None:
    got, ref = grad("ELEMENT_WISE_CLIP_GRAD", "FLOAT16", [0.0999755859375, 1.0, 65504.0], [1.0] * 3, Min=lo, Max=hi)
    assert got.tolist() == ref.tolist() == [want]


@pytest.mark.parametrize(("lo", "hi"), [(3.0, -1.0), (float("nan"), 2.25)])
def test_clip_grad_empty_range(lo: float, hi: float) -> None:
    """Min > Max, or a NaN bound: nothing passes (DirectML gave 0 everywhere)."""
    got, ref = grad("ELEMENT_WISE_CLIP_GRAD", "FLOAT32", [-2.0, 0.0, 1.0, 2.0, 4.0], [1.0] * 5, Min=lo, Max=hi)
    assert got.tolist() == ref.tolist() == [[0.0] * 5]


@pytest.mark.parametrize(
    ("dtype", "lo", "hi", "want"),
    [
        # FLOAT bounds truncated toward zero, then saturated to the type, as CLIP's: (-2.5, 2.5) is (-2, 2)
        ("INT8", -2.5, 2.5, [0, 0, 0, 7, 7, 7, 0, 0, 0, 0]),
        ("INT8", -1.5, 3.7, [0, 0, 0, 0, 7, 7, 7, 0, 0, 0]),
        ("INT8", -1e10, 1e10, [0, 7, 7, 7, 7, 7, 7, 7, 7, 0]),  # (-128, 127): the ends do not pass
        ("INT32", 0.5, 1000.0, [0, 0, 0, 0, 0, 7, 7, 7, 7, 0]),
        ("UINT8", -2.5, 2.5, [0, 7, 0, 0, 0, 0]),  # (0, 2)
        ("UINT32", -1e10, 1e10, [0, 7, 7, 7, 7, 0]),  # (0, 2**32 - 1)
    ],
)
def test_clip_grad_integer_bounds_as_directml(dtype: str, lo: float, hi: float, want: list[int]) -> None:
    info = np.iinfo(dtype.lower())
    x = [v for v in [int(info.min), -3, -2, -1, 0, 1, 2, 3, 4, int(info.max)] if info.min <= v <= info.max]
    x = sorted(set(x))
    got, ref = grad("ELEMENT_WISE_CLIP_GRAD", dtype, x, [7] * len(x), Min=lo, Max=hi)
    assert got.tolist() == ref.tolist() == [want]


def test_clip_grad1_exact_64_bit_bounds() -> None:
    """CLIP_GRAD1's scalar unions are exact: 2**53 + 1 passes below a Max of 2**53 + 2 (UINT64, which
    DirectML compares right; its INT64 order is the README's finding)."""
    x = [0, 1, 2**31, 2**32 + 1, 2**53 + 1, 2**53 + 2, 2**62 + 3, 2**64 - 1]
    dy = [7] * 7 + [2**64 - 1]
    got, ref = grad("ELEMENT_WISE_CLIP_GRAD1", "UINT64", x, dy, MinMaxDataType="UINT64", Min=0, Max=2**53 + 2)
    assert got.tolist() == ref.tolist() == [[0, 7, 7, 7, 7, 0, 0, 0]]


def test_graphs_run_on_the_directml_ep() -> None:
    for op in gradients.ROWS:
        for dtype in operator_table.OPERATORS[op].support[0].tensors[OUT].types:
            fields = {n: tensor(dtype.name, [2, 3]) for n in NAMES} | _params(op, dtype)[0]
            assert dml_ep.check(lowering.lower(make_desc(op, fields), "t")) == [], (op, dtype)


# -- validation -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("op", "change", "path", "text"),
    [
        ("ACTIVATION_RELU_GRAD", {"InputGradientTensor": tensor("FLOAT16", [2, 3])}, "desc.InputGradientTensor.DataType", "same"),
        ("ACTIVATION_RELU_GRAD", {OUT: tensor("FLOAT32", [3, 2])}, f"desc.{OUT}.Sizes", "same Sizes"),
        ("ACTIVATION_RELU_GRAD", {"InputGradientTensor": tensor("FLOAT32", [6])}, "desc.InputGradientTensor.Sizes", "Dimension"),
        ("ELEMENT_WISE_CLIP_GRAD", {OUT: tensor("FLOAT16", [2, 3])}, f"desc.{OUT}.DataType", "same DataType"),
        ("ELEMENT_WISE_CLIP_GRAD", {"Max": "x"}, "desc.Max", ""),
        ("ELEMENT_WISE_CLIP_GRAD1", {"MinMaxDataType": "FLOAT16"}, "desc.MinMaxDataType", f"{OUT}.DataType"),
    ],
)
def test_invalid(op: str, change: dict[str, Any], path: str, text: str) -> None:
    fields = {n: tensor("FLOAT32", [2, 3]) for n in NAMES} | _params(op, dtypes.FLOAT32)[0] | change
    e = refusal(op, fields)
    assert format_path(e.path) == path and text in str(e), str(e)


@pytest.mark.parametrize(
    ("op", "dtype", "level"),
    [
        ("ACTIVATION_RELU_GRAD", "INT32", "5_0"),  # integers from 5_1
        ("ACTIVATION_RELU_GRAD", "UINT32", None),
        ("ELEMENT_WISE_CLIP_GRAD", "INT64", "4_1"),  # 64-bit types from 5_0
        ("ELEMENT_WISE_CLIP_GRAD", "FLOAT32", "3_0"),  # the operator from 3_1
        ("ELEMENT_WISE_CLIP_GRAD1", "FLOAT64", None),
    ],
)
def test_types_and_levels(op: str, dtype: str, level: str | None) -> None:
    fields = {n: tensor(dtype, [2, 3]) for n in NAMES} | _params(op, dtypes.FLOAT32)[0]
    if op.endswith("1"):
        fields["MinMaxDataType"] = dtype
    with pytest.raises(ModelError):
        lowering.validate(parse_operator_desc(op, fields, ("desc",), ("type",), **({"level": level} if level else {})))


def test_rows_are_the_adopted_operators() -> None:
    assert set(gradients.ROWS) == set(registry.family("ACTIVATION_RELU_GRAD").operators)


# -- properties -----------------------------------------------------------------------------------


@st.composite
def cases(draw: st.DrawFn) -> tuple[str, dict[str, Any], dict[str, np.ndarray]]:
    op = draw(st.sampled_from(sorted(gradients.ROWS)))
    dtype = draw(st.sampled_from(operator_table.OPERATORS[op].support[0].tensors[OUT].types))
    shape = draw(shapes())
    rng = np.random.default_rng(draw(SEEDS))
    pool = (*FLOAT_SPECIALS, -1.0, 2.5)
    feeds = {n: element_values(rng, shape, dtype.numpy, draw(st.sampled_from([0.5, 3.0, 100.0])), pool) for n in NAMES[:2]}
    fields: dict[str, Any] = {n: tensor(dtype.name, shape) for n in NAMES}
    if op == "ELEMENT_WISE_CLIP_GRAD":
        fields |= {"Min": draw(st.floats(-300, 300, width=32)), "Max": draw(st.floats(-300, 300, width=32))}
    elif op == "ELEMENT_WISE_CLIP_GRAD1":
        fields |= draw(st.sampled_from(_params(op, dtype)))
    return op, fields, feeds


@EPS
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=cases())
def test_matches_reference(ep: str, case: tuple[str, dict[str, Any], dict[str, np.ndarray]]) -> None:
    op, fields, feeds = case
    assert_matches_reference(ep, op, fields, feeds)
