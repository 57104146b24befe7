"""DML_OPERATOR_BATCH_NORMALIZATION: FusedActivation(Scale * (x - Mean) / sqrt(Variance + Epsilon)
+ Bias), element by element, with Mean, Variance, Scale and Bias broadcast to the input (each of
the input's DimensionCount, each size the input's or 1: a size of 1 is a stride of 0).

What the page leaves open, as DirectML's own API computed it (README: BATCH_NORMALIZATION):
Spatial changes nothing: the four tensors' Sizes say what varies (per channel [1, C, 1, ...] or
per element [1, C, H, W] alike with Spatial TRUE or FALSE).

Lowerings: "arithmetic" (Sub, Add, Sqrt, Div, Mul, Add in FLOAT32: any broadcast, any rank), and
"batch_norm", one ONNX BatchNormalization where the four tensors vary at most along dimension 1
(the ONNX op's [C] form, opset 15) at 2 to 5 dimensions (cuDNN's NormalizeDims) with Epsilon of at
least 1e-5 (cuDNN's CUDNN_BN_MIN_EPSILON, to which the CUDA EP clamps a smaller one). The DirectML
EP maps BatchNormalization back onto this operator with Spatial TRUE and the tensors as [1, C, 1,
...] (DmlOperatorBatchNormalization.cpp): the dml target emits it (DML_PREFERENCE) in the input's
type; elsewhere FLOAT16 goes through FLOAT32 (the CPU EP's BatchNormalization has FLOAT32 and
FLOAT64 only)."""

from __future__ import annotations

import numpy as np

from dml2onnx.core import dtypes
from dml2onnx.core.desc import OperatorDesc
from dml2onnx.core.errors import ModelError
from dml2onnx.core.schema import OperatorSchema
from dml2onnx.graph.builder import GraphBuilder
from dml2onnx.graph.targets import DML_NODE_DOC
from dml2onnx.ops import activations, common
from dml2onnx.ops.family import Family
from dml2onnx.ops.mean_variance_normalization import _fused_activation as fused_activation

PARAMETERS = ("MeanTensor", "VarianceTensor", "ScaleTensor", "BiasTensor")
CANDIDATES = ("arithmetic", "batch_norm")
DML_PREFERENCE = ("batch_norm",)
CUDNN_BN_MIN_EPSILON = 1e-5


def validate(desc: OperatorDesc) -> None:
    for name in (*PARAMETERS, "OutputTensor"):
        common.check_same_type(desc, name, "InputTensor")
    common.check_same_sizes(desc, "OutputTensor", "InputTensor")
    x = desc.tensor("InputTensor")
    for name in PARAMETERS:
        common.check_same_rank(desc, name, "InputTensor")
        for i, (s, full) in enumerate(zip(desc.tensor(name).sizes, x.sizes, strict=True)):
            if s not in (1, full):
                raise ModelError(desc.at(name, "Sizes", i), f"must be {full} (InputTensor.Sizes[{i}]) or 1 to broadcast, not {s}")
    if desc["FusedActivation"] is not None:
        activations.validate(desc["FusedActivation"])


def _per_channel(desc: OperatorDesc) -> bool:
    """Every parameter tensor varies at most along dimension 1."""
    return all(all(s == 1 for i, s in enumerate(desc.tensor(n).sizes) if i != 1) for n in PARAMETERS)


def applies(desc: OperatorDesc, candidate: str, opset: int) -> bool:
    if candidate == "batch_norm":
        rank = desc.tensor("InputTensor").rank
        return 2 <= rank <= 5 and _per_channel(desc) and np.float32(desc["Epsilon"]) >= np.float32(CUDNN_BN_MIN_EPSILON)
    return True


def choose(desc: OperatorDesc, target: str, options: tuple[str, ...]) -> str:
    """One cuDNN kernel where BatchNormalization applies (not measured against the chain: one
    pass over the input instead of several)."""
    return "batch_norm" if "batch_norm" in options else options[0]


def lower(desc: OperatorDesc, b: GraphBuilder, inputs: dict[str, str]) -> str:
    dtype = desc.tensor("InputTensor").data_type
    # FLOAT16: computed in FLOAT32 and rounded once, but by BatchNormalization itself on the dml
    # target (DirectML computes it) where no activation follows (its constants are FLOAT32), and on
    # the cuda target, whose cuDNN kernel computes FLOAT16 in FLOAT32 and rounds once, where no
    # activation or RELU follows (RELU of the rounded value is the rounded RELU): the casts around
    # it were 40% of its time on an H100 (110 of 266 us at 32x256x56x56, benchmarks/results/h100-parts-2026-11-23.md)
    act = desc["FusedActivation"]
    half_on_cuda = b.target.name == "cuda" and (act is None or act.schema.name == "ACTIVATION_RELU")
    native = dtype == dtypes.FLOAT32 or (b.variant == "batch_norm" and ((b.target.dml_nodes and act is None) or half_on_cuda))

    def f32(name: str) -> str:
        v = inputs[name]
        return v if native or dtype == dtypes.FLOAT32 else b.cast(v, dtypes.FLOAT32, f"{name}_to_float32", f"{name} in FLOAT32")

    if b.variant == "batch_norm":
        channels = desc.tensor("InputTensor").sizes[1]
        per_channel = []
        for name in ("ScaleTensor", "BiasTensor", "MeanTensor", "VarianceTensor"):
            flat = b.reshape(f32(name), [-1], f"{name}_flat", f"{name} as a vector")
            if desc.tensor(name).sizes[1] != channels:
                flat = b.node(
                    "Expand", [flat, b.i64([channels], f"{name}_channels")], f"{name}_per_channel", f"{name} for every channel"
                )
            per_channel.append(flat)
        doc = DML_NODE_DOC if b.target.dml_nodes else "Scale * (x - Mean) / sqrt(Variance + Epsilon) + Bias per channel"
        y = b.node("BatchNormalization", [f32("InputTensor"), *per_channel], "batch_norm", doc, epsilon=desc["Epsilon"])
    else:
        centered = b.node("Sub", [f32("InputTensor"), f32("MeanTensor")], "centered", "x - Mean, broadcast")
        eps = b.scalar(desc["Epsilon"], dtypes.FLOAT32, "epsilon")
        plus = b.node("Add", [f32("VarianceTensor"), eps], "plus_epsilon", "Variance + Epsilon")
        std = b.node("Sqrt", [plus], "std", "sqrt(Variance + Epsilon)")
        factor = b.node("Div", [f32("ScaleTensor"), std], "scale_over_std", "Scale / sqrt(Variance + Epsilon)")
        scaled = b.node("Mul", [centered, factor], "scaled", "Scale * (x - Mean) / sqrt(Variance + Epsilon)")
        y = b.node("Add", [scaled, f32("BiasTensor")], "bias", "... + Bias, broadcast")
    y = fused_activation(desc, b, y)
    return y if native or dtype == dtypes.FLOAT32 else b.cast(y, dtype, "to_float16", "result in FLOAT16")


def reference(desc: OperatorDesc, inputs: dict[str, np.ndarray]) -> np.ndarray:
    """The page's formula in FLOAT64, the tensors broadcast (Spatial changes nothing)."""
    x = inputs["InputTensor"].astype(np.float64)
    mean, var, scale, bias = (inputs[n].astype(np.float64) for n in PARAMETERS)
    with np.errstate(all="ignore"):
        y = scale * (x - mean) / np.sqrt(var + np.float64(np.float32(desc["Epsilon"]))) + bias
    if desc["FusedActivation"] is not None:
        y = activations.reference(y, desc["FusedActivation"])
    return y.astype(inputs["InputTensor"].dtype)


def examples(op: OperatorSchema) -> list[common.Example]:
    """onnx_ops: each type, per channel (BatchNormalization) with a fused RELU, and per element."""
    out = []
    for t in common.example_types(op, "InputTensor"):
        x = common.example_tensor(t, [2, 3, 4, 5])
        for sizes, spatial in (([1, 3, 1, 1], True), ([1, 3, 4, 5], False)):
            desc: common.Example = {"InputTensor": x, "OutputTensor": x, "Spatial": spatial, "Epsilon": 1e-5}
            desc |= {n: common.example_tensor(t, sizes) for n in PARAMETERS}
            if spatial:
                desc["FusedActivation"] = {"Type": "ACTIVATION_RELU"}
            out.append(desc)
    return out


OPERATOR_FAMILY = Family(
    ("BATCH_NORMALIZATION",),
    validate,
    lower,
    reference,
    CANDIDATES,
    applies=applies,
    choose=choose,
    dml_preference=DML_PREFERENCE,
    examples=examples,
)
