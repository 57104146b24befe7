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

from .. import dtypes
from ..builder import GraphBuilder
from ..desc import OperatorDesc
from ..errors import ModelError
from ..schema import Kind
from . import activations, common

F32 = dtypes.FLOAT32
Lower = Callable[[GraphBuilder, list[str], dict[str, Any]], str]
Reference = Callable[[list[np.ndarray], dict[str, Any]], np.ndarray]
CANDIDATES = ("elementwise",)  # one lowering (choices.py)


@dataclass(frozen=True)
class Row:
    formula: str  # the page's f(x) / f(a, b)
    lower: Lower  # on FLOAT32 values (or FLOAT16 ones where half_exact)
    reference: Reference  # on float64 values
    half_exact: bool = False  # the ONNX op is correctly rounded in FLOAT16 on every EP
    integer: Lower | None = None  # on the integer tensors themselves
    int_reference: Reference | None = None  # on the integer arrays, exact


def _unary(op: str, doc: str) -> Lower:
    def lower(b: GraphBuilder, xs: list[str], p: dict[str, Any]) -> str:
        return b.node(op, xs, op.lower(), doc)

    return lower


def _binary(op: str, doc: str) -> Lower:
    return _unary(op, doc)


def _ufunc(f: Callable[..., np.ndarray]) -> Reference:
    def reference(xs: list[np.ndarray], p: dict[str, Any]) -> np.ndarray:
        with np.errstate(all="ignore"):
            return f(*xs)

    return reference


def _wrapping(f: Callable[[int, int], int]) -> Reference:
    """An integer operation on exact Python integers, wrapped to the operands' type."""

    def reference(xs: list[np.ndarray], p: dict[str, Any]) -> np.ndarray:
        dtype = xs[0].dtype
        bits, signed = dtype.itemsize * 8, dtype.kind == "i"
        flat = [x.ravel().tolist() for x in xs]
        out = []
        for args in zip(*flat, strict=True):
            v = f(*args) % (1 << bits)
            out.append(v - (1 << bits) if signed and v >= 1 << (bits - 1) else v)
        return np.array(out, dtype=np.int64 if signed else np.uint64).astype(dtype).reshape(xs[0].shape)

    return reference


def _int_in(op: str, doc: str, wide: tuple[dtypes.DataType, ...] = ()) -> Lower:
    """An ONNX op on integers, run in INT32 for the 8/16-bit types (the EPs lack them; the cast
    back keeps the low bits, which is the wrapped result)."""

    def lower(b: GraphBuilder, xs: list[str], p: dict[str, Any]) -> str:
        dtype: dtypes.DataType = p["__dtype__"]
        if dtype.size >= 4:
            return b.node(op, xs, op.lower(), doc)
        wider = [b.cast(x, dtypes.INT32, f"to_int32_{i}", "in INT32") for i, x in enumerate(xs)]
        y = b.node(op, wider, op.lower(), doc)
        return b.cast(y, dtype, "wrap", f"the low {dtype.size * 8} bits, as {dtype}")

    return lower


def _abs_int(b: GraphBuilder, xs: list[str], p: dict[str, Any]) -> str:
    """What DirectML computes (measured through its API): INT32 and INT64 wrap (abs of the
    minimum is the minimum), INT8 and INT16 are computed wider and saturate (abs(-128) = 127)."""
    dtype: dtypes.DataType = p["__dtype__"]
    if dtype.size >= 4:
        return b.node("Abs", xs, "abs", "abs(x), wrapping: abs of the type's minimum is itself")
    wide = b.node("Abs", [b.cast(xs[0], dtypes.INT32, "to_int32", "in INT32")], "abs", "abs(x) in INT32")
    top = b.scalar(int(np.iinfo(dtype.numpy).max), dtypes.INT32, "type_max")
    return b.cast(b.node("Min", [wide, top], "saturate", f"saturated to {dtype}"), dtype, "narrow", f"as {dtype}")


def _abs_int_reference(xs: list[np.ndarray], p: dict[str, Any]) -> np.ndarray:
    x = xs[0]
    if x.dtype.itemsize >= 4:
        return np.abs(x)  # numpy wraps the minimum as DirectML does
    return np.minimum(np.abs(x.astype(np.int64)), np.iinfo(x.dtype).max).astype(x.dtype)


def _float_math(onnx_op: str, formula: str, f: Callable[..., np.ndarray]) -> Row:
    """A FLOAT32/FLOAT16-only function of one input with its own ONNX op (every EP has these)."""
    return Row(f"f(x) = {formula}", _unary(onnx_op, formula), _ufunc(f))


ROWS: dict[str, Row] = {
    "ELEMENT_WISE_IDENTITY": Row(
        "f(x) = x",
        lambda b, xs, p: xs[0],
        _ufunc(lambda x: x),
        half_exact=True,
        integer=lambda b, xs, p: xs[0],
        int_reference=lambda xs, p: xs[0],
    ),
    "ELEMENT_WISE_ABS": Row(
        "f(x) = abs(x)",
        _unary("Abs", "abs(x)"),
        _ufunc(np.abs),
        half_exact=True,
        integer=_abs_int,
        int_reference=_abs_int_reference,
    ),
    "ELEMENT_WISE_ADD": Row(
        "f(a, b) = a + b",
        _binary("Add", "a + b"),
        _ufunc(np.add),
        half_exact=True,
        integer=_int_in("Add", "a + b, wrapping"),
        int_reference=_wrapping(lambda a, b: a + b),
    ),
    "ELEMENT_WISE_EXP": _float_math("Exp", "exp(x)", np.exp),
    "ELEMENT_WISE_LOG": _float_math("Log", "log(x)", np.log),
    "ELEMENT_WISE_SQRT": _float_math("Sqrt", "sqrt(x)", np.sqrt),
    "ELEMENT_WISE_RECIP": _float_math("Reciprocal", "1 / x", np.reciprocal),
    "ELEMENT_WISE_CEIL": _float_math("Ceil", "ceil(x)", np.ceil),
    "ELEMENT_WISE_FLOOR": _float_math("Floor", "floor(x)", np.floor),
    "ELEMENT_WISE_ERF": _float_math("Erf", "erf(x)", np.vectorize(math.erf, otypes=[np.float64])),
    "ELEMENT_WISE_TANH": _float_math("Tanh", "tanh(x)", np.tanh),
    "ELEMENT_WISE_SIN": _float_math("Sin", "sin(x)", np.sin),
    "ELEMENT_WISE_COS": _float_math("Cos", "cos(x)", np.cos),
}


# -- the shared mechanisms ---------------------------------------------------------------------


def tensor_names(desc: OperatorDesc) -> list[str]:
    return [f.name for f in desc.schema.fields if f.kind is Kind.INPUT]


def validate(desc: OperatorDesc) -> None:
    for name in tensor_names(desc):
        common.check_same_type(desc, name, "OutputTensor")
        common.check_same_sizes(desc, name, "OutputTensor")
    activation = desc.values.get("FusedActivation")
    if activation is not None:
        activations.validate(activation)
    dtype = desc.tensor("OutputTensor").data_type
    if desc.values.get("ScaleBias") is not None and dtype.size == 8:
        # DirectML's CreateOperator refuses it (E_INVALIDARG, measured: FLOAT64, INT64, UINT64)
        raise ModelError(desc.at("ScaleBias"), f"ScaleBias cannot be used with {dtype} tensors (DirectML refuses it)")


def _params(desc: OperatorDesc) -> dict[str, Any]:
    values = {k: v for k, v in desc.values.items() if not isinstance(v, (tuple, OperatorDesc)) and v is not None}
    return values | {"__dtype__": desc.tensor("OutputTensor").data_type}


def lower(desc: OperatorDesc, b: GraphBuilder, inputs: dict[str, str]) -> str:
    row, dtype = ROWS[desc.schema.name], desc.tensor("OutputTensor").data_type
    xs = [inputs[n] for n in tensor_names(desc)]
    p = _params(desc)
    scale_bias, activation = desc.values.get("ScaleBias"), desc.values.get("FusedActivation")
    if not dtype.is_float:
        assert row.integer is not None, f"{desc.schema.name}: the support table takes {dtype} but the row has no integer lowering"
        if scale_bias is not None:  # in FLOAT32, then into the type as DirectML converts (measured)
            xs = [_scale_bias(b, b.cast(x, F32, f"to_float32_{i}", "in FLOAT32"), scale_bias, i) for i, x in enumerate(xs)]
            xs = [common.saturating_cast(b, x, dtype) for x in xs]
        return row.integer(b, xs, p)
    native = dtype == F32 or (row.half_exact and scale_bias is None and activation is None)
    if not native:
        xs = [b.cast(x, F32, f"to_float32_{i}", "in FLOAT32") for i, x in enumerate(xs)]
    if scale_bias is not None:
        xs = [_scale_bias(b, x, scale_bias, i) for i, x in enumerate(xs)]
    y = row.lower(b, xs, p)
    if activation is not None:
        y = activations.lower(b, y, activation)
    return y if native else b.cast(y, dtype, "to_float16", "the result in FLOAT16")


def _scale_bias(b: GraphBuilder, x: str, scale_bias: tuple[float, float], i: int) -> str:
    scale, bias = scale_bias
    if scale != 1:
        x = b.node("Mul", [x, b.scalar(scale, F32, f"scale_{i}")], f"scaled_{i}", "x * Scale (ScaleBias)")
    if bias != 0:
        x = b.node("Add", [x, b.scalar(bias, F32, f"bias_{i}")], f"biased_{i}", "x * Scale + Bias (ScaleBias)")
    return x


def reference(desc: OperatorDesc, inputs: dict[str, np.ndarray]) -> np.ndarray:
    row, out = ROWS[desc.schema.name], desc.tensor("OutputTensor").data_type
    xs = [inputs[n] for n in tensor_names(desc)]
    p = _params(desc)
    scale_bias = desc.values.get("ScaleBias")
    if not out.is_float:
        assert row.int_reference is not None
        if scale_bias is not None:  # FLOAT32 arithmetic, truncated toward zero and saturated
            scale, bias = np.float32(scale_bias[0]), np.float32(scale_bias[1])
            xs = [common.saturating_cast_reference(x.astype(np.float32) * scale + bias, x.dtype) for x in xs]
        return row.int_reference(xs, p)
    xs = [x.astype(np.float64) for x in xs]
    if scale_bias is not None:
        with np.errstate(invalid="ignore"):  # inf * 0: NaN, as the graph computes
            xs = [x * scale_bias[0] + scale_bias[1] for x in xs]
    y = row.reference(xs, p)
    activation = desc.values.get("FusedActivation")
    if activation is not None:
        y = activations.reference(y, activation)
    with np.errstate(over="ignore"):  # beyond FLOAT16's range: infinity, as the graph's cast
        return np.asarray(y).astype(out.numpy)
