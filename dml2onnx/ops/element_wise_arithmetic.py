"""The element-wise arithmetic of two tensors, DML_OPERATOR_ELEMENT_WISE_{SUBTRACT, MULTIPLY,
DIVIDE, MAX, MIN, MEAN, DIFFERENCE_SQUARE, MODULUS_TRUNCATE, MODULUS_FLOOR} and ADD1 (ADD is in
element_wise.py): one Row each, with element_wise.RowTable's shared mechanisms.

Integers are DirectML's arithmetic, which its pages do not spell out; its own API settled every rule
here (onnxruntime-directml 1.24.4 under Wine, README):
- +, -, * wrap modulo 2**bits (INT64/UINT64 exactly, past 2**53 too);
- DIVIDE truncates toward zero; the type's minimum / -1 wraps to the minimum; x / 0 is the unsigned
  maximum for unsigned types and -1 (x >= 0) or 1 (x < 0) for signed ones, up to 32 bits (64-bit
  division by zero gives unrelated values, 5 / 0 = 7: dml2onnx extends the 32-bit rule, README);
- MODULUS_TRUNCATE is x - trunc(x / y) * y, MODULUS_FLOOR takes the divisor's sign; x mod 0 is x
  for 64-bit types and for signed ones under TRUNCATE, else as x / 0 (FLOOR: -1 or 1; unsigned:
  the maximum);
- MEAN (INT32, UINT32) is the wrapped sum halved toward zero.
The graphs never divide by 0 or the minimum by -1 (both trap on the CPU): the divisor is made safe
first and those cases selected after, with 0/1 arithmetic rather than Where, which the CUDA EP lacks
for 32/64-bit unsigned types. 8- and 16-bit integers are computed in INT32 and wrapped back by
element_wise.wrap_to (the EPs lack most ops on them; the DirectML EP saturates narrowing Casts).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dml2onnx.core import dtypes
from dml2onnx.core.errors import ModelError
from dml2onnx.graph import dml_ep
from dml2onnx.graph.builder import GraphBuilder, onnx_type_name
from dml2onnx.graph.targets import DML_NODE_DOC
from dml2onnx.ops import common
from dml2onnx.ops.element_wise import Row, RowTable, _binary, _ufunc, _wrapping, dml_node, wrap_to, wrapping_row
from dml2onnx.ops.family import Family

F32 = dtypes.FLOAT32
CANDIDATES = ("elementwise",)  # one lowering (choices.py)
BROADCASTS = True  # lower() takes inputs of size 1 where a buffer input repeats (lowering.py)


# -- integer helpers: values in the compute type (INT32 for 8/16-bit types) -----------------------


def _widen(b: GraphBuilder, xs: list[str], dtype: dtypes.DataType) -> list[str]:
    if dtype.size >= 4:
        return xs
    return [b.cast(x, dtypes.INT32, f"to_int32_{i}", "in INT32") for i, x in enumerate(xs)]


def _narrow(b: GraphBuilder, y: str, dtype: dtypes.DataType) -> str:
    return y if dtype.size >= 4 else wrap_to(b, y, dtype)


def _back_in_type(b: GraphBuilder, y: str, dtype: dtypes.DataType) -> str:
    """An INT32 result already in the 8/16-bit `dtype`'s range (a max, a min, a clamp of values of
    that type) as that type: one Cast, exact, where _narrow's wrap would spend eight kernels."""
    return y if dtype.size >= 4 else b.cast(y, dtype, "narrow", f"in {dtype}'s range: as {dtype}")


def _all_bits(dtype: dtypes.DataType) -> int:
    """The value of every bit set in `dtype`: -1 signed, the maximum unsigned."""
    return -1 if dtype.numpy.kind == "i" else int(np.iinfo(dtype.numpy).max)


def _safe_quotient(b: GraphBuilder, a: str, d: str, dtype: dtypes.DataType) -> tuple[str, str, str | None]:
    """(trunc(a / d) with d = 0 read as 1 and d = -1 as 1 (then negated), the is-zero flag, the
    is-minus-one flag or None for unsigned types), in the compute type."""
    ct = common.compute_type(dtype)
    zero = common.flag(b, b.node("Equal", [d, b.scalar(0, ct, "zero")], "divisor_zero", "d == 0"), ct, "zero_flag")
    safe = b.node("Add", [d, zero], "divisor_nonzero", "d, or 1 where d == 0")
    minus_one = None
    if dtype.numpy.kind == "i":
        m1 = b.node("Equal", [d, b.scalar(-1, ct, "minus_one")], "divisor_minus_one", "d == -1")
        minus_one = common.flag(b, m1, ct, "minus_one_flag")
        two = b.node("Mul", [minus_one, b.scalar(2, ct, "two")], "twice", "2 where d == -1")
        safe = b.node("Add", [safe, two], "divisor_safe", "d, or 1 where d is 0 or -1")
    q = b.node("Div", [a, safe], "quotient", "a / d truncated toward zero")
    if minus_one is not None:  # a / -1 = -a, wrapping (the minimum stays itself)
        negated = b.node("Sub", [b.scalar(0, ct, "nought"), a], "negated", "-a, wrapping")
        q = common.select(b, minus_one, negated, q, "quotient_signed", "-a where d == -1")
    return q, zero, minus_one


def _takes_divisor_sign(b: GraphBuilder, r: str, d: str, nought: str) -> str:
    """r != 0 and sign(r) != sign(d): where a truncated remainder becomes a floored one by + d."""
    nonzero = b.node("Not", [b.node("Equal", [r, nought], "r_zero", "r == 0")], "r_nonzero", "r != 0")
    r_neg = b.node("Less", [r, nought], "r_negative", "r < 0")
    d_neg = b.node("Less", [d, nought], "d_negative", "d < 0")
    differ = b.node("Xor", [r_neg, d_neg], "signs_differ", "sign(r) != sign(d)")
    return b.node("And", [nonzero, differ], "adjust", "r != 0 and the signs differ")


def _float_takes_divisor_sign(b: GraphBuilder, r: str, d: str) -> str:
    """_takes_divisor_sign for floats in three nodes where it takes six (one pass per node on the
    CUDA EP): sign(r) * d < 0. |sign(r)| is 1 or 0, so the product keeps d's sign without
    underflowing (r * d would, for tiny values), r = +-0 gives +-0 and a NaN r no adjustment.
    Not for INT64: the CPU EP's INT64 Sign gives -1 for 2**31 (as the DirectML EP's does)."""
    signed = b.node("Mul", [b.node("Sign", [r], "r_sign", "sign(r)"), d], "sign_times_d", "sign(r) * d")
    return b.node("Less", [signed, b.scalar(0.0, F32, "nought")], "adjust", "r != 0 and the signs differ")


def _by_zero(b: GraphBuilder, a: str, dtype: dtypes.DataType, mode: str) -> str | None:
    """DirectML's result where the divisor is 0, or None where it is the dividend itself (the
    safe quotient is then a, so a - a * 0 = a already). `mode`: div, trunc or floor."""
    if mode != "div" and (dtype.size == 8 or (dtype.numpy.kind == "i" and mode == "trunc")):
        return None
    ct = common.compute_type(dtype)
    if dtype.numpy.kind == "u":
        return b.scalar(_all_bits(dtype), ct, "all_bits")
    negative = common.flag(b, b.node("Less", [a, b.scalar(0, ct, "nought_a")], "a_negative", "a < 0"), ct, "negative_flag")
    twice = b.node("Mul", [negative, b.scalar(2, ct, "two_sign")], "twice_negative", "2 where a < 0")
    return b.node("Add", [twice, b.scalar(-1, ct, "minus_one_sign")], "by_zero_value", "-1 where a >= 0, 1 where a < 0")


def _divide_int(b: GraphBuilder, xs: list[str], p: dict[str, Any]) -> str:
    dtype: dtypes.DataType = p["__dtype__"]
    a, d = _widen(b, xs, dtype)
    q, zero, _ = _safe_quotient(b, a, d, dtype)
    value = _by_zero(b, a, dtype, "div")
    assert value is not None
    return _narrow(b, common.select(b, zero, value, q, "by_zero", "DirectML's a / 0"), dtype)


def _modulus_int(floor: bool) -> Any:
    def lower(b: GraphBuilder, xs: list[str], p: dict[str, Any]) -> str:
        dtype: dtypes.DataType = p["__dtype__"]
        ct = common.compute_type(dtype)
        a, d = _widen(b, xs, dtype)
        q, zero, _ = _safe_quotient(b, a, d, dtype)
        r = b.node("Sub", [a, b.node("Mul", [q, d], "multiple", "trunc(a / d) * d")], "remainder", "a - trunc(a / d) * d")
        if floor and dtype.numpy.kind == "i":  # take the divisor's sign: r + d where r != 0 and their signs differ
            fix = common.flag(b, _takes_divisor_sign(b, r, d, b.scalar(0, ct, "nought_r")), ct, "adjust_flag")
            r = b.node("Add", [r, b.node("Mul", [fix, d], "adjustment", "d where adjusted")], "floored", "r + d where adjusted")
        value = _by_zero(b, a, dtype, "floor" if floor else "trunc")
        if value is not None:
            r = common.select(b, zero, value, r, "by_zero", "DirectML's a mod 0")
        return _narrow(b, r, dtype)

    return lower


def _extreme_int(maximum: bool) -> Any:
    """MAX/MIN of integers (in INT32 below 32 bits)."""

    def lower(b: GraphBuilder, xs: list[str], p: dict[str, Any]) -> str:
        dtype: dtypes.DataType = p["__dtype__"]
        a, other = _widen(b, xs, dtype)
        return _back_in_type(b, _extreme(b, a, other, dtype, maximum), dtype)

    return lower


def _extreme(b: GraphBuilder, a: str, other: str, dtype: dtypes.DataType, maximum: bool) -> str:
    """max (min) of two values in the compute type: the ONNX op up to 32 bits, a comparison and a
    0/1 select for 64-bit types, whose Max/Min ONNX Runtime's CPU EP gets wrong past 2**31."""
    op, compare = ("Max", "Greater") if maximum else ("Min", "Less")
    if dtype.size < 8:
        return b.node(op, [a, other], op.lower(), f"{op.lower()}(a, b)")
    flag = common.flag(b, b.node(compare, [a, other], "a_wins", f"a {'>' if maximum else '<'} b"), dtype, "a_wins_flag")
    return common.select(b, flag, a, other, op.lower(), f"{op.lower()}(a, b), exactly")


def _extreme_row(maximum: bool) -> Row:
    """MAX or MIN: the ONNX op (exact in FLOAT16 too), integers by _extreme_int."""
    op, f = ("Max", np.maximum) if maximum else ("Min", np.minimum)
    formula = f"{op.lower()}(a, b)"
    return Row(
        f"f(a, b) = {formula}",
        _binary(op, formula),
        _ufunc(f),
        half_exact=True,
        integer=_extreme_int(maximum),
        int_reference=_ufunc(f),
        dml=dml_node(op),
    )


def _mean_int(b: GraphBuilder, xs: list[str], p: dict[str, Any]) -> str:
    dtype: dtypes.DataType = p["__dtype__"]  # INT32 or UINT32 (the page's table)
    total = b.node("Add", xs, "sum", "a + b, wrapping")
    return b.node("Div", [total, b.scalar(2, dtype, "two")], "mean", "(a + b) / 2 toward zero")


def _difference_square_int(b: GraphBuilder, xs: list[str], p: dict[str, Any]) -> str:
    d = b.node("Sub", xs, "difference", "a - b, wrapping on INT32 and UINT32 (the page's table)")
    return b.node("Mul", [d, d], "square", "(a - b) * (a - b), wrapping")


# -- references on exact integers ---------------------------------------------------------------


def _int_division(mode: str) -> Any:
    """DIVIDE ("div"), MODULUS_TRUNCATE ("trunc") or MODULUS_FLOOR ("floor") on exact integers,
    with DirectML's results for a zero divisor."""

    def reference(xs: list[np.ndarray], p: dict[str, Any]) -> np.ndarray:
        dtype = xs[0].dtype
        t = dtypes.BY_NUMPY[dtype]

        def one(a: int, d: int) -> int:
            if d == 0:
                if mode != "div" and (t.size == 8 or (t.numpy.kind == "i" and mode == "trunc")):
                    return a
                return _all_bits(t) if t.numpy.kind == "u" else (1 if a < 0 else -1)
            q = abs(a) // abs(d) * (1 if (a < 0) == (d < 0) else -1)  # toward zero
            if mode == "div":
                return q
            r = a - q * d
            return r + d if mode == "floor" and r != 0 and (r < 0) != (d < 0) else r

        return _wrapping(one)(xs, p)

    return reference


def _mean_reference(xs: list[np.ndarray], p: dict[str, Any]) -> np.ndarray:

    def one(a: int, b: int) -> int:
        return int(common.wrap_int(a + b, xs[0].dtype) / 2)  # toward zero; |sum| < 2**32 is exact in a float

    return _wrapping(one)(xs, p)


def _float_modulus(floor: bool) -> Any:
    def lower(b: GraphBuilder, xs: list[str], p: dict[str, Any]) -> str:
        r = b.node("Mod", xs, "fmod", "fmod(a, b): the dividend's sign", fmod=1)
        if not floor:
            return r
        d = xs[1]
        adjust = _float_takes_divisor_sign(b, r, d)
        return b.node("Where", [adjust, b.node("Add", [r, d], "shifted", "r + b"), r], "floored", "the divisor's sign")

    return lower


def _float_modulus_reference(floor: bool) -> Any:
    def reference(xs: list[np.ndarray], p: dict[str, Any]) -> np.ndarray:
        a, d = xs
        with np.errstate(all="ignore"):
            r = np.fmod(a, d)
            if floor:
                r = np.where((r != 0) & ((r < 0) != (d < 0)), r + d, r)
        return r

    return reference


# -- clamping: CLIP, CLIP1, THRESHOLD -----------------------------------------------------------


def _bounds(p: dict[str, Any], names: tuple[str, ...]) -> list[float | int]:
    return [p[n].item() if isinstance(p[n], np.generic) else p[n] for n in names]


def _int_bound(value: float | int, dtype: dtypes.DataType) -> int:
    """A bound on integers: CLIP's and THRESHOLD's FLOAT (as a FLOAT32) truncated toward zero and
    saturated to the type, as DirectML applies it (measured); CLIP1's scalar union is exact."""
    info = np.iinfo(dtype.numpy)
    if isinstance(value, float):
        value = float(np.trunc(np.float32(value))) if np.isfinite(np.float32(value)) else float(np.float32(value))
        value = int(max(info.min, min(info.max, value)))
    return int(max(info.min, min(info.max, value)))


def _clamp(names: tuple[str, ...]) -> tuple[Any, Any, Any, Any]:
    """min(x, Max) then max(·, Min), in that order, as DirectML computes it: where Min > Max the
    result is Min (ONNX Clip would give Max). `names`: the desc's bound fields, (Min, Max) or (Min,)."""

    def lower(b: GraphBuilder, xs: list[str], p: dict[str, Any]) -> str:
        bounds = [float(np.float32(v)) for v in _bounds(p, names)]
        if len(bounds) == 2 and bounds[0] <= bounds[1]:
            lo, hi = (b.scalar(v, F32, n.lower()) for v, n in zip(bounds, names, strict=True))
            return b.node("Clip", [xs[0], lo, hi], "clip", "min(max(x, Min), Max)")
        y = xs[0]
        if len(bounds) == 2:
            y = b.node("Min", [y, b.scalar(bounds[1], F32, "max")], "at_most_max", "min(x, Max)")
        return b.node("Max", [y, b.scalar(bounds[0], F32, "min")], "at_least_min", "max(·, Min)")

    def reference(xs: list[np.ndarray], p: dict[str, Any]) -> np.ndarray:
        bounds = [float(np.float32(v)) for v in _bounds(p, names)]
        y = xs[0] if len(bounds) == 1 else np.minimum(xs[0], bounds[1])
        return np.maximum(y, bounds[0])

    def integer(b: GraphBuilder, xs: list[str], p: dict[str, Any]) -> str:
        dtype: dtypes.DataType = p["__dtype__"]
        ct = common.compute_type(dtype)
        bounds = [_int_bound(v, dtype) for v in _bounds(p, names)]
        info = np.iinfo(dtype.numpy)
        # a bound at the type's own end binds nothing (an unsigned Min of 0, a Max of the maximum)
        steps = [(bounds[1], False)] if len(bounds) == 2 and bounds[1] < info.max else []
        steps += [(bounds[0], True)] if bounds[0] > info.min else []
        if not steps:
            return xs[0]
        if b.target.clip_8bit and dtype.size == 1 and (len(bounds) == 1 or bounds[0] <= bounds[1]):
            # one Clip in the type itself, where Min <= Max (Clip's order then agrees with DirectML's)
            lo, hi = bounds[0], bounds[1] if len(bounds) == 2 else info.max
            ends = [b.scalar(v, dtype, n) for v, n in ((lo, "min"), (hi, "max"))]
            return b.node("Clip", [xs[0], *ends], "clip", f"min(max(x, {lo}), {hi}) in {dtype}")
        y = _widen(b, xs, dtype)[0]
        for bound, maximum in steps:
            y = _extreme(b, y, b.scalar(bound, ct, "min" if maximum else "max"), dtype, maximum=maximum)
        return _back_in_type(b, y, dtype)

    def int_reference(xs: list[np.ndarray], p: dict[str, Any]) -> np.ndarray:
        bounds = [_int_bound(v, dtypes.BY_NUMPY[xs[0].dtype]) for v in _bounds(p, names)]
        y = xs[0] if len(bounds) == 1 else np.minimum(xs[0], np.array(bounds[1], xs[0].dtype))
        return np.maximum(y, np.array(bounds[0], xs[0].dtype))

    return lower, reference, integer, int_reference


def check_min_max_type(desc: Any) -> None:
    """CLIP1's and CLIP_GRAD1's rule: the scalar unions' MinMaxDataType is the output's DataType.
    CLIP1 also takes UNKNOWN (not on the page; ONNX Runtime's DirectML EP writes it for a Cast to
    BOOL): its unions' bytes are then read as the output's type (element_wise._params). Both
    measured through DirectML's API, which refuses UNKNOWN in CLIP_GRAD1 (E_INVALIDARG)."""
    out = desc.tensor(desc.output).data_type.name
    unknown = ("UNKNOWN",) if desc.schema.name == "ELEMENT_WISE_CLIP1" else ()
    if desc["MinMaxDataType"] not in (out, *unknown):
        raise ModelError(desc.at("MinMaxDataType"), f"must match {desc.output}.DataType ({out}), not {desc['MinMaxDataType']}")


def _dml_clip(b: GraphBuilder, xs: list[str], p: dict[str, Any]) -> str | None:
    """Clip with its bounds as constants in the input's type, which the DirectML EP maps back onto
    ELEMENT_WISE_CLIP (floats: an integer tensor's FLOAT bounds are DirectML's to convert)."""
    dtype: dtypes.DataType = p["__dtype__"]
    if not dtype.is_float or not dml_ep.takes("Clip", b.opset, T=onnx_type_name(dtype.onnx)):
        return None
    with np.errstate(over="ignore"):  # a bound beyond FLOAT16's range is its infinity: the same clamp
        lo, hi = (b.scalar(float(v), dtype, n.lower()) for v, n in zip(_bounds(p, ("Min", "Max")), ("Min", "Max"), strict=True))
    return b.node("Clip", [xs[0], lo, hi], "clip", DML_NODE_DOC)


def _clamp_row(formula: str, names: tuple[str, ...], check: Any = None) -> Row:
    lower, reference, integer, int_reference = _clamp(names)
    dml = _dml_clip if len(names) == 2 else None
    return Row(formula, lower, reference, integer=integer, int_reference=int_reference, check=check, dml=dml)


ROWS: dict[str, Row] = {
    "ELEMENT_WISE_ADD1": Row(
        "f(a, b) = FusedActivation(a + b)", _binary("Add", "a + b"), _ufunc(np.add), half_exact=True, dml=dml_node("Add")
    ),
    "ELEMENT_WISE_SUBTRACT": wrapping_row("Sub", "a - b", np.subtract, lambda a, b: a - b),
    "ELEMENT_WISE_MULTIPLY": wrapping_row("Mul", "a * b", np.multiply, lambda a, b: a * b),
    "ELEMENT_WISE_DIVIDE": Row(
        "f(a, b) = a / b",
        _binary("Div", "a / b"),
        _ufunc(np.divide),
        integer=_divide_int,
        int_reference=_int_division("div"),
        dml=dml_node("Div"),
    ),
    "ELEMENT_WISE_MAX": _extreme_row(maximum=True),
    "ELEMENT_WISE_MIN": _extreme_row(maximum=False),
    "ELEMENT_WISE_MEAN": Row(
        "f(a, b) = (a + b) / 2",
        # halves first: (a + b) / 2 of two large FLOAT32 values stays finite, as DirectML's does
        lambda b, xs, p: b.node(
            "Add",
            [b.node("Mul", [x, b.scalar(0.5, F32, f"half_{i}")], f"halved_{i}", "x / 2") for i, x in enumerate(xs)],
            "mean",
            "a / 2 + b / 2",
        ),
        _ufunc(lambda a, b: (a + b) / 2),
        integer=_mean_int,
        int_reference=_mean_reference,
        dml=dml_node("Mean"),
    ),
    "ELEMENT_WISE_DIFFERENCE_SQUARE": Row(
        "f(a, b) = (a - b)^2",
        _difference_square_int,  # Sub, then Mul of the difference by itself: the same graph on floats
        _ufunc(lambda a, b: (a - b) ** 2),
        integer=_difference_square_int,
        int_reference=_wrapping(lambda a, b: (a - b) ** 2),
    ),
    "ELEMENT_WISE_MODULUS_TRUNCATE": Row(
        "f(a, b) = a - trunc(a / b) * b",
        _float_modulus(floor=False),
        _float_modulus_reference(floor=False),
        integer=_modulus_int(floor=False),
        int_reference=_int_division("trunc"),
        dml=dml_node("Mod", fmod=1),
    ),
    "ELEMENT_WISE_MODULUS_FLOOR": Row(
        "f(a, b) = a - floor(a / b) * b",
        _float_modulus(floor=True),
        _float_modulus_reference(floor=True),
        integer=_modulus_int(floor=True),
        int_reference=_int_division("floor"),
        dml=dml_node("Mod", when=lambda p: not p["__dtype__"].is_float, fmod=0),  # ONNX: fmod=0 on integers only
    ),
    "ELEMENT_WISE_CLIP": _clamp_row("f(x) = max(min(x, Max), Min)", ("Min", "Max")),
    "ELEMENT_WISE_CLIP1": _clamp_row("f(x) = max(min(x, Max), Min)", ("Min", "Max"), check=check_min_max_type),
    "ELEMENT_WISE_THRESHOLD": _clamp_row("f(x) = max(x, Min)", ("Min",)),
}

FAMILY = RowTable(ROWS)
validate, lower, reference = FAMILY.validate, FAMILY.lower, FAMILY.reference


OPERATOR_FAMILY = Family(
    (
        "ELEMENT_WISE_ADD1",
        "ELEMENT_WISE_SUBTRACT",
        "ELEMENT_WISE_MULTIPLY",
        "ELEMENT_WISE_DIVIDE",
        "ELEMENT_WISE_MAX",
        "ELEMENT_WISE_MIN",
        "ELEMENT_WISE_MEAN",
        "ELEMENT_WISE_DIFFERENCE_SQUARE",
        "ELEMENT_WISE_MODULUS_TRUNCATE",
        "ELEMENT_WISE_MODULUS_FLOOR",
        "ELEMENT_WISE_CLIP",
        "ELEMENT_WISE_CLIP1",
        "ELEMENT_WISE_THRESHOLD",
    ),
    validate,
    lower,
    reference,
    CANDIDATES,
    broadcasts=True,
)
