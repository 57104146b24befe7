"""The inverse trigonometric and the hyperbolic operators, DML_OPERATOR_ELEMENT_WISE_ACOS, ACOSH,
ASIN, ASINH, ATAN, ATANH, ATAN_YX, TAN, SINH and COSH: one row each in ROWS (the page's formula,
its ONNX pattern and its numpy reference), on element_wise.py's RowTable (ScaleBias, FLOAT16
computed in FLOAT32).

The functions are the mathematical ones of the pages, with IEEE special values (what DirectML's
own API computes where the pages are silent, README: inverse trigonometric and hyperbolic):
NaN outside the domain (acos(1.0000001), acosh(0.5), atanh(2)), atanh(+-1) = +-inf, ATAN_YX is
atan2(A, B) with its signed zeros and infinities (atan2(+-0, -0) = +-pi, atan2(+-inf, -inf) =
+-3pi/4: the origin, which the page leaves undefined, included), sinh and cosh are finite up to
|x| = 89.4 and overflow to infinity beyond.

ONNX Runtime's CUDA EP has none of ONNX's Acos, Acosh, Asin, Asinh, Atan, Atanh, Tan, Sinh and
Cosh (its unary_elementwise_ops.cc registers Abs, Neg, Floor, Ceil, Reciprocal, Sqrt, Log, Exp,
Erf, Sign, Round, Sin, Cos; Tanh among the activations), and ONNX has no atan2. The graphs that
must run there (targets `portable` and `cuda`) compute them from Exp, Log, Sqrt, Tanh, Sin, Cos,
Div, Mul, Add, Sub, Neg, Abs, Sign, Min, comparisons and Where, in FLOAT32, to a few ulps:
- atan: cephes' atanf (range reduction at tan(pi/8) and tan(3pi/8), a degree-9 odd minimax
  polynomial); atan2 reduces to atan(min / max) on [0, 1] and places the quadrant by the signs
  (the sign bit of -0 read as min(x, 1 / x) < 0);
- asin and acos: cephes' asinf (a polynomial below 0.5, asin(sqrt((1 - |x|) / 2)) above);
- asinh, acosh, atanh: cephes' polynomials near 0 (near 1 for acosh), the log formulas between,
  and log(|x|) + log(2) beyond 1500 (x * x would overflow);
- sinh: 2t / (1 - t*t) with t = tanh(x / 2) below |x| = 1 (no cancellation), and with
  E = exp(|x| / 2)^2 / 2 (finite up to 89.4, where exp(|x|) overflows at 88.7) E - 1 / (4E)
  above; cosh: E + 1 / (4E);
- tan: sin(x) / cos(x).
Odd functions take x itself, sign and all, on their branch around 0 (so -0 stays -0 and tiny
values are exact) and flip the sign of the other branches' result where x is below that branch.

The `cpu` target (the CPU EP has every one of them) and the `dml` target (the DirectML EP maps
Acos, ..., Cosh straight back onto the DirectML operators) emit ONNX's own node instead.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from dml2onnx.core import dtypes
from dml2onnx.graph.builder import GraphBuilder
from dml2onnx.ops.element_wise import Lower, Reference, Row, RowTable, _ufunc, dml_node
from dml2onnx.ops.family import Family

F32 = dtypes.FLOAT32
CANDIDATES = ("elementwise",)  # one lowering (choices.py); the pattern follows the target
BROADCASTS = True  # lower() takes inputs of size 1 where a buffer input repeats (lowering.py)

PIO2 = math.pi / 2
PIO4 = math.pi / 4
LN2 = math.log(2.0)

# cephes (single precision) polynomial coefficients, highest power first
_ATAN_P = (8.05374449538e-2, -1.38776856032e-1, 1.99777106478e-1, -3.33329491539e-1)
_ASIN_P = (4.2163199048e-2, 2.4181311049e-2, 4.5470025998e-2, 7.4953002686e-2, 1.6666752422e-1)
_ASINH_P = (2.0122003309e-2, -4.2699340972e-2, 7.4847586088e-2, -1.6666288134e-1)
_ACOSH_P = (1.7596881071e-3, -7.5272886713e-3, 2.6454905019e-2, -1.1784741703e-1, 1.4142135263e0)
_ATANH_P = (1.81740078349e-1, 8.24370301058e-2, 1.46691431730e-1, 1.99782164500e-1, 3.33337300303e-1)


class _Expr:
    """Terse FLOAT32 node helpers for the formulas: each returns the new value's name."""

    def __init__(self, b: GraphBuilder) -> None:
        self.b = b

    def c(self, value: float, step: str = "const") -> str:
        return self.b.scalar(value, F32, step)

    def op(self, op: str, xs: Sequence[str | float], step: str, doc: str = "") -> str:
        names = [x if isinstance(x, str) else self.c(float(x), f"{step}_c") for x in xs]
        return self.b.node(op, names, step, doc or step.replace("_", " "))

    def add(self, a: str | float, c: str | float, step: str) -> str:
        return self.op("Add", [a, c], step)

    def sub(self, a: str | float, c: str | float, step: str) -> str:
        return self.op("Sub", [a, c], step)

    def mul(self, a: str | float, c: str | float, step: str) -> str:
        return self.op("Mul", [a, c], step)

    def div(self, a: str | float, c: str | float, step: str) -> str:
        return self.op("Div", [a, c], step)

    def where(self, cond: str, a: str | float, c: str | float, step: str) -> str:
        return self.op("Where", [cond, a, c], step)

    def less(self, a: str | float, c: str | float, step: str) -> str:
        return self.op("Less", [a, c], step)

    def greater(self, a: str | float, c: str | float, step: str) -> str:
        return self.op("Greater", [a, c], step)

    def unary(self, op: str, x: str, step: str) -> str:
        return self.op(op, [x], step)

    def poly(self, z: str, coeffs: Sequence[float], step: str) -> str:
        """coeffs[0] * z**n + ... + coeffs[n], by Horner's rule."""
        y = self.mul(z, coeffs[0], f"{step}_0")
        for i, k in enumerate(coeffs[1:], 1):
            y = self.add(y, k, f"{step}_{i}")
            if i < len(coeffs) - 1:
                y = self.mul(y, z, f"{step}_{i}z")
        return y

    def odd_series(self, x: str, z: str, coeffs: Sequence[float], step: str) -> str:
        """x + x * z * P(z): an odd series around 0, exact for tiny x, -0 kept."""
        return self.add(x, self.mul(self.mul(x, z, f"{step}_xz"), self.poly(z, coeffs, step), f"{step}_tail"), f"{step}_sum")

    def flip_below(self, x: str, bound: float, r: str, step: str = "odd") -> str:
        """-r where x < -bound, else r: an odd function's sign, where r was computed from |x| (as
        r * -1: the CPU EP's Neg of +0 is +0)."""
        return self.where(self.less(x, -bound, f"{step}_negative"), self.mul(r, -1.0, f"{step}_negated"), r, step)

    def sign_bit(self, x: str, step: str) -> str:
        """Whether x has its sign bit set, -0 included: min(x, 1 / x) < 0 (1 / -0 is -inf)."""
        inverse = self.unary("Reciprocal", x, f"{step}_recip")
        return self.less(self.op("Min", [x, inverse], f"{step}_min"), 0.0, step)


def _atan_nonneg(e: _Expr, a: str, unbounded: bool = True) -> str:
    """atan(a) for a >= 0 (or NaN), cephes' atanf: u = -1/a, (a - 1)/(a + 1) or a on the three
    ranges split at tan(3pi/8) and tan(pi/8), then base + u + u * z * P(z) with z = u * u.
    `unbounded` False: a is at most 1 (the tan(3pi/8) branch is not needed)."""
    mid = e.greater(a, 0.4142135623730950, "atan_mid")
    u = e.where(mid, e.div(e.sub(a, 1.0, "atan_a_m1"), e.add(a, 1.0, "atan_a_p1"), "atan_u_mid"), a, "atan_u")
    base = e.where(mid, PIO4, 0.0, "atan_base")
    if unbounded:
        big = e.greater(a, 2.414213562373095, "atan_big")
        u = e.where(big, e.div(-1.0, a, "atan_u_big"), u, "atan_u_all")
        base = e.where(big, PIO2, base, "atan_base_all")
    z = e.mul(u, u, "atan_z")
    return e.add(base, e.odd_series(u, z, _ATAN_P, "atan_p"), "atan")


def _atan(b: GraphBuilder, xs: list[str], p: dict[str, Any]) -> str:
    e, x = _Expr(b), xs[0]
    if "cuda" not in b.target.runs_on:
        return e.unary("Atan", x, "atan")
    # the branch below tan(pi/8) on x itself, signed: flip the others' sign below -tan(pi/8)
    a = e.unary("Abs", x, "abs")
    mid = e.greater(a, 0.4142135623730950, "atan_mid")
    big = e.greater(a, 2.414213562373095, "atan_big")
    u_mid = e.div(e.sub(a, 1.0, "atan_a_m1"), e.add(a, 1.0, "atan_a_p1"), "atan_u_mid")
    u = e.where(big, e.div(-1.0, a, "atan_u_big"), e.where(mid, u_mid, x, "atan_u_small"), "atan_u")
    base = e.where(big, PIO2, e.where(mid, PIO4, -0.0, "atan_base_mid"), "atan_base")  # -0 + -0 is -0
    z = e.mul(u, u, "atan_z")
    r = e.add(base, e.odd_series(u, z, _ATAN_P, "atan_p"), "atan_abs")
    return e.flip_below(x, 0.4142135623730950, r)


def _atan_yx(b: GraphBuilder, xs: list[str], p: dict[str, Any]) -> str:
    """atan2(y, x) = +-(pi - ) (pi/2 - ) atan(min(|x|, |y|) / max(|x|, |y|)), IEEE at the origin
    and the infinities: the ratio of equal magnitudes is 1 (inf / inf), 0 at the origin."""
    e, (y, x) = _Expr(b), xs
    ay, ax = e.unary("Abs", y, "abs_y"), e.unary("Abs", x, "abs_x")
    steep = e.greater(ay, ax, "steep")  # |y| > |x|: atan(|y| / |x|) = pi/2 - atan(|x| / |y|)
    num = e.where(steep, ax, ay, "numerator")
    den = e.where(steep, ay, ax, "denominator")
    equal = e.op("Equal", [ay, ax], "equal", "|y| == |x|")
    # |y| == |x|: 1, or 0 at the origin (sign(0) = 0, sign(inf) = 1); NaN goes through the division
    t = e.where(equal, e.unary("Sign", ax, "one_or_zero"), e.div(num, den, "ratio"), "t")
    r = _atan_nonneg(e, t, unbounded=False)
    r = e.where(steep, e.sub(PIO2, r, "steep_angle"), r, "first_quadrant")
    r = e.where(e.sign_bit(x, "x_negative"), e.sub(math.pi, r, "left_angle"), r, "upper_half")
    return e.where(e.sign_bit(y, "y_negative"), e.mul(r, -1.0, "lower_angle"), r, "atan2")


def _asin_core(e: _Expr, x: str) -> tuple[str, str]:
    """(q, big): q = asin(x) for |x| <= 0.5 (signed), asin(sqrt((1 - |x|) / 2)) above (big)."""
    a = e.unary("Abs", x, "abs")
    big = e.greater(a, 0.5, "asin_big")
    zb = e.mul(e.sub(1.0, a, "asin_one_minus"), 0.5, "asin_zb")  # exact for |x| in [0.5, 1]
    z = e.where(big, zb, e.mul(x, x, "asin_xx"), "asin_z")
    s = e.where(big, e.unary("Sqrt", zb, "asin_sqrt"), x, "asin_s")
    return e.odd_series(s, z, _ASIN_P, "asin_p"), big


def _asin(b: GraphBuilder, xs: list[str], p: dict[str, Any]) -> str:
    e, x = _Expr(b), xs[0]
    if "cuda" not in b.target.runs_on:
        return e.unary("Asin", x, "asin")
    q, big = _asin_core(e, x)
    r = e.where(big, e.sub(PIO2, e.add(q, q, "asin_2q"), "asin_big_r"), q, "asin_abs")
    return e.flip_below(x, 0.5, r)


def _acos(b: GraphBuilder, xs: list[str], p: dict[str, Any]) -> str:
    e, x = _Expr(b), xs[0]
    if "cuda" not in b.target.runs_on:
        return e.unary("Acos", x, "acos")
    q, _ = _asin_core(e, x)
    twoq = e.add(q, q, "acos_2q")
    inner = e.where(e.greater(x, 0.5, "acos_right"), twoq, e.sub(PIO2, q, "acos_mid"), "acos_inner")
    return e.where(e.less(x, -0.5, "acos_left"), e.sub(math.pi, twoq, "acos_left_r"), inner, "acos")


def _log_big(e: _Expr, a: str) -> str:
    """log(2a) as log(a) + log(2): 2a overflows for a near FLOAT32's maximum."""
    return e.add(e.unary("Log", a, "log_a"), LN2, "log_2a")


def _asinh(b: GraphBuilder, xs: list[str], p: dict[str, Any]) -> str:
    e, x = _Expr(b), xs[0]
    if "cuda" not in b.target.runs_on:
        return e.unary("Asinh", x, "asinh")
    a = e.unary("Abs", x, "abs")
    small = e.odd_series(x, e.mul(x, x, "asinh_xx"), _ASINH_P, "asinh_p")
    hypot = e.unary("Sqrt", e.add(e.mul(a, a, "asinh_aa"), 1.0, "asinh_aa1"), "asinh_hypot")
    mid = e.unary("Log", e.add(a, hypot, "asinh_sum"), "asinh_mid")
    r = e.where(e.greater(a, 1500.0, "asinh_big"), _log_big(e, a), mid, "asinh_large")
    r = e.where(e.greater(a, 0.5, "asinh_away"), r, small, "asinh_abs")
    return e.flip_below(x, 0.5, r)


def _acosh(b: GraphBuilder, xs: list[str], p: dict[str, Any]) -> str:
    e, x = _Expr(b), xs[0]
    if "cuda" not in b.target.runs_on:
        return e.unary("Acosh", x, "acosh")
    z = e.sub(x, 1.0, "acosh_z")  # below 1: NaN from the square root of z < 0
    near = e.mul(e.poly(z, _ACOSH_P, "acosh_p"), e.unary("Sqrt", z, "acosh_sqrt_z"), "acosh_near")
    root = e.unary("Sqrt", e.mul(z, e.add(x, 1.0, "acosh_x1"), "acosh_zz"), "acosh_root")
    mid = e.unary("Log", e.add(x, root, "acosh_sum"), "acosh_mid")
    r = e.where(e.greater(x, 1500.0, "acosh_big"), _log_big(e, x), mid, "acosh_large")
    return e.where(e.less(z, 0.5, "acosh_small"), near, r, "acosh")


def _atanh(b: GraphBuilder, xs: list[str], p: dict[str, Any]) -> str:
    e, x = _Expr(b), xs[0]
    if "cuda" not in b.target.runs_on:
        return e.unary("Atanh", x, "atanh")
    a = e.unary("Abs", x, "abs")
    small = e.odd_series(x, e.mul(x, x, "atanh_xx"), _ATANH_P, "atanh_p")
    ratio = e.div(e.add(1.0, a, "atanh_1pa"), e.sub(1.0, a, "atanh_1ma"), "atanh_ratio")  # 1: inf
    large = e.mul(e.unary("Log", ratio, "atanh_log"), 0.5, "atanh_large")
    return e.flip_below(x, 0.5, e.where(e.greater(a, 0.5, "atanh_away"), large, small, "atanh_abs"))


def _half_exp_pair(e: _Expr, a: str) -> tuple[str, str]:
    """(E, 1/(4E)) with E = exp(a) / 2 as (exp(a/2) / 2) * exp(a/2): finite up to a = 89.4."""
    h = e.unary("Exp", e.mul(a, 0.5, "half_a"), "exp_half")
    big = e.mul(e.mul(h, 0.5, "exp_half_2"), h, "half_exp")
    return big, e.div(0.25, big, "half_exp_neg")


def _sinh(b: GraphBuilder, xs: list[str], p: dict[str, Any]) -> str:
    e, x = _Expr(b), xs[0]
    if "cuda" not in b.target.runs_on:
        return e.unary("Sinh", x, "sinh")
    a = e.unary("Abs", x, "abs")
    t = e.unary("Tanh", e.mul(x, 0.5, "half_x"), "tanh_half")
    small = e.div(e.add(t, t, "two_t"), e.sub(1.0, e.mul(t, t, "tt"), "one_minus_tt"), "sinh_near")
    small = e.where(e.less(a, 2.0**-12, "sinh_tiny"), x, small, "sinh_small")  # x / 2 may be subnormal
    big, tiny = _half_exp_pair(e, a)
    large = e.sub(big, tiny, "sinh_large")
    return e.flip_below(x, 1.0, e.where(e.greater(a, 1.0, "sinh_away"), large, small, "sinh_abs"))


def _cosh(b: GraphBuilder, xs: list[str], p: dict[str, Any]) -> str:
    e, x = _Expr(b), xs[0]
    if "cuda" not in b.target.runs_on:
        return e.unary("Cosh", x, "cosh")
    big, tiny = _half_exp_pair(e, e.unary("Abs", x, "abs"))
    return e.add(big, tiny, "cosh")


def _tan(b: GraphBuilder, xs: list[str], p: dict[str, Any]) -> str:
    e, x = _Expr(b), xs[0]
    if "cuda" not in b.target.runs_on:
        return e.unary("Tan", x, "tan")
    return e.div(e.unary("Sin", x, "sin"), e.unary("Cos", x, "cos"), "tan")


def _row(formula: str, lower: Lower, f: Callable[..., np.ndarray], onnx_op: str | None) -> Row:
    reference: Reference = _ufunc(f)
    return Row(formula, lower, reference, dml=dml_node(onnx_op) if onnx_op else None)


ROWS: dict[str, Row] = {
    "ELEMENT_WISE_ACOS": _row("f(x) = acos(x)", _acos, np.arccos, "Acos"),
    "ELEMENT_WISE_ACOSH": _row("f(x) = acosh(x)", _acosh, np.arccosh, "Acosh"),
    "ELEMENT_WISE_ASIN": _row("f(x) = asin(x)", _asin, np.arcsin, "Asin"),
    "ELEMENT_WISE_ASINH": _row("f(x) = asinh(x)", _asinh, np.arcsinh, "Asinh"),
    "ELEMENT_WISE_ATAN": _row("f(x) = atan(x)", _atan, np.arctan, "Atan"),
    "ELEMENT_WISE_ATANH": _row("f(x) = atanh(x)", _atanh, np.arctanh, "Atanh"),
    # no ONNX op: the DirectML EP has no node that becomes ELEMENT_WISE_ATAN_YX
    "ELEMENT_WISE_ATAN_YX": _row("f(y, x) = atan2(y, x)", _atan_yx, np.arctan2, None),
    "ELEMENT_WISE_TAN": _row("f(x) = tan(x)", _tan, np.tan, "Tan"),
    "ELEMENT_WISE_SINH": _row("f(x) = sinh(x)", _sinh, np.sinh, "Sinh"),
    "ELEMENT_WISE_COSH": _row("f(x) = cosh(x)", _cosh, np.cosh, "Cosh"),
}

FAMILY = RowTable(ROWS)
validate, lower, reference = FAMILY.validate, FAMILY.lower, FAMILY.reference


OPERATOR_FAMILY = Family(
    (
        "ELEMENT_WISE_ACOS",
        "ELEMENT_WISE_ACOSH",
        "ELEMENT_WISE_ASIN",
        "ELEMENT_WISE_ASINH",
        "ELEMENT_WISE_ATAN",
        "ELEMENT_WISE_ATANH",
        "ELEMENT_WISE_ATAN_YX",
        "ELEMENT_WISE_TAN",
        "ELEMENT_WISE_SINH",
        "ELEMENT_WISE_COSH",
    ),
    validate,
    lower,
    reference,
    CANDIDATES,
    broadcasts=True,
)
