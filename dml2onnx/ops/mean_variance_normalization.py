"""DML_OPERATOR_MEAN_VARIANCE_NORMALIZATION:
FusedActivation(Scale * (x - mean) / sqrt(variance + Epsilon) + Bias) over {H, W} per channel,
or over {C, H, W} with CrossChannel; without NormalizeVariance, Scale * (x - mean) + Bias."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .. import dtypes
from ..builder import GraphBuilder
from ..desc import OperatorDesc
from ..errors import ModelError
from . import activations, common

TENSORS = ("InputTensor", "ScaleTensor", "BiasTensor", "OutputTensor")


def validate(desc: OperatorDesc) -> None:
    for name in TENSORS:
        common.check_same_type(desc, name, "InputTensor")
    common.check_same_sizes(desc, "OutputTensor", "InputTensor")
    x = desc.tensor("InputTensor")
    for name in ("ScaleTensor", "BiasTensor"):
        t = desc.optional_tensor(name)
        if t is None:
            continue
        for i, (s, full) in enumerate(zip(t.sizes, x.sizes, strict=True)):
            if s not in (1, full):
                raise ModelError(desc.at(name, "Sizes", i), f"must be {full} (InputTensor.Sizes[{i}]) or 1 to broadcast, not {s}")
    if desc["FusedActivation"] is not None:
        activations.validate(desc["FusedActivation"])


def axes(desc: OperatorDesc) -> list[int]:
    return [1, 2, 3] if desc["CrossChannel"] else [2, 3]


def lower(desc: OperatorDesc, b: GraphBuilder, inputs: dict[str, str]) -> str:
    # Written out with ReduceMean: ONNX MeanVarianceNormalization has a fixed epsilon outside
    # the square root and no scale/bias (and is absent from the CUDA EP). FLOAT16 is computed
    # in FLOAT32 and rounded once at the end.
    dtype = desc.tensor("InputTensor").data_type
    half = dtype == dtypes.FLOAT16

    def f32(name: str) -> str:
        v = inputs[name]
        return b.cast(v, dtypes.FLOAT32, f"{name}_to_float32", f"{name} in FLOAT32") if half else v

    if b.variant == "instance_norm":  # per channel, with Scale/Bias per channel: one kernel for all
        return _instance_norm(desc, b, f32, half)
    if b.variant == "layer_norm":  # one fused kernel; DML's Scale/Bias follow as Mul/Add
        # LayerNormalization accumulates in FLOAT32 itself (stash_type 1), so FLOAT16 may stay
        # FLOAT16, except where a fused activation follows (its constants are FLOAT32).
        native = half and desc["FusedActivation"] is None
        x = inputs["InputTensor"] if native else f32("InputTensor")
        first = axes(desc)[0]
        ones = b.const(np.ones(desc.tensor("InputTensor").sizes[first:], dtype.numpy if native else np.float32), "ones")
        y = b.node(
            "LayerNormalization",
            [x, ones],
            "layer_norm",
            "(x - mean) / sqrt(variance + Epsilon) over the axes",
            axis=first,
            epsilon=desc["Epsilon"],
        )
        if native:
            return _scale_bias_activation(desc, b, y, lambda name: inputs[name], False)
        return _scale_bias_activation(desc, b, y, f32, half)
    x = f32("InputTensor")
    mean = b.reduce("ReduceMean", x, axes(desc), "mean", f"mean over axes {axes(desc)}")
    y = b.node("Sub", [x, mean], "centered", "x - mean")
    if desc["NormalizeVariance"]:
        square = b.node("Mul", [y, y], "squared", "(x - mean)^2")
        var = b.reduce("ReduceMean", square, axes(desc), "variance", "mean of the squares")
        eps = b.node("Add", [var, b.scalar(desc["Epsilon"], dtypes.FLOAT32, "epsilon")], "plus_epsilon", "variance + Epsilon")
        std = b.node("Sqrt", [eps], "std", "sqrt(variance + Epsilon)")
        y = b.node("Div", [y, std], "normalized", "(x - mean) / sqrt(variance + Epsilon)")
    return _scale_bias_activation(desc, b, y, f32, half)


def _fused_activation(desc: OperatorDesc, b: GraphBuilder, y: str) -> str:
    act = desc["FusedActivation"]
    if act is None:
        return y
    prefix = b.prefix
    b.prefix = f"{prefix}/FusedActivation_{act.schema.name.removeprefix('ACTIVATION_')}"
    y = activations.lower(b, y, act)
    b.prefix = prefix
    return y


def _instance_norm(desc: OperatorDesc, b: GraphBuilder, f32: Callable[[str], str], half: bool) -> str:
    """InstanceNormalization: Scale * (x - mean) / sqrt(variance + Epsilon) + Bias over H, W per
    (N, C), Scale and Bias of shape [C] (DML's [1, C, 1, 1] or [1, 1, 1, 1], reshaped or expanded)."""
    channels = desc.tensor("InputTensor").sizes[1]
    x = f32("InputTensor")
    per_channel = []
    for name, default in (("ScaleTensor", 1.0), ("BiasTensor", 0.0)):
        if desc.optional_tensor(name) is None:
            per_channel.append(b.const(np.full(channels, default, np.float32), name.replace("Tensor", "").lower()))
            continue
        flat = b.reshape(f32(name), [-1], f"{name}_flat", f"{name} as a vector")
        if desc.tensor(name).sizes[1] != channels:  # one value for every channel
            flat = b.node(
                "Expand",
                [flat, b.i64([channels], f"{name}_channels")],
                f"{name}_per_channel",
                f"{name} repeated for every channel",
            )
        per_channel.append(flat)
    y = b.node(
        "InstanceNormalization",
        [x, *per_channel],
        "instance_norm",
        "Scale * (x - mean) / sqrt(variance + Epsilon) + Bias over H, W",
        epsilon=desc["Epsilon"],
    )
    y = _fused_activation(desc, b, y)
    return b.cast(y, dtypes.FLOAT16, "to_float16", "result in FLOAT16") if half else y


def _scale_bias_activation(desc: OperatorDesc, b: GraphBuilder, y: str, f32: Callable[[str], str], half: bool) -> str:
    if desc.optional_tensor("ScaleTensor") is not None:
        y = b.node("Mul", [y, f32("ScaleTensor")], "scale", "Scale * ..., broadcast")
    if desc.optional_tensor("BiasTensor") is not None:
        y = b.node("Add", [y, f32("BiasTensor")], "bias", "... + Bias, broadcast")
    y = _fused_activation(desc, b, y)
    if half:
        y = b.cast(y, dtypes.FLOAT16, "to_float16", "result in FLOAT16")
    return y


def reference(desc: OperatorDesc, inputs: dict[str, np.ndarray]) -> np.ndarray:
    x = inputs["InputTensor"].astype(np.float64)
    ax = (1, 2, 3) if desc["CrossChannel"] else (2, 3)  # {C, H, W} or {H, W}: the page's words
    with np.errstate(all="ignore"):
        y = x - x.mean(axis=ax, keepdims=True)
        if desc["NormalizeVariance"]:
            var = (y * y).mean(axis=ax, keepdims=True)
            y = y / np.sqrt(var + np.float64(np.float32(desc["Epsilon"])))
        if inputs.get("ScaleTensor") is not None:
            y = y * inputs["ScaleTensor"].astype(np.float64)
        if inputs.get("BiasTensor") is not None:
            y = y + inputs["BiasTensor"].astype(np.float64)
    if desc["FusedActivation"] is not None:
        y = activations.reference(y, desc["FusedActivation"])
    return y.astype(inputs["InputTensor"].dtype)
