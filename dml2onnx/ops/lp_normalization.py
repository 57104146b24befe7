"""DML_OPERATOR_LP_NORMALIZATION: x divided by its Lp norm along Axis (P = 1: the sum of |x|, P =
2: the square root of the sum of x^2).

What the page leaves open, as DirectML's own API computed it (README: LP_NORMALIZATION): Epsilon
goes under a square root with the squared norm, for both P: y = x / sqrt(norm^2 + Epsilon)
(P = 2: x / sqrt(sum(x^2) + Epsilon); P = 1: x / sqrt(sum(|x|)^2 + Epsilon)): neither max(norm,
Epsilon) nor norm + Epsilon. A line of zeros gives 0 (NaN with Epsilon 0), a negative Epsilon
is taken as it is (NaN where the squared norm is smaller).

Lowering: ReduceSumSquare (P = 2) or ReduceL1 and its square (P = 1) over Axis (keepdims), + Epsilon,
Sqrt, Div, in FLOAT32 (the CUDA EP has no LpNormalization). The DirectML EP maps LpNormalization back onto this
operator with Epsilon = 1e-5 (DefaultEpsilon, DmlOperatorLpNormalization.cpp): the dml target emits
it where the desc's Epsilon is that FLOAT32 value."""

from __future__ import annotations

import numpy as np

from dml2onnx.core import dtypes
from dml2onnx.core.desc import OperatorDesc
from dml2onnx.core.errors import ModelError
from dml2onnx.core.schema import OperatorSchema
from dml2onnx.graph.builder import GraphBuilder
from dml2onnx.graph.targets import DML_NODE_DOC
from dml2onnx.ops import common
from dml2onnx.ops.family import Family

CANDIDATES = ("reduce",)
DML_EP_EPSILON = np.float32(1e-5)  # the DirectML EP's DefaultEpsilon


def validate(desc: OperatorDesc) -> None:
    common.check_same_type(desc, "OutputTensor", "InputTensor")
    common.check_same_sizes(desc, "OutputTensor", "InputTensor")
    rank = desc.tensor("InputTensor").rank
    if desc["Axis"] >= rank:
        raise ModelError(desc.at("Axis"), f"must be less than InputTensor's DimensionCount ({rank}), not {desc['Axis']}")
    if desc["P"] not in (1, 2):
        raise ModelError(desc.at("P"), f"must be 1 or 2, not {desc['P']}")


def dml_node(desc: OperatorDesc) -> bool:
    """Whether the DirectML EP's LpNormalization computes this desc."""
    return np.float32(desc["Epsilon"]) == DML_EP_EPSILON


def lower(desc: OperatorDesc, b: GraphBuilder, inputs: dict[str, str]) -> str:
    dtype = desc.tensor("InputTensor").data_type
    axis, p = desc["Axis"], desc["P"]
    if b.target.dml_nodes and dml_node(desc):
        return b.node("LpNormalization", [inputs["InputTensor"]], "lp_normalization", DML_NODE_DOC, axis=axis, p=p)
    half = dtype == dtypes.FLOAT16
    x = b.cast(inputs["InputTensor"], dtypes.FLOAT32, "to_float32", "x in FLOAT32") if half else inputs["InputTensor"]
    if p == 2:
        squared = b.reduce("ReduceSumSquare", x, [axis], "sum_square", f"sum(x^2) along axis {axis}")
    else:
        norm = b.reduce("ReduceL1", x, [axis], "norm", f"sum(|x|) along axis {axis}")
        squared = b.node("Mul", [norm, norm], "norm_squared", "sum(|x|)^2")
    eps = b.scalar(desc["Epsilon"], dtypes.FLOAT32, "epsilon")
    guarded = b.node(
        "Sqrt", [b.node("Add", [squared, eps], "plus_epsilon", "norm^2 + Epsilon")], "guarded", "sqrt(norm^2 + Epsilon)"
    )
    y = b.node("Div", [x, guarded], "normalized", "x / sqrt(norm^2 + Epsilon)")
    return b.cast(y, dtype, "to_float16", "result in FLOAT16") if half else y


def reference(desc: OperatorDesc, inputs: dict[str, np.ndarray]) -> np.ndarray:
    x = inputs["InputTensor"].astype(np.float64)
    axis = desc["Axis"]
    with np.errstate(all="ignore"):
        squared = np.abs(x).sum(axis=axis, keepdims=True) ** 2 if desc["P"] == 1 else (x * x).sum(axis=axis, keepdims=True)
        y = x / np.sqrt(squared + np.float64(np.float32(desc["Epsilon"])))
    return y.astype(inputs["InputTensor"].dtype)


def examples(op: OperatorSchema) -> list[common.Example]:
    """onnx_ops: each type, P 1 and 2, along the last axis."""
    out = []
    for t in common.example_types(op, "InputTensor"):
        x = common.example_tensor(t, [2, 3, 4, 5])
        out += [{"InputTensor": x, "OutputTensor": x, "Axis": 3, "Epsilon": 1e-5, "P": p} for p in (1, 2)]
    return out


OPERATOR_FAMILY = Family(("LP_NORMALIZATION",), validate, lower, reference, CANDIDATES, examples=examples)
