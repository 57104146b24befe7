"""The element-wise math operators, DML_OPERATOR_ELEMENT_WISE_*: one row each in ROWS (the page's
formula, its ONNX pattern and its numpy reference); the fields come from the generated operator
table and the tensor support tables from each page (operator_table.py).

What every row shares, written once here:
- the tensor rule of every page: the inputs and OutputTensor have the same DataType,
  DimensionCount and Sizes (broadcasting is a zero stride in a tensor desc, which the executor
  and `--buffer-inputs` read as any other stride);
- `ScaleBias` (DML_SCALE_BIAS): g(x) = x * Scale + Bias applied to each input element first; on
  integer tensors (which DirectML accepts, the pages being silent) g(x) is FLOAT32 arithmetic
  truncated toward zero and saturated to the type, before the integer operation (measured);
- `FusedActivation` (ADD1): the activation applied to the result, as MVN's;
- FLOAT16: computed in FLOAT32 and rounded once at the end (the precision DirectML's FLOAT16
  kernels reach or beat), except where a row says its ONNX op is correctly rounded in FLOAT16
  on every EP (Add, Sub, Mul, Div of two halves, Abs, Neg, Sign), which then runs as it is;
- integers: a row that takes them lowers them with its `integer` pattern and `int_reference`,
  as DirectML's arithmetic defines them (README: integer arithmetic).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from dml2onnx.core import dtypes
from dml2onnx.core.desc import OperatorDesc
from dml2onnx.core.errors import ModelError
from dml2onnx.core.schema import Kind
from dml2onnx.graph import dml_ep
from dml2onnx.graph.builder import GraphBuilder, onnx_type_name
from dml2onnx.graph.targets import DML_NODE_DOC
from dml2onnx.ops import activations, common
from dml2onnx.ops.family import Family

F32 = dtypes.FLOAT32
Lower = Callable[[GraphBuilder, list[str], dict[str, Any]], str]
Reference = Callable[[list[np.ndarray], dict[str, Any]], np.ndarray]
CANDIDATES = ("elementwise",)  # one lowering (choices.py)
BROADCASTS = True  # lower() takes inputs of size 1 where a buffer input repeats (lowering.py)


@dataclass(frozen=True)
class Row:
    formula: str  # the page's f(x) / f(a, b)
    lower: Lower  # on FLOAT32 values (or FLOAT16 ones where half_exact)
    reference: Reference  # on float64 values
    half_exact: bool = False  # the ONNX op is correctly rounded in FLOAT16 on every EP
    integer: Lower | None = None  # on the integer tensors themselves
    int_reference: Reference | None = None  # on the integer arrays, exact
    check: Callable[[OperatorDesc], None] | None = None  # the page's rules beyond the family's
    # `dml` target: the ONNX node(s) the DirectML EP maps back onto this operator, on the inputs
    # in their own type (None where a desc's values have no such node: dml_node's `when`)
    dml: Callable[[GraphBuilder, list[str], dict[str, Any]], str | None] | None = None


def dml_node(
    op: str, when: Callable[[dict[str, Any]], bool] | None = None, label: str = "T", **attrs: Any
) -> Callable[..., str | None]:
    """Row.dml: the single ONNX node `op` that the DirectML EP turns back into the operator
    (onnxruntime's DmlOperatorElementWise.cpp), where it registers `op` for the inputs' type (type
    constraint `label`) at the graph's opset (dml_ep.takes) and `when(params)` holds."""

    def lower(b: GraphBuilder, xs: list[str], p: dict[str, Any]) -> str | None:
        dtype: dtypes.DataType = p["__dtype__"]
        if when is not None and not when(p):
            return None
        if not dml_ep.takes(op, b.opset, **{label: onnx_type_name(dtype.onnx)}):
            return None
        return b.node(op, xs, op.lower(), DML_NODE_DOC, **attrs)

    return lower


def _unary(op: str, doc: str) -> Lower:
    def lower(b: GraphBuilder, xs: list[str], p: dict[str, Any]) -> str:
        return b.node(op, xs, op.lower(), doc)

    return lower


_binary = _unary  # the same: one ONNX op over the inputs


def _ufunc(f: Callable[..., np.ndarray]) -> Reference:
    def reference(xs: list[np.ndarray], p: dict[str, Any]) -> np.ndarray:
        with np.errstate(all="ignore"):
            return f(*xs)

    return reference


def _wrapping(f: Callable[[int, int], int]) -> Reference:
    """An integer operation on exact Python integers, wrapped to the operands' type."""

    def reference(xs: list[np.ndarray], p: dict[str, Any]) -> np.ndarray:
        dtype = xs[0].dtype
        out = [common.wrap_int(f(*args), dtype) for args in zip(*(x.ravel().tolist() for x in xs), strict=True)]
        return np.array(out, dtype=np.int64 if dtype.kind == "i" else np.uint64).astype(dtype).reshape(xs[0].shape)

    return reference


def _int_in(op: str, doc: str) -> Lower:
    """An ONNX op on integers, run in INT32 for the 8/16-bit types (the EPs lack them), whose
    result is then wrapped to the type (wrap_to)."""

    def lower(b: GraphBuilder, xs: list[str], p: dict[str, Any]) -> str:
        dtype: dtypes.DataType = p["__dtype__"]
        if dtype.size >= 4:
            return b.node(op, xs, op.lower(), doc)
        wider = [b.cast(x, dtypes.INT32, f"to_int32_{i}", "in INT32") for i, x in enumerate(xs)]
        return wrap_to(b, b.node(op, wider, op.lower(), doc), dtype)

    return lower


def wrap_to(b: GraphBuilder, y: str, dtype: dtypes.DataType) -> str:
    """The INT32 `y` modulo 2**bits as the 8/16-bit `dtype`, by arithmetic: a narrowing Cast is
    not enough, the DirectML EP saturates it (measured: INT8 127 + 1 gave 127)."""
    i32, m = dtypes.INT32, 1 << (dtype.size * 8)
    modulus = b.scalar(m, i32, "modulus")
    q = b.node("Div", [y, modulus], "wrap_quotient", f"y / {m} toward zero")
    r = b.node("Sub", [y, b.node("Mul", [q, modulus], "wrap_multiple", f"(y / {m}) * {m}")], "wrap_rest", f"y rem {m}")
    nought = b.scalar(0, i32, "wrap_nought")
    below = b.cast(b.node("Less", [r, nought], "wrap_negative", "rem < 0"), i32, "wrap_negative_flag", "1 where rem < 0")
    r = b.node("Add", [r, b.node("Mul", [below, modulus], "wrap_lift", f"{m} where rem < 0")], "wrap_low", f"y mod {m}")
    if dtype.numpy.kind == "i":  # the upper half of [0, m) is negative
        half = b.scalar(m // 2, i32, "wrap_half")
        above = b.cast(b.node("Less", [r, half], "wrap_low_half", "below m / 2"), i32, "wrap_low_flag", "1 below m / 2")
        over = b.node("Sub", [b.scalar(1, i32, "wrap_one"), above], "wrap_high_flag", "1 from m / 2 up")
        r = b.node("Sub", [r, b.node("Mul", [over, modulus], "wrap_drop", f"{m} from m / 2 up")], "wrap_signed", "as signed")
    return b.cast(r, dtype, "narrow", f"in {dtype}'s range: as {dtype}")


def _saturating_narrow_int(onnx_op: str, doc: str) -> Lower:
    """ABS and NEGATE as DirectML computes them (measured through its API): INT32 and INT64 wrap
    (the minimum stays itself), INT8 and INT16 are computed wider and saturate (abs(-128) = 127)."""

    def lower(b: GraphBuilder, xs: list[str], p: dict[str, Any]) -> str:
        dtype: dtypes.DataType = p["__dtype__"]
        if dtype.size >= 4:
            return b.node(onnx_op, xs, onnx_op.lower(), f"{doc}, wrapping: the type's minimum stays itself")
        wide = b.node(onnx_op, [b.cast(xs[0], dtypes.INT32, "to_int32", "in INT32")], onnx_op.lower(), f"{doc} in INT32")
        top = b.scalar(int(np.iinfo(dtype.numpy).max), dtypes.INT32, "type_max")
        return b.cast(b.node("Min", [wide, top], "saturate", f"saturated to {dtype}"), dtype, "narrow", f"as {dtype}")

    return lower


def _saturating_narrow_reference(f: Callable[[np.ndarray], np.ndarray]) -> Reference:
    def reference(xs: list[np.ndarray], p: dict[str, Any]) -> np.ndarray:
        x = xs[0]
        if x.dtype.itemsize >= 4:
            with np.errstate(over="ignore"):
                return f(x)  # numpy wraps the minimum as DirectML does
        return np.minimum(f(x.astype(np.int64)), np.iinfo(x.dtype).max).astype(x.dtype)

    return reference


def _float_sign(b: GraphBuilder, xs: list[str], p: dict[str, Any]) -> str:
    # ONNX Runtime's CPU Sign keeps a FLOAT32 NaN (and zeroes a FLOAT16 one): select 0 for it,
    # but where the target's EP gives 0 already (one kernel instead of three on the CUDA EP)
    x = xs[0]
    if b.target.sign_of_nan_is_zero:
        return b.node("Sign", [x], "sign", "sign(x), 0 for NaN on this EP")
    number = b.node("Equal", [x, x], "not_nan", "x == x: false for NaN only")
    sign = b.node("Sign", [x], "sign", "sign(x)")
    return b.node("Where", [number, sign, b.scalar(0.0, F32, "zero")], "sign_or_zero", "0 for NaN")


def _sign_int(b: GraphBuilder, xs: list[str], p: dict[str, Any]) -> str:
    """Sign up to 32 bits (in INT32 below); (x > 0) - (x < 0) for 64-bit types, whose Sign ONNX
    Runtime's CPU EP gets wrong past 2**31."""
    dtype: dtypes.DataType = p["__dtype__"]
    if dtype.size < 8:
        return _int_in("Sign", "sign(x)")(b, xs, p)
    nought = b.scalar(0, dtype, "nought")
    above = b.cast(b.node("Greater", [xs[0], nought], "positive", "x > 0"), dtype, "positive_flag", "1 where x > 0")
    if dtype.numpy.kind == "u":
        return above
    below = b.cast(b.node("Less", [xs[0], nought], "negative", "x < 0"), dtype, "negative_flag", "1 where x < 0")
    return b.node("Sub", [above, below], "sign", "(x > 0) - (x < 0)")


def _round(b: GraphBuilder, xs: list[str], p: dict[str, Any]) -> str:
    """ROUND's three modes as DirectML computes them (measured through its API): halves to even,
    toward zero (keeping -0), and TOWARD_INFINITY as sign(x) * floor(|x| + 0.5) in FLOAT32: halves
    away from zero, and 0.49999997 rounds to 1 (|x| + 0.5 rounds to 1.0 first)."""
    x, mode = xs[0], p["RoundingMode"]
    if mode == "HALVES_TO_NEAREST_EVEN":
        return b.node("Round", [x], "round", "halves to even")
    negative = b.node("Less", [x, b.scalar(0.0, F32, "zero")], "negative", "x < 0")
    if mode == "TOWARD_ZERO":
        return b.node(
            "Where",
            [negative, b.node("Ceil", [x], "ceil", "ceil(x)"), b.node("Floor", [x], "floor", "floor(x)")],
            "trunc",
            "toward zero",
        )
    half_up = b.node("Add", [b.node("Abs", [x], "magnitude", "|x|"), b.scalar(0.5, F32, "half")], "half_up", "|x| + 0.5")
    f = b.node("Floor", [half_up], "floor", "floor(|x| + 0.5)")
    return b.node("Where", [negative, b.node("Neg", [f], "negated", "-floor(|x| + 0.5)"), f], "away", "halves away from zero")


def _round_reference(xs: list[np.ndarray], p: dict[str, Any]) -> np.ndarray:
    x, mode = xs[0], p["RoundingMode"]
    if mode == "HALVES_TO_NEAREST_EVEN":
        return np.rint(x)
    if mode == "TOWARD_ZERO":
        return np.trunc(x)
    with np.errstate(invalid="ignore"):
        f = np.floor(np.abs(x).astype(np.float32) + np.float32(0.5)).astype(np.float64)
        return np.where(x < 0, -f, f)


def wrapping_row(onnx_op: str, formula: str, f: Callable[..., np.ndarray], exact: Callable[[int, int], int]) -> Row:
    """ADD, SUBTRACT, MULTIPLY: the ONNX op on floats (correctly rounded in FLOAT16 too), on
    integers wrapping (`exact` on Python integers, wrapped to the type), the same ONNX node on the
    `dml` target."""
    return Row(
        f"f(a, b) = {formula}",
        _binary(onnx_op, formula),
        _ufunc(f),
        half_exact=True,
        integer=_int_in(onnx_op, f"{formula}, wrapping"),
        int_reference=_wrapping(exact),
        dml=dml_node(onnx_op),
    )


def _float_math(onnx_op: str, formula: str, f: Callable[..., np.ndarray], dml: bool = True) -> Row:
    """A FLOAT32/FLOAT16-only function of one input with its own ONNX op (every EP has these),
    which the DirectML EP maps back onto the operator unless `dml` is False."""
    return Row(f"f(x) = {formula}", _unary(onnx_op, formula), _ufunc(f), dml=dml_node(onnx_op) if dml else None)


ROWS: dict[str, Row] = {
    "ELEMENT_WISE_IDENTITY": Row(
        "f(x) = x",
        lambda b, xs, p: xs[0],
        _ufunc(lambda x: x),
        half_exact=True,
        integer=lambda b, xs, p: xs[0],
        int_reference=lambda xs, p: xs[0],
        dml=dml_node("Identity"),
    ),
    "ELEMENT_WISE_ABS": Row(
        "f(x) = abs(x)",
        _unary("Abs", "abs(x)"),
        _ufunc(np.abs),
        half_exact=True,
        integer=_saturating_narrow_int("Abs", "abs(x)"),
        int_reference=_saturating_narrow_reference(np.abs),
        dml=dml_node("Abs"),
    ),
    "ELEMENT_WISE_ADD": wrapping_row("Add", "a + b", np.add, lambda a, b: a + b),
    "ELEMENT_WISE_EXP": _float_math("Exp", "exp(x)", np.exp),
    "ELEMENT_WISE_LOG": _float_math("Log", "log(x)", np.log),
    "ELEMENT_WISE_SQRT": _float_math("Sqrt", "sqrt(x)", np.sqrt),
    "ELEMENT_WISE_RECIP": _float_math("Reciprocal", "1 / x", np.reciprocal),
    "ELEMENT_WISE_CEIL": _float_math("Ceil", "ceil(x)", np.ceil),
    "ELEMENT_WISE_FLOOR": _float_math("Floor", "floor(x)", np.floor),
    "ELEMENT_WISE_ERF": _float_math("Erf", "erf(x)", np.vectorize(math.erf, otypes=[np.float64])),
    # the DirectML EP maps Tanh onto ACTIVATION_TANH, another operator
    "ELEMENT_WISE_TANH": _float_math("Tanh", "tanh(x)", np.tanh, dml=False),
    "ELEMENT_WISE_SIN": _float_math("Sin", "sin(x)", np.sin),
    "ELEMENT_WISE_COS": _float_math("Cos", "cos(x)", np.cos),
    "ELEMENT_WISE_ROUND": Row(
        "f(x) = round(x) in RoundingMode",
        _round,
        _round_reference,
        dml=dml_node("Round", when=lambda p: p["RoundingMode"] == "HALVES_TO_NEAREST_EVEN"),
    ),
    "ELEMENT_WISE_NEGATE": Row(
        "f(x) = -x",
        _unary("Neg", "-x"),
        _ufunc(np.negative),
        half_exact=True,
        integer=_saturating_narrow_int("Neg", "-x"),
        int_reference=_saturating_narrow_reference(np.negative),
        dml=dml_node("Neg"),
    ),
    "ELEMENT_WISE_SIGN": Row(
        "f(x) = sign(x): -1, 0 or 1; 0 for NaN (what DirectML computes; the page is silent)",
        _float_sign,
        _ufunc(lambda x: np.where(np.isnan(x), 0.0, np.sign(x))),
        integer=_sign_int,
        int_reference=_ufunc(np.sign),
        dml=dml_node("Sign"),
    ),
}


# -- the shared mechanisms ---------------------------------------------------------------------


def tensor_names(desc: OperatorDesc) -> list[str]:
    return [f.name for f in desc.schema.fields if f.kind is Kind.INPUT]


def _params(desc: OperatorDesc) -> dict[str, Any]:
    values = {k: v for k, v in desc.values.items() if not isinstance(v, (tuple, OperatorDesc)) and v is not None}
    dtype = desc.tensor(tensor_names(desc)[0]).data_type
    for f in desc.schema.fields:
        if f.kind is Kind.SCALAR_UNION and values.get(f.data_type or "") == "UNKNOWN" and f.name in values:
            # A scalar union of no type (ONNX Runtime's CLIP1 for a Cast to BOOL): DirectML reads
            # its bytes as the tensors' data type (measured through its API, every type).
            raw = np.asarray(values[f.name]).tobytes()
            values[f.name] = np.frombuffer(raw[: dtype.numpy.itemsize], dtype.numpy)[0]
    return values | {"__dtype__": dtype}


def scale_bias_step(b: GraphBuilder, x: str, scale_bias: tuple[float, float], i: int) -> str:
    """g(x) = x * Scale + Bias on a FLOAT32 value (the `i`th input). Scale 1 and Bias 0 leave x as
    it is, -0 included (what DirectML computes: 1 / g(-0) is -inf there). Otherwise a Bias of +0
    still turns -0 into +0 (1 / g(-0.5) with Scale 0 is +inf, in DirectML too), but ONNX Runtime
    drops an Add of 0 as a no-op, so zeros are made +0 by a select; adding -0 is a true no-op."""
    scale, bias = scale_bias
    if scale == 1 and bias == 0:
        return x
    if scale != 1:
        x = b.node("Mul", [x, b.scalar(scale, F32, f"scale_{i}")], f"scaled_{i}", "x * Scale (ScaleBias)")
    if bias != 0:
        return b.node("Add", [x, b.scalar(bias, F32, f"bias_{i}")], f"biased_{i}", "x * Scale + Bias (ScaleBias)")
    if math.copysign(1.0, bias) < 0:
        return x
    zero = b.scalar(0.0, F32, f"bias_{i}")
    is_zero = b.node("Equal", [x, zero], f"zero_{i}", "x * Scale == 0 (either sign)")
    return b.node("Where", [is_zero, zero, x], f"biased_{i}", "x * Scale + 0: a zero is +0 (ScaleBias)")


def scale_bias_reference(x: np.ndarray, scale_bias: tuple[float, float]) -> np.ndarray:
    """scale_bias_step in FLOAT32 arithmetic, as the graph and DirectML compute g(x) (the operator
    after it sees the rounded value: cos(2.5 * 204.09192) depends on it by 1e-5), as float64."""
    scale, bias = scale_bias
    if scale == 1 and bias == 0:
        return x
    with np.errstate(invalid="ignore", over="ignore"):  # inf * 0: NaN, as the graph computes
        g = x.astype(np.float32) * np.float32(scale) + np.float32(bias)
    return g.astype(np.float64)


@dataclass(frozen=True)
class RowTable:
    """validate, lower and reference for a table of rows. `same_output_type`: OutputTensor has the
    inputs' DataType (arithmetic); otherwise the rows produce the output's own type (comparisons
    and logical operators write UINT8/UINT32 0 or 1), which the family checks itself."""

    rows: dict[str, Row]
    same_output_type: bool = True

    def validate(self, desc: OperatorDesc) -> None:
        names = tensor_names(desc)
        for name in names[1:]:  # the inputs agree (the later one is named), then the output with them
            common.check_same_type(desc, name, names[0])
            common.check_same_sizes(desc, name, names[0])
        common.check_same_sizes(desc, desc.output, names[0])
        if self.same_output_type:
            common.check_same_type(desc, desc.output, names[0])
        activation = desc.values.get("FusedActivation")
        if activation is not None:
            activations.validate(activation)
        dtype = desc.tensor(names[0]).data_type
        if desc.values.get("ScaleBias") is not None and dtype.size == 8:
            # DirectML's CreateOperator refuses it (E_INVALIDARG, measured: FLOAT64, INT64, UINT64)
            raise ModelError(desc.at("ScaleBias"), f"ScaleBias cannot be used with {dtype} tensors (DirectML refuses it)")
        check = self.rows[desc.schema.name].check
        if check is not None:
            check(desc)

    def lower(self, desc: OperatorDesc, b: GraphBuilder, inputs: dict[str, str]) -> str:
        row, names = self.rows[desc.schema.name], tensor_names(desc)
        dtype, out = desc.tensor(names[0]).data_type, desc.tensor(desc.output).data_type
        xs = [inputs[n] for n in names]
        p = _params(desc)
        scale_bias, activation = desc.values.get("ScaleBias"), desc.values.get("FusedActivation")
        if b.target.dml_nodes and row.dml is not None and scale_bias is None and activation is None:
            y = row.dml(b, xs, p)
            if y is not None:
                return y
        if not dtype.is_float:
            assert row.integer is not None, f"{desc.schema.name}: the table takes {dtype} but the row has no integer lowering"
            if scale_bias is not None:  # in FLOAT32, then into the type as DirectML converts (measured)
                xs = [b.cast(x, F32, f"to_float32_{i}", "in FLOAT32") for i, x in enumerate(xs)]
                xs = [common.saturating_cast(b, scale_bias_step(b, x, scale_bias, i), dtype) for i, x in enumerate(xs)]
            return row.integer(b, xs, p)
        native = dtype == F32 or (row.half_exact and scale_bias is None and activation is None)
        if not native:
            xs = [b.cast(x, F32, f"to_float32_{i}", "in FLOAT32") for i, x in enumerate(xs)]
        if scale_bias is not None:
            xs = [scale_bias_step(b, x, scale_bias, i) for i, x in enumerate(xs)]
        y = row.lower(b, xs, p)
        if activation is not None:
            y = activations.lower(b, y, activation)
        return b.cast(y, out, "to_float16", "the result in FLOAT16") if out == dtypes.FLOAT16 and not native else y

    def reference(self, desc: OperatorDesc, inputs: dict[str, np.ndarray]) -> np.ndarray:
        row, names = self.rows[desc.schema.name], tensor_names(desc)
        dtype, out = desc.tensor(names[0]).data_type, desc.tensor(desc.output).data_type
        xs = [inputs[n] for n in names]
        p = _params(desc)
        scale_bias = desc.values.get("ScaleBias")
        if not dtype.is_float:
            assert row.int_reference is not None
            if scale_bias is not None:  # FLOAT32 arithmetic, truncated toward zero and saturated
                scale, bias = np.float32(scale_bias[0]), np.float32(scale_bias[1])
                xs = [common.saturating_cast_reference(x.astype(np.float32) * scale + bias, x.dtype) for x in xs]
            return np.asarray(row.int_reference(xs, p)).astype(out.numpy)
        xs = [x.astype(np.float64) for x in xs]
        if scale_bias is not None:
            xs = [scale_bias_reference(x, scale_bias) for x in xs]
        y = row.reference(xs, p)
        activation = desc.values.get("FusedActivation")
        if activation is not None:
            y = activations.reference(y, activation)
        with np.errstate(over="ignore", invalid="ignore"):  # beyond FLOAT16's range: infinity, as the graph's cast
            return np.asarray(y).astype(out.numpy)


FAMILY = RowTable(ROWS)
validate, lower, reference = FAMILY.validate, FAMILY.lower, FAMILY.reference


OPERATOR_FAMILY = Family(
    (
        "ELEMENT_WISE_IDENTITY",
        "ELEMENT_WISE_ABS",
        "ELEMENT_WISE_ADD",
        "ELEMENT_WISE_EXP",
        "ELEMENT_WISE_LOG",
        "ELEMENT_WISE_SQRT",
        "ELEMENT_WISE_RECIP",
        "ELEMENT_WISE_CEIL",
        "ELEMENT_WISE_FLOOR",
        "ELEMENT_WISE_ERF",
        "ELEMENT_WISE_TANH",
        "ELEMENT_WISE_SIN",
        "ELEMENT_WISE_COS",
        "ELEMENT_WISE_NEGATE",
        "ELEMENT_WISE_SIGN",
        "ELEMENT_WISE_ROUND",
    ),
    validate,
    lower,
    reference,
    CANDIDATES,
    broadcasts=True,
)
