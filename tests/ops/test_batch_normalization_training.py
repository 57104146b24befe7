"""DML_OPERATOR_BATCH_NORMALIZATION_TRAINING: values by hand (the page has no example), what
DirectML's API computes where the page is silent (population variance, Epsilon inside the root,
FusedAdd before the activation, FLOAT16's mean kept in FLOAT16), every candidate lowering and
target, refusals, and properties over ranks 1-8 with Scale's axes of size 1 chosen at random
against the numpy reference (all three outputs)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dml2onnx import lowering
from dml2onnx.backends import dmlapi, runtime
from dml2onnx.cases.batch_normalization_training import feeds_for, fields_for
from dml2onnx.cases.common import ACTIVATIONS
from dml2onnx.core import dtypes
from dml2onnx.core.errors import format_path
from dml2onnx.graph import dml_ep
from dml2onnx.graph.builder import DEFAULT_OPSET
from dml2onnx.lowering import choices
from dml2onnx.ops import batch_normalization_training as bnt
from dml2onnx.ops import registry
from strategies import SEEDS, shapes
from support import EPS, assert_matches_reference, every_output, make_desc, mismatches, refusal, tensor

OP = "BATCH_NORMALIZATION_TRAINING"
SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
F32 = dtypes.FLOAT32


def every_variant(f: dict[str, Any], feeds: dict[str, np.ndarray], ep: str = "cpu") -> list[dict[str, np.ndarray]]:
    """Every output of every candidate lowering on every target, by field."""
    desc = make_desc(OP, f)
    out = []
    for target in ("portable", "cuda", "dml"):
        for variant in choices.available(desc, DEFAULT_OPSET):
            session = runtime.create(lowering.lower(desc, "t", target=target, variant=variant), "t", ep)
            out.append(every_output(session, desc, feeds))
    return out


def by_hand() -> tuple[dict[str, Any], dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Per channel over [2, 2, 1, 2] (N, C, H, W): channel 0 holds
    1, 3, 1, 3 (mean 2, population variance 1), channel 1 holds -4, 0, 0, 4 (mean 0, variance 8)."""
    x = np.array([1, 3, -4, 0, 1, 3, 0, 4], np.float32).reshape(2, 2, 1, 2)
    c = (1, 2, 1, 1)
    f = fields_for(F32, x.shape, c, fused_add=True, epsilon=0.0, activation="ACTIVATION_RELU")
    feeds = {
        "InputTensor": x,
        "ScaleTensor": np.array([2, 0.5], np.float32).reshape(c),
        "BiasTensor": np.array([0.5, -1], np.float32).reshape(c),
        "FusedAddTensor": np.full(x.shape, 0.25, np.float32),
    }
    # channel 0: 2 * (x - 2) / 1 + 0.5 + 0.25 = 2x - 3.25; channel 1: 0.5 * x / sqrt(8) - 0.75
    y = np.array([-1.25, 2.75, -0.5 * 4 / np.sqrt(8) - 0.75, -0.75, -1.25, 2.75, -0.75, 0.5 * 4 / np.sqrt(8) - 0.75])
    want = {
        "OutputTensor": np.maximum(y, 0).astype(np.float32).reshape(x.shape),
        "OutputMeanTensor": np.array([2, 0], np.float32).reshape(c),
        "OutputVarianceTensor": np.array([1, 8], np.float32).reshape(c),
    }
    return f, feeds, want


def test_by_hand_per_channel_with_fused_add_and_relu() -> None:
    f, feeds, want = by_hand()
    assert choices.available(make_desc(OP, f), DEFAULT_OPSET) == ("reduce_chain",)  # Epsilon 0 < cuDNN's 1e-5
    for got in [registry.reference_outputs(make_desc(OP, f), feeds), *every_variant(f, feeds)]:
        for k, v in want.items():
            np.testing.assert_allclose(got[k], v, rtol=1e-6, atol=1e-6, err_msg=k)


def test_by_hand_per_activation_and_batch_norm_candidate() -> None:
    """Per activation ([1, C, H, W]): each element's mean and variance over N alone; per channel
    with Epsilon 0.5 both candidates."""
    x = np.array([[1, 2, 3, 4], [3, 6, 3, 0]], np.float32).reshape(2, 1, 2, 2)
    s = (1, 1, 2, 2)
    f = fields_for(F32, x.shape, s, fused_add=False, epsilon=0.5)
    feeds = {"InputTensor": x, "ScaleTensor": np.ones(s, np.float32), "BiasTensor": np.zeros(s, np.float32)}
    mean, var = np.array([2, 4, 3, 2]).reshape(s), np.array([1, 4, 0, 4]).reshape(s)
    y = (x - mean) / np.sqrt(var + 0.5)
    for got in every_variant(f, feeds):
        np.testing.assert_allclose(got["OutputMeanTensor"], mean, rtol=1e-6)
        np.testing.assert_allclose(got["OutputVarianceTensor"], var, rtol=1e-6)
        np.testing.assert_allclose(got["OutputTensor"], y, rtol=1e-6, atol=1e-6)
    c = (1, 1, 1, 1)
    desc = make_desc(OP, fields_for(F32, x.shape, c, fused_add=False, epsilon=0.5))
    assert choices.available(desc, DEFAULT_OPSET) == ("reduce_chain", "batch_norm")
    assert choices.choose(desc, "cuda", DEFAULT_OPSET) == "batch_norm"


def test_nothing_reduced_gives_bias_and_nan_with_epsilon_zero() -> None:
    x = np.array([1, -2, np.inf], np.float32)
    for eps, y in ((1e-5, [0.5, 0.5, np.nan]), (0.0, [np.nan] * 3)):
        f = fields_for(F32, (3,), (3,), fused_add=False, epsilon=eps)
        feeds = {"InputTensor": x, "ScaleTensor": np.full(3, 2, np.float32), "BiasTensor": np.full(3, 0.5, np.float32)}
        for got in [registry.reference_outputs(make_desc(OP, f), feeds), *every_variant(f, feeds)]:
            np.testing.assert_array_equal(got["OutputTensor"], np.array(y, np.float32))
            np.testing.assert_array_equal(got["OutputMeanTensor"], x)
            np.testing.assert_array_equal(got["OutputVarianceTensor"], [0, 0, np.nan])


def test_special_values_propagate() -> None:
    """A NaN, or +inf and -inf, in a group: NaN mean; one infinity: infinite mean, NaN variance;
    either way NaN outputs for that group only."""
    x = np.array([[np.nan, np.inf, np.inf], [1, 1, -np.inf], [2, 2, 1], [3, 3, 2]], np.float32)
    s = (1, 3)
    f = fields_for(F32, x.shape, s, fused_add=False)
    feeds = {"InputTensor": x, "ScaleTensor": np.ones(s, np.float32), "BiasTensor": np.zeros(s, np.float32)}
    for got in [registry.reference_outputs(make_desc(OP, f), feeds), *every_variant(f, feeds)]:
        np.testing.assert_array_equal(got["OutputMeanTensor"], [[np.nan, np.inf, np.nan]])
        np.testing.assert_array_equal(got["OutputVarianceTensor"], [[np.nan, np.nan, np.nan]])
        assert np.isnan(got["OutputTensor"]).all()


def test_lowering_emits_no_training_mode_node() -> None:
    """No ONNX node maps back onto the operator (the module's docstring): BatchNormalization, where
    used, is the inference form with the statistics computed before it; every graph passes the
    DirectML EP's static check."""
    for sizes in ((1, 3, 1, 1), (1, 3, 4, 5), (2, 1, 4, 1)):
        desc = make_desc(OP, fields_for(dtypes.FLOAT16, (2, 3, 4, 5), sizes, fused_add=True))
        for target in ("portable", "dml", "cuda"):
            for variant in choices.available(desc, DEFAULT_OPSET):
                model = lowering.lower(desc, "t", target=target, variant=variant)
                assert [o.name for o in model.graph.output] == ["OutputTensor", "OutputMeanTensor", "OutputVarianceTensor"]
                for n in model.graph.node:
                    assert n.op_type != "BatchNormalization" or len(n.output) == 1
                if target != "cuda":
                    assert dml_ep.check(model) == []


_why = dmlapi.missing()


@pytest.mark.skipif(_why is not None, reason=f"DirectML's API under Wine is not set up ({_why})")
def test_directml_computes_so() -> None:
    """What the page leaves open, from DirectML's own API: the by-hand case (population variance,
    Epsilon inside the root, FusedAdd before RELU), and FLOAT16 summed in FLOAT16: 999.5, 1001,
    1000.5, 1000.5 (mean 1000.375, variance 0.296875) give the mean 1000 and the variance about
    it, 0.4375; the graphs here give the FLOAT16 roundings of the true values."""
    f, feeds, want = by_hand()
    got = dmlapi.execute(make_desc(OP, f), feeds).outputs
    for k, v in want.items():
        np.testing.assert_allclose(got[k], v, rtol=1e-6, atol=1e-6, err_msg=k)
    x = np.array([999.5, 1001, 1000.5, 1000.5], np.float16).reshape(1, 4)
    f = fields_for(dtypes.FLOAT16, (1, 4), (1, 1), fused_add=False)
    feeds = {"InputTensor": x, "ScaleTensor": np.ones((1, 1), np.float16), "BiasTensor": np.zeros((1, 1), np.float16)}
    got = dmlapi.execute(make_desc(OP, f), feeds).outputs
    assert got["OutputMeanTensor"].item() == 1000 and got["OutputVarianceTensor"].item() == 0.4375
    ours = every_variant(f, feeds)[0]
    assert ours["OutputMeanTensor"].item() == 1000.5 and ours["OutputVarianceTensor"].item() == 0.296875


BASE = fields_for(F32, (2, 3, 4, 5), (1, 3, 1, 1), fused_add=True)


@pytest.mark.parametrize(
    ("change", "path", "message"),
    [
        ({"ScaleTensor": tensor("FLOAT32", (1, 2, 1, 1))}, "desc.ScaleTensor.Sizes[1]", "must be 3"),
        ({"ScaleTensor": tensor("FLOAT32", (1, 3, 1))}, "desc.ScaleTensor.Sizes", "same DimensionCount"),
        ({"BiasTensor": tensor("FLOAT32", (1, 1, 1, 1))}, "desc.BiasTensor.Sizes", "same Sizes"),
        ({"BiasTensor": tensor("FLOAT16", (1, 3, 1, 1))}, "desc.BiasTensor.DataType", "same DataType"),
        ({"OutputMeanTensor": tensor("FLOAT32", (1, 3, 4, 5))}, "desc.OutputMeanTensor.Sizes", "same Sizes"),
        ({"OutputVarianceTensor": tensor("FLOAT16", (1, 3, 1, 1))}, "desc.OutputVarianceTensor.DataType", "same DataType"),
        ({"OutputVarianceTensor": tensor("FLOAT32", (3, 1, 1))}, "desc.OutputVarianceTensor.Sizes", "same DimensionCount"),
        ({"FusedAddTensor": tensor("FLOAT32", (1, 3, 4, 5))}, "desc.FusedAddTensor.Sizes", "same Sizes"),
        ({"FusedAddTensor": tensor("FLOAT16", (2, 3, 4, 5))}, "desc.FusedAddTensor.DataType", "same DataType"),
        ({"OutputTensor": tensor("FLOAT32", (2, 3, 4, 4))}, "desc.OutputTensor.Sizes", "same Sizes"),
    ],
)
def test_refusals(change: dict[str, Any], path: str, message: str) -> None:
    e = refusal(OP, BASE | change)
    assert format_path(e.path) == path, str(e)
    assert message in e.rule


def test_refused_before_feature_level_4_1() -> None:
    e = refusal(OP, BASE, level="4_0")
    assert "4_1" in str(e)


def test_outputs_are_required() -> None:
    f = dict(BASE)
    del f["OutputMeanTensor"]
    e = refusal(OP, f)
    assert "OutputMeanTensor" in format_path(e.path)


@EPS
@SETTINGS
@given(
    shape=shapes(max_rank=8),
    dtype=st.sampled_from([dtypes.FLOAT32, dtypes.FLOAT16]),
    mask=st.integers(0, 255),
    fused_add=st.booleans(),
    epsilon=st.sampled_from([0.0, 1e-5, 1e-3, 0.5]),
    activation=st.sampled_from([None, *ACTIVATIONS]),
    seed=SEEDS,
)
def test_matches_reference(
    ep: str,
    shape: tuple[int, ...],
    dtype: dtypes.DataType,
    mask: int,
    fused_add: bool,
    epsilon: float,
    activation: str | None,
    seed: int,
) -> None:
    """Scale's size 1 on the axes of `mask`'s zero bits (the reduced ones), the inputs within
    tolerances.batch_normalization_training's bounds (at most BNT_LENGTH elements per mean)."""
    sizes = tuple(s if mask >> i & 1 else 1 for i, s in enumerate(shape))
    desc_fields = fields_for(dtype, shape, sizes, fused_add, epsilon, activation)
    if bnt.length(make_desc(OP, desc_fields)) > 256:
        sizes = shape  # nothing reduced instead
        desc_fields = fields_for(dtype, shape, sizes, fused_add, epsilon, activation)
    feeds = feeds_for(np.random.default_rng(seed), dtype, shape, sizes, fused_add)
    assert_matches_reference(ep, OP, desc_fields, feeds)


def test_mismatches_cover_every_output() -> None:
    """A wrong variance alone is reported (the three outputs are each compared)."""
    f, _, want = by_hand()
    desc = make_desc(OP, f)
    got = dict(want, OutputVarianceTensor=want["OutputVarianceTensor"] * (1 + 1e-3))
    assert "OutputVarianceTensor" in mismatches(desc, got, want, "cpu")
    assert mismatches(desc, want, want, "cpu") == ""
