"""DML_OPERATOR_CAST: f(x) = cast(x), each element of InputTensor in OutputTensor's DataType.

The page says no more; what DirectML computes (measured through its API, README: casts):
- float to a float type: rounded to the nearest (IEEE; overflow is infinity);
- integer to a float type: the nearest value;
- float to an integer type of 8 to 32 bits: truncated toward zero and saturated to the type's
  range, NaN is 0;
- float to INT64: truncated toward zero, saturated to [-(2**63 - 1), 2**63 - 1] (the minimum is
  the negated maximum), NaN is 2**63 - 1; to UINT64: that INT64 value's bits (-1.5 is 2**64 - 1);
- integer to a 64-bit integer: the value modulo 2**64 (sign-extended from signed sources);
- integer to an integer type of 8 to 32 bits: the source's low 32 bits read as INT32 (signed
  targets) or UINT32 (unsigned targets), saturated to the target's range: INT32 -1 is UINT16
  65535, UINT32 2**31 is INT16 -32768, INT64 2**32 + 5 is INT8 5.
"""

from __future__ import annotations

import numpy as np

from dml2onnx.core import dtypes
from dml2onnx.core.desc import OperatorDesc
from dml2onnx.core.schema import OperatorSchema
from dml2onnx.graph import dml_ep
from dml2onnx.graph.builder import GraphBuilder, onnx_type_name
from dml2onnx.graph.targets import DML_NODE_DOC
from dml2onnx.ops import common
from dml2onnx.ops.family import Family

CANDIDATES = ("elementwise",)  # one lowering (choices.py)
BROADCASTS = True  # lower() takes inputs of size 1 where a buffer input repeats (lowering.py)
ROWS = ("CAST",)
INT64_MAX = 2**63 - 1


def validate(desc: OperatorDesc) -> None:
    common.check_same_sizes(desc, "InputTensor", "OutputTensor")


def _float_to_narrow(b: GraphBuilder, x: str, src: dtypes.DataType, dst: dtypes.DataType) -> str:
    """A FLOAT32 to an integer type of 8-32 bits: NaN 0, truncated toward zero, saturated."""
    nan = b.node("IsNaN", [x], "is_nan", "NaN")
    x = b.node("Where", [nan, b.scalar(0, src, "zero"), x], "nan_is_zero", "NaN is 0")
    return common.saturating_cast(b, x, dst)


def _float_to_wide(b: GraphBuilder, x: str, src: dtypes.DataType, dst: dtypes.DataType) -> str:
    """A float to INT64 (saturated to +-(2**63 - 1), NaN the maximum), then UINT64 as its bits;
    a FLOAT64 to a narrower integer type: that INT64 saturated to the type, NaN 0. FLOAT64 is
    compared in FLOAT32 (the DirectML EP has no FLOAT64 comparisons)."""
    probe = x if src == dtypes.FLOAT32 else b.cast(x, dtypes.FLOAT32, "probe_float32", "for the range checks")
    f32 = dtypes.FLOAT32
    limit = b.scalar(2.0**63, f32, "two_63")
    nan = b.node("IsNaN", [probe], "is_nan", "NaN")
    above = b.node("GreaterOrEqual", [probe, limit], "at_or_above", "x >= 2**63")
    high = b.node("Or", [nan, above], "high", "NaN or x >= 2**63")
    low = b.node("LessOrEqual", [probe, b.scalar(-(2.0**63), f32, "minus_two_63")], "low", "x <= -2**63")
    if src == dtypes.FLOAT32:
        out = b.node("Or", [high, low], "out_of_range", "beyond INT64")
        x = b.node("Where", [out, b.scalar(0, src, "zero"), x], "inside", "0 where beyond INT64")
    y = b.cast(x, dtypes.INT64, "to_int64", "in INT64, truncated toward zero (beyond it: replaced below)")
    y = b.node("Where", [low, b.scalar(-INT64_MAX, dtypes.INT64, "low_end"), y], "saturate_low", "-(2**63 - 1)")
    y = b.node("Where", [high, b.scalar(INT64_MAX, dtypes.INT64, "high_end"), y], "saturate_high", "2**63 - 1")
    if dst.size == 8:
        return y if dst == dtypes.INT64 else b.cast(y, dst, "as_uint64", "the INT64 value's bits")
    info = np.iinfo(dst.numpy)  # Where, not Min/Max: ONNX Runtime's INT64 Min/Max with a scalar is wrong here
    hi, lo = b.scalar(int(info.max), dtypes.INT64, "type_max"), b.scalar(int(info.min), dtypes.INT64, "type_min")
    y = b.node("Where", [b.node("Greater", [y, hi], "over", "above the type"), hi, y], "below_max", f"at most {dst}'s maximum")
    y = b.node("Where", [b.node("Less", [y, lo], "under", "below the type"), lo, y], "above_min", f"at least {dst}'s minimum")
    y = b.node("Where", [nan, b.scalar(0, dtypes.INT64, "nan_value"), y], "nan_is_zero", "NaN is 0")
    return b.cast(y, dst, f"to_{dst.name.lower()}", f"as {dst}")


def _int_to_narrow(b: GraphBuilder, x: str, dst: dtypes.DataType) -> str:
    """The low 32 bits in the target's signedness, saturated to the target."""
    word = dtypes.INT32 if dst.is_signed else dtypes.UINT32
    w = b.cast(x, word, "low_32_bits", f"the low 32 bits as {word}")
    if dst == word:
        return w
    info = np.iinfo(dst.numpy)
    w = b.node("Min", [w, b.scalar(int(info.max), word, "type_max")], "below_max", f"at most {dst}'s maximum")
    if dst.is_signed:
        w = b.node("Max", [w, b.scalar(int(info.min), word, "type_min")], "above_min", f"at least {dst}'s minimum")
    return b.cast(w, dst, f"to_{dst.name.lower()}", f"as {dst}")


def lower(desc: OperatorDesc, b: GraphBuilder, inputs: dict[str, str]) -> str:
    x = inputs["InputTensor"]
    src, dst = desc.tensor("InputTensor").data_type, desc.tensor("OutputTensor").data_type
    if src == dst:
        return x
    if b.target.dml_nodes and dml_ep.takes("Cast", b.opset, T1=onnx_type_name(src.onnx), T2=onnx_type_name(dst.onnx)):
        return b.cast(x, dst, "cast", DML_NODE_DOC)
    if dst.is_float:
        return b.cast(x, dst, f"to_{dst.name.lower()}", "the nearest value")
    if src.is_float:
        if src == dtypes.FLOAT16:
            x, src = b.cast(x, dtypes.FLOAT32, "to_float32", "exactly, in FLOAT32"), dtypes.FLOAT32
        return (_float_to_wide if dst.size == 8 or src == dtypes.FLOAT64 else _float_to_narrow)(b, x, src, dst)
    if dst.size == 8:
        return b.cast(x, dst, f"to_{dst.name.lower()}", "the value modulo 2**64")
    return _int_to_narrow(b, x, dst)


def _saturate(v: int, dtype: np.dtype) -> int:
    info = np.iinfo(dtype)
    return min(max(v, int(info.min)), int(info.max))


def _scalar(v: float | int, src: np.dtype, dst: np.dtype) -> int:
    """One element to the integer type `dst`, as DirectML casts it."""
    if src.kind == "f":
        if dst.itemsize == 8:
            probe = float(np.float32(v))  # the graph compares FLOAT64 in FLOAT32
            if np.isnan(v) or probe >= 2.0**63:
                return common.wrap_int(INT64_MAX, dst)
            return common.wrap_int(-INT64_MAX if probe <= -(2.0**63) else int(v), dst)
        return 0 if np.isnan(v) else _saturate(int(v) if np.isfinite(v) else (1 << 80 if v > 0 else -(1 << 80)), dst)
    if dst.itemsize == 8:
        return common.wrap_int(int(v), dst)
    return _saturate(common.wrap_int(int(v), np.dtype(np.int32 if dst.kind == "i" else np.uint32)), dst)


def reference(desc: OperatorDesc, inputs: dict[str, np.ndarray]) -> np.ndarray:
    x = inputs["InputTensor"]
    dst = desc.tensor("OutputTensor").data_type.numpy
    if dst.kind == "f":
        with np.errstate(over="ignore"):  # beyond the type's range: infinity
            return x.astype(dst)
    values = [_scalar(v, x.dtype, dst) for v in x.ravel().tolist()]
    return np.array(values, dtype=object).astype(dst).reshape(x.shape)


def examples(op: OperatorSchema) -> list[common.Example]:
    """onnx_ops: every input type to every output type."""
    return [
        {"InputTensor": common.example_tensor(t, [2, 3, 4, 5]), "OutputTensor": common.example_tensor(out, [2, 3, 4, 5])}
        for t in common.example_types(op, "InputTensor")
        for out in common.example_types(op, "OutputTensor")
    ]


OPERATOR_FAMILY = Family(("CAST",), validate, lower, reference, CANDIDATES, examples=examples, broadcasts=True)
