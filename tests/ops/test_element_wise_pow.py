"""ELEMENT_WISE_POW and ELEMENT_WISE_CONSTANT_POW (dml2onnx/ops/element_wise_pow.py): by hand, what
DirectML's own API computed (floats' special cases, integer wrapping and saturation, ScaleBias on
both of POW's inputs), the `dml` target's nodes, validation, and properties over random shapes,
types and special values against the numpy reference. The matrix (dml2onnx/cases/element_wise_pow.py)
runs them on every EP present and through DirectML's API."""

from __future__ import annotations

import zlib
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from batched_sessions import Member, run_bisecting
from dml2onnx import lowering
from dml2onnx.backends import dmlapi, runtime, winhost
from dml2onnx.core import operator_table
from dml2onnx.core.errors import format_path
from dml2onnx.graph import dml_ep
from dml2onnx.ops import element_wise_pow, registry
from strategies import SEEDS, shapes, with_specials
from support import EPS, assert_matches_reference, lowered_and_reference, make_desc, mismatches, refusal, tensor

live = pytest.mark.skipif(dmlapi.missing() is not None, reason="DirectML's API under Wine is not set up (make dml-setup)")

NAN, INF = float("nan"), float("inf")


def pow_fields(dtype: str, shape: tuple[int, ...] | list[int], **extra: Any) -> dict[str, Any]:
    return {n: tensor(dtype, shape) for n in ("InputTensor", "ExponentTensor", "OutputTensor")} | extra


def power(dtype: str, x: list[Any], e: list[Any], **extra: Any) -> tuple[np.ndarray, np.ndarray]:
    a, b = np.array(x, dtype=dtype.lower()), np.array(e, dtype=dtype.lower())
    return lowered_and_reference(
        "cpu", "ELEMENT_WISE_POW", pow_fields(dtype, a.shape, **extra), {"InputTensor": a, "ExponentTensor": b}
    )


def constant_power(dtype: str, x: list[float], exponent: float, **extra: Any) -> tuple[np.ndarray, np.ndarray]:
    a = np.array(x, dtype=dtype.lower())
    fields = {"InputTensor": tensor(dtype, a.shape), "OutputTensor": tensor(dtype, a.shape), "Exponent": exponent, **extra}
    return lowered_and_reference("cpu", "ELEMENT_WISE_CONSTANT_POW", fields, {"InputTensor": a})


def same_bits(got: np.ndarray, want: list[float]) -> bool:
    """Equal values, NaN for NaN, and the same sign of zero."""
    w = np.array(want, dtype=got.dtype)
    return bool(np.all(((got == w) & (np.signbit(got) == np.signbit(w))) | (np.isnan(got) & np.isnan(w))))


# -- by hand: what DirectML's API computed (onnxruntime-directml 1.24.4 under Wine) ----------------

# (x, e, DirectML's x ** e) where IEEE's pow (numpy, ONNX Runtime's Pow) differs, and some where it agrees
FLOAT_SPECIALS = [
    (0.0, 0.0, 0.0),  # IEEE 1: a zero base gives +0 for every exponent
    (-0.0, 0.0, 0.0),
    (0.0, -1.0, 0.0),  # IEEE inf
    (-0.0, -3.0, 0.0),  # IEEE -inf
    (-0.0, 3.0, 0.0),  # IEEE -0
    (0.0, NAN, 0.0),
    (0.0, -INF, 0.0),
    (1.0, INF, NAN),  # IEEE 1: e * log|x| = inf * 0 is NaN
    (1.0, NAN, NAN),
    (INF, 0.0, NAN),
    (NAN, 0.0, NAN),
    (-INF, 0.0, NAN),
    (-1.0, INF, NAN),  # a negative base needs a finite integer exponent
    (-2.0, -INF, NAN),
    (-INF, 0.5, NAN),  # IEEE inf
    (-8.0, 1.0 / 3.0, NAN),
    (-1.0, 1e10, -1.0),  # even, but >= 2**31: INT32 2**31 - 1 after Direct3D's saturating conversion, odd
    (-2.0, 2.0**31, -INF),
    (-0.5, 1e10, -0.0),
    (-1.0, -1e10, 1.0),  # <= -2**31: INT32's minimum, even
    (-1.0, 16777215.0, -1.0),
    (-2.0, 3.0, -8.0),
    (-2.0, -1.0, -0.5),
    (2.0, 0.5, 1.4142135),
    (INF, -1.0, 0.0),
    (-INF, 3.0, -INF),
    (-INF, -1.0, -0.0),
    (0.5, INF, 0.0),
    (2.0, -INF, 0.0),
    (NAN, 1.0, NAN),
    (9.0, 3.0, 729.0),  # DirectML: 729.0002 (exp2/log2-like), within tolerances.py
]


@pytest.mark.parametrize("dtype", ["FLOAT32", "FLOAT16"])
def test_float_special_cases_as_directml(dtype: str) -> None:
    x, e, want = zip(*FLOAT_SPECIALS, strict=True)
    if dtype == "FLOAT16":  # beyond FLOAT16: 1e10 and 2**31 are inf, 16777215 is 16777216
        keep = [i for i, v in enumerate(e) if abs(v) < 6e4 or not np.isfinite(v)]
        x, e, want = ([s[i] for i in keep] for s in (x, e, want))
    got, ref = power(dtype, list(x), list(e))
    assert same_bits(ref, list(want)), ref
    assert same_bits(got, list(want)), got


def test_float16_results_past_its_range_are_infinite() -> None:
    """inf as DirectML's FLOAT16 POW gives it; the lowering makes it in FLOAT16 arithmetic, since
    the DirectML EP's Cast FLOAT32 -> FLOAT16 saturates at 65504."""
    got, ref = power("FLOAT16", [6e4, -300.0, 255.0, 2.0, -2.0], [2.0, 3.0, 2.0, 16.0, 15.0])
    want = [INF, -INF, 65024.0, INF, -32768.0]
    assert same_bits(ref, want) and same_bits(got, want), got


@pytest.mark.parametrize(
    ("exponent", "want"),
    [
        (2.0, [0.0, 0.0, 4.0, 4.0, INF, INF, NAN, 1.0]),
        (3.0, [0.0, 0.0, 8.0, -8.0, INF, -INF, NAN, 1.0]),
        (0.5, [0.0, 0.0, 1.4142135, NAN, INF, NAN, NAN, 1.0]),
        (-1.0, [0.0, 0.0, 0.5, -0.5, 0.0, -0.0, NAN, 1.0]),
        (0.0, [0.0, 0.0, 1.0, 1.0, NAN, NAN, NAN, 1.0]),
        (INF, [0.0, 0.0, INF, NAN, INF, NAN, NAN, NAN]),
        (-INF, [0.0, 0.0, 0.0, NAN, 0.0, NAN, NAN, NAN]),
        (NAN, [0.0, 0.0, NAN, NAN, NAN, NAN, NAN, NAN]),
        (2.0**31, [0.0, 0.0, INF, -INF, INF, -INF, NAN, 1.0]),
    ],
)
def test_constant_pow_as_directml(exponent: float, want: list[float]) -> None:
    x = [0.0, -0.0, 2.0, -2.0, INF, -INF, NAN, 1.0]
    got, ref = constant_power("FLOAT32", x, exponent)
    assert same_bits(ref, want), ref
    assert same_bits(got, want), got


@pytest.mark.parametrize(
    ("dtype", "x", "e", "want"),
    [
        # x ** e modulo 2**32; 0**0 = 1; e < 0: 1 / x**|e| truncated (0**-1 = 0)
        (
            "INT32",
            [2, 2, 3, 3, 0, 0, 1, -1, -1, 2, -2147483648],
            [31, 32, 20, 30, 0, -1, -7, -3, -2147483648, -1, 2],
            [-2147483648, 0, -808182895, -1010140999, 1, 0, 1, -1, 1, 0, 0],
        ),
        ("UINT32", [2, 3, 65535, 4294967295], [31, 30, 2, 4294967295], [2147483648, 3284826297, 4294836225, 4294967295]),
        # 8/16 bits: the same 32-bit result, saturated
        ("INT8", [2, 2, 2, -2, 3, -128, 127], [7, 31, 32, 7, 30, 2, 3], [127, -128, 0, -128, -128, 127, 127]),
        ("INT16", [2, -2, -32768, 3], [15, 15, 2, 31], [32767, -32768, 32767, 32767]),
        ("UINT8", [2, 2, 16, 3, 0], [8, 32, 2, 5, 0], [255, 0, 255, 243, 1]),
        ("UINT16", [2, 65535, 10], [16, 2, 32], [65535, 65535, 0]),
    ],
)
def test_integer_powers_as_directml(dtype: str, x: list[int], e: list[int], want: list[int]) -> None:
    got, ref = power(dtype, x, e)
    assert got.tolist() == ref.tolist() == want


def test_scale_bias_applies_to_the_exponent_too() -> None:
    """pow(x * Scale + Bias, e * Scale + Bias): DirectML gave 27 = 3**3 for x = 1, e = 1."""
    got, ref = power("FLOAT32", [1, 2, 3, 4], [1, 1, 2, 0.5], ScaleBias={"Scale": 2, "Bias": 1})
    np.testing.assert_allclose(ref, [27, 125, 16807, 81])
    np.testing.assert_allclose(got, ref, rtol=1e-6)


@pytest.mark.parametrize(
    ("dtype", "x", "e", "sb", "want"),
    [
        # g(x) saturates to 32 bits, not to the type: UINT8 128 * 2 = 256, and 256**8 = 0 (not 255**8 -> 255)
        ("UINT8", [128, 128, 64, 3], [4, 2, 8, 1], (2.0, 0.0), [0, 0, 0, 36]),
        # INT8: g(127) = -316, g(-2) = 5: (-316)**5 modulo 2**32 is positive, saturated to 127
        ("INT8", [127, -128, 1], [-2, -3, 1], (-2.5, 0.75), [127, 0, -1]),
        ("INT32", [1, 2, 100], [1, 1, 5], (-2.5, 0.75), [-1, 0, 0]),
        # Scale 1 and Bias 0 (+-0): DirectML skips ScaleBias (no FLOAT32 rounding); any other Bias rounds
        ("INT32", [16777217, 3], [1, 16777217], (1.0, 0.0), [16777217, -603979773]),
        ("INT32", [16777217], [1], (1.0, -0.0), [16777217]),
        ("INT32", [16777217], [1], (1.0, 1e-30), [16777216]),
        ("UINT32", [16777217], [1], (1.0, 0.0), [16777217]),
    ],
)
def test_integer_scale_bias_in_32_bits(dtype: str, x: list[int], e: list[int], sb: tuple[float, float], want: list[int]) -> None:
    got, ref = power(dtype, x, e, ScaleBias={"Scale": sb[0], "Bias": sb[1]})
    assert got.tolist() == ref.tolist() == want


# -- targets ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["FLOAT32", "FLOAT16", "INT32", "INT16", "INT8", "UINT32", "UINT16", "UINT8"])
def test_portable_graphs_run_on_the_directml_ep(dtype: str) -> None:
    for target in ("portable", "dml"):
        model = lowering.lower(make_desc("ELEMENT_WISE_POW", pow_fields(dtype, [2, 3])), "t", target=target)
        assert dml_ep.check(model) == []
        assert "Where" not in {n.op_type for n in model.graph.node} or dtype.startswith(("FLOAT", "INT"))


def test_dml_target_emits_the_pow_node() -> None:
    """The DirectML EP maps Pow back onto POW, and onto CONSTANT_POW when the exponent is a
    one-element constant (DmlOperatorElementWise.cpp); types it has no Pow for, and ScaleBias,
    keep the portable graph."""
    nodes = lambda op, fields: [n.op_type for n in lowering.lower(make_desc(op, fields), "t", target="dml").graph.node]  # noqa: E731
    for dtype in ("FLOAT32", "FLOAT16", "INT32"):
        assert nodes("ELEMENT_WISE_POW", pow_fields(dtype, [4])) == ["Pow"]
    for dtype in ("FLOAT32", "FLOAT16"):
        fields = {"InputTensor": tensor(dtype, [4]), "OutputTensor": tensor(dtype, [4]), "Exponent": 0.5}
        model = lowering.lower(make_desc("ELEMENT_WISE_CONSTANT_POW", fields), "t", target="dml")
        assert [n.op_type for n in model.graph.node] == ["Pow"] and len(model.graph.initializer) == 1
    assert len(nodes("ELEMENT_WISE_POW", pow_fields("INT8", [4]))) > 1
    assert len(nodes("ELEMENT_WISE_POW", pow_fields("FLOAT32", [4], ScaleBias={"Scale": 2, "Bias": 0}))) > 1


def test_constant_pow_needs_no_select_for_even_exponents() -> None:
    """x**2 is one Pow: IEEE's answers are DirectML's there."""
    for exponent in (2.0, 4.0, 2.0**30):
        fields = {"InputTensor": tensor("FLOAT32", [4]), "OutputTensor": tensor("FLOAT32", [4]), "Exponent": exponent}
        model = lowering.lower(make_desc("ELEMENT_WISE_CONSTANT_POW", fields), "t")
        assert [n.op_type for n in model.graph.node] == ["Pow"]


# -- validation -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("op", "fields", "path", "text"),
    [
        (
            "ELEMENT_WISE_POW",
            pow_fields("FLOAT32", [2, 3]) | {"ExponentTensor": tensor("INT8", [2, 3]), "OutputTensor": tensor("INT8", [2, 3])},
            "desc.OutputTensor.DataType",
            "",
        ),
        (
            "ELEMENT_WISE_POW",
            pow_fields("FLOAT32", [2, 3]) | {"ExponentTensor": tensor("FLOAT32", [3, 2])},
            "desc.ExponentTensor.Sizes",
            "same Sizes",
        ),
        ("ELEMENT_WISE_POW", pow_fields("INT64", [2, 3]), "desc.InputTensor.DataType", "must be"),
        ("ELEMENT_WISE_POW", pow_fields("FLOAT32", [2, 3], ScaleBias={"Scale": 1}), "desc.ScaleBias.Bias", "required"),
        (
            "ELEMENT_WISE_CONSTANT_POW",
            {"InputTensor": tensor("INT32", [2, 3]), "OutputTensor": tensor("INT32", [2, 3]), "Exponent": 2},
            "desc.InputTensor.DataType",
            "must be FLOAT32, FLOAT16",
        ),
        (
            "ELEMENT_WISE_CONSTANT_POW",
            {"InputTensor": tensor("FLOAT32", [2, 3]), "OutputTensor": tensor("FLOAT32", [2, 3])},
            "desc.Exponent",
            "required",
        ),
        (
            "ELEMENT_WISE_CONSTANT_POW",
            {"InputTensor": tensor("FLOAT32", [2, 3]), "OutputTensor": tensor("FLOAT16", [2, 3]), "Exponent": 2},
            "desc.OutputTensor.DataType",
            "",
        ),
    ],
)
def test_invalid(op: str, fields: dict[str, Any], path: str, text: str) -> None:
    e = refusal(op, fields)
    assert format_path(e.path) == path and text in str(e), str(e)


# -- properties -----------------------------------------------------------------------------------

FLOAT_POOL = [0.0, -0.0, 1.0, -1.0, 2.0, -2.0, 0.5, 3.0, -3.0, np.inf, -np.inf, np.nan, 2.0**31]


@st.composite
def cases(draw: st.DrawFn) -> tuple[str, dict[str, Any], dict[str, np.ndarray]]:
    op = draw(st.sampled_from(sorted(element_wise_pow.ROWS)))
    schema_op = operator_table.OPERATORS[op]
    dtype = draw(st.sampled_from([d.name for d in schema_op.support[0].tensors["OutputTensor"].types]))
    shape = draw(shapes())
    rng = np.random.default_rng(draw(SEEDS))
    np_type = np.dtype(dtype.lower())
    names = [f.name for f in schema_op.fields if f.kind.name == "INPUT"]
    feeds = {}
    for n in names:
        if np_type.kind == "f":
            x = rng.standard_normal(shape) * draw(st.sampled_from([0.5, 3.0, 20.0]))
            if n == "ExponentTensor" and draw(st.booleans()):
                x = np.round(x)  # integer exponents: negative bases keep a value
            x = with_specials(rng, x, FLOAT_POOL, 0.15)
            with np.errstate(over="ignore"):  # 2**31 in FLOAT16: inf
                feeds[n] = x.astype(np_type)
        else:
            info = np.iinfo(np_type)
            if n == "ExponentTensor" and draw(st.booleans()):
                feeds[n] = rng.integers(max(int(info.min), -5), 40, size=shape).astype(np_type)
            else:
                feeds[n] = rng.integers(info.min, int(info.max) + 1, size=shape, dtype=np_type, endpoint=False)
    fields: dict[str, Any] = {n: tensor(dtype, shape) for n in [*names, "OutputTensor"]}
    if op == "ELEMENT_WISE_CONSTANT_POW":
        fields["Exponent"] = draw(st.one_of(st.sampled_from(FLOAT_POOL), st.floats(-8, 8, width=32)))
    if draw(st.booleans()):
        fields["ScaleBias"] = {"Scale": draw(st.floats(-4, 4, width=32)), "Bias": draw(st.floats(-4, 4, width=32))}
    return op, fields, feeds


@EPS
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=cases())
def test_matches_reference(ep: str, case: tuple[str, dict[str, Any], dict[str, np.ndarray]]) -> None:
    op, fields, feeds = case
    assert_matches_reference(ep, op, fields, feeds)


def test_rows_are_the_adopted_operators() -> None:
    assert set(element_wise_pow.ROWS) == set(registry.family("ELEMENT_WISE_POW").operators)


# -- an exponent of another type (DirectML takes every pairing of the table's types) --------------------

_MIXED_TYPES = ["FLOAT32", "FLOAT16", "INT32", "INT16", "INT8", "UINT32", "UINT16", "UINT8"]
_MIXED = [(x, e) for x in _MIXED_TYPES for e in _MIXED_TYPES if x != e]
# ScaleBias with mixed types (both inputs, as DirectML takes it with every pairing): none, a general
# one, one that makes 32-bit exponents of 2**31 and more, and Scale 1 with Bias 0 (skipped)
_MIXED_SCALE_BIAS = [None, (-2.5, 0.75), (2.0, 1.0), (2.0**30, 3.0), (1.0, 0.0)]


def _mixed_values(dtype: str, exponent: bool, n: int, rng: np.random.Generator) -> np.ndarray:
    t = operator_table.OPERATORS["ELEMENT_WISE_POW"].support[0].tensors["InputTensor"].types
    d = next(d for d in t if d.name == dtype)
    if d.is_float:
        pool = [0.0, -0.0, 0.5, 1.5, 2.0, -2.0, 3.0, 10.0, -1.0, 7.25, 1e-3, 255.94, float("inf"), -3.5]
        pool += [17.0, -17.0, float("nan"), 2.5] if exponent else [1.0001]
        return rng.choice(pool, n).astype(d.numpy)
    info = np.iinfo(d.numpy)
    pool = [0, 1, 2, 3, 5, 7, 17, 31, 100, int(info.max)] + ([-1, -2, -3, -7, int(info.min)] if d.is_signed else [])
    if exponent and dtype == "UINT32":  # read unsigned: 3 ** (2**31) = 1
        pool += [2**31, 2**31 + 1, 2**32 - 2, 3000000001]
    if exponent and dtype == "INT32":  # an INT32's own parity, not its FLOAT32 value's
        pool += [16777217, 2147483646, -16777217]
    return np.array(rng.choice(pool, n), dtype=np.int64).astype(d.numpy)


def _mixed_case(x_type: str, e_type: str, sb: tuple[float, float] | None = None) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    rng = np.random.default_rng(zlib.crc32(repr((x_type, e_type, sb)).encode()))
    fields = pow_fields(x_type, [64]) | {"ExponentTensor": tensor(e_type, [64])}
    if sb is not None:
        fields["ScaleBias"] = {"Scale": sb[0], "Bias": sb[1]}
    return fields, {"InputTensor": _mixed_values(x_type, False, 64, rng), "ExponentTensor": _mixed_values(e_type, True, 64, rng)}


@pytest.mark.parametrize("sb", _MIXED_SCALE_BIAS)
@pytest.mark.parametrize(("x_type", "e_type"), _MIXED)
def test_an_exponent_of_another_type(x_type: str, e_type: str, sb: tuple[float, float] | None) -> None:
    fields, feeds = _mixed_case(x_type, e_type, sb)
    assert_matches_reference("cpu", "ELEMENT_WISE_POW", fields, feeds)


# (base type, exponent type, bases, exponents, DirectML's results)
MIXED_AS_DIRECTML = [
    (
        "FLOAT32",
        "INT8",
        [2, 2, 255.93, 255.94, -2, 10],
        [16, 17, 2, 2, 17, 4],
        [np.inf, np.inf, 65500.1367, np.inf, -np.inf, 10000],
    ),
    ("FLOAT32", "INT32", [2, 10], [17, 5], [131072, 100000]),
    ("FLOAT32", "FLOAT16", [1e-8, 0.5], [-1, -16], [np.inf, np.inf]),
    (
        "INT32",
        "FLOAT32",
        [-3, 4, 2, 2, -8, 0, 5, 3],
        [2.7, np.nan, 40, -1, 1 / 3, -1, 0.5, np.inf],
        [0, 0, 2**31 - 1, 0, 0, 0, 2, 2**31 - 1],
    ),
    ("UINT8", "INT8", [0, 1, 2, 3, 0, 1, 5, 200], [-1, -1, -1, -3, 0, 3, -128, 1], [0, 1, 0, 0, 1, 1, 0, 200]),
    ("INT8", "UINT8", [-1, -2, 2, 3, -1, 0, 2, -2], [255, 7, 7, 200, 254, 0, 255, 128], [-1, -128, 127, -128, 1, 1, 0, 0]),
    (
        "UINT32",
        "INT32",
        [2, 3, 1, 0, 7, 2, 3, 5],
        [-1, -2, -5, -1, 0, 31, 20, 13],
        [0, 0, 1, 0, 1, 2**31, 3486784401, 1220703125],
    ),
    # a signed base, a UINT32 exponent: read unsigned, x ** e modulo 2**32 (3 has order 2**30 there)
    (
        "INT32",
        "UINT32",
        [3, 3, 3, -3, 2, -1, 0, -2147483648],
        [2**31, 2**31 + 1, 2**32 - 1, 2**32 - 1, 2**31, 2**32 - 2, 2**32 - 1, 1],
        [1, 3, -1431655765, 1431655765, 0, 1, 0, -2147483648],
    ),
    ("INT8", "UINT32", [3, 3, -3, 127, -1], [2**31, 2**32 - 1, 2**32 - 1, 2**31 + 1, 2**31 - 1], [1, -128, 127, 127, -1]),
    ("INT16", "UINT32", [32767, 3, -3], [2**31, 2**31 - 1, 2**32 - 3], [1, -32768, -32768]),
    # a float base, an INT32 exponent: the sign by the INT32's own parity (16777217 is odd, its FLOAT32 even);
    # a UINT32 exponent's by its FLOAT32 value's, as for float exponents (2**32 - 2 is 2**32 there: odd)
    (
        "FLOAT32",
        "INT32",
        [-1, -1, -1, -1.5, -1.5],
        [16777217, 2147483646, -2147483648, 2147483646, 16777217],
        [-1, 1, 1, np.inf, -np.inf],
    ),
    ("FLOAT16", "INT32", [-1, -1, -1.5], [16777217, 2147483646, -16777217], [-1, 1, -0.0]),
    ("FLOAT32", "UINT32", [-1, -1, -1, -0.5], [16777217, 2147483646, 4294967294, 4294967294], [1, -1, -1, -0.0]),
]

# (base type, exponent type, (Scale, Bias), bases, exponents, DirectML's results): ScaleBias with mixed
# types applies to both inputs in FLOAT32; an integer exponent's g(e) truncated and saturated to INT32
# or UINT32 (by its sign), a float one's kept in FLOAT32 (FLOAT16's too); an integer base's g(x) the
# same for an integer exponent, but for a float exponent truncated toward zero in FLOAT32, saturated
# to [0, 2**32] for unsigned types and unbounded for signed ones
MIXED_SCALE_BIAS_AS_DIRECTML = [
    ("FLOAT32", "INT32", (0.5, 0.0), [4, 4, 4, 4], [1, 1, 3, 2], [1, 1, 2, 2]),  # g(e) = 0.5 is 0
    ("FLOAT32", "INT8", (-0.5, 0.0), [4, 4, -4, -4], [1, 3, 1, 3], [1, -0.5, 1, 0.5]),  # -1.5 is -1
    ("FLOAT16", "INT16", (-0.5, 0.0), [4, 4, -4, -4], [1, 3, 1, 3], [1, -0.5, 1, 0.5]),
    ("FLOAT32", "UINT8", (-1.0, 0.0), [-4, -2, -6, -1], [1, 3, 1, 3], [1, 1, 1, 1]),  # g(e) < 0 is UINT32's 0
    ("FLOAT32", "INT8", (2.0, 0.0), [2, 2, 1, 1], [8, 7, 8, 2], [np.inf, np.inf, np.inf, 16]),  # FLOAT16's range still
    ("FLOAT32", "INT32", (2.0, 0.0), [2, 2, 1], [8, 7, 8], [4294967296, 268435456, 65536]),
    ("FLOAT32", "FLOAT16", (2.0, -1.0), [1, 1], [60000, 2], [1, 1]),  # g(e) = 119999 in FLOAT32, not inf
    ("FLOAT32", "FLOAT16", (1.0, 1e-4), [1e4, 2], [1, 8], [10009.216796875, 256.1200256347656]),
    ("FLOAT32", "INT8", (1.0, 200.0), [-201, -201, -201], [1, 2, 3], [-1, 1, -1]),  # 202 is no INT8, even
    ("INT32", "FLOAT32", (0.5, 0.0), [3, 3, 5, 7], [4, 2, 2, 2], [1, 1, 2, 3]),  # g(3) = 1.5 is 1
    ("INT32", "FLOAT32", (1.0, 0.5), [2, 2, 3, 4], [1, 2, 3, 4], [2, 5, 46, 512]),  # g(e) = 1.5 stays
    ("INT32", "FLOAT32", (2.0, 1.0), [2147483647, 2147483647, 1000], [-0.25, -0.375, -0.25], [65536, 256, 44]),
    ("INT32", "FLOAT32", (2.0**40, 0.25), [2147483647, 1, 1000, 16], [0, 0, 0, 0], [220435, 1024, 5758, 2048]),
    ("INT8", "FLOAT32", (2.0, 1.0), [127, -128, 100], [-0.25, 1, 1], [15, -128, 127]),
    ("UINT32", "FLOAT32", (2.0, 1.0), [4294967295, 4294967295, 0, 3], [-0.25, -0.375, -0.25, -0.25], [65536, 256, 1, 2]),
    ("UINT32", "FLOAT32", (2.0**40, 0.25), [1, 16], [0, 0], [256, 256]),  # g(x) at most 2**32
    ("UINT8", "FLOAT32", (-1.0, 0.0), [1, 2, 3, 1], [2, 1, 1, 3], [0, 0, 0, 0]),  # g(x) < 0 is 0
    ("UINT8", "FLOAT16", (2.0, 1.0), [255, 255, 200], [-0.25, 1, 1], [22, 255, 255]),
    # g(e) = 2**31 + 3 is 2**31 in FLOAT32, 4 * 2**30 + 3 is 2**32: UINT32 2**32 - 1 (3 ** that = 1 / 3 modulo 2**32)
    ("INT32", "UINT32", (2.0**30, 3.0), [0, 0, 0, 0, 0], [0, 1, 2, 3, 4], [27, 1, 1, 1, -1431655765]),
    ("INT8", "UINT32", (2.0**30, 3.0), [0, 0, 0, 0, 0], [0, 1, 2, 3, 4], [27, 1, 1, 1, -128]),
    ("INT32", "INT8", (2.0**30, 3.0), [0, 0, 0], [0, 1, 2], [27, 1, -1431655765]),  # INT32's 2**31 - 1
    ("UINT8", "UINT32", (2.0**30, 3.0), [0, 0, 0], [0, 1, 4], [27, 1, 255]),
    ("INT16", "INT8", (1.0, 200.0), [-201, -201, -199], [1, 2, 2], [-1, 1, 1]),
    ("UINT8", "INT8", (2.0, 1.0), [1, 2, 0], [1, -1, 3], [27, 0, 1]),
    # Scale 1 and Bias 0: skipped (no FLOAT32 rounding of 2**31 + 1)
    ("INT8", "UINT32", (1.0, 0.0), [17, 3, 3], [2**31 + 1, 2**31 + 1, 2**31], [17, 3, 1]),
    ("INT32", "UINT8", (1.0, 0.0), [2147483646], [1], [2147483646]),
]


def _mixed_feeds(x_type: str, e_type: str, x: list, e: list) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    fields = pow_fields(x_type, [len(x)]) | {"ExponentTensor": tensor(e_type, [len(x)])}
    t = {
        n: next(d for d in operator_table.OPERATORS["ELEMENT_WISE_POW"].support[0].tensors["InputTensor"].types if d.name == n)
        for n in (x_type, e_type)
    }
    return fields, {"InputTensor": np.array(x, t[x_type].numpy), "ExponentTensor": np.array(e, t[e_type].numpy)}


def _as_directml() -> list[tuple[str, str, tuple[float, float] | None, list, list, list]]:
    return [(x_t, e_t, None, x, e, w) for x_t, e_t, x, e, w in MIXED_AS_DIRECTML] + MIXED_SCALE_BIAS_AS_DIRECTML


@pytest.mark.parametrize(("x_type", "e_type", "sb", "x", "e", "want"), _as_directml())
def test_an_exponent_of_another_type_as_directml(
    x_type: str, e_type: str, sb: tuple[float, float] | None, x: list, e: list, want: list
) -> None:
    fields, feeds = _mixed_feeds(x_type, e_type, x, e)
    if sb is not None:
        fields["ScaleBias"] = {"Scale": sb[0], "Bias": sb[1]}
    got, ref = lowered_and_reference("cpu", "ELEMENT_WISE_POW", fields, feeds)
    np.testing.assert_allclose(ref.astype(np.float64), np.array(want, np.float64), rtol=1e-6)  # DirectML: a few ulps
    assert np.array_equal(np.signbit(ref), np.signbit(np.array(want, np.float64)))
    assert got.tobytes() == ref.tobytes()


@live
@pytest.mark.parametrize(("x_type", "e_type", "sb", "x", "e", "want"), _as_directml())
def test_directml_computes_the_values_by_hand(
    x_type: str, e_type: str, sb: tuple[float, float] | None, x: list, e: list, want: list
) -> None:
    """The rows above are DirectML's own results (some rounded where its pow is a few ulps off)."""
    fields, feeds = _mixed_feeds(x_type, e_type, x, e)
    if sb is not None:
        fields["ScaleBias"] = {"Scale": sb[0], "Bias": sb[1]}
    got = dmlapi.execute(make_desc("ELEMENT_WISE_POW", fields), feeds).output
    np.testing.assert_allclose(got.astype(np.float64), np.array(want, np.float64), rtol=1e-6)


@live
@pytest.mark.parametrize("sb", _MIXED_SCALE_BIAS)
@pytest.mark.parametrize(("x_type", "e_type"), _MIXED)
def test_directml_takes_an_exponent_of_another_type(x_type: str, e_type: str, sb: tuple[float, float] | None) -> None:
    fields, feeds = _mixed_case(x_type, e_type, sb)
    desc = make_desc("ELEMENT_WISE_POW", fields)
    got = dmlapi.execute(desc, feeds).outputs
    assert not mismatches(desc, got, registry.reference_outputs(desc, feeds), "directml")


# On the DirectML EP (its session compiles a kernel per node under lavapipe: all five ScaleBias
# forms took two minutes) every pairing without ScaleBias and with the one that makes 32-bit
# exponents of 2**31 and more; the CPU EP and DirectML's API take all five above.
_MIXED_ON_THE_DML_EP = [None, (2.0**30, 3.0)]


@pytest.mark.dml
@pytest.mark.skipif(not winhost.available(), reason="the DirectML EP under Wine is not set up (make dml-setup)")
def test_an_exponent_of_another_type_on_the_directml_ep(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every pairing with _MIXED_ON_THE_DML_EP's ScaleBias on the DirectML EP, the lowered graphs merged into one
    session (tests/batched_sessions.py: a session under Wine costs seconds, whatever its size), with
    DirectML graph fusion off as in tests/backends/test_dml_ep_matrix.py (on, each member would be a
    fused partition of its own)."""
    monkeypatch.setenv("DML2ONNX_DML_FUSION", "0")
    members, descs = [], {}
    for x_type, e_type in _MIXED:
        for sb in _MIXED_ON_THE_DML_EP:
            fields, feeds = _mixed_case(x_type, e_type, sb)
            key = f"{x_type}^{e_type} {sb}"
            descs[key] = (desc := make_desc("ELEMENT_WISE_POW", fields)), feeds
            members.append(Member(key, lowering.lower(desc, "test"), feeds))
    outcome = run_bisecting(members, lambda m, name: runtime.create(m, name, "dml"), "pow")
    assert outcome.failures == {}
    bad = {}
    for key, (desc, feeds) in descs.items():
        got = lowering.by_field(desc, outcome.outputs[key])
        if m := mismatches(desc, got, registry.reference_outputs(desc, feeds), "dml"):
            bad[key] = m
    assert bad == {}
