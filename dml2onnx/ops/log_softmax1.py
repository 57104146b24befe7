"""DML_OPERATOR_ACTIVATION_LOG_SOFTMAX1: x - log(sum(exp(x))) over the joint Axes."""

from __future__ import annotations

import numpy as np

from ..builder import GraphBuilder
from ..desc import OperatorDesc
from . import common, hardmax1

validate = hardmax1.validate  # same tensor rules, types and axes rules as HARDMAX1


def lower(desc: OperatorDesc, b: GraphBuilder, inputs: dict[str, str]) -> str:
    # ONNX LogSoftmax (opset 13) reduces one axis and subtracts the maximum first, so it is
    # stable for inputs like 1000 / -50000; several axes are merged into one beforehand.
    x = desc.tensor("InputTensor")
    plan = common.JointAxes(x.sizes, tuple(sorted(desc["Axes"])))
    merged = plan.merge(b, inputs["InputTensor"])
    if not b.target.log_softmax_exact:  # subtract the maximum first: the EP's own max is then 0
        top = b.reduce("ReduceMax", merged, [plan.axis], "max", "the maximum along the merged axis")
        merged = b.node("Sub", [merged, top], "centered", "x - max, exact for nearby values")
    y = b.node("LogSoftmax", [merged], "log_softmax", "log-softmax over the merged axis", axis=plan.axis)
    return plan.unmerge(b, y)


def reference(desc: OperatorDesc, inputs: dict[str, np.ndarray]) -> np.ndarray:
    x = inputs["InputTensor"]
    flat, plan = common.merge_axes_reference(x.astype(np.float64), desc["Axes"])
    shifted = flat - flat.max(axis=1, keepdims=True)
    out = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    return common.unmerge_reference(out, plan).astype(x.dtype)
