"""The 17 fusable activations as standalone operators: hand-computed values from each page's
formula (boundaries included), properties over ranks 1-8, both float types, the integer types of
RELU and SHRINK and random parameters on ONNX Runtime against the numpy reference, invalid descs
and feature-level gating."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dml2onnx import lowering
from dml2onnx.cases.common import ACTIVATIONS
from dml2onnx.core import dtypes
from dml2onnx.core.desc import parse_operator_desc
from dml2onnx.core.errors import ModelError, format_path
from dml2onnx.core.operator_table import OPERATORS
from dml2onnx.graph import dml_ep
from dml2onnx.lowering import tolerances
from dml2onnx.ops import registry
from strategies import SEEDS, int_data, shapes
from support import EPS, lowered_and_reference, make_desc, tensor

SETTINGS = settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
INT_TYPES = {
    "ACTIVATION_RELU": ["INT32", "INT16", "INT8"],
    "ACTIVATION_SHRINK": ["INT32", "INT16", "INT8", "UINT32", "UINT16", "UINT8"],
}
LN2, LN3 = math.log(2), math.log(3)


def fields(op: str, dtype: str, shape: list[int] | tuple[int, ...], **params: Any) -> dict[str, Any]:
    return {"InputTensor": tensor(dtype, shape), "OutputTensor": tensor(dtype, shape), **params}


def run(op: str, x: list[float] | np.ndarray, dtype: str = "FLOAT32", ep: str = "cpu", **params: Any) -> np.ndarray:
    values = np.asarray(x, dtype=np.dtype(dtype.lower()))
    got, want = lowered_and_reference(ep, op, fields(op, dtype, values.shape, **params), {"InputTensor": values})
    tol = tolerances.tolerance(op, dtypes.BY_NAME[dtype], ep)
    assert tolerances.compare(got, want, tol).ok, (got, want)
    return got


# -- hand-computed values ----------------------------------------------------------------------

HAND: list[tuple[str, dict[str, float], list[float], list[float]]] = [
    ("ACTIVATION_LINEAR", {"Alpha": 2.0, "Beta": 1.0}, [-1, 0, 2.5], [-1, 1, 6]),
    ("ACTIVATION_SIGMOID", {}, [0, LN3, -LN3], [0.5, 0.75, 0.25]),
    ("ACTIVATION_HARD_SIGMOID", {"Alpha": 0.2, "Beta": 0.5}, [-3, -2.5, 0, 1, 2.5, 3], [0, 0, 0.5, 0.7, 1, 1]),
    ("ACTIVATION_TANH", {}, [0, LN2, -LN2], [0, 0.6, -0.6]),
    ("ACTIVATION_SCALED_TANH", {"Alpha": 2.0, "Beta": 0.5}, [0, 2 * LN2], [0, 1.2]),
    ("ACTIVATION_RELU", {}, [-2, 0, 3], [0, 0, 3]),
    ("ACTIVATION_LEAKY_RELU", {"Alpha": 0.1}, [-2, 0, 3], [-0.2, 0, 3]),
    ("ACTIVATION_THRESHOLDED_RELU", {"Alpha": 1.0}, [0.5, 1, 1.5, -3], [0, 0, 1.5, 0]),  # x == Alpha: 0
    ("ACTIVATION_ELU", {"Alpha": 2.0}, [-LN2, 0, 3], [-1, 0, 3]),
    ("ACTIVATION_CELU", {"Alpha": 2.0}, [-2 * LN2, 0, 3], [-1, 0, 3]),
    ("ACTIVATION_SCALED_ELU", {"Alpha": 2.0, "Gamma": 3.0}, [-LN2, 0, 1], [-3, 0, 3]),
    ("ACTIVATION_SOFTPLUS", {"Steepness": 2.0}, [0, LN3 / 2], [LN2 / 2, LN2]),
    ("ACTIVATION_PARAMETRIC_SOFTPLUS", {"Alpha": 3.0, "Beta": 1.0}, [0, LN3], [3 * LN2, 6 * LN2]),
    ("ACTIVATION_SOFTSIGN", {}, [-3, 0, 1], [-0.75, 0, 0.5]),
    ("ACTIVATION_IDENTITY", {}, [1.5, -2, 0], [1.5, -2, 0]),
    # |x| == Threshold: 0 (strict comparisons)
    ("ACTIVATION_SHRINK", {"Bias": 0.5, "Threshold": 1.0}, [-2, -1, 0, 1, 2], [-1.5, 0, 0, 0, 1.5]),
    # a negative Threshold: x > Threshold is tested first
    ("ACTIVATION_SHRINK", {"Bias": 0.5, "Threshold": -1.0}, [-2, -1, 0, 0.5, 2], [-1.5, -0.5, -0.5, 0, 1.5]),
    ("ACTIVATION_GELU", {}, [0, 1, -1], [0, 0.8413447460685429, -0.15865525393145707]),
]


@pytest.mark.parametrize(("op", "params", "x", "want"), HAND, ids=[f"{h[0]}-{i}" for i, h in enumerate(HAND)])
@pytest.mark.parametrize("dtype", ["FLOAT32", "FLOAT16"])
def test_by_hand(op: str, params: dict[str, float], x: list[float], want: list[float], dtype: str) -> None:
    got = run(op, x, dtype, **params)
    tol = 1e-3 if dtype == "FLOAT16" else 1e-6
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=tol, atol=tol)


def test_every_fusable_activation_is_covered_by_hand() -> None:
    assert {h[0] for h in HAND} == {name for name, op in OPERATORS.items() if op.fusable} == set(ACTIVATIONS)


def test_shrink_leaky_elu_edges_of_float32() -> None:
    """The comparisons use the parameter as a FLOAT: x == float32(0.1) is not above it."""
    t = float(np.float32(0.1))
    got = run("ACTIVATION_SHRINK", [t, -t, 0.2], Bias=0.0, Threshold=0.1)
    np.testing.assert_array_equal(got, np.array([0, 0, 0.2], np.float32))
    np.testing.assert_array_equal(run("ACTIVATION_THRESHOLDED_RELU", [t, 0.2], Alpha=0.1), np.array([0, 0.2], np.float32))
    assert run("ACTIVATION_ELU", [-0.0, 0.0], Alpha=5.0).tolist() == [0, 0]


@pytest.mark.parametrize(
    ("op", "dtype", "params", "x", "want"),
    [
        ("ACTIVATION_RELU", "INT8", {}, [-128, -1, 0, 1, 127], [0, 0, 0, 1, 127]),
        ("ACTIVATION_RELU", "INT16", {}, [-32768, -5, 32767], [0, 0, 32767]),
        ("ACTIVATION_RELU", "INT32", {}, [-(2**31), -1, 2**31 - 1], [0, 0, 2**31 - 1]),
        # What DirectML's API computed (FLOAT32 arithmetic, half to even, saturated): 3 - 1.5 -> 2,
        # -3 + 1.5 -> -2; |x| <= Threshold -> 0
        ("ACTIVATION_SHRINK", "INT32", {"Bias": 1.5, "Threshold": 1.0}, [-3, -1, 0, 1, 3], [-2, 0, 0, 0, 2]),
        ("ACTIVATION_SHRINK", "INT32", {"Bias": 0.5, "Threshold": 0.0}, [-3, -2, -1, 0, 1, 2, 3, 16777217, 2**31 - 1, -(2**31)],
         [-2, -2, 0, 0, 0, 2, 2, 16777216, 2**31 - 1, -(2**31)]),
        # x > 1.5 means x >= 2; saturation at the type's ends
        ("ACTIVATION_SHRINK", "INT8", {"Bias": -10.0, "Threshold": 1.5}, [-128, -2, -1, 1, 2, 120], [-128, -12, 0, 0, 12, 127]),
        ("ACTIVATION_SHRINK", "UINT8", {"Bias": 3.0, "Threshold": 0.0}, [0, 1, 2, 255], [0, 0, 0, 252]),
        ("ACTIVATION_SHRINK", "UINT8", {"Bias": -3.25, "Threshold": 0.0}, [0, 1, 252, 253], [0, 4, 255, 255]),
        # 2**32 - 1 is 2**32 in FLOAT32: saturated; 2**32 - 129 rounds down to 2**32 - 256 first
        ("ACTIVATION_SHRINK", "UINT32", {"Bias": 0.5, "Threshold": 0.5}, [0, 1, 2**31, 2**32 - 1], [0, 0, 2**31, 2**32 - 1]),
        ("ACTIVATION_SHRINK", "UINT32", {"Bias": -0.5, "Threshold": 0.0}, [1, 2, 2**32 - 129, 2**32 - 128, 2**32 - 1],
         [2, 2, 2**32 - 256, 2**32 - 1, 2**32 - 1]),
        ("ACTIVATION_SHRINK", "INT32", {"Bias": "inf", "Threshold": 0.0}, [-5, 0, 5], [2**31 - 1, 0, -(2**31)]),
        ("ACTIVATION_SHRINK", "INT16", {"Bias": 0.0, "Threshold": "inf"}, [-32768, 32767], [0, 0]),
        ("ACTIVATION_SHRINK", "UINT16", {"Bias": 1.0, "Threshold": -5.0}, [0, 65535], [0, 65534]),
    ],
)  # fmt: skip
def test_integers_by_hand(op: str, dtype: str, params: dict[str, Any], x: list[int], want: list[int]) -> None:
    got = run(op, x, dtype, **params)
    assert got.dtype == np.dtype(dtype.lower())
    assert got.tolist() == want


# -- properties --------------------------------------------------------------------------------

PARAM = st.one_of(st.floats(-3, 3, width=32), st.sampled_from([0.0, 1.0, -1.0, 0.5]))
NONZERO = st.one_of(st.floats(0.0625, 3, width=32), st.floats(-3, -0.0625, width=32))


POSITIVE = st.floats(0.0625, 3, width=32)


def draw_params(draw: st.DrawFn, op: str) -> dict[str, float]:
    params = {}
    for name in ACTIVATIONS[op]:
        if op == "ACTIVATION_CELU":  # the graph's exp(x / Alpha) overflows FLOAT32 first for Alpha < 0
            params[name] = draw(POSITIVE)
        else:
            params[name] = draw(NONZERO if name == "Steepness" else PARAM)
    return params


def float_values(rng: np.random.Generator, shape: tuple[int, ...], dtype: np.dtype, params: dict[str, float]) -> np.ndarray:
    """Normal values at a random scale, with zeros, the parameters (+-) and large magnitudes."""
    x = rng.standard_normal(shape) * rng.choice([0.5, 3, 30])
    pool = np.array([0.0, -0.0, 1e4, -1e4, *params.values(), *(-v for v in params.values())])
    pick = rng.random(shape) < 0.3
    return np.where(pick, rng.choice(pool, size=shape), x).astype(dtype)


@st.composite
def activation_cases(draw: st.DrawFn, integers: bool) -> tuple[str, dict[str, Any], np.ndarray]:
    op = draw(st.sampled_from(sorted(INT_TYPES) if integers else sorted(ACTIVATIONS)))
    dtype = draw(st.sampled_from(INT_TYPES[op] if integers else ["FLOAT32", "FLOAT16"]))
    shape = draw(shapes())
    rng = np.random.default_rng(draw(SEEDS))
    t = np.dtype(dtype.lower())
    if integers:
        params = {n: draw(st.one_of(st.floats(-300, 300, width=32), st.integers(-300, 300).map(float))) for n in ACTIVATIONS[op]}
        x = int_data(rng, shape, t, draw(st.sampled_from(["ties", "extreme", "random"])))
    else:
        params = draw_params(draw, op)
        x = float_values(rng, shape, t, params)
    return op, fields(op, dtype, shape, **params), x


@EPS
@SETTINGS
@given(case=activation_cases(integers=False))
def test_floats_match_reference(ep: str, case: tuple[str, dict[str, Any], np.ndarray]) -> None:
    op, f, x = case
    got, want = lowered_and_reference(ep, op, f, {"InputTensor": x})
    c = tolerances.compare(got, want, tolerances.tolerance(op, make_desc(op, f).tensor("InputTensor").data_type, ep))
    assert c.ok, (c, x.ravel()[:8], got.ravel()[:8], want.ravel()[:8])


@EPS
@SETTINGS
@given(case=activation_cases(integers=True))
def test_integers_match_reference_exactly(ep: str, case: tuple[str, dict[str, Any], np.ndarray]) -> None:
    op, f, x = case
    got, want = lowered_and_reference(ep, op, f, {"InputTensor": x})
    np.testing.assert_array_equal(got, want)


@SETTINGS
@given(case=activation_cases(integers=True))
def test_integer_shrink_reference_against_float64(case: tuple[str, dict[str, Any], np.ndarray]) -> None:
    """Where FLOAT32 holds x and x -+ Bias exactly (DirectML computes in FLOAT32), the reference is
    the page's formula on the real numbers, rounded half to even (as DirectML rounds) and clipped
    to the type."""
    op, f, x = case
    if op != "ACTIVATION_SHRINK":
        return
    got = registry.family(op).reference(make_desc(op, f), {"InputTensor": x})
    bias, threshold = float(np.float32(f["Bias"])), float(np.float32(f["Threshold"]))
    v = x.astype(np.float64)
    sign = np.where(v > threshold, 1.0, np.where(v < -threshold, -1.0, 0.0))
    shifted = v - sign * bias
    err = (v - shifted) - sign * bias  # Fast2Sum: 0 where the float64 difference is exact
    y = np.where(sign == 0, 0.0, shifted)
    info = np.iinfo(x.dtype)
    exact = (err == 0) & (v.astype(np.float32) == v) & (y.astype(np.float32) == y)
    np.testing.assert_array_equal(got[exact], np.clip(np.rint(y), info.min, info.max).astype(x.dtype)[exact])


# -- lowering shapes ---------------------------------------------------------------------------


@pytest.mark.parametrize("op", sorted(ACTIVATIONS))
@pytest.mark.parametrize("dtype", ["FLOAT32", "FLOAT16", "INT8", "UINT16", "INT32"])
def test_graphs_run_on_the_dml_ep_and_compute_in_float32(op: str, dtype: str) -> None:
    if dtype.startswith(("INT", "UINT")) and dtype not in INT_TYPES.get(op, []):
        return
    desc = make_desc(op, fields(op, dtype, [2, 3], **ACTIVATIONS[op]))
    for target in ("portable", "dml"):
        model = lowering.lower(desc, "t", target=target)
        assert dml_ep.check(model) == []
        casts = [n for n in model.graph.node if n.op_type == "Cast"]
        if dtype == "FLOAT16" and op != "ACTIVATION_IDENTITY":
            assert len(casts) == 2  # to FLOAT32 and back once
        if dtype == "FLOAT32":
            assert casts == []


# -- invalid descs and feature levels ------------------------------------------------------------


def refusal(op: str, f: dict[str, Any], level: str = "6_4") -> ModelError:
    with pytest.raises(ModelError) as e:
        lowering.validate(parse_operator_desc(op, f, ("desc",), ("type",), level=level))
    return e.value


def accepted(op: str, f: dict[str, Any], level: str) -> None:
    lowering.validate(parse_operator_desc(op, f, ("desc",), ("type",), level=level))


@pytest.mark.parametrize(
    ("op", "f", "path", "text"),
    [
        ("ACTIVATION_TANH", {"OutputTensor": tensor("FLOAT16", [2, 3])}, "desc.OutputTensor.DataType", "same DataType"),
        ("ACTIVATION_TANH", {"OutputTensor": tensor("FLOAT32", [3, 2])}, "desc.OutputTensor.Sizes", "same Sizes"),
        ("ACTIVATION_TANH", {"OutputTensor": tensor("FLOAT32", [2, 3, 1])}, "desc.OutputTensor.Sizes", "same DimensionCount"),
        ("ACTIVATION_LEAKY_RELU", {"InputTensor": tensor("INT32", [2, 3])}, "desc.InputTensor.DataType", "FLOAT32, FLOAT16"),
        ("ACTIVATION_IDENTITY", {"InputTensor": tensor("INT8", [2, 3])}, "desc.InputTensor.DataType", "FLOAT32, FLOAT16"),
        ("ACTIVATION_RELU", {"InputTensor": tensor("UINT8", [2, 3])}, "desc.InputTensor.DataType", "INT8"),
        ("ACTIVATION_SHRINK", {"InputTensor": tensor("INT64", [2, 3])}, "desc.InputTensor.DataType", "UINT8"),
        ("ACTIVATION_SOFTPLUS", {"Steepness": 0.0}, "desc.Steepness", "must not be 0"),
        ("ACTIVATION_SHRINK", {"Bias": "nan", "Threshold": 1.0, "InputTensor": tensor("INT8", [2, 3]),
         "OutputTensor": tensor("INT8", [2, 3])}, "desc.Bias", "NaN"),
    ],
)  # fmt: skip
def test_invalid(op: str, f: dict[str, Any], path: str, text: str) -> None:
    base = fields(op, "FLOAT32", [2, 3], **{k: 1.0 for k in ACTIVATIONS[op]})
    e = refusal(op, base | f)
    assert format_path(e.path) == path
    assert text in str(e)


def test_gelu_needs_5_1() -> None:
    f = fields("ACTIVATION_GELU", "FLOAT32", [2, 3])
    with pytest.raises(ModelError, match="needs feature level 5_1"):
        parse_operator_desc("ACTIVATION_GELU", f, ("desc",), ("type",), level="5_0")
    accepted("ACTIVATION_GELU", f, "5_1")


@pytest.mark.parametrize(("op", "dtype"), [("ACTIVATION_RELU", "INT8"), ("ACTIVATION_SHRINK", "UINT32")])
def test_integer_types_need_5_1(op: str, dtype: str) -> None:
    f = fields(op, dtype, [2, 3], **{k: 1.0 for k in ACTIVATIONS[op]})
    e = refusal(op, f, level="5_0")
    assert "feature level 5_1 allows it" in str(e) and format_path(e.path) == "desc.InputTensor.DataType"
    accepted(op, f, "5_1")


def test_softplus_steepness_below_1_needs_6_4() -> None:
    f = fields("ACTIVATION_SOFTPLUS", "FLOAT32", [2, 3], Steepness=0.5)
    e = refusal("ACTIVATION_SOFTPLUS", f, level="6_3")
    assert "needs feature level 6_4" in str(e) and format_path(e.path) == "desc.Steepness"
    accepted("ACTIVATION_SOFTPLUS", f, "6_4")
    accepted("ACTIVATION_SOFTPLUS", f | {"Steepness": -2.0}, "6_4")
    accepted("ACTIVATION_SOFTPLUS", f | {"Steepness": 1.0}, "3_0")
    for level in ("3_0", "6_4"):
        assert "must not be 0" in str(refusal("ACTIVATION_SOFTPLUS", f | {"Steepness": 0.0}, level=level))


@pytest.mark.parametrize(
    ("op", "shape", "level", "allowed_from"),
    [
        ("ACTIVATION_CELU", [1, 1, 2, 3], "2_1", "3_0"),
        ("ACTIVATION_SHRINK", [1, 1, 2, 3], "1_0", "2_0"),
        ("ACTIVATION_TANH", [1, 1, 1, 2, 3], "1_0", "2_0"),
        ("ACTIVATION_TANH", [2, 3], "2_0", "3_0"),
    ],
)
def test_levels_and_dimension_counts(op: str, shape: list[int], level: str, allowed_from: str) -> None:
    f = fields(op, "FLOAT32", shape, **{k: 1.0 for k in ACTIVATIONS[op]})
    with pytest.raises(ModelError, match=f"(needs feature level|feature level) {allowed_from}"):
        lowering.validate(parse_operator_desc(op, f, ("desc",), ("type",), level=level))
    accepted(op, f, allowed_from)
