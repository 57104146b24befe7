"""HARD_SWISH, SWISH and PARAMETERIZED_RELU (dml2onnx/ops/activation_more.py): by hand, what
DirectML's own API computed (onnxruntime-directml 1.24.4 under Wine), validation, the `dml` target's
PRelu node, and properties over random shapes, types and special values against the numpy
reference. The matrix (dml2onnx/cases/activation_more.py) runs them on every EP present and through
DirectML's API."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dml2onnx import lowering
from dml2onnx.cases.activation_more import PARAMS
from dml2onnx.core import operator_table
from dml2onnx.core.desc import parse_operator_desc
from dml2onnx.core.errors import ModelError, format_path
from dml2onnx.graph import dml_ep
from dml2onnx.ops import activation_more, registry
from strategies import SEEDS, element_values, shapes
from support import EPS, assert_matches_reference, lowered_and_reference, make_desc, refusal, tensor

PRELU = "ACTIVATION_PARAMETERIZED_RELU"
X = [-np.inf, -4.0, -3.0, -1.0, -0.0, 0.0, 0.5, 1.0, 3.0, 4.0, np.inf, np.nan]


def unary(op: str, dtype: str, x: list[Any], **params: Any) -> tuple[np.ndarray, np.ndarray]:
    a = np.array([x], dtype=dtype.lower())
    fields = {"InputTensor": tensor(dtype, a.shape), "OutputTensor": tensor(dtype, a.shape), **params}
    return lowered_and_reference("cpu", op, fields, {"InputTensor": a})


def prelu(dtype: str, x: list[Any], slope: list[Any]) -> tuple[np.ndarray, np.ndarray]:
    a, s = np.array([x], dtype=dtype.lower()), np.array([slope], dtype=dtype.lower())
    fields = {n: tensor(dtype, a.shape) for n in ("InputTensor", "SlopeTensor", "OutputTensor")}
    return lowered_and_reference("cpu", PRELU, fields, {"InputTensor": a, "SlopeTensor": s})


# -- by hand: what DirectML's API computed --------------------------------------------------------


@pytest.mark.parametrize(
    ("alpha", "beta", "want"),
    [
        # x * max(0, min(1, Alpha * x + Beta)): -inf * 0 is NaN, as in DirectML
        (1 / 6, 0.5, [np.nan, -0.0, -0.0, -1 / 3, -0.0, 0.0, 0.2916666567, 2 / 3, 3.0, 4.0, np.inf, np.nan]),
        (-0.5, 0.25, [-np.inf, -4.0, -3.0, -0.75, -0.0, 0.0, 0.0, 0.0, 0.0, 0.0, np.nan, np.nan]),
        # a NaN Alpha * x + Beta is clamped to 0: an infinite Alpha at x = 0, a NaN Alpha
        (np.inf, 0.5, [np.nan, -0.0, -0.0, -0.0, -0.0, 0.0, 0.5, 1.0, 3.0, 4.0, np.inf, np.nan]),
        (np.nan, 0.5, [np.nan, -0.0, -0.0, -0.0, -0.0, 0.0, 0.0, 0.0, 0.0, 0.0, np.nan, np.nan]),
    ],
)
def test_hard_swish_as_directml(alpha: float, beta: float, want: list[float]) -> None:
    got, ref = unary("ACTIVATION_HARD_SWISH", "FLOAT32", X, Alpha=alpha, Beta=beta)
    np.testing.assert_allclose(got[0], want, rtol=1e-6)
    number = ~np.isnan(np.array(want))
    np.testing.assert_array_equal(np.signbit(got[0])[number], np.signbit(np.array(want))[number])
    np.testing.assert_allclose(ref[0], want, rtol=1e-6)


@pytest.mark.parametrize(
    ("scale", "want"),
    [
        (1.0, [np.nan, -0.0719448, -0.1422776, -0.2689414, -0.0, 0.0, 0.3112297, 0.7310585, 2.8577223, 3.928055, np.inf, np.nan]),
        # scale 0: x / 2, but 0 * inf is NaN; scale -2: x * sigmoid(-2x)
        (0.0, [np.nan, -2.0, -1.5, -0.5, -0.0, 0.0, 0.25, 0.5, 1.5, 2.0, np.nan, np.nan]),
        (
            -2.0,
            [-np.inf, -3.9986587, -2.9925823, -0.8807970, -0.0, 0.0, 0.1344707, 0.1192029, 0.0074179, 0.0013414, np.nan, np.nan],
        ),
    ],
)
def test_swish_as_directml(scale: float, want: list[float]) -> None:
    got, ref = unary("ACTIVATION_SWISH", "FLOAT32", X, SigmoidInputScale=scale)
    np.testing.assert_allclose(got[0], want, rtol=1e-3)  # ONNX Runtime's CPU Sigmoid: 2e-4 off at -8
    np.testing.assert_allclose(ref[0], want, rtol=1e-5)


@pytest.mark.parametrize("dtype", ["INT8", "INT16", "INT32"])
def test_prelu_of_integers_wraps(dtype: str) -> None:
    """slope * x wraps modulo 2**bits (INT8: -128 * -1 = -128, -100 * 100 = -16); x >= 0 passes."""
    info = np.iinfo(dtype.lower())
    lo, hi = int(info.min), int(info.max)
    x = [lo, lo, -3, -1, 0, 5, hi, -100, -2]
    slope = [-1, 2, -3, hi, lo, -7, 2, 100, lo]
    wrapped = {"INT8": -16, "INT16": -10000, "INT32": -10000}[dtype]
    want = [lo, 0, 9, -hi, 0, 5, hi, wrapped, 0]
    got, ref = prelu(dtype, x, slope)
    assert got.tolist() == ref.tolist() == [want]


def test_prelu_of_float_specials() -> None:
    """x >= 0 passes x as it is (-0 stays -0 whatever the slope); slope * x otherwise, NaN included."""
    x = [-np.inf, -2.0, -0.0, 0.0, np.nan, np.inf, -1.0, 3.0, -1e-45]
    slope = [0.0, np.nan, np.inf, np.nan, 2.0, -1.0, -np.inf, np.nan, 1e30]
    want = [np.nan, np.nan, -0.0, 0.0, np.nan, np.inf, np.inf, 3.0, -1.4e-15]
    got, ref = prelu("FLOAT32", x, slope)
    np.testing.assert_allclose(got[0], want, rtol=1e-3)
    np.testing.assert_allclose(ref[0], want, rtol=1e-3)
    assert np.signbit(got[0][2])


def test_prelu_slope_broadcast_through_zero_strides() -> None:
    x = np.arange(-6, 6, dtype=np.float32).reshape(1, 3, 2, 2)
    slope = np.broadcast_to(np.array([1, 2, 3], np.float32).reshape(1, 3, 1, 1), x.shape).copy()
    fields = {
        "InputTensor": tensor("FLOAT32", x.shape),
        "SlopeTensor": tensor("FLOAT32", x.shape) | {"Strides": [0, 1, 0, 0]},
        "OutputTensor": tensor("FLOAT32", x.shape),
    }
    got, ref = lowered_and_reference("cpu", PRELU, fields, {"InputTensor": x, "SlopeTensor": slope})
    np.testing.assert_array_equal(got, np.where(x >= 0, x, slope * x))
    np.testing.assert_array_equal(ref, got)


# -- the `dml` target -----------------------------------------------------------------------------


def _ops(op: str, fields: dict[str, Any], target: str) -> list[str]:
    return [n.op_type for n in lowering.lower(make_desc(op, fields), "t", target=target).graph.node]


@pytest.mark.parametrize("dtype", ["FLOAT32", "FLOAT16", "INT32"])
def test_dml_target_emits_prelu(dtype: str) -> None:
    """PRelu: the node the DirectML EP maps back onto ACTIVATION_PARAMETERIZED_RELU."""
    fields = {n: tensor(dtype, [2, 3]) for n in ("InputTensor", "SlopeTensor", "OutputTensor")}
    assert _ops(PRELU, fields, "dml") == ["PRelu"]
    model = lowering.lower(make_desc(PRELU, fields), "t", target="portable")
    assert dml_ep.check(model) == []


def test_dml_target_keeps_the_integer_graph_where_onnx_prelu_has_no_type() -> None:
    fields = {n: tensor("INT8", [2, 3]) for n in ("InputTensor", "SlopeTensor", "OutputTensor")}
    assert "PRelu" not in _ops(PRELU, fields, "dml")


def test_no_hard_swish_node_while_the_directml_ep_lacks_it() -> None:
    """ONNX HardSwish (Alpha 1/6, Beta 0.5 only) is not in the DirectML EP's registrations."""
    assert not dml_ep.takes("HardSwish", 17, T="FLOAT")
    fields = {"InputTensor": tensor("FLOAT32", [4]), "OutputTensor": tensor("FLOAT32", [4]), "Alpha": 1 / 6, "Beta": 0.5}
    assert "HardSwish" not in _ops("ACTIVATION_HARD_SWISH", fields, "dml")


# -- validation -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("op", "change", "path", "text"),
    [
        # DirectML's CreateOperator refuses these too (E_INVALIDARG, measured)
        (PRELU, {"SlopeTensor": tensor("FLOAT32", [1, 3])}, "desc.SlopeTensor.Sizes", "same Sizes"),
        (PRELU, {"SlopeTensor": tensor("FLOAT16", [2, 3])}, "desc.SlopeTensor.DataType", "same DataType"),
        (PRELU, {"SlopeTensor": tensor("FLOAT32", [6])}, "desc.SlopeTensor.Sizes", "DimensionCount"),
        (PRELU, {"OutputTensor": tensor("INT32", [2, 3])}, "desc.OutputTensor.DataType", "same DataType"),
        ("ACTIVATION_SWISH", {"OutputTensor": tensor("FLOAT32", [3, 2])}, "desc.OutputTensor.Sizes", "same Sizes"),
        ("ACTIVATION_HARD_SWISH", {"Alpha": "x"}, "desc.Alpha", ""),
    ],
)
def test_invalid(op: str, change: dict[str, Any], path: str, text: str) -> None:
    names = [f.name for f in operator_table.OPERATORS[op].fields if f.kind.name in ("INPUT", "OUTPUT")]
    fields = {n: tensor("FLOAT32", [2, 3]) for n in names} | PARAMS[op][0] | change
    e = refusal(op, fields)
    assert format_path(e.path) == path and text in str(e), str(e)


def test_hard_swish_parameters_have_no_defaults() -> None:
    """The page's "typical" Alpha 1/6 and Beta 0.5 are not defaults: DML_ACTIVATION_HARD_SWISH_OPERATOR_DESC
    has no optional fields, so a desc must set both."""
    e = refusal("ACTIVATION_HARD_SWISH", {n: tensor("FLOAT32", [2, 3]) for n in ("InputTensor", "OutputTensor")} | {"Alpha": 0.2})
    assert format_path(e.path) == "desc.Beta" and "required" in str(e)


@pytest.mark.parametrize(
    ("op", "dtype", "level"),
    [
        (PRELU, "INT32", "5_0"),  # integers from 5_1
        ("ACTIVATION_HARD_SWISH", "FLOAT32", "6_1"),  # the operator from 6_2
        ("ACTIVATION_SWISH", "INT32", None),
        ("ACTIVATION_HARD_SWISH", "FLOAT64", None),
    ],
)
def test_types_and_levels(op: str, dtype: str, level: str | None) -> None:
    names = [f.name for f in operator_table.OPERATORS[op].fields if f.kind.name in ("INPUT", "OUTPUT")]
    fields = {n: tensor(dtype, [2, 3]) for n in names} | PARAMS[op][0]
    with pytest.raises(ModelError):
        desc = parse_operator_desc(op, fields, ("desc",), ("type",), **({"level": level} if level else {}))
        lowering.validate(desc)


def test_rows_are_the_adopted_operators() -> None:
    assert set(activation_more.ROWS) == set(registry.family("ACTIVATION_HARD_SWISH").operators)


# -- properties -----------------------------------------------------------------------------------


@st.composite
def cases(draw: st.DrawFn) -> tuple[str, dict[str, Any], dict[str, np.ndarray]]:
    op = draw(st.sampled_from(sorted(activation_more.ROWS)))
    schema_op = operator_table.OPERATORS[op]
    dtype = draw(st.sampled_from([d.name for d in schema_op.support[0].tensors["OutputTensor"].types]))
    shape = draw(shapes())
    rng = np.random.default_rng(draw(SEEDS))
    names = [f.name for f in schema_op.fields if f.kind.name == "INPUT"]
    np_type = np.dtype(dtype.lower())
    feeds = {n: element_values(rng, shape, np_type, draw(st.sampled_from([0.5, 3.0, 100.0]))) for n in names}
    fields: dict[str, Any] = {n: tensor(dtype, shape) for n in [*names, "OutputTensor"]}
    if op == "ACTIVATION_HARD_SWISH":
        fields |= {"Alpha": draw(st.floats(-2, 2, width=32)), "Beta": draw(st.floats(-2, 2, width=32))}
    elif op == "ACTIVATION_SWISH":
        fields["SigmoidInputScale"] = draw(st.floats(-4, 4, width=32))
    return op, fields, feeds


@EPS
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=cases())
def test_matches_reference(ep: str, case: tuple[str, dict[str, Any], dict[str, np.ndarray]]) -> None:
    op, fields, feeds = case
    assert_matches_reference(ep, op, fields, feeds)
