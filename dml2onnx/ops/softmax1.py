"""DML_OPERATOR_ACTIVATION_SOFTMAX1: exp(x) / sum(exp(x)) over the joint Axes. The single-axis
ACTIVATION_SOFTMAX (softmax.py) reuses this lowering and reference."""

from __future__ import annotations

import numpy as np

from dml2onnx.core.desc import OperatorDesc
from dml2onnx.graph.builder import GraphBuilder
from dml2onnx.ops import common, hardmax1, log_softmax1
from dml2onnx.ops.family import Family

validate = hardmax1.validate  # same tensor rules, types and axes rules as HARDMAX1


# The candidate lowerings (choices.py): Softmax over the merged axes (in_place), or after moving
# them last (last_axis), or ReduceMax/Sub/Exp/ReduceSum/Div where they are (reduce_chain).
examples = hardmax1.examples  # the same example descs
CANDIDATES = ("in_place", "last_axis", "reduce_chain")


def applies(desc: OperatorDesc, candidate: str, opset: int) -> bool:
    """`last_axis` only where the axes do not already end at the last dimension (else the same graph)."""
    axes = hardmax1.reduced_axes(desc)
    return candidate != "last_axis" or axes[-1] != desc.tensor("InputTensor").rank - 1


def lower(desc: OperatorDesc, b: GraphBuilder, inputs: dict[str, str]) -> str:
    x = desc.tensor("InputTensor")
    axes = hardmax1.reduced_axes(desc)
    if b.variant == "reduce_chain":  # exp(x - max) / sum over the axes where they are
        _, exp, total = log_softmax1.exp_sum_chain(b, inputs["InputTensor"], list(axes), x.data_type)
        y = b.node("Div", [exp, total], "softmax", "exp(x - max) / sum")
        return log_softmax1.back_to_float16(b, y, x.data_type)
    # ONNX Softmax (opset 13) reduces one axis and subtracts its maximum itself (exp(x - max) /
    # sum, exact for large |max|); several axes are merged into one beforehand.
    plan = common.JointAxes(x.sizes, axes, last=b.variant == "last_axis")
    merged = plan.merge(b, inputs["InputTensor"])
    y = b.node("Softmax", [merged], "softmax", "softmax over the merged axis", axis=plan.axis)
    return plan.unmerge(b, y)


def reference(desc: OperatorDesc, inputs: dict[str, np.ndarray]) -> np.ndarray:
    x = inputs["InputTensor"]
    shifted, plan = log_softmax1.centered_reference(desc, x)
    e = np.exp(shifted)
    return common.unmerge_reference(e / e.sum(axis=1, keepdims=True), plan).astype(x.dtype)


OPERATOR_FAMILY = Family(("ACTIVATION_SOFTMAX1",), validate, lower, reference, CANDIDATES, applies=applies, examples=examples)
