"""The 17 fusable activations as standalone operators (DML_OPERATOR_ACTIVATION_LINEAR ...
ACTIVATION_GELU): OutputTensor = f(InputTensor) element by element, f as on each page
(activations.py has the formulas, written on FLOAT32 values; FLOAT16 is cast to FLOAT32 and the
result rounded once).

Integer tensors (from feature level 5_1) are lowered exactly in integer arithmetic:
- RELU (INT32, INT16, INT8): Max(x, 0) in INT32 (the CUDA EP has no integer Relu and no Max below
  32 bits).
- SHRINK (INT32/16/8, UINT32/16/8): the page does not say how an integer result is rounded, so
  what DirectML computes settles it (measured through DirectML's own API, every integer type, 12
  Bias/Threshold pairs including infinite and 3e9 Biases, bit for bit): x is converted to FLOAT32
  (rounding to nearest even, so INT32 values past 2**24 lose their low bits), compared with the
  FLOAT32 Threshold and shifted by the FLOAT32 Bias in FLOAT32 arithmetic, rounded half to even,
  and saturated to the data type's range. The graph does the same with the float lowering, Round
  and Clip; nothing is compared in INT64 (the DirectML EP orders INT64 values past 31 bits wrongly).
  NaN parameters are refused for integer tensors (no integer result follows from them).
"""

from __future__ import annotations

import math

import numpy as np

from dml2onnx.core import dtypes, operator_table
from dml2onnx.core.desc import OperatorDesc
from dml2onnx.core.errors import ModelError
from dml2onnx.graph.builder import GraphBuilder
from dml2onnx.ops import activations, common
from dml2onnx.ops.family import Family

F32 = dtypes.FLOAT32
CANDIDATES = ("elementwise",)  # one lowering (choices.py)
BROADCASTS = True  # lower() takes inputs of size 1 where a buffer input repeats (lowering.py)


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


def _shrink_int(b: GraphBuilder, x: str, dtype: dtypes.DataType, p: dict[str, float]) -> str:
    x32 = b.cast(x, F32, "to_float32", "x in FLOAT32, as DirectML computes it")
    y = b.node("Round", [activations.ACTIVATIONS["ACTIVATION_SHRINK"].lower(b, x32, p)], "round", "rounded half to even")
    return common.saturating_cast(b, y, dtype)


def reference(desc: OperatorDesc, inputs: dict[str, np.ndarray]) -> np.ndarray:
    x = inputs["InputTensor"]
    if x.dtype.kind == "f":
        with np.errstate(over="ignore"):  # beyond the type's range: infinity, as the graph's cast
            return activations.reference(x.astype(np.float64), desc).astype(x.dtype)
    if desc.schema.name == "ACTIVATION_RELU":
        return np.maximum(x, 0).astype(x.dtype)
    p = {k: np.float32(v) for k, v in activations.float32_params(desc).items()}
    xf = x.astype(np.float32)
    with np.errstate(over="ignore", invalid="ignore"):
        shifted = np.where(xf > p["Threshold"], xf - p["Bias"], np.where(xf < -p["Threshold"], xf + p["Bias"], np.float32(0)))
    info = np.iinfo(x.dtype)
    return np.clip(np.rint(shifted).astype(np.float64), info.min, info.max).astype(x.dtype)


# The activations "Using fused operators to improve performance" lists as fusable.
OPERATORS = tuple(name for name, op in operator_table.OPERATORS.items() if op.fusable)
OPERATOR_FAMILY = Family(OPERATORS, validate, lower, reference, CANDIDATES, broadcasts=True)
