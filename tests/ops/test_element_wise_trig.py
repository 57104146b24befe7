"""The inverse trigonometric and hyperbolic operators (dml2onnx/ops/element_wise_trig.py): values
by hand (IEEE special values, as DirectML's API computes them where the pages are silent),
validation, accuracy of the formulas the CUDA EP runs over dense sweeps, the patterns of each
target, and properties against the numpy reference."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dml2onnx import lowering
from dml2onnx.backends import runtime
from dml2onnx.core import operator_table
from dml2onnx.core.errors import format_path
from dml2onnx.graph import dml_ep
from dml2onnx.ops import registry
from dml2onnx.ops.element_wise_trig import ROWS
from strategies import FLOAT_SPECIALS, SEEDS, element_values, shapes
from support import EPS, assert_matches_reference, make_desc, refusal, tensor

UNARY = sorted(n for n in ROWS if n != "ELEMENT_WISE_ATAN_YX")
INF, NAN = math.inf, math.nan


def unary(op: str, x: list[float], dtype: str = "FLOAT32", target: str = "portable", **extra: Any) -> np.ndarray:
    a = np.array(x, dtype=dtype.lower())
    desc = make_desc(op, {"InputTensor": tensor(dtype, a.shape), "OutputTensor": tensor(dtype, a.shape), **extra})
    return runtime.create(lowering.lower(desc, "t", target=target), "t", "cpu").run({"InputTensor": a})


def atan2(y: list[float], x: list[float], target: str = "portable") -> np.ndarray:
    a, b = np.array(y, np.float32), np.array(x, np.float32)
    desc = make_desc("ELEMENT_WISE_ATAN_YX", {n: tensor("FLOAT32", a.shape) for n in ("ATensor", "BTensor", "OutputTensor")})
    return runtime.create(lowering.lower(desc, "t", target=target), "t", "cpu").run({"ATensor": a, "BTensor": b})


# -- by hand: the special values DirectML's API computed -------------------------------------------


@pytest.mark.parametrize(
    ("op", "x", "want"),
    [
        ("ELEMENT_WISE_ACOS", [1.0, -1.0, 1.0000001, -1.0000001, 2.0, INF, NAN], [0.0, math.pi, NAN, NAN, NAN, NAN, NAN]),
        ("ELEMENT_WISE_ASIN", [1.0, -1.0, 1.0000001, -INF, NAN], [math.pi / 2, -math.pi / 2, NAN, NAN, NAN]),
        ("ELEMENT_WISE_ATAN", [INF, -INF, 3e38, 0.0, NAN], [math.pi / 2, -math.pi / 2, math.pi / 2, 0.0, NAN]),
        ("ELEMENT_WISE_ATANH", [1.0, -1.0, 1.0000001, -2.0, INF, 0.0, NAN], [INF, -INF, NAN, NAN, NAN, 0.0, NAN]),
        ("ELEMENT_WISE_ACOSH", [1.0, 0.99999994, -1.0, 0.0, INF, -INF, NAN], [0.0, NAN, NAN, NAN, INF, NAN, NAN]),
        ("ELEMENT_WISE_ASINH", [INF, -INF, 0.0, NAN], [INF, -INF, 0.0, NAN]),
        ("ELEMENT_WISE_SINH", [INF, -INF, 1e4, -1e4, 0.0, NAN], [INF, -INF, INF, -INF, 0.0, NAN]),
        ("ELEMENT_WISE_COSH", [INF, -INF, -1e4, 0.0, NAN], [INF, INF, INF, 1.0, NAN]),
        ("ELEMENT_WISE_TAN", [INF, -INF, 0.0, NAN], [NAN, NAN, 0.0, NAN]),
    ],
)
@pytest.mark.parametrize("target", ["portable", "cpu"])
def test_special_values(op: str, x: list[float], want: list[float], target: str) -> None:
    np.testing.assert_array_equal(unary(op, x, target=target), np.array(want, np.float32))


@pytest.mark.parametrize("target", ["portable", "cpu"])
def test_atan_yx_signed_zeros_and_infinities(target: str) -> None:
    """atan2's IEEE values, which DirectML computes too: the origin (undefined on the page) by the
    signs of its zeros, the infinities at odd multiples of pi/4."""
    y = [0.0, -0.0, 0.0, -0.0, INF, INF, -INF, -INF, 1.0, -1.0, 0.0, 1.0, NAN, 1.0]
    x = [0.0, 0.0, -0.0, -0.0, INF, -INF, INF, -INF, -INF, -INF, -1.0, 0.0, 1.0, NAN]
    got = atan2(y, x, target)
    want = np.arctan2(np.array(y), np.array(x)).astype(np.float32)
    np.testing.assert_allclose(got, want, rtol=1e-7)
    # all but atan2(-0, +0), which comes out +0 on the CPU EP (open: the sign flip of a +0 angle)
    keep = np.arange(len(y)) != 1
    assert (np.signbit(got) == np.signbit(want))[keep].all(), (got, want)


def test_sinh_and_cosh_finite_up_to_their_own_overflow() -> None:
    """exp(x) overflows at 88.73, sinh(x) and cosh(x) only at 89.42 (DirectML gives inf from 88.73:
    a finding, tests/dml_findings.py)."""
    x = [88.8, 89.0, 89.41, -89.41, 89.42]
    for op, f in (("ELEMENT_WISE_SINH", np.sinh), ("ELEMENT_WISE_COSH", np.cosh)):
        got = unary(op, x)
        want = f(np.array(x, np.float32).astype(np.float64)).astype(np.float32)
        assert np.isinf(got[-1]) and np.isfinite(got[:-1]).all(), (op, got)
        np.testing.assert_allclose(got[:-1], want[:-1], rtol=4e-7)


def test_huge_arguments_of_the_inverse_hyperbolics() -> None:
    """x * x overflows past 1.8e19: asinh and acosh take log(|x|) + log(2) there."""
    x = np.array([1e19, 1e30, 3e38, -3e38], np.float32)
    np.testing.assert_allclose(unary("ELEMENT_WISE_ASINH", list(x)), np.arcsinh(x.astype(np.float64)), rtol=3e-7)
    np.testing.assert_allclose(unary("ELEMENT_WISE_ACOSH", list(x[:3])), np.arccosh(x[:3].astype(np.float64)), rtol=3e-7)


# -- accuracy of the formulas (the `portable` and `cuda` graphs) ------------------------------------


def _sweep() -> np.ndarray:
    rng = np.random.default_rng(5)
    logs = np.logspace(-45, 38.5, 40000).astype(np.float32)
    lin = [np.linspace(-1.05, 1.05, 40001, dtype=np.float32), np.linspace(-100, 100, 40001, dtype=np.float32)]
    bounds = (0.5, 1.0, 0.41421357, 2.4142135, 1500.0, 88.72, 89.41)
    near = [np.float32(c) + np.arange(-300, 300, dtype=np.float32) * np.spacing(np.float32(c)) for c in bounds]
    x = np.concatenate([logs, -logs, *lin, *near, *[-n for n in near]])
    return rng.permutation(x)


def _ulps(got: np.ndarray, want: np.ndarray) -> float:
    w = want.astype(np.float32)
    finite = np.isfinite(w) & np.isfinite(got)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_array_equal(got[~finite], w[~finite])
    err = np.abs(got[finite].astype(np.float64) - want[finite]) / np.spacing(np.abs(w[finite])).astype(np.float64)
    return float(err.max(initial=0))


# the most FLOAT32 ulps measured on the CPU EP over _sweep (ONNX Runtime's own Acos, Asin, Atan
# on the CPU EP reach 4.1, 4.1 and 3.7 there; Sinh's 4.9 comes from the EP's tanh)
ULPS = {
    "ELEMENT_WISE_ACOS": 2,
    "ELEMENT_WISE_ACOSH": 3,
    "ELEMENT_WISE_ASIN": 3,
    "ELEMENT_WISE_ASINH": 4.5,
    "ELEMENT_WISE_ATAN": 3,
    "ELEMENT_WISE_ATANH": 2,
    "ELEMENT_WISE_TAN": 4.5,
    "ELEMENT_WISE_SINH": 5.5,
    "ELEMENT_WISE_COSH": 3,
}


@pytest.mark.parametrize("op", UNARY)
def test_formula_accuracy(op: str) -> None:
    x = _sweep()
    with np.errstate(all="ignore"):
        want = ROWS[op].reference([x.astype(np.float64)], {})
    assert _ulps(unary(op, list(x)), want) <= ULPS[op]


def test_atan_yx_accuracy() -> None:
    rng = np.random.default_rng(6)
    x = _sweep()
    y = rng.permutation(x)
    with np.errstate(all="ignore"):
        want = np.arctan2(y.astype(np.float64), x.astype(np.float64))
    assert _ulps(atan2(list(y), list(x)), want) <= 3


# -- targets --------------------------------------------------------------------------------------


def _model(op: str, target: str, **extra: Any) -> Any:
    names = [f.name for f in operator_table.OPERATORS[op].fields if f.kind.name in ("INPUT", "OUTPUT")]
    return lowering.lower(make_desc(op, {n: tensor("FLOAT32", [2, 3]) for n in names} | extra), "t", target=target)


CUDA_OPS = {"Abs", "Neg", "Add", "Sub", "Mul", "Div", "Sqrt", "Log", "Exp", "Sin", "Cos", "Tanh", "Sign"}
CUDA_OPS |= {"Reciprocal", "Min", "Where", "Less", "Greater", "Equal", "Cast"}


@pytest.mark.parametrize("op", sorted(ROWS))
def test_portable_uses_what_every_ep_has(op: str) -> None:
    """The CUDA EP has no Acos, ..., Cosh: the `portable` and `cuda` graphs use only these
    (registered by its unary_elementwise_ops.cc, binary_elementwise_ops.cc, activations and
    where.cc), and the DirectML EP takes every node (static check)."""
    for target in ("portable", "cuda"):
        model = _model(op, target)
        assert {n.op_type for n in model.graph.node} <= CUDA_OPS, op
        if target == "portable":
            assert dml_ep.check(model) == []


@pytest.mark.parametrize("op", UNARY)
def test_cpu_and_dml_targets_emit_the_onnx_op(op: str) -> None:
    onnx_op = {"TAN": "Tan", "SINH": "Sinh", "COSH": "Cosh"}.get(op[13:], op[13:].capitalize())
    for target in ("cpu", "dml"):
        assert [n.op_type for n in _model(op, target).graph.node] == [onnx_op], (op, target)
    # with ScaleBias the dml target keeps the op after the Mul and Add (the DirectML EP has it)
    ops = [n.op_type for n in _model(op, "dml", ScaleBias={"Scale": 2, "Bias": 1}).graph.node]
    assert ops[-1] == onnx_op and "Mul" in ops


def test_atan_yx_has_no_dml_node() -> None:
    assert "Atan" not in {n.op_type for n in _model("ELEMENT_WISE_ATAN_YX", "dml").graph.node}


# -- validation -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("op", "change", "path", "text"),
    [
        ("ELEMENT_WISE_ATAN_YX", {"BTensor": tensor("FLOAT16", [2, 3])}, "desc.BTensor.DataType", "same DataType"),
        ("ELEMENT_WISE_ATAN_YX", {"BTensor": tensor("FLOAT32", [3, 2])}, "desc.BTensor.Sizes", "same Sizes"),
        ("ELEMENT_WISE_ACOS", {"InputTensor": tensor("INT32", [2, 3])}, "desc.InputTensor.DataType", "must be FLOAT32, FLOAT16"),
        ("ELEMENT_WISE_SINH", {"OutputTensor": tensor("FLOAT16", [2, 3])}, "desc.OutputTensor.DataType", "same DataType"),
        ("ELEMENT_WISE_TAN", {"OutputTensor": tensor("FLOAT32", [2, 2])}, "desc.OutputTensor.Sizes", "same Sizes"),
        ("ELEMENT_WISE_ATANH", {"ScaleBias": {"Scale": 1}}, "desc.ScaleBias.Bias", "required"),
        ("ELEMENT_WISE_ATAN_YX", {"ScaleBias": {"Scale": 1, "Bias": 0}}, "desc.ScaleBias", "unknown"),
    ],
)
def test_invalid(op: str, change: dict[str, Any], path: str, text: str) -> None:
    names = [f.name for f in operator_table.OPERATORS[op].fields if f.kind.name in ("INPUT", "OUTPUT")]
    e = refusal(op, {n: tensor("FLOAT32", [2, 3]) for n in names} | change)
    assert format_path(e.path) == path and text in str(e), str(e)


# -- properties -----------------------------------------------------------------------------------


@st.composite
def cases(draw: st.DrawFn) -> tuple[str, dict[str, Any], dict[str, np.ndarray]]:
    op = draw(st.sampled_from(sorted(ROWS)))
    schema_op = operator_table.OPERATORS[op]
    dtype = draw(st.sampled_from([d.name for d in schema_op.support[0].tensors["OutputTensor"].types]))
    shape = draw(shapes())
    rng = np.random.default_rng(draw(SEEDS))
    names = [f.name for f in schema_op.fields if f.kind.name == "INPUT"]
    feeds = {}
    for n in names:
        pool = (*FLOAT_SPECIALS, 1.0, -1.0, 0.5, -0.5, 88.9, 1e-30)
        feeds[n] = element_values(rng, shape, np.dtype(dtype.lower()), draw(st.sampled_from([0.3, 1.0, 3.0, 60.0])), pool)
    fields: dict[str, Any] = {n: tensor(dtype, shape) for n in [*names, "OutputTensor"]}
    if any(f.name == "ScaleBias" for f in schema_op.fields) and draw(st.booleans()):
        fields["ScaleBias"] = {"Scale": draw(st.floats(-4, 4, width=32)), "Bias": draw(st.floats(-4, 4, width=32))}
    return op, fields, feeds


@EPS
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=cases())
def test_matches_reference(ep: str, case: tuple[str, dict[str, Any], dict[str, np.ndarray]]) -> None:
    op, fields, feeds = case
    assert_matches_reference(ep, op, fields, feeds)


def test_rows_are_the_adopted_operators() -> None:
    assert set(ROWS) == set(registry.family("ELEMENT_WISE_ACOS").operators)
