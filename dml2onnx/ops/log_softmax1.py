"""DML_OPERATOR_ACTIVATION_LOG_SOFTMAX1: x - log(sum(exp(x))) over the joint Axes. The single-axis
ACTIVATION_LOG_SOFTMAX (log_softmax.py) reuses this lowering and reference; SOFTMAX1 (softmax1.py)
shares the reduction chain."""

from __future__ import annotations

import numpy as np

from .. import dtypes
from ..builder import GraphBuilder
from ..desc import OperatorDesc
from ..targets import Target
from . import argmax, common, hardmax1

validate = hardmax1.validate  # same tensor rules, types and axes rules as HARDMAX1


def lower(desc: OperatorDesc, b: GraphBuilder, inputs: dict[str, str]) -> str:
    x = desc.tensor("InputTensor")
    axes = hardmax1.reduced_axes(desc)
    if b.variant == "reduce_chain":
        return _reduce_chain(b, inputs["InputTensor"], list(axes), x.data_type)
    # ONNX LogSoftmax (opset 13) reduces one axis and subtracts the maximum first, so it is
    # stable for inputs like 1000 / -50000; several axes are merged into one beforehand.
    plan = common.JointAxes(x.sizes, axes, last=b.variant == "last_axis")
    merged = plan.merge(b, inputs["InputTensor"])
    if b.variant == "argmax_max" or not ep_kernel_exact(desc, b.target):  # the EP's own max is then 0
        if b.variant == "argmax_max":
            where = argmax.arg_index(b, merged, x.data_type, plan.axis, plan.reduced_size, False, False, plan.innermost)
            top = b.node("GatherElements", [merged, where], "max", "the maximum along the axis", axis=plan.axis)
        else:
            top = b.reduce("ReduceMax", merged, [plan.axis], "max", "the maximum along the merged axis")
        merged = b.node("Sub", [merged, top], "centered", "x - max, exact for nearby values")
    y = b.node("LogSoftmax", [merged], "log_softmax", "log-softmax over the merged axis", axis=plan.axis)
    return plan.unmerge(b, y)


def ep_kernel_exact(desc: OperatorDesc, target: Target) -> bool:
    """Whether the target's LogSoftmax over this desc's rows (its merged axes) is exact alone."""
    x = desc.tensor("InputTensor")
    plan = common.JointAxes(x.sizes, hardmax1.reduced_axes(desc))
    return target.log_softmax_exact_for(plan.reduced_size, plan.size // plan.reduced_size, x.data_type.size)


def exp_sum_chain(b: GraphBuilder, x: str, axes: list[int], dtype: dtypes.DataType) -> tuple[str, str, str]:
    """x - max, exp(x - max) and its sum over the axes, reduced where they are: no Transpose for
    axes that are not contiguous. FLOAT16 is computed in FLOAT32 (sums may exceed 65504); pass
    the result through `back_to_float16`."""
    if dtype == dtypes.FLOAT16:
        x = b.cast(x, dtypes.FLOAT32, "to_float32", "sums of many exponentials need FLOAT32")
    top = b.reduce("ReduceMax", x, axes, "max", f"the maximum over axes {axes}")
    centered = b.node("Sub", [x, top], "centered", "x - max")
    exp = b.node("Exp", [centered], "exp", "exp(x - max)")
    total = b.reduce("ReduceSum", exp, axes, "sum", "sum of exp(x - max)")
    return centered, exp, total


def back_to_float16(b: GraphBuilder, y: str, dtype: dtypes.DataType) -> str:
    return b.cast(y, dtypes.FLOAT16, "to_float16", "the result in FLOAT16") if dtype == dtypes.FLOAT16 else y


def _reduce_chain(b: GraphBuilder, x: str, axes: list[int], dtype: dtypes.DataType) -> str:
    """(x - max) - log(sum(exp(x - max)))."""
    centered, _, total = exp_sum_chain(b, x, axes, dtype)
    y = b.node("Sub", [centered, b.node("Log", [total], "log_sum", "log(sum)")], "log_softmax", "(x - max) - log(sum)")
    return back_to_float16(b, y, dtype)


def centered_reference(desc: OperatorDesc, x: np.ndarray) -> tuple[np.ndarray, common.JointAxes]:
    """numpy: the input in float64 as rows over the joint axes, minus each row's maximum."""
    flat, plan = common.merge_axes_reference(x.astype(np.float64), hardmax1.reduced_axes(desc))
    with np.errstate(invalid="ignore"):  # a row of -inf only: -inf - -inf is NaN, as on the EPs
        return flat - flat.max(axis=1, keepdims=True), plan


def reference(desc: OperatorDesc, inputs: dict[str, np.ndarray]) -> np.ndarray:
    x = inputs["InputTensor"]
    shifted, plan = centered_reference(desc, x)
    out = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    return common.unmerge_reference(out, plan).astype(x.dtype)
