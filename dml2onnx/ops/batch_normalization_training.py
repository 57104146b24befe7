"""DML_OPERATOR_BATCH_NORMALIZATION_TRAINING: the batch's own statistics, then
OutputTensor = FusedActivation(Scale * ((x - Mean) / sqrt(Variance + Epsilon)) + Bias + FusedAdd),
OutputMeanTensor = Mean and OutputVarianceTensor = Variance, both taken over every axis where
ScaleTensor's size is 1 (Bias, OutputMean and OutputVariance have Scale's Sizes; each of Scale's
sizes is the input's or 1). Per channel is Scale [1, C, 1, ...], per activation [1, C, H, W].

What the page leaves open, as DirectML's own API computed it (README: BATCH_NORMALIZATION_TRAINING,
tests/ops/test_batch_normalization_training.py): the variance is the population variance (divided by
the count, not count - 1), taken about the mean; Epsilon is added inside the square root; FusedAdd
is added after Scale and Bias and before FusedActivation; an axis where Scale is the input's size
is not reduced, so with no axis of size 1 the mean is x, the variance 0 and the output Bias +
FusedAdd (NaN where Epsilon is 0: 0 / 0). NaN and infinities propagate: a group holding NaN, or
+inf and -inf, has a NaN mean; one holding an infinity has a NaN variance, and its outputs are NaN.
FLOAT16: DirectML sums in FLOAT16 (the mean of 999.5, 1001, 1000.5, 1000.5 is 1000, not 1000.5)
and takes the variance about that mean (tolerances.batch_normalization_training); the graphs here
compute in FLOAT32 and round once.

Lowerings: "reduce_chain" (ReduceMean, Sub, Mul, ReduceMean, Add, Sqrt, Div, Mul, Add in FLOAT32:
any layout, any rank), and "batch_norm", the same statistics then one ONNX BatchNormalization
(inference form, opset 15) applying them, where Scale varies at most along dimension 1 at 2 to 5
dimensions with Epsilon of at least 1e-5 (batch_normalization.applies' rule). No ONNX node maps
back onto this operator: BatchNormalization's training_mode=1 returns running statistics (with
momentum 0 the batch's mean and population variance: the CPU EP computes so) but takes Scale and
Bias per channel only, has no FusedAdd, runs on the CUDA EP through cuDNN's training kernel (its
running variance not checked against DirectML's here), and the DirectML EP refuses it
(QueryBatchNormalization, DmlOperatorBatchNormalization.cpp); on the dml target the inference form
maps onto DML_BATCH_NORMALIZATION (DML_PREFERENCE)."""

from __future__ import annotations

import numpy as np

from dml2onnx.core import dtypes
from dml2onnx.core.desc import OperatorDesc
from dml2onnx.core.errors import ModelError
from dml2onnx.core.schema import OperatorSchema
from dml2onnx.graph.builder import GraphBuilder
from dml2onnx.graph.targets import DML_NODE_DOC
from dml2onnx.ops import activations, batch_normalization, common
from dml2onnx.ops.batch_normalization import fused_activation
from dml2onnx.ops.family import Family

STATISTICS = ("BiasTensor", "OutputMeanTensor", "OutputVarianceTensor")  # ScaleTensor's Sizes
ELEMENTS = ("FusedAddTensor", "OutputTensor")  # InputTensor's Sizes
CANDIDATES = ("reduce_chain", "batch_norm")
DML_PREFERENCE = ("batch_norm",)


def validate(desc: OperatorDesc) -> None:
    for name in ("ScaleTensor", *STATISTICS, *ELEMENTS):
        common.check_same_type(desc, name, "InputTensor")
        common.check_same_rank(desc, name, "InputTensor")
    x, scale = desc.tensor("InputTensor"), desc.tensor("ScaleTensor")
    for i, (s, full) in enumerate(zip(scale.sizes, x.sizes, strict=True)):
        if s not in (1, full):
            raise ModelError(
                desc.at("ScaleTensor", "Sizes", i), f"must be {full} (InputTensor.Sizes[{i}]) or 1 to broadcast, not {s}"
            )
    for name in STATISTICS:
        common.check_same_sizes(desc, name, "ScaleTensor")
    for name in ELEMENTS:
        if desc.optional_tensor(name) is not None:
            common.check_same_sizes(desc, name, "InputTensor")
    if desc["FusedActivation"] is not None:
        activations.validate(desc["FusedActivation"])


def axes(desc: OperatorDesc) -> list[int]:
    """The reduced axes: where ScaleTensor's size is 1 (the page's words)."""
    return [i for i, s in enumerate(desc.tensor("ScaleTensor").sizes) if s == 1]


def length(desc: OperatorDesc) -> int:
    """Elements per mean (the accumulation length of tolerances.batch_normalization_training)."""
    sizes = desc.tensor("InputTensor").sizes
    return int(np.prod([sizes[a] for a in axes(desc)], dtype=np.int64))


def applies(desc: OperatorDesc, candidate: str, opset: int) -> bool:
    if candidate == "batch_norm":
        rank = desc.tensor("InputTensor").rank
        per_channel = all(s == 1 for i, s in enumerate(desc.tensor("ScaleTensor").sizes) if i != 1)
        eps_ok = np.float32(desc["Epsilon"]) >= np.float32(batch_normalization.CUDNN_BN_MIN_EPSILON)
        return 2 <= rank <= 5 and per_channel and bool(eps_ok)
    return True


def choose(desc: OperatorDesc, target: str, options: tuple[str, ...]) -> str:
    """BatchNormalization where it applies (not measured: it applies the statistics in one pass
    over the input instead of the chain's Mul and Add)."""
    return "batch_norm" if "batch_norm" in options else options[0]


def lower(desc: OperatorDesc, b: GraphBuilder, inputs: dict[str, str]) -> dict[str, str]:
    # FLOAT16 is computed in FLOAT32 (the statistics and the output) and rounded once.
    dtype = desc.tensor("InputTensor").data_type
    half = dtype == dtypes.FLOAT16

    def f32(name: str) -> str:
        v = inputs[name]
        return b.cast(v, dtypes.FLOAT32, f"{name}_to_float32", f"{name} in FLOAT32") if half else v

    x, ax = f32("InputTensor"), axes(desc)
    over = f"axes {ax}" if ax else "no axis (Scale has the input's Sizes): x itself"
    mean = b.reduce("ReduceMean", x, ax, "mean", f"the batch's mean over {over}") if ax else x
    centered = b.node("Sub", [x, mean], "centered", "x - Mean")
    square = b.node("Mul", [centered, centered], "squared", "(x - Mean)^2")
    var = b.reduce("ReduceMean", square, ax, "variance", "the population variance (divided by the count)") if ax else square
    if b.variant == "batch_norm":
        channels = desc.tensor("InputTensor").sizes[1]
        per_channel = []
        for name, v in (
            ("ScaleTensor", f32("ScaleTensor")),
            ("BiasTensor", f32("BiasTensor")),
            ("Mean", mean),
            ("Variance", var),
        ):
            flat = b.reshape(v, [-1], f"{name}_flat", f"{name} as a vector")
            if desc.tensor("ScaleTensor").sizes[1] != channels:
                flat = b.node(
                    "Expand", [flat, b.i64([channels], f"{name}_channels")], f"{name}_per_channel", f"{name} for every channel"
                )
            per_channel.append(flat)
        doc = DML_NODE_DOC if b.target.dml_nodes else "Scale * (x - Mean) / sqrt(Variance + Epsilon) + Bias per channel"
        y = b.node("BatchNormalization", [x, *per_channel], "batch_norm", doc, epsilon=desc["Epsilon"])
    else:
        eps = b.scalar(desc["Epsilon"], dtypes.FLOAT32, "epsilon")
        std = b.node("Sqrt", [b.node("Add", [var, eps], "plus_epsilon", "Variance + Epsilon")], "std", "sqrt(Variance + Epsilon)")
        factor = b.node("Div", [f32("ScaleTensor"), std], "scale_over_std", "Scale / sqrt(Variance + Epsilon)")
        scaled = b.node("Mul", [centered, factor], "scaled", "Scale * (x - Mean) / sqrt(Variance + Epsilon)")
        y = b.node("Add", [scaled, f32("BiasTensor")], "bias", "... + Bias")
    if desc.optional_tensor("FusedAddTensor") is not None:
        y = b.node("Add", [y, f32("FusedAddTensor")], "fused_add", "... + FusedAdd, before FusedActivation")
    y = fused_activation(desc, b, y)
    outputs = {"OutputTensor": y, "OutputMeanTensor": mean, "OutputVarianceTensor": var}
    if not half:
        return outputs
    return {k: b.cast(v, dtype, f"{k}_to_float16", f"{k} in FLOAT16") for k, v in outputs.items()}


def reference(desc: OperatorDesc, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The page's formula in FLOAT64 over the axes where Scale is 1: the population variance about
    the mean, FusedAdd before the activation."""
    t = inputs["InputTensor"].dtype
    x = inputs["InputTensor"].astype(np.float64)
    ax = tuple(axes(desc))
    scale, bias = (inputs[n].astype(np.float64) for n in ("ScaleTensor", "BiasTensor"))
    with np.errstate(all="ignore"):
        mean = x.mean(axis=ax, keepdims=True)
        var = ((x - mean) ** 2).mean(axis=ax, keepdims=True)
        y = scale * ((x - mean) / np.sqrt(var + np.float64(np.float32(desc["Epsilon"])))) + bias
        if inputs.get("FusedAddTensor") is not None:
            y = y + inputs["FusedAddTensor"].astype(np.float64)
    if desc["FusedActivation"] is not None:
        y = activations.reference(y, desc["FusedActivation"])
    return {"OutputTensor": y.astype(t), "OutputMeanTensor": mean.astype(t), "OutputVarianceTensor": var.astype(t)}


def examples(op: OperatorSchema) -> list[common.Example]:
    """onnx_ops: each type, per channel (BatchNormalization) with FusedAdd and a fused RELU,
    and per activation."""
    out = []
    for t in common.example_types(op, "InputTensor"):
        x = common.example_tensor(t, [2, 3, 4, 5])
        for sizes in ([1, 3, 1, 1], [1, 3, 4, 5]):
            s = common.example_tensor(t, sizes)
            desc: common.Example = {"InputTensor": x, "ScaleTensor": s, "BiasTensor": s, "OutputTensor": x}
            desc |= {"OutputMeanTensor": s, "OutputVarianceTensor": s, "Epsilon": 1e-5}
            if sizes[2] == 1:
                desc |= {"FusedAddTensor": x, "FusedActivation": {"Type": "ACTIVATION_RELU"}}
            out.append(desc)
    return out


OPERATOR_FAMILY = Family(
    ("BATCH_NORMALIZATION_TRAINING",),
    validate,
    lower,
    reference,
    CANDIDATES,
    applies=applies,
    choose=choose,
    dml_preference=DML_PREFERENCE,
    examples=examples,
)
