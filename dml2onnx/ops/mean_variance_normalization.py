"""DML_OPERATOR_MEAN_VARIANCE_NORMALIZATION:
FusedActivation(Scale * (x - mean) / sqrt(variance + Epsilon) + Bias) over {H, W} per channel,
or over {C, H, W} with CrossChannel; without NormalizeVariance, Scale * (x - mean) + Bias.

This module is also the core of MEAN_VARIANCE_NORMALIZATION1 (any Axes) and
MEAN_VARIANCE_NORMALIZATION2 (UseMean, UseVariance): each desc is read as a `Norm`. Variance is the
population variance (divided by N); an absent Scale is 1 and an absent Bias 0."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from dml2onnx.core import dtypes, featurelevels
from dml2onnx.core.desc import OperatorDesc
from dml2onnx.core.errors import ModelError
from dml2onnx.core.schema import OperatorSchema
from dml2onnx.graph.builder import GraphBuilder
from dml2onnx.ops import activations, common
from dml2onnx.ops.family import Family

TENSORS = ("InputTensor", "ScaleTensor", "BiasTensor", "OutputTensor")
EXTRAS = ("ScaleTensor", "BiasTensor")


@dataclass(frozen=True)
class Norm:
    """What the three operators compute: over `axes` (ascending), x - mean (or x itself without
    `use_mean`), divided by sqrt(mean of its squares + Epsilon) with `use_variance`."""

    axes: tuple[int, ...]
    use_mean: bool
    use_variance: bool


def norm(desc: OperatorDesc) -> Norm:
    op = desc.schema.name
    if op == "MEAN_VARIANCE_NORMALIZATION":
        return Norm((1, 2, 3) if desc["CrossChannel"] else (2, 3), True, desc["NormalizeVariance"])
    if op == "MEAN_VARIANCE_NORMALIZATION1":
        return Norm(tuple(sorted(desc["Axes"])), True, desc["NormalizeVariance"])
    # MVN2's page says "TBD" for both flags; ONNX Runtime's DirectML EP sets UseMean = false for
    # SimplifiedLayerNormalization (RMSNorm), so without it the variance is taken about 0.
    return Norm(tuple(sorted(desc["Axes"])), desc["UseMean"], desc["UseVariance"])


# -- validation -------------------------------------------------------------------------------


def validate(desc: OperatorDesc) -> None:
    for name in TENSORS:
        common.check_same_type(desc, name, "InputTensor")
    common.check_same_sizes(desc, "OutputTensor", "InputTensor")
    if desc.schema.name != "MEAN_VARIANCE_NORMALIZATION":
        common.check_axes(desc, desc.tensor("InputTensor").rank)
    for name in EXTRAS:
        _check_broadcast(desc, name)
    _check_pairing(desc)
    if desc["FusedActivation"] is not None:
        activations.validate(desc["FusedActivation"])


def _check_broadcast(desc: OperatorDesc, name: str) -> None:
    """Same DimensionCount as the input; each size the input's or 1 (MVN1/MVN2 before 4_0: the
    channel size, dimension 1, must be the input's)."""
    t = desc.optional_tensor(name)
    if t is None:
        return
    common.check_same_rank(desc, name, "InputTensor")
    x = desc.tensor("InputTensor")
    for i, (s, full) in enumerate(zip(t.sizes, x.sizes, strict=True)):
        if s not in (1, full):
            raise ModelError(desc.at(name, "Sizes", i), f"must be {full} (InputTensor.Sizes[{i}]) or 1 to broadcast, not {s}")
        if i == 1 and s != full and desc.schema.name != "MEAN_VARIANCE_NORMALIZATION":
            featurelevels.require(desc, "4_0", desc.at(name, "Sizes", 1), f"{name}.Sizes[1] = 1 (broadcast over the channels)")


def _check_pairing(desc: OperatorDesc) -> None:
    present = [n for n in EXTRAS if desc.optional_tensor(n) is not None]
    if len(present) == 1:
        other = next(n for n in EXTRAS if n not in present)
        featurelevels.require(desc, "5_2", desc.at(present[0]), f"a {present[0]} without a {other}")


# The candidate lowerings (choices.py) of MVN, MVN1 and MVN2: ReduceMean/Sub/Mul/ReduceMean/Add/
# Sqrt/Div (reduce_chain), or LayerNormalization (opset 17) with a ones scale (layer_norm), or, per
# channel with Scale/Bias per channel, InstanceNormalization taking Scale and Bias (instance_norm).
CANDIDATES = ("reduce_chain", "layer_norm", "instance_norm")
# The DirectML EP turns InstanceNormalization and LayerNormalization back into one
# DML_MEAN_VARIANCE_NORMALIZATION1 (Scale and Bias per channel inside it); the chain would be
# seven DirectML operators, and under vkd3d its two-input Mul needs a DXIL-only kernel (README).
DML_PREFERENCE = ("instance_norm", "layer_norm")
# The CPU EP runs both as one kernel too (a captured BERT's LayerNorms: 9 nodes each otherwise).
CPU_PREFERENCE = DML_PREFERENCE


def applies(desc: OperatorDesc, candidate: str, opset: int) -> bool:
    n = norm(desc)
    rank = desc.tensor("InputTensor").rank
    mean_and_variance = n.use_mean and n.use_variance
    if candidate == "layer_norm":  # RMSNorm has no ONNX op before opset 23: the chain does it
        return mean_and_variance and opset >= 17 and n.axes == tuple(range(n.axes[0], rank))
    if candidate == "instance_norm":
        per_channel = rank >= 3 and n.axes == tuple(range(2, rank))
        return mean_and_variance and per_channel and spatial_size(desc, n.axes) > 1 and _per_channel_extras(desc)
    return True


def choose(desc: OperatorDesc, target: str, options: tuple[str, ...]) -> str:
    """The original MVN's rule, measured on the CUDA EP (H200, docs/benchmarks.md): per channel,
    one fused kernel (with Scale/Bias per channel, InstanceNormalization applies them in the same
    kernel); across channels the chain is faster. MVN1 and MVN2 take it too: a transformer's
    LayerNorm (MVN1 over the last axis, Scale and Bias over it) is one LayerNormalization kernel
    instead of nine (captured BERT and GPT-2 on the CUDA EP, benchmarks/results/)."""
    if desc.values.get("CrossChannel"):
        return options[0]
    has_affine = desc.optional_tensor("ScaleTensor") is not None or desc.optional_tensor("BiasTensor") is not None
    if has_affine and "instance_norm" in options:
        return "instance_norm"
    return "layer_norm" if "layer_norm" in options else options[0]


def spatial_size(desc: OperatorDesc, axes: Sequence[int]) -> int:
    """Elements per normalized group. InstanceNormalization needs 2 or more: the CUDA EP's gives
    NaN (or 5e-5 instead of 0) for a single element (H200, tests/lowering/test_properties.py)."""
    sizes = desc.tensor("InputTensor").sizes
    return math.prod(sizes[a] for a in axes)


def _per_channel_extras(desc: OperatorDesc) -> bool:
    """Scale and Bias vary at most along dimension 1 (InstanceNormalization's [C] form)."""
    extras = [desc.optional_tensor(n) for n in EXTRAS]
    return all(t is None or all(s == 1 for i, s in enumerate(t.sizes) if i != 1) for t in extras)


# -- lowering ---------------------------------------------------------------------------------


def axes(desc: OperatorDesc) -> list[int]:
    return list(norm(desc).axes)


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
        sizes = desc.tensor("InputTensor").sizes[first:]
        take = (lambda name: inputs[name]) if native else f32
        # DML's Scale and Bias go into the kernel itself where they vary only over the normalized
        # axes (a transformer's LayerNorm: one kernel, not three); else they follow as Mul/Add.
        # (Bias only after Scale: with a Scale that must follow as a Mul, the Bias follows too)
        fold = [n for n in EXTRAS if _folds_into_layer_norm(desc, n, first)]
        if "ScaleTensor" not in fold and desc.optional_tensor("ScaleTensor") is not None:
            fold = []
        folded = {n: _over_axes(desc, b, take(n), n, first) for n in fold}
        scale = folded.get("ScaleTensor") or b.filled(
            sizes, 1.0, dtype.numpy if native else np.float32, "ones", "LayerNormalization's Scale: all ones"
        )
        y = b.node(
            "LayerNormalization",
            [x, scale, *([folded["BiasTensor"]] if "BiasTensor" in folded else [])],
            "layer_norm",
            "(x - mean) / sqrt(variance + Epsilon) over the axes"
            + (", times Scale" if "ScaleTensor" in folded else "")
            + (", plus Bias" if "BiasTensor" in folded else ""),
            axis=first,
            epsilon=desc["Epsilon"],
        )
        return _scale_bias_activation(desc, b, y, take, half and not native, scaled="ScaleTensor" in folded,
                                      biased="BiasTensor" in folded)  # fmt: skip
    scale = f32("ScaleTensor") if _scale_folds(desc) else None
    y = _reduce_chain(desc, b, f32("InputTensor"), scale)
    return _scale_bias_activation(desc, b, y, f32, half, scaled=scale is not None)


def _scale_folds(desc: OperatorDesc) -> bool:
    """A Scale constant over the normalized axes makes Scale / std as small as std: one Mul then
    applies both, one pass over the output fewer."""
    scale = desc.optional_tensor("ScaleTensor")
    return scale is not None and norm(desc).use_variance and all(scale.sizes[a] == 1 for a in axes(desc))


def _reduce_chain(desc: OperatorDesc, b: GraphBuilder, x: str, scale: str | None = None) -> str:
    """(x - mean) / sqrt(variance + Epsilon) (each part as the desc asks), times `scale` where
    given (_scale_folds)."""
    n, ax = norm(desc), axes(desc)
    y = x
    if n.use_mean:
        mean = b.reduce("ReduceMean", x, ax, "mean", f"mean over axes {ax}")
        y = b.node("Sub", [x, mean], "centered", "x - mean")
    if n.use_variance:
        # Mul + ReduceMean: ReduceSumSquare would skip writing the squares, but over a few long
        # rows (cross-channel) the CUDA EP's is slower than the two (H200, docs/benchmarks.md).
        square = b.node("Mul", [y, y], "squared", "(x - mean)^2" if n.use_mean else "x^2")
        var = b.reduce("ReduceMean", square, ax, "variance", "mean of the squares")
        eps = b.node("Add", [var, b.scalar(desc["Epsilon"], dtypes.FLOAT32, "epsilon")], "plus_epsilon", "variance + Epsilon")
        std = b.node("Sqrt", [eps], "std", "sqrt(variance + Epsilon)")
        if scale is not None:
            factor = b.node("Div", [scale, std], "scale_over_std", "Scale / sqrt(variance + Epsilon), small")
            return b.node("Mul", [y, factor], "normalized", "Scale * (x - mean) / sqrt(variance + Epsilon)")
        doc = "(x - mean) / sqrt(variance + Epsilon)" if n.use_mean else "x / sqrt(mean(x^2) + Epsilon)"
        y = b.node("Div", [y, std], "normalized", doc)
    return y


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
    """InstanceNormalization: Scale * (x - mean) / sqrt(variance + Epsilon) + Bias over the axes
    after N, C per (N, C), Scale and Bias of shape [C] (DML's [1, C, 1, ...] or all 1, reshaped or
    expanded)."""
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
    over = "H, W" if axes(desc) == [2, 3] else f"axes {axes(desc)}"
    y = b.node(
        "InstanceNormalization",
        [x, *per_channel],
        "instance_norm",
        f"Scale * (x - mean) / sqrt(variance + Epsilon) + Bias over {over}",
        epsilon=desc["Epsilon"],
    )
    y = _fused_activation(desc, b, y)
    return b.cast(y, dtypes.FLOAT16, "to_float16", "result in FLOAT16") if half else y


def _folds_into_layer_norm(desc: OperatorDesc, name: str, first: int) -> bool:
    """Scale or Bias is 1 on every axis before the normalized ones (LayerNormalization's [normalized] form)."""
    t = desc.optional_tensor(name)
    return t is not None and all(s == 1 for s in t.sizes[:first])


def _over_axes(desc: OperatorDesc, b: GraphBuilder, value: str, name: str, first: int) -> str:
    """Scale or Bias in LayerNormalization's shape: the normalized axes' sizes (broadcast ones expanded)."""
    sizes = desc.tensor("InputTensor").sizes[first:]
    own = desc.tensor(name).sizes[first:]
    y = b.reshape(value, list(own), f"{name}_normalized", f"{name} over the normalized axes")
    if tuple(own) != tuple(sizes):
        y = b.node("Expand", [y, b.i64(list(sizes), f"{name}_sizes")], f"{name}_expanded", f"{name}, broadcast")
    return y


def _scale_bias_activation(
    desc: OperatorDesc,
    b: GraphBuilder,
    y: str,
    f32: Callable[[str], str],
    half: bool,
    scaled: bool = False,
    biased: bool = False,
) -> str:
    if desc.optional_tensor("ScaleTensor") is not None and not scaled:
        y = b.node("Mul", [y, f32("ScaleTensor")], "scale", "Scale * ..., broadcast")
    if desc.optional_tensor("BiasTensor") is not None and not biased:
        y = b.node("Add", [y, f32("BiasTensor")], "bias", "... + Bias, broadcast")
    y = _fused_activation(desc, b, y)
    if half:
        y = b.cast(y, dtypes.FLOAT16, "to_float16", "result in FLOAT16")
    return y


# -- reference --------------------------------------------------------------------------------


def reference(desc: OperatorDesc, inputs: dict[str, np.ndarray]) -> np.ndarray:
    n = norm(desc)  # MVN: {C, H, W} or {H, W}, the page's words
    x = inputs["InputTensor"].astype(np.float64)
    with np.errstate(all="ignore"):
        y = x - x.mean(axis=n.axes, keepdims=True) if n.use_mean else x
        if n.use_variance:
            var = (y * y).mean(axis=n.axes, keepdims=True)
            y = y / np.sqrt(var + np.float64(np.float32(desc["Epsilon"])))
        if inputs.get("ScaleTensor") is not None:
            y = y * inputs["ScaleTensor"].astype(np.float64)
        if inputs.get("BiasTensor") is not None:
            y = y + inputs["BiasTensor"].astype(np.float64)
    if desc["FusedActivation"] is not None:
        y = activations.reference(y, desc["FusedActivation"])
    return y.astype(inputs["InputTensor"].dtype)


def examples(op: OperatorSchema) -> list[common.Example]:
    """onnx_ops: each type, with ScaleTensor, BiasTensor and a fused RELU, over H and W."""
    out = []
    for t in common.example_types(op, "InputTensor"):
        x = common.example_tensor(t, [2, 3, 4, 5])
        desc: common.Example = {
            "InputTensor": x,
            "ScaleTensor": {**x, "Sizes": [1, 3, 1, 1]},
            "BiasTensor": {**x, "Sizes": [1, 3, 1, 1]},
            "OutputTensor": x,
            "Epsilon": 1e-5,
            "FusedActivation": {"Type": "ACTIVATION_RELU"},
        }
        if op.name == "MEAN_VARIANCE_NORMALIZATION":
            out.append({**desc, "CrossChannel": False, "NormalizeVariance": True})
            continue
        desc |= {"AxisCount": 2, "Axes": [2, 3]}
        if op.name == "MEAN_VARIANCE_NORMALIZATION1":
            out.append({**desc, "NormalizeVariance": True})
        else:
            out.append({**desc, "UseMean": True, "UseVariance": True})
    return out


OPERATOR_FAMILY = Family(
    ("MEAN_VARIANCE_NORMALIZATION",),
    validate,
    lower,
    reference,
    CANDIDATES,
    applies=applies,
    choose=choose,
    dml_preference=DML_PREFERENCE,
    cpu_preference=CPU_PREFERENCE,
    examples=examples,
)
MEAN_VARIANCE_NORMALIZATION1 = Family(
    ("MEAN_VARIANCE_NORMALIZATION1", "MEAN_VARIANCE_NORMALIZATION2"),
    validate,
    lower,
    reference,
    CANDIDATES,
    applies=applies,
    choose=choose,
    dml_preference=DML_PREFERENCE,
    cpu_preference=CPU_PREFERENCE,
    examples=examples,
)
