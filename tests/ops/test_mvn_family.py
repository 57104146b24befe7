"""MEAN_VARIANCE_NORMALIZATION1 and MEAN_VARIANCE_NORMALIZATION2 (and the original MVN, which
shares their lowering): hand-computed values, properties over ranks 1-8, random axis subsets and
Scale/Bias broadcasting on ONNX Runtime against the numpy reference, every candidate lowering,
invalid descs and feature-level gating."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dml2onnx import lowering
from dml2onnx.backends import runtime
from dml2onnx.cases.common import ACTIVATIONS
from dml2onnx.core.desc import parse_operator_desc
from dml2onnx.core.errors import ModelError, format_path
from dml2onnx.lowering import choices
from dml2onnx.ops import registry
from strategies import SEEDS, axis_subsets, shapes
from support import EPS, lowered_and_reference, make_desc, mismatches, tensor

SETTINGS = settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
MVN1, MVN2 = "MEAN_VARIANCE_NORMALIZATION1", "MEAN_VARIANCE_NORMALIZATION2"


def fields(op: str, dtype: str, shape: list[int] | tuple[int, ...], axes: list[int], **options: Any) -> dict[str, Any]:
    flags = {"NormalizeVariance": True} if op == MVN1 else {"UseMean": True, "UseVariance": True}
    return {
        "InputTensor": tensor(dtype, shape),
        "OutputTensor": tensor(dtype, shape),
        "AxisCount": len(axes),
        "Axes": axes,
        **flags,
        "Epsilon": 0.0,
        **options,
    }


def run_all_variants(op: str, f: dict[str, Any], inputs: dict[str, np.ndarray], ep: str = "cpu") -> list[np.ndarray]:
    """The output of every candidate lowering (choices.available) at opset 17 and 13."""
    desc = make_desc(op, f)
    results = []
    for opset in (13, 17):
        for variant in choices.available(desc, opset):
            model = lowering.lower(desc, "t", opset=opset, variant=variant)
            results.append(runtime.create(model, "t", ep).run(inputs))
    return results


# -- hand-computed values ----------------------------------------------------------------------


def test_mvn1_one_axis_by_hand() -> None:
    x = np.array([[1, 2, 3], [4, 6, 8]], np.float32)
    # row 0: mean 2, variance 2/3; row 1: mean 6, variance 8/3: both give +-sqrt(3/2)
    want = np.array([[-1.2247449, 0, 1.2247449], [-1.2247449, 0, 1.2247449]], np.float32)
    for got in run_all_variants(MVN1, fields(MVN1, "FLOAT32", [2, 3], [1]), {"InputTensor": x}):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def test_mvn1_centering_only_and_scale_bias_by_hand() -> None:
    x = np.array([[1, 2, 3], [4, 6, 8]], np.float32)
    f = fields(
        MVN1,
        "FLOAT32",
        [2, 3],
        [0],
        NormalizeVariance=False,
        ScaleTensor=tensor("FLOAT32", [1, 3]),
        BiasTensor=tensor("FLOAT32", [2, 1]),
    )
    scale, bias = np.array([[1, 2, 3]], np.float32), np.array([[10], [20]], np.float32)
    # column means 2.5, 4, 5.5: x - mean = [[-1.5, -2, -2.5], [1.5, 2, 2.5]]
    want = np.array([[8.5, 6, 2.5], [21.5, 24, 27.5]], np.float32)
    for got in run_all_variants(MVN1, f, {"InputTensor": x, "ScaleTensor": scale, "BiasTensor": bias}):
        np.testing.assert_array_equal(got, want)


def test_mvn2_rms_norm_by_hand() -> None:
    x = np.array([[3, 4], [1, -1]], np.float32)
    f = fields(MVN2, "FLOAT32", [2, 2], [1], UseMean=False, Epsilon=1.0)
    # x / sqrt(mean(x^2) + 1): row 0 sqrt(12.5 + 1), row 1 sqrt(1 + 1)
    want = np.array([[3 / np.sqrt(13.5), 4 / np.sqrt(13.5)], [1 / np.sqrt(2), -1 / np.sqrt(2)]], np.float32)
    for got in run_all_variants(MVN2, f, {"InputTensor": x}):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def test_mvn2_flags_by_hand() -> None:
    x = np.array([[1, 2, 3], [4, 6, 8]], np.float32)
    scale = np.array([[2, 2, 2]], np.float32)
    extras = {"ScaleTensor": tensor("FLOAT32", [1, 3]), "BiasTensor": tensor("FLOAT32", [1, 1])}
    inputs = {"InputTensor": x, "ScaleTensor": scale, "BiasTensor": np.array([[1]], np.float32)}
    neither = fields(MVN2, "FLOAT32", [2, 3], [1], UseMean=False, UseVariance=False, **extras)
    for got in run_all_variants(MVN2, neither, inputs):  # Scale * x + Bias
        np.testing.assert_array_equal(got, 2 * x + 1)
    mean_only = fields(MVN2, "FLOAT32", [2, 3], [1], UseVariance=False, **extras)
    for got in run_all_variants(MVN2, mean_only, inputs):
        np.testing.assert_array_equal(got, np.array([[-1, 1, 3], [-3, 1, 5]], np.float32))
    both = fields(MVN2, "FLOAT32", [2, 3], [1], **extras)
    for got in run_all_variants(MVN2, both, inputs):
        np.testing.assert_allclose(got, 2 * np.array([[-1.2247449, 0, 1.2247449]] * 2) + 1, rtol=1e-6, atol=1e-6)


def test_mvn1_axes_2_3_equals_mvn_without_cross_channel() -> None:
    rng = np.random.default_rng(0)
    shape = [2, 3, 4, 5]
    x = rng.standard_normal(shape).astype(np.float32)
    scale = rng.standard_normal([1, 3, 1, 1]).astype(np.float32)
    for cross, axes in ((False, [2, 3]), (True, [3, 1, 2])):
        extra = {"ScaleTensor": tensor("FLOAT32", [1, 3, 1, 1])}
        mvn = {
            "InputTensor": tensor("FLOAT32", shape),
            "OutputTensor": tensor("FLOAT32", shape),
            "CrossChannel": cross,
            "NormalizeVariance": True,
            "Epsilon": 1e-5,
            **extra,
        }
        inputs = {"InputTensor": x, "ScaleTensor": scale}
        old, _ = lowered_and_reference("cpu", "MEAN_VARIANCE_NORMALIZATION", mvn, inputs)
        new, _ = lowered_and_reference("cpu", MVN1, fields(MVN1, "FLOAT32", shape, axes, Epsilon=1e-5, **extra), inputs)
        np.testing.assert_allclose(new, old, rtol=1e-6, atol=1e-6)


def test_fused_activation_applies() -> None:
    x = np.array([[1, 2, 3]], np.float32)
    f = fields(MVN1, "FLOAT32", [1, 3], [1], FusedActivation={"Type": "ACTIVATION_RELU"})
    for got in run_all_variants(MVN1, f, {"InputTensor": x}):
        np.testing.assert_allclose(got, [[0, 0, 1.2247449]], rtol=1e-6, atol=1e-6)


# -- candidates --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("op", "shape", "axes", "options", "opset", "want"),
    [
        (MVN1, [2, 3, 4], [2, 1], {}, 17, ("reduce_chain", "layer_norm")),
        (MVN1, [2, 3, 4], [2], {}, 17, ("reduce_chain", "layer_norm", "instance_norm")),
        (MVN1, [2, 3, 4], [2], {}, 13, ("reduce_chain", "instance_norm")),
        (MVN1, [2, 3, 4], [0, 2], {}, 17, ("reduce_chain",)),
        (MVN1, [2, 3, 4], [2], {"NormalizeVariance": False}, 17, ("reduce_chain",)),
        (MVN1, [2, 3], [1], {}, 17, ("reduce_chain", "layer_norm")),
        (MVN1, [2, 3, 4, 5], [2, 3], {"ScaleTensor": tensor("FLOAT32", [1, 3, 1, 1])}, 17, choices.candidates(MVN1)),
        (MVN1, [2, 3, 4, 5], [2, 3], {"BiasTensor": tensor("FLOAT32", [1, 3, 1, 5])}, 17, ("reduce_chain", "layer_norm")),
        (MVN2, [2, 3, 4], [2], {"UseMean": False}, 17, ("reduce_chain",)),
        (MVN2, [2, 3, 4], [2], {"UseVariance": False}, 21, ("reduce_chain",)),
        (MVN2, [2, 3, 4, 2, 2], [2, 3, 4], {}, 17, ("reduce_chain", "layer_norm", "instance_norm")),
    ],
)
def test_candidates(
    op: str, shape: list[int], axes: list[int], options: dict[str, Any], opset: int, want: tuple[str, ...]
) -> None:
    extras = {k: v for k, v in options.items() if k.endswith("Tensor")}
    if len(extras) == 1:  # both, so that the desc is valid before 5_2 too
        other = "BiasTensor" if "ScaleTensor" in extras else "ScaleTensor"
        options = {**options, other: tensor("FLOAT32", [1] * len(shape))}
    desc = make_desc(op, fields(op, "FLOAT32", shape, axes, **options))
    assert choices.available(desc, opset) == want
    # portable and cuda: the measured rule (one fused kernel where one applies: InstanceNormalization
    # with its Scale/Bias per channel, else LayerNormalization)
    affine = "ScaleTensor" in options or "BiasTensor" in options
    fused = "instance_norm" if affine and "instance_norm" in want else "layer_norm" if "layer_norm" in want else "reduce_chain"
    assert choices.choose(desc, "portable", opset) == choices.choose(desc, "cuda", opset) == fused
    # the dml target: the node the DirectML EP turns back into one MVN1, where one applies
    dml = next((c for c in ("instance_norm", "layer_norm") if c in want), "reduce_chain")
    assert choices.choose(desc, "dml", opset) == dml


# -- properties --------------------------------------------------------------------------------


@st.composite
def mvn_cases(draw: st.DrawFn) -> tuple[str, dict[str, Any], dict[str, np.ndarray]]:
    op = draw(st.sampled_from([MVN1, MVN2]))
    dtype = draw(st.sampled_from(["FLOAT32", "FLOAT16"]))
    shape = draw(shapes(max_rank=8))
    axes = draw(axis_subsets(len(shape)))
    rng = np.random.default_rng(draw(SEEDS))
    t = np.dtype(dtype.lower())
    flags = (
        {"NormalizeVariance": draw(st.booleans())}
        if op == MVN1
        else {"UseMean": draw(st.booleans()), "UseVariance": draw(st.booleans())}
    )
    f: dict[str, Any] = {
        "InputTensor": tensor(dtype, shape),
        "OutputTensor": tensor(dtype, shape),
        "AxisCount": len(axes),
        "Axes": axes,
        **flags,
        "Epsilon": draw(st.sampled_from([1e-5, 1e-3, 0.5])),
    }
    inputs = {"InputTensor": (rng.standard_normal(shape) * 3 + rng.integers(-5, 5)).astype(t)}
    for name in draw(st.sampled_from([(), ("ScaleTensor",), ("BiasTensor",), ("ScaleTensor", "BiasTensor")])):
        sizes = [draw(st.sampled_from([1, s])) for s in shape]
        f[name] = tensor(dtype, sizes)
        inputs[name] = rng.uniform(-2, 2, sizes).astype(t)
    activation = draw(st.sampled_from([None, *ACTIVATIONS]))
    if activation:
        f["FusedActivation"] = {"Type": activation, **ACTIVATIONS[activation]}
    return op, f, inputs


@EPS
@SETTINGS
@given(case=mvn_cases(), opset=st.sampled_from([13, 17, 21]))
def test_every_candidate_matches_reference(ep: str, case: tuple[str, dict[str, Any], dict[str, np.ndarray]], opset: int) -> None:
    op, f, inputs = case
    desc = make_desc(op, f)
    want = registry.family(op).reference(desc, inputs)
    tol = 4e-3 if desc.tensor("InputTensor").data_type.name == "FLOAT16" else 5e-5
    for variant in choices.available(desc, opset):
        got = runtime.create(lowering.lower(desc, "t", opset=opset, variant=variant), "t", ep).run(inputs)
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=tol, atol=tol, err_msg=variant)


@SETTINGS
@given(case=mvn_cases())
def test_reference_properties(case: tuple[str, dict[str, Any], dict[str, np.ndarray]]) -> None:
    """Normalized groups have mean 0 (with UseMean) and mean square 1 (with the variance), checked
    on the reference without Scale, Bias or activation, in FLOAT64."""
    op, f, inputs = case
    f = {k: v for k, v in f.items() if k not in ("ScaleTensor", "BiasTensor", "FusedActivation")}
    f["Epsilon"] = 0.0
    x = inputs["InputTensor"].astype(np.float64)
    f["InputTensor"] = f["OutputTensor"] = tensor("FLOAT64", x.shape)
    desc = parse_operator_desc(op, f, ("desc",), ("type",))  # FLOAT64: the reference only
    y = registry.family(op).reference(desc, {"InputTensor": x})
    axes = tuple(f["Axes"])
    use_mean = f.get("UseMean", True)
    use_variance = f.get("NormalizeVariance", f.get("UseVariance"))
    centered = x - x.mean(axis=axes, keepdims=True) if use_mean else x
    spread = np.sqrt((centered**2).mean(axis=axes, keepdims=True))
    if not use_variance:
        np.testing.assert_allclose(y, centered, atol=1e-9)
        return
    ok = np.broadcast_to(spread > 1e-6, y.shape)
    np.testing.assert_allclose((y * y).mean(axis=axes, keepdims=True)[spread > 1e-6], 1, rtol=1e-9)
    if use_mean:
        np.testing.assert_allclose(np.where(ok, y, 0).mean(axis=axes), 0, atol=1e-9)


# -- invalid descs and feature levels ------------------------------------------------------------


def refusal(op: str, f: dict[str, Any], level: str = "6_4") -> ModelError:
    desc = parse_operator_desc(op, f, ("desc",), ("type",), level=level)
    with pytest.raises(ModelError) as e:
        lowering.validate(desc)
    return e.value


def extras(scale: tuple[str, list[int]], bias: tuple[str, list[int]]) -> dict[str, Any]:
    return {"ScaleTensor": tensor(*scale), "BiasTensor": tensor(*bias)}


@pytest.mark.parametrize(
    ("op", "change", "path", "text"),
    [
        (MVN1, {"AxisCount": 0, "Axes": []}, "desc.Axes", "at least one axis"),
        (MVN1, {"AxisCount": 2, "Axes": [1, 1]}, "desc.Axes[1]", "more than once"),
        (MVN2, {"AxisCount": 1, "Axes": [3]}, "desc.Axes[0]", "out of range [0, 2]"),
        (MVN1, {"OutputTensor": tensor("FLOAT32", [2, 3, 5])}, "desc.OutputTensor.Sizes", "same Sizes"),
        (MVN1, {"OutputTensor": tensor("FLOAT16", [2, 3, 4])}, "desc.OutputTensor.DataType", "same DataType"),
        (MVN2, extras(("FLOAT16", [1, 3, 1]), ("FLOAT32", [1, 1, 1])), "desc.ScaleTensor.DataType", "same DataType"),
        (MVN1, extras(("FLOAT32", [3, 1]), ("FLOAT32", [1, 3, 1])), "desc.ScaleTensor.Sizes", "same DimensionCount"),
        (MVN2, extras(("FLOAT32", [1, 2, 1]), ("FLOAT32", [1, 3, 1])), "desc.ScaleTensor.Sizes[1]", "must be 3"),
        (MVN1, extras(("FLOAT32", [1, 3, 4]), ("FLOAT32", [2, 3, 2])), "desc.BiasTensor.Sizes[2]", "or 1 to broadcast"),
        (
            MVN1,
            {"FusedActivation": {"Type": "ACTIVATION_SOFTPLUS", "Steepness": 0.0}},
            "desc.FusedActivation.Steepness",
            "must not be 0",
        ),
    ],
)
def test_invalid(op: str, change: dict[str, Any], path: str, text: str) -> None:
    f = fields(op, "FLOAT32", [2, 3, 4], [2], **change)
    e = refusal(op, f)
    assert format_path(e.path) == path
    assert text in str(e)


def test_mvn2_needs_6_3() -> None:
    with pytest.raises(ModelError, match="needs feature level 6_3"):
        parse_operator_desc(MVN2, fields(MVN2, "FLOAT32", [2, 3], [1]), ("desc",), ("type",), level="6_2")


def test_mvn1_five_dims_needs_3_1() -> None:
    e = refusal(MVN1, fields(MVN1, "FLOAT32", [2, 3, 4, 5, 6], [4]), level="3_0")
    assert "feature level 3_1 allows it" in str(e)
    refusal_free = parse_operator_desc(MVN1, fields(MVN1, "FLOAT32", [2, 3, 4, 5, 6], [4]), ("desc",), ("type",), level="3_1")
    lowering.validate(refusal_free)


@pytest.mark.parametrize("op", [MVN1, "MEAN_VARIANCE_NORMALIZATION"])
@pytest.mark.parametrize("present", ["ScaleTensor", "BiasTensor"])
def test_scale_without_bias_needs_5_2(op: str, present: str) -> None:
    extra = {present: tensor("FLOAT32", [1, 3, 1, 1])}
    if op == MVN1:
        f = fields(op, "FLOAT32", [2, 3, 4, 5], [2, 3], **extra)
    else:
        shape = [2, 3, 4, 5]
        f = {"InputTensor": tensor("FLOAT32", shape), "OutputTensor": tensor("FLOAT32", shape)}
        f |= {"CrossChannel": False, "NormalizeVariance": True, "Epsilon": 1e-5, **extra}
    e = refusal(op, f, level="5_1")
    assert e.path == ("desc", present)
    assert "needs feature level 5_2" in str(e)
    lowering.validate(parse_operator_desc(op, f, ("desc",), ("type",), level="5_2"))


def test_channel_broadcast_needs_4_0_for_mvn1_only() -> None:
    extra = {"ScaleTensor": tensor("FLOAT32", [1, 1, 4, 1]), "BiasTensor": tensor("FLOAT32", [1, 3, 1, 1])}
    e = refusal(MVN1, fields(MVN1, "FLOAT32", [2, 3, 4, 5], [2, 3], **extra), level="3_1")
    assert e.path == ("desc", "ScaleTensor", "Sizes", 1)
    assert "needs feature level 4_0" in str(e)
    lowering.validate(
        parse_operator_desc(MVN1, fields(MVN1, "FLOAT32", [2, 3, 4, 5], [2, 3], **extra), ("desc",), ("type",), level="4_0")
    )
    shape = [2, 3, 4, 5]
    mvn = {"InputTensor": tensor("FLOAT32", shape), "OutputTensor": tensor("FLOAT32", shape)}
    mvn |= {"CrossChannel": False, "NormalizeVariance": True, "Epsilon": 1e-5, **extra}
    lowering.validate(parse_operator_desc("MEAN_VARIANCE_NORMALIZATION", mvn, ("desc",), ("type",), level="1_0"))


def test_softplus_steepness_below_1_fused_by_level() -> None:
    f = fields(MVN1, "FLOAT32", [2, 3], [1], FusedActivation={"Type": "ACTIVATION_SOFTPLUS", "Steepness": 0.5})
    e = refusal(MVN1, f, level="6_3")
    assert "needs feature level 6_4" in str(e) and e.path == ("desc", "FusedActivation", "Steepness")
    lowering.validate(parse_operator_desc(MVN1, f, ("desc",), ("type",), level="6_4"))


@EPS
@pytest.mark.parametrize("op", ["MEAN_VARIANCE_NORMALIZATION", "MEAN_VARIANCE_NORMALIZATION1"])
def test_single_element_groups_skip_instance_normalization(ep: str, op: str) -> None:
    """One element per normalized group: the result is 0 * Scale. The CUDA EP's
    InstanceNormalization gives NaN there (H200), so that candidate is not offered."""
    sizes = [2, 3, 1, 1]
    fields: dict[str, Any] = {
        "InputTensor": tensor("FLOAT32", sizes),
        "OutputTensor": tensor("FLOAT32", sizes),
        "ScaleTensor": tensor("FLOAT32", [1, 3, 1, 1]),
        "NormalizeVariance": True,
        "Epsilon": 1e-5,
    }
    if op == "MEAN_VARIANCE_NORMALIZATION":
        fields["CrossChannel"] = False
    else:
        fields |= {"AxisCount": 2, "Axes": [2, 3]}
    desc = make_desc(op, fields)
    assert "instance_norm" not in choices.available(desc, 17)
    assert "instance_norm" in choices.available(
        make_desc(op, fields | {"InputTensor": tensor("FLOAT32", [2, 3, 1, 2]), "OutputTensor": tensor("FLOAT32", [2, 3, 1, 2])}),
        17,
    )
    x = np.random.default_rng(0).standard_normal(sizes).astype(np.float32)
    scale = np.array([1.0, -2.0, 3.0], np.float32).reshape(1, 3, 1, 1)
    for variant in choices.available(desc, 17):
        got = runtime.create(lowering.lower(desc, "t", variant=variant), "t", ep).run({"InputTensor": x, "ScaleTensor": scale})
        assert np.array_equal(got, np.zeros(sizes, np.float32)), (variant, got)


@EPS
@pytest.mark.parametrize("dtype", ["FLOAT32", "FLOAT16"])
@pytest.mark.parametrize(
    ("scale", "bias", "nodes"),
    [
        ([1, 1, 4, 5], [1, 1, 1, 5], {"LayerNormalization": 1, "Mul": 0, "Add": 0}),  # both into the kernel
        ([1, 1, 1, 1], None, {"LayerNormalization": 1, "Mul": 0}),  # a scalar Scale: expanded
        ([1, 3, 4, 5], [1, 1, 4, 5], {"LayerNormalization": 1, "Mul": 1, "Add": 1}),  # Scale by channel: both after
        ([1, 1, 4, 5], [1, 3, 1, 1], {"LayerNormalization": 1, "Mul": 0, "Add": 1}),  # Bias by channel: after
    ],
)
def test_layer_norm_takes_scale_and_bias_over_the_normalized_axes(
    ep: str, dtype: str, scale: list[int], bias: list[int] | None, nodes: dict[str, int]
) -> None:
    """A transformer's LayerNorm (MVN1 over the last axes, Scale and Bias over them) is one
    LayerNormalization kernel; a Scale or Bias varying elsewhere follows as Mul/Add."""
    rng = np.random.default_rng(5)
    np_type = np.float16 if dtype == "FLOAT16" else np.float32
    extra: dict[str, Any] = {"ScaleTensor": tensor(dtype, scale), "BiasTensor": tensor(dtype, bias or [1, 1, 1, 1])}
    desc = make_desc(MVN1, fields(MVN1, dtype, [2, 3, 4, 5], [2, 3], Epsilon=1e-5, **extra))
    inputs = {
        "InputTensor": rng.normal(size=(2, 3, 4, 5)).astype(np_type) * 3 + 1,
        "ScaleTensor": rng.normal(size=scale).astype(np_type),
        "BiasTensor": rng.normal(size=bias or [1, 1, 1, 1]).astype(np_type),
    }
    model = lowering.lower(desc, "t", variant="layer_norm")
    ops = [n.op_type for n in model.graph.node]
    assert {op: ops.count(op) for op in nodes} == nodes, ops
    got = runtime.create(model, "t", ep).run(inputs)
    want = registry.family(MVN1).reference(desc, inputs)
    assert not mismatches(desc, {"OutputTensor": got}, {"OutputTensor": want}, ep)
