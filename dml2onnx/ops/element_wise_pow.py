"""DML_OPERATOR_ELEMENT_WISE_POW (f(x, e) = pow(x, e) of two tensors) and ELEMENT_WISE_CONSTANT_POW
(f(x) = pow(x, Exponent), a FLOAT): one Row each, with element_wise.RowTable's shared mechanisms.
ScaleBias applies to both of POW's inputs, the exponent too (measured: x = 1, e = 1 with Scale 2
and Bias 1 gave 27 = 3**3), as the Family applies it to every input; on integers g(x) (FLOAT32,
truncated toward zero) saturates to the 32-bit type the pow runs in, not to the tensor's type
(_PowFamily: UINT8 128 with Scale 2 is 256, and 256**8 = 0).

The pages are silent on every special case; DirectML's API (onnxruntime-directml 1.24.4 under Wine,
README) settled them, and its floats follow one model bit for bit (every NaN, infinity and signed
zero of a FLOAT32 and FLOAT16 grid of bases and exponents; values within 2e-6):
- x = +-0: the result is +0, whatever the exponent (0**0, 0**-1, 0**NaN and -0**3 are all +0);
- otherwise |x|**e as exp2(e * log2|x|): NaN where e * log2|x| is NaN, so 1**+-inf, 1**NaN,
  inf**0, NaN**0 are NaN (IEEE and ONNX give 1);
- x < 0: NaN unless e is a finite integer (so -2**inf and -inf**0.5 are NaN); the sign is negative
  where e, converted to INT32 as Direct3D converts (saturating), is odd: every e >= 2**31 counts as
  odd (-1**1e10 = -1), every e <= -2**31 as even.
FLOAT32 results are within a few ulps (9**3 = 729.0002): exp2/log2-like, not correctly rounded,
inside tolerances.py; subnormal bases or exponents are not modelled (Direct3D flushes them, the
lavapipe stack under Wine half does: 1e-40**-1 gave 1.69e38).

Integers (POW at feature level 3.0: INT8/16/32, UINT8/16/32; CreateOperator refuses 64-bit types):
e >= 0 gives x**e modulo 2**32 (signed or unsigned 32-bit arithmetic, 0**0 = 1), saturated to the
8/16-bit types (INT8 2**7 = 127, 2**31 = -128, 2**32 = 0); e < 0 gives trunc(1 / x**|e|): 1 for
x = 1, +-1 for x = -1 by the parity of e, else 0 (0**-1 = 0).

An ExponentTensor of another type than InputTensor (POW's page allows it from feature level 3_0:
only InputTensor and OutputTensor must match; ONNX Runtime's DirectML EP writes it for a Pow whose
exponent is no one-element constant). DirectML's API computed every pairing of the table's types:
- a float base with any exponent: the exponent's value as a FLOAT32 and the float pow above; with a
  FLOAT32 base and an 8/16-bit integer or FLOAT16 exponent, results beyond FLOAT16's range
  (|y| > 65504) are +-inf (2**17 = inf, 255.94**2 = inf, 255.93**2 = 65500.14), FLOAT32 inside it;
- an integer base with a float exponent: the float pow on FLOAT32 values, truncated toward zero and
  saturated to the base's type, NaN as 0 ((-3)**2.7 = 0, 2**40 = INT32's maximum). DirectML's pow is
  not correctly rounded, so where the exact result is an integer its truncation can be one less
  (10**4.0 = 9999, 255**1.0 = 254 in UINT8): the graphs compute the exact float pow (tests allow it);
- an integer base with an integer exponent: the integer pow above with the exponent's own value
  (a negative one of a signed type: its parity rule, 1 for x = 1, else 0; a UINT32 one read
  unsigned with a signed base too: INT32 3**(2**31) = 1, 3**(2**32 - 1) = -1431655765, 1/3 modulo
  2**32, as 3 has order 2**30 there; (-1)**(2**32 - 2) = 1);
- a float base with an INT32 exponent: the sign by the INT32's own parity, not its FLOAT32 value's
  ((-1)**16777217 = -1, (-1.5)**2147483646 = +inf); a UINT32 exponent's by its FLOAT32 value's
  ((-1)**16777217 = +1, (-1)**(2**32 - 2) = -1: 2**32, odd as every e >= 2**31).
ScaleBias with mixed types: CreateOperator takes every pairing and applies g = v * Scale + Bias
(FLOAT32) to both inputs (x = 1, e = 1, Scale 2, Bias 1: 27 with every pairing):
- a float input's g stays FLOAT32, FLOAT16's too (FLOAT16 60000 * 2 - 1 is 119999, not inf);
- an integer exponent's g is truncated toward zero and saturated to INT32 or UINT32 by its own
  sign, not to its type (Bias 200: INT8 exponent 2 gives (-1)**202 = 1; UINT8 exponent 1 with
  Scale -1 is 0; Scale 2**30, Bias 3: INT32 base 0 is 3, UINT32 exponent 4 is 2**32 in FLOAT32,
  saturated to 2**32 - 1, and 3**that = -1431655765); an integer base's g the same under an
  integer exponent;
- an integer base's g under a float exponent is truncated toward zero in FLOAT32 but not saturated
  for signed types (INT32 2**31 - 1 with Scale 2**40, Bias 0.25, e = 0: (2**71)**0.25 = 220435),
  saturated to [0, 2**32] for unsigned ones ((2**40)**0.25 = 256 there; UINT8 1 * -1 is 0);
- then the pairing's rule above (FLOAT16's range with a FLOAT32 base and an 8/16-bit exponent too).
Scale 1 with Bias 0 (or -0) is skipped altogether, same types too: INT32 16777217 stays 16777217
(with Bias 1e-30 it is rounded to 16777216).

Lowering: ONNX Pow in FLOAT32 (FLOAT16 computed in FLOAT32) with selects where IEEE's pow differs
(a Pow node alone where CONSTANT_POW's exponent leaves none: even integers, e.g. x**2); every select
is idempotent, so the same graph gives DirectML's answers on the DirectML EP, whose Pow is this very
operator. Signs are products, not Where: ONNX Runtime's CPU Where turns a -0 picked as its first
value into +0. Integers: square and multiply over the exponent's bits in INT32/UINT32 (wrapping
Mul), then saturated (Min/Max) to the 8/16-bit types; Where selects only INT32 and FLOAT32 values
(the CUDA EP has no UINT32 Where). The `dml` target emits ONNX Pow, which the DirectML EP maps back
onto POW, or onto CONSTANT_POW when the exponent is a one-element constant (DmlOperatorElementWise.cpp).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from dml2onnx.core import dtypes
from dml2onnx.core.desc import OperatorDesc
from dml2onnx.graph import dml_ep
from dml2onnx.graph.builder import GraphBuilder, onnx_type_name
from dml2onnx.graph.targets import DML_NODE_DOC
from dml2onnx.ops import common
from dml2onnx.ops.element_wise import Row, RowTable, _params, dml_node, scale_bias_step, tensor_names
from dml2onnx.ops.family import Family

F32, I32, U32 = dtypes.FLOAT32, dtypes.INT32, dtypes.UINT32
CANDIDATES = ("elementwise",)  # one lowering (choices.py)
BROADCASTS = True  # lower() takes inputs of size 1 where a buffer input repeats (lowering.py)


# -- floats ----------------------------------------------------------------------------------------


def _nan(b: GraphBuilder, step: str) -> str:
    return b.scalar(float("nan"), F32, step)


def _zero_base(b: GraphBuilder, x: str, r: str) -> str:
    """+0 where x is +-0 (DirectML's rule for every exponent)."""
    zero = b.scalar(0.0, F32, "zero")
    return b.node("Where", [b.node("Equal", [x, zero], "zero_base", "x == 0"), zero, r], "pow_zero_base", "+0 where x is 0")


def _signed(b: GraphBuilder, magnitude: str, negative: str) -> str:
    """|x| ** e with its sign: times -1 where `negative` holds. A product, not Where, keeps -0:
    ONNX Runtime's CPU Where turns a -0 chosen as its first value into +0."""
    sign = b.node("Where", [negative, b.scalar(-1.0, F32, "minus_one"), b.scalar(1.0, F32, "plus_one")], "sign", "-1 or 1")
    return b.node("Mul", [magnitude, sign], "signed", "+-|x| ** e")


def _pow(b: GraphBuilder, xs: list[str], p: dict[str, Any]) -> str:
    return _float_pow(b, xs[0], xs[1])


def _float_pow(b: GraphBuilder, x: str, e: str, odd_e: str | None = None) -> str:
    """|x| ** e (ONNX Pow of a non-negative base, which the DirectML EP computes as DirectML does),
    negated where x < 0 and e is odd as Direct3D converts it to INT32 (saturating: e >= 2**31 is
    odd), or where `odd_e` holds (an INT32 exponent's own parity), NaN where DirectML's is, +0 for x = 0."""
    zero = b.scalar(0.0, F32, "nought")
    a = b.node("Abs", [x], "base_magnitude", "|x|")
    negative = b.node("Less", [x, zero], "negative", "x < 0")
    # NaN where e * log|x| is NaN (DirectML's exp2(e * log2|x|)), and for x < 0 unless e is a finite integer
    m = b.node("Mul", [e, b.node("Log", [a], "log", "log|x|")], "e_log", "e * log|x|")
    undefined = b.node(
        "Not", [b.node("Equal", [m, m], "e_log_number", "e * log|x| is a number")], "e_log_nan", "e * log|x| is NaN"
    )
    frac = b.node("Sub", [e, b.node("Floor", [e], "floor_e", "floor(e)")], "frac_e", "e - floor(e): NaN for +-inf")
    not_integer = b.node(
        "Not", [b.node("Equal", [frac, zero], "integer_e", "e is a finite integer")], "not_integer_e", "e is no integer"
    )
    nan = b.node(
        "Or", [undefined, b.node("And", [negative, not_integer], "negative_fractional", "x < 0, e not an integer")], "nan", "NaN"
    )
    # odd: (e / 2) - floor(e / 2) is 1/2 (exact below 2**24, above it every FLOAT32 is even), or e >= 2**31
    half = b.node("Mul", [e, b.scalar(0.5, F32, "half")], "half_e", "e / 2")
    frac_half = b.node("Sub", [half, b.node("Floor", [half], "floor_half", "floor(e / 2)")], "frac_half", "1/2 for odd e")
    odd_below = b.node("Greater", [frac_half, zero], "odd_below", "e odd (below 2**24)")
    big = b.node("Greater", [e, b.scalar(2147483520.0, F32, "below_2_31")], "e_big", "e >= 2**31: odd as INT32")
    odd = b.node("Or", [odd_below, big], "odd", "e odd as Direct3D converts it to INT32") if odd_e is None else odd_e
    r = _signed(b, b.node("Pow", [a, e], "pow", "|x| ** e"), b.node("And", [negative, odd], "negative_odd", "x < 0, e odd"))
    r = b.node("Where", [nan, _nan(b, "nan_value"), r], "pow_nan", "NaN where DirectML's pow is NaN")
    return _zero_base(b, x, r)


def _exponent(p: dict[str, Any]) -> float:
    return float(np.float32(p["Exponent"]))  # a FLOAT in the desc


def _constant_pow(b: GraphBuilder, xs: list[str], p: dict[str, Any]) -> str:
    """_pow with the exponent known: only the selects this exponent needs."""
    x, e = xs[0], _exponent(p)
    if math.isnan(e):  # NaN but for x = 0
        return _zero_base(b, x, _nan(b, "nan_value"))
    if e == 0:  # 1, NaN where x * 0 is NaN (x infinite or NaN), +0 where x is 0
        t = b.node("Mul", [x, b.scalar(0.0, F32, "nought")], "x_times_0", "x * 0")
        nan = b.node("Not", [b.node("Equal", [t, t], "finite", "x is finite")], "not_finite", "x is infinite or NaN")
        r = b.node("Where", [nan, _nan(b, "nan_value"), b.scalar(1.0, F32, "one")], "pow_zero", "x ** 0")
        return _zero_base(b, x, r)
    if math.isinf(e) or e < 2.0**31:
        r = b.node("Pow", [x, b.scalar(e, F32, "exponent")], "pow", f"x ** {e:g} (IEEE)")
    if math.isinf(e):  # NaN unless x > 0 and x != 1
        nan = b.node(
            "Or",
            [
                b.node(
                    "Not",
                    [b.node("Greater", [x, b.scalar(0.0, F32, "nought")], "positive", "x > 0")],
                    "not_positive",
                    "x <= 0 or NaN",
                ),
                b.node("Equal", [x, b.scalar(1.0, F32, "one")], "one_base", "x == 1"),
            ],
            "nan",
            "NaN: x <= 0, x NaN or x == 1",
        )
        r = b.node("Where", [nan, _nan(b, "nan_value"), r], "pow_nan", "NaN where DirectML's pow is NaN")
    elif e != math.floor(e):  # every x < 0 gives NaN (IEEE: -inf ** 0.5 = inf)
        negative = b.node("Less", [x, b.scalar(0.0, F32, "nought")], "negative", "x < 0")
        r = b.node("Where", [negative, _nan(b, "nan_value"), r], "pow_nan", "NaN where x < 0")
    elif e >= 2.0**31:  # odd as Direct3D converts it to INT32: -|x| ** e where x < 0 (IEEE: +)
        magnitude = b.node("Pow", [b.node("Abs", [x], "base_magnitude", "|x|"), b.scalar(e, F32, "exponent")], "pow", "|x| ** e")
        return _signed(b, magnitude, b.node("Less", [x, b.scalar(0.0, F32, "nought")], "negative", "x < 0"))
    # IEEE's -0 ** odd is -0, DirectML's +0
    odd = math.isfinite(e) and e == math.floor(e) and math.fmod(e, 2) != 0
    return _zero_base(b, x, r) if e < 0 or math.isinf(e) or odd else r


def pow_reference(x: np.ndarray, e: np.ndarray, odd_e: np.ndarray | None = None) -> np.ndarray:
    """DirectML's pow (the module's doc) on float64 values of FLOAT32/FLOAT16 numbers; `odd_e`: the
    exponent's parity where it is an INT32's (not its FLOAT32 value's)."""
    with np.errstate(all="ignore"):
        a = np.abs(x)
        r = a**e
        integer = np.isfinite(e) & (np.floor(e) == e)
        nan = np.isnan(e * np.log(a)) | ((x < 0) & ~integer)
        as_int32 = np.clip(np.where(integer, e, 0.0), -(2.0**31), 2.0**31 - 1)  # Direct3D's saturating conversion
        odd = (x < 0) & integer & ((np.fmod(as_int32, 2) != 0) if odd_e is None else odd_e)
        r = np.where(odd, -r, r)
        r = np.where(nan, np.nan, r)
        return np.where(x == 0, 0.0, r)


def _pow_reference(xs: list[np.ndarray], p: dict[str, Any]) -> np.ndarray:
    return pow_reference(*np.broadcast_arrays(*xs))


def _constant_pow_reference(xs: list[np.ndarray], p: dict[str, Any]) -> np.ndarray:
    return pow_reference(xs[0], np.full(xs[0].shape, _exponent(p)))


def _dml_constant_pow(b: GraphBuilder, xs: list[str], p: dict[str, Any]) -> str | None:
    """Pow with a one-element constant exponent: the DirectML EP's CONSTANT_POW."""
    dtype: dtypes.DataType = p["__dtype__"]
    if not dml_ep.takes("Pow", b.opset, T=onnx_type_name(dtype.onnx), T1="FLOAT"):
        return None
    return b.node("Pow", [xs[0], b.scalar(_exponent(p), F32, "exponent")], "pow", DML_NODE_DOC)


# -- integers ----------------------------------------------------------------------------------------


def _compute_type(dtype: dtypes.DataType) -> dtypes.DataType:
    return I32 if dtype.is_signed else U32


def _int_pow(b: GraphBuilder, xs: list[str], p: dict[str, Any]) -> str:
    dtype: dtypes.DataType = p["__dtype__"]
    ct = _compute_type(dtype)
    x, e = (b.cast(v, ct, f"to_{ct.name.lower()}_{i}", f"in {ct}") if dtype != ct else v for i, v in enumerate(xs))
    return _int_pow_in(b, x, e, dtype, dtype.size * 8 - (1 if dtype.is_signed else 0))


def _int_pow_in(b: GraphBuilder, x: str, e: str, dtype: dtypes.DataType, bits: int, high: str | None = None) -> str:
    """x ** e modulo 2**32 by square and multiply over the `bits` low bits of e >= 0, x and e in
    INT32 (signed types) or UINT32; for e < 0 the exponent's parity, then 0 unless x is 1 or -1;
    saturated to `dtype`. `high` (signed types, e >= 0): 1 where the exponent has 2**31 more, an
    INT32 0 or 1 (a UINT32 exponent's bit 31); x ** 2**31 modulo 2**32 is 1 for odd x, else 0."""
    signed = dtype.is_signed
    ct = _compute_type(dtype)
    two, one = b.scalar(2, ct, "two"), b.scalar(1, ct, "one")
    negative_e = None
    if signed and high is None:  # e < 0: x ** (e mod 2), then 0 unless |x| == 1
        negative_e = b.node("Less", [e, b.scalar(0, ct, "nought")], "negative_e", "e < 0")
        half = b.node("Div", [e, two], "e_half", "e / 2 toward zero")
        rest = b.node("Sub", [e, b.node("Mul", [half, two], "e_even", "(e / 2) * 2")], "e_rest", "e rem 2: -1, 0 or 1")
        parity = b.node("Abs", [rest], "e_parity", "|e| mod 2")
        e = b.node("Where", [negative_e, parity, e], "e_used", "e, or its parity where e < 0")
    acc, base = None, x
    for k in range(bits):
        if k:
            base = b.node("Mul", [base, base], f"base_{k}", f"x ** 2**{k}, wrapping")
        rest = b.node("Div", [e, two], f"e_shift_{k}", f"e >> {k + 1}")
        bit = b.node("Sub", [e, b.node("Mul", [rest, two], f"e_even_{k}", "twice it")], f"bit_{k}", f"bit {k} of e")
        less_one = b.node("Sub", [base, one], f"base_less_one_{k}", "x ** 2**k - 1, wrapping")
        factor = b.node(
            "Add",
            [b.node("Mul", [bit, less_one], f"pick_{k}", "bit * (x ** 2**k - 1)"), one],
            f"factor_{k}",
            f"x ** 2**{k} where bit {k} is set, else 1",
        )
        acc = factor if acc is None else b.node("Mul", [acc, factor], f"product_{k}", "the product so far, wrapping")
        e = rest
    assert acc is not None
    if high is not None:  # times x ** 2**31: 1 for odd x, 0 for even x
        rest = b.node(
            "Sub", [x, b.node("Mul", [b.node("Div", [x, two], "x_half", "x / 2"), two], "x_even", "twice it")], "x_rem", "x rem 2"
        )
        odd = b.node("Abs", [rest], "x_odd", "1 for odd x, else 0")
        factor = b.node(
            "Add",
            [
                b.node("Mul", [high, b.node("Sub", [odd, one], "x_odd_less_one", "0 or -1")], "high_pick", "where bit 31 is set"),
                one,
            ],
            "high_factor",
            "x ** 2**31 where bit 31 is set, else 1",
        )
        acc = b.node("Mul", [acc, factor], "with_high", "times x ** 2**31 where bit 31 is set")
    if negative_e is not None:
        unit = b.node(
            "Or",
            [
                b.node("Equal", [x, one], "x_one", "x == 1"),
                b.node("Equal", [x, b.scalar(-1, ct, "minus_one")], "x_minus_one", "x == -1"),
            ],
            "x_unit",
            "|x| == 1",
        )
        vanish = b.node("And", [negative_e, b.node("Not", [unit], "x_not_unit", "|x| != 1")], "vanishes", "e < 0 and |x| != 1")
        acc = b.node("Where", [vanish, b.scalar(0, ct, "zero"), acc], "int_pow", "trunc(1 / x ** |e|) where e < 0")
    if dtype == ct:
        return acc
    info = np.iinfo(dtype.numpy)
    acc = b.node("Min", [acc, b.scalar(int(info.max), ct, "type_max")], "at_most_max", f"at most {dtype}'s maximum")
    if signed:
        acc = b.node("Max", [acc, b.scalar(int(info.min), ct, "type_min")], "at_least_min", f"at least {dtype}'s minimum")
    return b.cast(acc, dtype, "narrow", f"saturated: as {dtype}")


def int_pow(x: int, e: int, dtype: np.dtype) -> int:
    """DirectML's integer pow of one pair (the module's doc), exact."""
    if e < 0:
        return 1 if x == 1 else ((-1 if e % 2 else 1) if x == -1 else 0)
    r = pow(x, e, 2**32)
    if dtype.kind == "i" and r >= 2**31:
        r -= 2**32
    info = np.iinfo(dtype)
    return max(int(info.min), min(int(info.max), r))


def _int_pow_reference(xs: list[np.ndarray], p: dict[str, Any], dtype: np.dtype | None = None) -> np.ndarray:
    """int_pow over the arrays, as `dtype` (the arrays' own by default)."""
    x, e = np.broadcast_arrays(*xs)
    out_type = x.dtype if dtype is None else dtype
    out = [int_pow(a, n, out_type) for a, n in zip(x.ravel().tolist(), e.ravel().tolist(), strict=True)]
    return np.array(out, dtype=np.int64).astype(out_type).reshape(x.shape)


ROWS: dict[str, Row] = {
    "ELEMENT_WISE_POW": Row(
        "f(x, e) = pow(x, e): +0 for x = 0, NaN where e * log|x| is NaN or x < 0 and e is no integer",
        _pow,
        _pow_reference,
        integer=_int_pow,
        int_reference=_int_pow_reference,
        dml=dml_node("Pow"),
    ),
    "ELEMENT_WISE_CONSTANT_POW": Row(
        "f(x) = pow(x, Exponent), as ELEMENT_WISE_POW's", _constant_pow, _constant_pow_reference, dml=_dml_constant_pow
    ),
}


def _mixed(desc: OperatorDesc) -> bool:
    """POW with an ExponentTensor of another type than InputTensor."""
    return desc.schema.name == "ELEMENT_WISE_POW" and (
        desc.tensor("ExponentTensor").data_type != desc.tensor("InputTensor").data_type
    )


class _PowFamily(RowTable):
    """Family, but for integer ScaleBias: DirectML converts g(x) = x * Scale + Bias (FLOAT32,
    truncated toward zero) into the 32-bit type its pow runs in, saturating there, not into the
    tensor's own type (measured: UINT8 128 with Scale 2 is 256, and 256**8 = 0)."""

    def validate(self, desc: OperatorDesc) -> None:
        if not _mixed(desc):
            return super().validate(desc)
        common.check_same_sizes(desc, "ExponentTensor", "InputTensor")
        common.check_same_sizes(desc, "OutputTensor", "InputTensor")
        common.check_same_type(desc, "OutputTensor", "InputTensor")
        return None

    def lower(self, desc: OperatorDesc, b: GraphBuilder, inputs: dict[str, str]) -> str:
        dtype, scale_bias = desc.tensor("InputTensor").data_type, desc.values.get("ScaleBias")
        if _mixed(desc):
            return _lower_mixed(desc, b, inputs)
        if dtype == dtypes.FLOAT16 and not (b.target.dml_nodes and scale_bias is None):
            return self._lower_float16(desc, b, inputs)
        if dtype.is_float or scale_bias is None:
            return super().lower(desc, b, inputs)
        if _scale_bias(desc) is None:  # Scale 1, Bias 0: DirectML skips it
            return _int_pow(b, [inputs[n] for n in tensor_names(desc)], _params(desc))
        ct = _compute_type(dtype)
        xs = [b.cast(inputs[n], F32, f"to_float32_{i}", "in FLOAT32") for i, n in enumerate(tensor_names(desc))]
        x, e = (common.saturating_cast(b, scale_bias_step(b, v, scale_bias, i), ct) for i, v in enumerate(xs))
        return _int_pow_in(b, x, e, dtype, 31 if dtype.is_signed else 32)

    def _lower_float16(self, desc: OperatorDesc, b: GraphBuilder, inputs: dict[str, str]) -> str:
        """Family's FLOAT16 path (in FLOAT32, cast once, _to_float16: 6e4**2 is inf)."""
        names, scale_bias = tensor_names(desc), desc.values.get("ScaleBias")
        xs = [b.cast(inputs[n], F32, f"to_float32_{i}", "in FLOAT32") for i, n in enumerate(names)]
        if scale_bias is not None:
            xs = [scale_bias_step(b, x, scale_bias, i) for i, x in enumerate(xs)]
        return _to_float16(b, self.rows[desc.schema.name].lower(b, xs, _params(desc)))

    def reference(self, desc: OperatorDesc, inputs: dict[str, np.ndarray]) -> np.ndarray:
        dtype, scale_bias = desc.tensor("InputTensor").data_type, desc.values.get("ScaleBias")
        if _mixed(desc):
            return _mixed_reference(desc, inputs)
        if dtype.is_float or scale_bias is None:
            return super().reference(desc, inputs)
        if _scale_bias(desc) is None:  # Scale 1, Bias 0: DirectML skips it
            return _int_pow_reference([inputs[n] for n in tensor_names(desc)], {})
        scale, bias = np.float32(scale_bias[0]), np.float32(scale_bias[1])
        ct = _compute_type(dtype).numpy
        x, e = (common.saturating_cast_reference(inputs[n].astype(np.float32) * scale + bias, ct) for n in tensor_names(desc))
        return _int_pow_reference([x, e], {}, dtype.numpy)


F16_MAX = 65504.0


def _to_float16(b: GraphBuilder, y: str) -> str:
    """The FLOAT32 `y` as FLOAT16, +-inf past its range made in FLOAT16 arithmetic: the DirectML
    EP's Cast FLOAT32 -> FLOAT16 saturates at 65504, inf too, where DirectML's own POW gives inf."""
    half = b.cast(y, dtypes.FLOAT16, "to_float16", "the result in FLOAT16")
    beyond = b.node(
        "Greater",
        [b.node("Abs", [y], "result_magnitude", "|y|"), b.scalar(65519.996, F32, "f16_limit")],
        "beyond",
        "|y| rounds to inf in FLOAT16",
    )
    twice = b.node(
        "Where", [beyond, b.scalar(2.0, F32, "two"), b.scalar(1.0, F32, "one")], "overflow_factor", "2 past FLOAT16's range"
    )
    factor = b.cast(twice, dtypes.FLOAT16, "overflow_factor_f16", "in FLOAT16")
    return b.node("Mul", [half, factor], "to_inf", "+-65504 (or inf) * 2: +-inf in FLOAT16")


def _f16_range(e: dtypes.DataType) -> bool:
    """A FLOAT32 base's results are +-inf beyond FLOAT16's range with this exponent type (measured)."""
    return e == dtypes.FLOAT16 or (not e.is_float and e.size <= 2)


def _scale_bias(desc: OperatorDesc) -> tuple[float, float] | None:
    """ScaleBias, or None where it has none or Scale 1 and Bias 0 (+-0), which DirectML skips: an
    INT32 16777217 stays 16777217 (FLOAT32 arithmetic gives 16777216, and does for Bias 1e-30)."""
    scale_bias = desc.values.get("ScaleBias")
    return None if scale_bias is None or (scale_bias[0] == 1 and scale_bias[1] == 0) else scale_bias


def _scaled(
    b: GraphBuilder, v: str, t: dtypes.DataType, scale_bias: tuple[float, float] | None, i: int
) -> tuple[str, dtypes.DataType]:
    """An input as the integer pow reads it with ScaleBias: g(v) = v * Scale + Bias in FLOAT32,
    truncated and saturated to INT32 or UINT32 by the type's sign; with the value's type."""
    if scale_bias is None:
        return v, t
    g = scale_bias_step(b, b.cast(v, F32, f"to_float32_{i}", "in FLOAT32"), scale_bias, i)
    return common.saturating_cast(b, g, _compute_type(t)), _compute_type(t)


def _float_base(b: GraphBuilder, x: str, x_t: dtypes.DataType, scale_bias: tuple[float, float] | None) -> str:
    """The base as the float pow reads it: FLOAT32, g(x) in FLOAT32 with ScaleBias; an integer's
    g(x) truncated toward zero, unsigned types' saturated to [0, 2**32], signed types' unbounded."""
    xf = x if x_t == F32 else b.cast(x, F32, "base_float32", "the base in FLOAT32")
    if scale_bias is None:
        return xf
    g = scale_bias_step(b, xf, scale_bias, 0)
    if x_t.is_float:
        return g
    if not x_t.is_signed:
        clipped = b.node(
            "Clip", [g, b.scalar(0.0, F32, "uint_min"), b.scalar(2.0**32, F32, "uint_max")], "base_clip", "in [0, 2**32]"
        )
        return b.node("Floor", [clipped], "base_trunc", "truncated toward zero")
    magnitude = b.node("Floor", [b.node("Abs", [g], "base_abs", "|g(x)|")], "base_floor", "floor(|g(x)|)")
    return b.node("Mul", [magnitude, b.node("Sign", [g], "base_sign", "sign of g(x)")], "base_trunc", "truncated toward zero")


def _float_exponent(
    b: GraphBuilder, e: str, e_t: dtypes.DataType, scale_bias: tuple[float, float] | None
) -> tuple[str, str | None]:
    """The exponent as the float pow reads it: FLOAT32 (g(e) with ScaleBias), an integer's value
    (g(e) truncated and saturated to INT32/UINT32) in FLOAT32; with its parity where that is an
    INT32's (e odd), else None."""
    if e_t.is_float:
        ef = e if e_t == F32 else b.cast(e, F32, "exponent_float32", "the exponent's value in FLOAT32")
        return (ef if scale_bias is None else scale_bias_step(b, ef, scale_bias, 1)), None
    ev, ev_t = _scaled(b, e, e_t, scale_bias, 1)
    ef = b.cast(ev, F32, "exponent_float32", "the exponent's value in FLOAT32")
    if ev_t != I32:  # its FLOAT32 value's parity is its own (8/16-bit types), or DirectML's (UINT32)
        return ef, None
    two = b.scalar(2, I32, "two_e")
    rest = b.node(
        "Sub", [ev, b.node("Mul", [b.node("Div", [ev, two], "e_half", "e / 2"), two], "e_even", "twice it")], "e_rem", "e rem 2"
    )
    odd = b.node("Not", [b.node("Equal", [rest, b.scalar(0, I32, "zero_e")], "e_even_int", "e even")], "e_odd", "e odd (INT32)")
    return ef, odd


def _lower_mixed(desc: OperatorDesc, b: GraphBuilder, inputs: dict[str, str]) -> str:
    x_t, e_t = desc.tensor("InputTensor").data_type, desc.tensor("ExponentTensor").data_type
    scale_bias = _scale_bias(desc)
    if x_t.is_float or e_t.is_float:
        ef, odd_e = _float_exponent(b, inputs["ExponentTensor"], e_t, scale_bias)
        y = _float_pow(b, _float_base(b, inputs["InputTensor"], x_t, scale_bias), ef, odd_e)
        if x_t == F32 and _f16_range(e_t):
            beyond = b.node(
                "Greater", [b.node("Abs", [y], "magnitude", "|y|"), b.scalar(F16_MAX, F32, "f16_max")], "beyond", "|y| > 65504"
            )
            big = b.node("Mul", [y, b.scalar(float("inf"), F32, "infinity")], "infinite", "+-inf with y's sign")
            return b.node("Where", [beyond, big, y], "f16_range", "+-inf beyond FLOAT16's range (DirectML)")
        if x_t == F32:
            return y
        if x_t.is_float:  # FLOAT16: rounded once
            return _to_float16(b, y)
        nan = b.node("IsNaN", [y], "nan", "NaN")
        y = b.node("Where", [nan, b.scalar(0.0, F32, "zero"), y], "nan_as_zero", "NaN as 0")
        return common.saturating_cast(b, y, x_t)
    x, x_v = _scaled(b, inputs["InputTensor"], x_t, scale_bias, 0)
    e, e_v = _scaled(b, inputs["ExponentTensor"], e_t, scale_bias, 1)
    ct = _compute_type(x_t)
    bits = e_v.size * 8 - (1 if e_v.is_signed else 0)
    xc = b.cast(x, ct, "base_in_compute_type", f"the base in {ct}") if x_v != ct else x
    if x_t.is_signed and e_v == U32:
        # a UINT32 exponent read unsigned (3 ** (2**31) = 1): its low 31 bits in INT32, bit 31 apart
        top = b.scalar(2**31, U32, "two_31")
        high = b.node("Div", [e, top], "e_high", "bit 31 of e")
        low = b.node("Sub", [e, b.node("Mul", [high, top], "e_high_value", "2**31 where it is set")], "e_low", "e mod 2**31")
        el, eh = b.cast(low, I32, "e_low_int32", "in INT32"), b.cast(high, I32, "e_high_int32", "in INT32")
        return _int_pow_in(b, xc, el, x_t, 31, eh)
    if x_t.is_signed or not e_v.is_signed:  # the exponent's every value fits the compute type
        ec = b.cast(e, ct, "exponent_in_compute_type", f"the exponent in {ct}") if e_v != ct else e
        return _int_pow_in(b, xc, ec, x_t, bits)
    # an unsigned base, a signed exponent: a negative one gives 1 for x = 1, else 0, which is x' ** 1
    # with x' = (x == 1): x and e replaced by arithmetic in UINT32 (the EPs lack Where and Equal there)
    e32 = b.cast(e, I32, "exponent_int32", "the exponent in INT32") if e_v != I32 else e
    negative = b.cast(b.node("Less", [e32, b.scalar(0, I32, "nought")], "negative_e", "e < 0"), ct, "negative", "1 where e < 0")
    kept = b.cast(b.node("Max", [e32, b.scalar(0, I32, "zero_e")], "e_at_least_0", "max(e, 0)"), ct, "e_kept", "in UINT32")
    m = b.node("Min", [xc, b.scalar(2, ct, "two_cap")], "x_capped", "min(x, 2)")
    unit = b.node(
        "Mul", [m, b.node("Sub", [b.scalar(2, ct, "two_less"), m], "two_less_m", "2 - m")], "x_is_one", "1 where x == 1"
    )
    swap = b.node("Mul", [negative, b.node("Sub", [unit, xc], "unit_less_x", "(x == 1) - x, wrapping")], "swap", "where e < 0")
    x_used = b.node("Add", [xc, swap], "x_used", "x, or (x == 1) where e < 0")
    e_used = b.node("Add", [kept, negative], "e_used", "e, or 1 where e < 0")
    return _int_pow_in(b, x_used, e_used, x_t, bits)


def _g_reference(v: np.ndarray, scale_bias: tuple[float, float]) -> np.ndarray:
    with np.errstate(invalid="ignore", over="ignore"):
        return v.astype(np.float32) * np.float32(scale_bias[0]) + np.float32(scale_bias[1])


def _scaled_reference(v: np.ndarray, t: dtypes.DataType, scale_bias: tuple[float, float] | None) -> np.ndarray:
    """_scaled in numpy (INT32/UINT32 values with ScaleBias)."""
    return v if scale_bias is None else common.saturating_cast_reference(_g_reference(v, scale_bias), _compute_type(t).numpy)


def _float_base_reference(x: np.ndarray, x_t: dtypes.DataType, scale_bias: tuple[float, float] | None) -> np.ndarray:
    """_float_base in numpy, as float64 values."""
    if scale_bias is None:
        return x.astype(np.float32).astype(np.float64)
    g = _g_reference(x, scale_bias).astype(np.float64)
    if x_t.is_float:
        return g
    return np.floor(np.clip(g, 0.0, 2.0**32)) if not x_t.is_signed else np.trunc(g)


def _mixed_reference(desc: OperatorDesc, inputs: dict[str, np.ndarray]) -> np.ndarray:
    x_t, e_t = desc.tensor("InputTensor").data_type, desc.tensor("ExponentTensor").data_type
    scale_bias = _scale_bias(desc)
    x, e = inputs["InputTensor"], inputs["ExponentTensor"]
    if x_t.is_float or e_t.is_float:
        xf = _float_base_reference(x, x_t, scale_bias)
        odd_e = None
        if e_t.is_float:
            ef = (e if scale_bias is None else _g_reference(e, scale_bias)).astype(np.float32).astype(np.float64)
        else:
            ev = _scaled_reference(e, e_t, scale_bias)
            ef = ev.astype(np.float32).astype(np.float64)
            if ev.dtype == np.int32:  # an INT32's own parity
                odd_e = ev.astype(np.int64) % 2 != 0
        y = pow_reference(*np.broadcast_arrays(xf, ef), odd_e)
        with np.errstate(all="ignore"):
            if x_t == F32 and _f16_range(e_t):
                y = np.where(np.abs(y) > F16_MAX, y * np.inf, y)
            if x_t.is_float:
                return y.astype(x_t.numpy)
            y = np.where(np.isnan(y), 0.0, y.astype(np.float32).astype(np.float64))
        return common.saturating_cast_reference(y, x_t.numpy)
    x, e = _scaled_reference(x, x_t, scale_bias), _scaled_reference(e, e_t, scale_bias)
    return _int_pow_reference([x.astype(np.int64), e.astype(np.int64)], {}, x_t.numpy)


FAMILY = _PowFamily(ROWS)
validate, lower, reference = FAMILY.validate, FAMILY.lower, FAMILY.reference


OPERATOR_FAMILY = Family(
    ("ELEMENT_WISE_POW", "ELEMENT_WISE_CONSTANT_POW"), validate, lower, reference, CANDIDATES, broadcasts=True
)
