"""The 17 fusable activations as standalone operators (DML_OPERATOR_ACTIVATION_LINEAR ...
ACTIVATION_GELU): OutputTensor = f(InputTensor) element by element, f as on each page
(activations.py has the formulas, written on FLOAT32 values; FLOAT16 is cast to FLOAT32 and the
result rounded once).

Integer tensors (from feature level 5_1) are lowered exactly in integer arithmetic:
- RELU (INT32, INT16, INT8): Max(x, 0) in INT32 (the CUDA EP has no integer Relu and no Max below
  32 bits).
- SHRINK (INT32/16/8, UINT32/16/8): Bias and Threshold stay FLOATs, as in DirectML. The page does
  not say how an integer result is rounded, so this tool defines it: the comparisons x > Threshold
  and x < -Threshold are exact (as real numbers), the result is the exact x - Bias or x + Bias
  rounded toward zero and saturated to the data type's range. The graph computes it in INT64 with
  the Threshold and Bias turned into integer bounds at lowering time; NaN parameters are refused
  for integer tensors (no integer result would follow from them).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from .. import dtypes
from ..builder import GraphBuilder
from ..desc import OperatorDesc
from ..errors import ModelError
from . import activations, common

I64 = dtypes.INT64
# |x| < 2**32 for every integer type taken here: parameters beyond +-2**40 act as if infinite
_FAR = 2**40


def validate(desc: OperatorDesc) -> None:
    common.check_same_type(desc, "OutputTensor", "InputTensor")
    common.check_same_sizes(desc, "OutputTensor", "InputTensor")
    activations.validate(desc)
    if not desc.tensor("InputTensor").data_type.is_float:
        for name, value in activations.params(desc).items():
            if math.isnan(value):
                raise ModelError(desc.at(name), f"{name} must be a number for integer tensors, not NaN")


def lower(desc: OperatorDesc, b: GraphBuilder, inputs: dict[str, str]) -> str:
    x = inputs["InputTensor"]
    dtype = desc.tensor("InputTensor").data_type
    if not dtype.is_float:
        lower_int = _relu_int if desc.schema.name == "ACTIVATION_RELU" else _shrink_int
        return lower_int(b, x, dtype, activations.params(desc))
    if desc.schema.name == "ACTIVATION_IDENTITY":  # no FLOAT32 round trip: nothing to compute
        return x
    half = dtype == dtypes.FLOAT16
    x32 = b.cast(x, dtypes.FLOAT32, "to_float32", "x in FLOAT32") if half else x
    y = activations.lower(b, x32, desc)
    return b.cast(y, dtypes.FLOAT16, "to_float16", "result in FLOAT16") if half else y


def _relu_int(b: GraphBuilder, x: str, dtype: dtypes.DataType, p: dict[str, float]) -> str:
    narrow = dtype != dtypes.INT32
    x32 = b.cast(x, dtypes.INT32, "to_int32", "x in INT32") if narrow else x
    y = b.node("Max", [x32, b.scalar(0, dtypes.INT32, "zero")], "relu", "max(0, x)")
    return b.cast(y, dtype, f"to_{dtype.name.lower()}", f"result in {dtype}") if narrow else y


def _bound(value: float) -> float:
    return max(-_FAR, min(_FAR, value))


def _shrink_int(b: GraphBuilder, x: str, dtype: dtypes.DataType, p: dict[str, float]) -> str:
    bias, threshold = float(np.float32(p["Bias"])), _bound(float(np.float32(p["Threshold"])))
    x64 = b.cast(x, I64, "to_int64", "x in INT64: x - Bias cannot overflow")
    # for integer x: x > T <=> x > floor(T), and x < -T <=> x < ceil(-T)
    above = b.node("Greater", [x64, b.scalar(math.floor(threshold), I64, "floor_threshold")], "above", "x > Threshold")
    below = b.node("Less", [x64, b.scalar(math.ceil(-threshold), I64, "ceil_minus_threshold")], "below", "x < -Threshold")
    low = _minus(b, x64, -bias, "plus_bias", "x + Bias")
    rest = b.node("Where", [below, low, b.scalar(0, I64, "zero")], "low_or_zero", "x + Bias if x < -Threshold else 0")
    y = b.node("Where", [above, _minus(b, x64, bias, "minus_bias", "x - Bias"), rest], "shrink", "x - Bias if x > Threshold")
    if bias != 0:
        y = _saturate(b, y, dtype)
    return b.cast(y, dtype, f"to_{dtype.name.lower()}", f"result in {dtype}")


def _minus(b: GraphBuilder, x64: str, bias: float, step: str, doc: str) -> str:
    """x - bias rounded toward zero, exactly: x - ceil(bias) where x >= ceil(bias) (the difference
    is >= 0 there), else x - floor(bias)."""
    bias = _bound(bias)
    up, down = math.ceil(bias), math.floor(bias)
    if up == down:
        return b.node("Sub", [x64, b.scalar(up, I64, f"{step}_k")], step, doc)
    at_least = b.node("Less", [x64, b.scalar(up, I64, f"{step}_ceil")], f"{step}_negative", f"{doc} < 0")
    towards = [
        b.node("Sub", [x64, b.scalar(k, I64, f"{step}_{n}")], f"{step}_{n}", f"{doc}, {n}")
        for n, k in (("floor", down), ("ceil", up))
    ]
    return b.node("Where", [at_least, *towards], step, f"{doc} rounded toward zero")


def _saturate(b: GraphBuilder, y: str, dtype: dtypes.DataType) -> str:
    # Where + Less/Greater rather than Min/Max: ORT's CPU EP gets INT64 Min/Max wrong in [2^31, 2^32)
    info = np.iinfo(dtype.numpy)
    lo, hi = b.scalar(int(info.min), I64, "type_min"), b.scalar(int(info.max), I64, "type_max")
    y = b.node("Where", [b.node("Less", [y, lo], "under", f"below {dtype}'s range"), lo, y], "saturate_low", "saturates")
    return b.node("Where", [b.node("Greater", [y, hi], "over", f"above {dtype}'s range"), hi, y], "saturate_high", "saturates")


def reference(desc: OperatorDesc, inputs: dict[str, np.ndarray]) -> np.ndarray:
    x = inputs["InputTensor"]
    if x.dtype.kind == "f":
        with np.errstate(over="ignore"):  # beyond the type's range: infinity, as the graph's cast
            return activations.reference(x.astype(np.float64), desc).astype(x.dtype)
    if desc.schema.name == "ACTIVATION_RELU":
        return np.maximum(x, 0).astype(x.dtype)
    p = activations.float32_params(desc)
    info = np.iinfo(x.dtype)

    def shrink(v: int) -> int:
        exact = _shrink_exact(v, p["Bias"], p["Threshold"])
        return int(max(info.min, min(info.max, exact)))

    out = [shrink(int(v)) for v in x.ravel()]
    return np.array(out, dtype=np.int64).astype(x.dtype).reshape(x.shape)


def _shrink_exact(v: int, bias: float, threshold: float) -> float | int:
    """The page's formula on the real numbers, rounded toward zero (infinite when Bias is)."""

    def shifted(sign: int) -> float | int:
        if math.isinf(bias):
            return -sign * bias
        return math.trunc(Fraction(v) - sign * Fraction(bias))

    if v > threshold:  # Python compares an int and a float exactly
        return shifted(1)
    if v < -threshold:
        return shifted(-1)
    return 0
