"""The element-wise backpropagation operators: DML_OPERATOR_ACTIVATION_RELU_GRAD,
ELEMENT_WISE_CLIP_GRAD and ELEMENT_WISE_CLIP_GRAD1. OutputGradientTensor = InputGradientTensor
where InputTensor passes the forward operator's test, else 0: one Row each on element_wise.RowTable
(GradientFamily: the output field is OutputGradientTensor), its mechanisms reused.

What the pages leave open, as DirectML's own API computed it (README: gradients):
- RELU_GRAD passes the gradient where x > 0 only (x = 0, -0 and NaN give 0);
- CLIP_GRAD and CLIP_GRAD1 pass it where Min < x < Max: x == Min and x == Max give 0, as the pages
  say; a NaN x gives 0;
- the gradient passes as it is (NaN and infinities included); where it does not, the result is +0;
- FLOAT16: CLIP_GRAD's FLOAT bounds are rounded to FLOAT16 first;
- integers: CLIP_GRAD's FLOAT bounds apply as CLIP's do (truncated toward zero, saturated to the
  type); CLIP_GRAD1's scalar unions are exact; INT64/UINT64 compared as integers.

The DirectML EP maps no ONNX node onto these operators (the `dml` target lowers them as `portable`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dml2onnx.core import dtypes
from dml2onnx.graph.builder import GraphBuilder
from dml2onnx.ops import common
from dml2onnx.ops.element_wise import Row, RowTable
from dml2onnx.ops.element_wise_arithmetic import _bounds, _int_bound, check_min_max_type
from dml2onnx.ops.family import Family

F32 = dtypes.FLOAT32
CANDIDATES = ("elementwise",)  # one lowering (choices.py)
BROADCASTS = True  # lower() takes inputs of size 1 where a buffer input repeats (lowering.py)


# -- the test on x, as a BOOL: where the gradient passes ----------------------------------------


def _passes_float(b: GraphBuilder, x: str, lo: float | None, hi: float | None) -> str:
    """lo < x (< hi) on FLOAT32 values: false for NaN."""
    ok = b.node("Greater", [x, b.scalar(lo if lo is not None else 0.0, F32, "min")], "above_min", "x > Min")
    if hi is None:
        return ok
    below = b.node("Less", [x, b.scalar(hi, F32, "max")], "below_max", "x < Max")
    return b.node("And", [ok, below], "inside", "Min < x < Max")


def _passes_int(b: GraphBuilder, x: str, dtype: dtypes.DataType, lo: int, hi: int | None) -> str:
    """lo < x (< hi) exactly, in the compute type (INT32 for 8/16-bit types, which the CUDA EP
    does not compare)."""
    ct = common.compute_type(dtype)
    if ct != dtype:
        x = b.cast(x, ct, "to_int32", "in INT32 (exact)")
    ok = b.node("Greater", [x, b.scalar(lo, ct, "min")], "above_min", "x > Min")
    if hi is None:
        return ok
    below = b.node("Less", [x, b.scalar(hi, ct, "max")], "below_max", "x < Max")
    return b.node("And", [ok, below], "inside", "Min < x < Max")


def _pass_gradient(b: GraphBuilder, passes: str, dy: str, dtype: dtypes.DataType) -> str:
    """dy where `passes`, else +0. Floats: Where (a NaN or infinite dy where it does not pass gives
    0, which multiplying by a 0/1 flag would not); integers: flag * dy (the CUDA EP has no Where
    for unsigned and 8/16-bit types)."""
    if dtype.is_float:
        return b.node("Where", [passes, dy, b.scalar(0.0, F32, "zero")], "gradient", "dy where it passes, else 0")
    ct = common.compute_type(dtype)
    if ct != dtype:
        dy = b.cast(dy, ct, "gradient_in_int32", "dy in INT32 (exact)")
    y = b.node("Mul", [common.flag(b, passes, ct, "passes_flag"), dy], "gradient", "dy where it passes, else 0")
    return y if ct == dtype else b.cast(y, dtype, "narrow", f"as {dtype} (exact)")


# -- the rows -----------------------------------------------------------------------------------


def _relu_grad(b: GraphBuilder, xs: list[str], p: dict[str, Any]) -> str:
    return _pass_gradient(b, _passes_float(b, xs[0], None, None), xs[1], F32)


def _relu_grad_int(b: GraphBuilder, xs: list[str], p: dict[str, Any]) -> str:
    dtype: dtypes.DataType = p["__dtype__"]
    return _pass_gradient(b, _passes_int(b, xs[0], dtype, 0, None), xs[1], dtype)


def _relu_grad_reference(xs: list[np.ndarray], p: dict[str, Any]) -> np.ndarray:
    x, dy = xs
    return np.where(x > 0, dy, np.zeros_like(dy))


def _float_bounds(p: dict[str, Any]) -> tuple[float, float]:
    """Min and Max in the tensors' type, as DirectML compares them (measured: a FLOAT16 x of
    0.0999756 does not pass a Min of 0.09997, which rounds to it); IEEE rounding, so a bound past
    FLOAT16's range is infinite (this Wine stack saturates it, README)."""
    lo, hi = (np.float32(v) for v in _bounds(p, ("Min", "Max")))
    if p["__dtype__"] == dtypes.FLOAT16:
        with np.errstate(over="ignore"):
            lo, hi = np.float16(lo), np.float16(hi)
    return float(lo), float(hi)


def _clip_grad(b: GraphBuilder, xs: list[str], p: dict[str, Any]) -> str:
    lo, hi = _float_bounds(p)
    return _pass_gradient(b, _passes_float(b, xs[0], lo, hi), xs[1], F32)


def _clip_grad_int(b: GraphBuilder, xs: list[str], p: dict[str, Any]) -> str:
    dtype: dtypes.DataType = p["__dtype__"]
    lo, hi = (_int_bound(v, dtype) for v in _bounds(p, ("Min", "Max")))
    return _pass_gradient(b, _passes_int(b, xs[0], dtype, lo, hi), xs[1], dtype)


def _clip_grad_reference(xs: list[np.ndarray], p: dict[str, Any]) -> np.ndarray:
    x, dy = xs
    lo, hi = _float_bounds(p)
    with np.errstate(invalid="ignore"):
        return np.where((x > lo) & (x < hi), dy, np.zeros_like(dy))


def _clip_grad_int_reference(xs: list[np.ndarray], p: dict[str, Any]) -> np.ndarray:
    x, dy = xs
    lo, hi = (_int_bound(v, dtypes.BY_NUMPY[x.dtype]) for v in _bounds(p, ("Min", "Max")))
    inside = (x > np.array(lo, x.dtype)) & (x < np.array(hi, x.dtype))
    return np.where(inside, dy, np.zeros_like(dy))


def _clip_row(check: Any = None) -> Row:
    return Row(
        "f(x, dy) = dy if Min < x < Max else 0",
        _clip_grad,
        _clip_grad_reference,
        integer=_clip_grad_int,
        int_reference=_clip_grad_int_reference,
        check=check,
    )


ROWS: dict[str, Row] = {
    "ACTIVATION_RELU_GRAD": Row(
        "f(x, dy) = dy if x > 0 else 0",
        _relu_grad,
        _relu_grad_reference,
        integer=_relu_grad_int,
        int_reference=_relu_grad_reference,
    ),
    "ELEMENT_WISE_CLIP_GRAD": _clip_row(),
    "ELEMENT_WISE_CLIP_GRAD1": _clip_row(check=check_min_max_type),
}


FAMILY = RowTable(ROWS)  # the three tensors have the same DataType and Sizes; the output is OutputGradientTensor
validate, lower, reference = FAMILY.validate, FAMILY.lower, FAMILY.reference


OPERATOR_FAMILY = Family(
    ("ACTIVATION_RELU_GRAD", "ELEMENT_WISE_CLIP_GRAD", "ELEMENT_WISE_CLIP_GRAD1"),
    validate,
    lower,
    reference,
    CANDIDATES,
    broadcasts=True,
)
