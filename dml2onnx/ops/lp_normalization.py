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
it where the desc's Epsilon is that FLOAT32 value.

`matmul` (the `cuda` target, an Axis with elements after it): the sum over Axis as a MatMul of a row
of ones with x^2 (or |x|) viewed as (before, Axis, after); the CUDA EP's reduction over a middle axis
runs slower than cuBLAS there (a 32x256x56x56 channel norm: 840 GB/s against 710 with
ReduceSumSquare, benchmarks/patterns.py round 9 on an H200). Ones multiply exactly, so the sums are
the same FLOAT32 sums in another order, infinities and NaN included."""

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

CANDIDATES = ("reduce", "matmul")
CUDA_ONLY = ("matmul",)
MATMUL_AFTER = 1024  # elements after Axis from which `matmul` is chosen (measured at 3136)
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


def _split(desc: OperatorDesc) -> tuple[int, int, int]:
    """The input as (elements before Axis, Axis's size, elements after it)."""
    return common.around_axis(desc.tensor("InputTensor").sizes, desc["Axis"])


def applies(desc: OperatorDesc, candidate: str, opset: int) -> bool:
    return candidate != "matmul" or _split(desc)[2] > 1


def choose(desc: OperatorDesc, target: str, options: tuple[str, ...]) -> str:
    return "matmul" if "matmul" in options and _split(desc)[2] >= MATMUL_AFTER else "reduce"


def _matmul_sum(desc: OperatorDesc, b: GraphBuilder, v: str) -> str:
    """sum(v) over Axis, keepdims: a row of ones times v viewed as (before, Axis, after)."""
    before, size, after = _split(desc)
    viewed = b.node("Reshape", [v, b.i64([before, size, after], "view_shape")], "view", "(before, Axis, after)")
    ones = b.const(np.ones((1, size), np.float32), "ones")
    summed = b.node("MatMul", [ones, viewed], "sum", "sum over Axis: ones times each column")
    kept = [1 if i == desc["Axis"] else n for i, n in enumerate(desc.tensor("InputTensor").sizes)]
    return b.node("Reshape", [summed, b.i64(kept, "kept_shape")], "kept", "Axis kept as 1")


def lower(desc: OperatorDesc, b: GraphBuilder, inputs: dict[str, str]) -> str:
    dtype = desc.tensor("InputTensor").data_type
    axis, p = desc["Axis"], desc["P"]
    if b.target.dml_nodes and dml_node(desc):
        return b.node("LpNormalization", [inputs["InputTensor"]], "lp_normalization", DML_NODE_DOC, axis=axis, p=p)
    half = dtype == dtypes.FLOAT16
    x = b.cast(inputs["InputTensor"], dtypes.FLOAT32, "to_float32", "x in FLOAT32") if half else inputs["InputTensor"]
    if b.variant == "matmul":
        v = b.node("Mul", [x, x], "square", "x^2") if p == 2 else b.node("Abs", [x], "magnitude", "|x|")
        squared = _matmul_sum(desc, b, v)
        if p == 1:
            squared = b.node("Mul", [squared, squared], "norm_squared", "sum(|x|)^2")
    elif p == 2:
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


OPERATOR_FAMILY = Family(
    ("LP_NORMALIZATION",),
    validate,
    lower,
    reference,
    CANDIDATES,
    applies=applies,
    choose=choose,
    cuda_only=CUDA_ONLY,
    examples=examples,
)
