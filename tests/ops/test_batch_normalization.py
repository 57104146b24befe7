"""DML_OPERATOR_BATCH_NORMALIZATION: values by hand (the page has no example), every candidate
lowering, refusals, and properties over ranks 1-8 with Mean/Variance/Scale/Bias broadcast at
random (sizes of 1: strides of 0), Spatial either way and fused activations, against the numpy
reference."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dml2onnx import lowering
from dml2onnx.backends import runtime
from dml2onnx.cases.common import ACTIVATIONS
from dml2onnx.core.errors import format_path
from dml2onnx.graph.builder import DEFAULT_OPSET
from dml2onnx.lowering import choices
from dml2onnx.ops import batch_normalization
from strategies import SEEDS, shapes
from support import EPS, assert_matches_reference, make_desc, refusal, tensor

OP = "BATCH_NORMALIZATION"
SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
PARAMETERS = batch_normalization.PARAMETERS


def fields(dtype: str, shape: tuple[int, ...], sizes: dict[str, tuple[int, ...]], **options: Any) -> dict[str, Any]:
    f: dict[str, Any] = {"InputTensor": tensor(dtype, shape), "OutputTensor": tensor(dtype, shape)}
    f |= {n: tensor(dtype, sizes[n]) for n in PARAMETERS}
    return f | {"Spatial": True, "Epsilon": 1e-5} | options


def every_variant(f: dict[str, Any], feeds: dict[str, np.ndarray], ep: str = "cpu") -> list[np.ndarray]:
    desc = make_desc(OP, f)
    out = []
    for target in ("portable", "dml", ep):
        for variant in choices.available(desc, DEFAULT_OPSET):
            out.append(runtime.create(lowering.lower(desc, "t", target=target, variant=variant), "t", ep).run(feeds))
    return out


def test_by_hand_per_channel_with_relu() -> None:
    x = np.array([1, -2, 3, -4, 0.5, 1.5, -2.5, 3.5], np.float32).reshape(1, 2, 2, 2)
    c = (1, 2, 1, 1)
    feeds = {
        "InputTensor": x,
        "MeanTensor": np.array([1, -1], np.float32).reshape(c),
        "VarianceTensor": np.array([4, 0.25], np.float32).reshape(c),
        "ScaleTensor": np.array([2, 0.5], np.float32).reshape(c),
        "BiasTensor": np.array([0.5, -1], np.float32).reshape(c),
    }
    f = fields("FLOAT32", x.shape, dict.fromkeys(PARAMETERS, c), Epsilon=0.0, FusedActivation={"Type": "ACTIVATION_RELU"})
    # channel 0: 2 * (x - 1) / 2 + 0.5 = x - 0.5; channel 1: 0.5 * (x + 1) / 0.5 - 1 = x; then max(0, .)
    want = np.maximum(np.array([0.5, -2.5, 2.5, -4.5, 0.5, 1.5, -2.5, 3.5], np.float32), 0).reshape(x.shape)
    for got in every_variant(f, feeds):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def test_per_element_means_with_spatial_false() -> None:
    shape = (1, 2, 1, 2)
    x = np.array([1, 2, 3, 4], np.float32).reshape(shape)
    feeds = {
        "InputTensor": x,
        "MeanTensor": np.array([0, 1, 2, 3], np.float32).reshape(shape),
        "VarianceTensor": np.array([1, 4, 9, 16], np.float32).reshape(shape),
        "ScaleTensor": np.ones((1, 1, 1, 1), np.float32),
        "BiasTensor": np.zeros((1, 1, 1, 1), np.float32),
    }
    sizes = {"MeanTensor": shape, "VarianceTensor": shape, "ScaleTensor": (1, 1, 1, 1), "BiasTensor": (1, 1, 1, 1)}
    f = fields("FLOAT32", shape, sizes, Spatial=False, Epsilon=0.0)
    want = np.array([1, 0.5, 1 / 3, 0.25], np.float32).reshape(shape)
    for got in every_variant(f, feeds):
        np.testing.assert_allclose(got, want, rtol=1e-6)


def test_batch_norm_applies_per_channel_only() -> None:
    c, e = (1, 3, 1, 1), (1, 3, 2, 2)
    shape = (2, 3, 2, 2)
    per_channel = make_desc(OP, fields("FLOAT32", shape, dict.fromkeys(PARAMETERS, c)))
    assert choices.available(per_channel, DEFAULT_OPSET) == ("arithmetic", "batch_norm")
    assert choices.choose(per_channel, "cuda", DEFAULT_OPSET) == "batch_norm"
    per_element = make_desc(OP, fields("FLOAT32", shape, dict.fromkeys(PARAMETERS, e)))
    assert choices.available(per_element, DEFAULT_OPSET) == ("arithmetic",)
    tiny = make_desc(OP, fields("FLOAT32", shape, dict.fromkeys(PARAMETERS, c), Epsilon=1e-7))
    assert choices.available(tiny, DEFAULT_OPSET) == ("arithmetic",)  # cuDNN clamps Epsilon to 1e-5
    six = (2, 3, 1, 1, 1, 2)
    deep = make_desc(OP, fields("FLOAT32", six, dict.fromkeys(PARAMETERS, (1, 3, 1, 1, 1, 1))))
    assert choices.available(deep, DEFAULT_OPSET) == ("arithmetic",)


def test_dml_target_emits_batch_normalization_in_float16() -> None:
    c = (1, 3, 1, 1)
    desc = make_desc(OP, fields("FLOAT16", (2, 3, 2, 2), dict.fromkeys(PARAMETERS, c)))
    model = lowering.lower(desc, "t", target="dml")
    ops = [n.op_type for n in model.graph.node]
    assert "BatchNormalization" in ops and "Cast" not in ops, ops


def test_cuda_target_keeps_float16_with_relu_or_nothing_after() -> None:
    """On `cuda` one BatchNormalization in FLOAT16 (cuDNN computes it in FLOAT32 and rounds once),
    RELU after it in FLOAT16; another activation keeps the FLOAT32 path (rounded once after it)."""
    c = (1, 3, 1, 1)
    base = fields("FLOAT16", (2, 3, 2, 2), dict.fromkeys(PARAMETERS, c))
    for act, want in ((None, ["BatchNormalization"]), ("ACTIVATION_RELU", ["BatchNormalization", "Relu"])):
        f = base | ({"FusedActivation": {"Type": act}} if act else {})
        ops = [n.op_type for n in lowering.lower(make_desc(OP, f), "t", target="cuda").graph.node if n.op_type != "Reshape"]
        assert ops == want, ops
    f = base | {"FusedActivation": {"Type": "ACTIVATION_SIGMOID"}}
    ops = [n.op_type for n in lowering.lower(make_desc(OP, f), "t", target="cuda").graph.node]
    assert ops.count("Cast") == 6 and ops[-1] == "Cast", ops


@EPS
def test_cuda_target_float16_by_hand(ep: str) -> None:
    """The `cuda` graph (FLOAT16 BatchNormalization + Relu where the EP has it; FLOAT32 elsewhere)
    on real values: 2 * (x - 1) / sqrt(4 + 1e-5) + 0.5, then RELU."""
    if ep != "cuda":
        pytest.skip("the cuda target's FLOAT16 BatchNormalization needs the CUDA EP (the CPU EP's has no FLOAT16)")
    c = (1, 2, 1, 1)
    f = fields("FLOAT16", (1, 2, 1, 3), dict.fromkeys(PARAMETERS, c)) | {"FusedActivation": {"Type": "ACTIVATION_RELU"}}
    x = np.array([[[[-3, 1, 5]], [[0.25, 2, 64992]]]], np.float16)
    feeds = {"InputTensor": x, "MeanTensor": np.ones(c, np.float16), "VarianceTensor": np.full(c, 4, np.float16)}
    feeds |= {"ScaleTensor": np.full(c, 2, np.float16), "BiasTensor": np.full(c, 0.5, np.float16)}
    desc = make_desc(OP, f)
    got = runtime.create(lowering.lower(desc, "t", target="cuda"), "t", ep).run(feeds)
    want = batch_normalization.reference(desc, feeds)
    np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32), rtol=1e-3)
    assert got[0, 0, 0, 0] == 0 and got[0, 1, 0, 2] == 64992  # RELU; near FLOAT16's largest, rounded once


@pytest.mark.parametrize(
    ("change", "path", "message"),
    [
        ({"MeanTensor": tensor("FLOAT16", (1, 3, 1, 1))}, "desc.MeanTensor.DataType", "same DataType"),
        ({"OutputTensor": tensor("FLOAT32", (2, 3, 2, 1))}, "desc.OutputTensor.Sizes", "same Sizes"),
        ({"ScaleTensor": tensor("FLOAT32", (1, 3, 1))}, "desc.ScaleTensor.Sizes", "same DimensionCount"),
        ({"BiasTensor": tensor("FLOAT32", (1, 2, 1, 1))}, "desc.BiasTensor.Sizes[1]", "must be 3"),
        ({"VarianceTensor": tensor("FLOAT32", (3, 3, 1, 1))}, "desc.VarianceTensor.Sizes[0]", "must be 2"),
    ],
)
def test_refusals(change: dict[str, Any], path: str, message: str) -> None:
    f = fields("FLOAT32", (2, 3, 2, 2), dict.fromkeys(PARAMETERS, (1, 3, 1, 1))) | change
    e = refusal(OP, f)
    assert format_path(e.path) == path, str(e)
    assert message in e.rule


def test_rank_5_refused_at_feature_level_1_0() -> None:
    e = refusal(OP, fields("FLOAT32", (2, 3, 2, 2, 2), dict.fromkeys(PARAMETERS, (1, 3, 1, 1, 1))), level="1_0")
    assert "InputTensor" in str(e)


@EPS
@SETTINGS
@given(
    shape=shapes(),
    dtype=st.sampled_from(["FLOAT32", "FLOAT16"]),
    masks=st.lists(st.integers(0, 255), min_size=4, max_size=4),
    spatial=st.booleans(),
    epsilon=st.sampled_from([1e-5, 1e-3, 0.5]),
    activation=st.sampled_from([None, *ACTIVATIONS]),
    seed=SEEDS,
)
def test_matches_reference(
    ep: str,
    shape: tuple[int, ...],
    dtype: str,
    masks: list[int],
    spatial: bool,
    epsilon: float,
    activation: str | None,
    seed: int,
) -> None:
    rng = np.random.default_rng(seed)
    sizes = {n: tuple(s if m >> i & 1 else 1 for i, s in enumerate(shape)) for n, m in zip(PARAMETERS, masks, strict=True)}
    options: dict[str, Any] = {"Spatial": spatial, "Epsilon": epsilon}
    if activation:
        options["FusedActivation"] = {"Type": activation, **ACTIVATIONS[activation]}
    f = fields(dtype, shape, sizes, **options)
    t = np.float16 if dtype == "FLOAT16" else np.float32
    feeds = {"InputTensor": (rng.standard_normal(shape) * 3).astype(t)}
    for n in PARAMETERS:
        low = 0.1 if n == "VarianceTensor" else -2
        feeds[n] = rng.uniform(low, 2, sizes[n]).astype(t)
    assert_matches_reference(ep, OP, f, feeds)
