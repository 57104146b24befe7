"""DML_OPERATOR_BATCH_NORMALIZATION_GRAD and …_TRAINING_GRAD (dml2onnx/ops/batch_normalization_grad.py):
values by hand (the pages have no example), what DirectML's API computes where the pages are
silent (TRAINING_GRAD's mean(Input) is MeanTensor as given; FLOAT16 summed in FLOAT32; the optional
Epsilon), nothing reduced, special values, refusals, the model, and properties over ranks 1-8 with
MeanTensor's axes of size 1 chosen at random against the numpy reference (all three outputs)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dml2onnx import lowering
from dml2onnx.backends import dmlapi, runtime
from dml2onnx.cases.batch_normalization_grad import feeds_for, fields_for
from dml2onnx.core import dtypes
from dml2onnx.core.errors import format_path
from dml2onnx.graph.builder import DEFAULT_OPSET
from dml2onnx.lowering import choices, tolerances
from dml2onnx.ops import batch_normalization_grad as bng
from dml2onnx.ops import registry
from strategies import SEEDS, shapes
from support import EPS, assert_matches_reference, every_output, make_desc, mismatches, refusal, run_cli, tensor

GRAD, TRAINING = "BATCH_NORMALIZATION_GRAD", "BATCH_NORMALIZATION_TRAINING_GRAD"
ROOT = Path(__file__).resolve().parents[2]
F32 = dtypes.FLOAT32
SETTINGS = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
live = pytest.mark.skipif(dmlapi.missing() is not None, reason="DirectML's API under Wine is not set up (make dml-setup)")
ROOT2 = np.sqrt(2.0)


ENGINES = ["cpu", pytest.param("directml", marks=live), pytest.param("dml", marks=live)]


def run_model(name: str, engine: str) -> str:
    """What `dml2onnx run models/<name>.json --ep <engine>` prints (it must succeed)."""
    status, out, err = run_cli("run", str(ROOT / "models" / f"{name}.json"), "--ep", engine)
    assert status == 0, err
    return out


def every_target(op: str, f: dict[str, Any], feeds: dict[str, np.ndarray]) -> list[dict[str, np.ndarray]]:
    """The reference's outputs, then each target's graph's on the CPU EP, by field."""
    desc = make_desc(op, f)
    out = [registry.reference_outputs(desc, feeds)]
    for target in ("portable", "cuda", "dml"):
        out.append(every_output(runtime.create(lowering.lower(desc, "t", target=target), "t", "cpu"), desc, feeds))
    return out


def by_hand(op: str) -> tuple[dict[str, Any], dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Per channel over [2, 2, 1, 2] (N, C, H, W), Epsilon 0: channel 0 holds x = 1, 3, 1, 3 (M 2,
    V 1, Scale 2) and dy = 1, -1, 0.5, 0.5; channel 1 x = -4, 0, 0, 4 (M 0, V 8, Scale 0.5) and dy =
    2, 0, 1, 1. Scale gradients -2 and (2 * -4 + 4) / sqrt(8) = -sqrt(2), bias gradients 1 and 4.
    GRAD: dy * Scale / sqrt(V). TRAINING_GRAD: channel 0 has mean(dy) 0.25 and mean(dy (x - M))
    -0.5: 2 (dy - 0.25 + (x - 2) / 2); channel 1 mean(dy) 1, mean(dy x) -1: 0.5 / sqrt(8) (dy - 1 +
    x / 8). Each channel's TRAINING_GRAD output sums to 0."""
    x = np.array([1, 3, -4, 0, 1, 3, 0, 4], np.float32).reshape(2, 2, 1, 2)
    dy = np.array([1, -1, 2, 0, 0.5, 0.5, 1, 1], np.float32).reshape(x.shape)
    c = (1, 2, 1, 1)
    feeds = {"InputTensor": x, "InputGradientTensor": dy, "MeanTensor": np.array([2, 0], np.float32).reshape(c)}
    feeds |= {"VarianceTensor": np.array([1, 8], np.float32).reshape(c), "ScaleTensor": np.array([2, 0.5], np.float32).reshape(c)}
    r8 = 1 / np.sqrt(8)
    if op == GRAD:
        grad = [2, -2, 2 * 0.5 * r8, 0, 1, 1, 0.5 * r8, 0.5 * r8]
    else:
        grad = [0.5, -1.5, 0.25 * r8, -0.5 * r8, -0.5, 1.5, 0, 0.25 * r8]
    want = {
        "OutputGradientTensor": np.array(grad, np.float32).reshape(x.shape),
        "OutputScaleGradientTensor": np.array([-2, -ROOT2], np.float32).reshape(c),
        "OutputBiasGradientTensor": np.array([1, 4], np.float32).reshape(c),
    }
    return fields_for(F32, x.shape, c, 0.0), feeds, want


@pytest.mark.parametrize("op", [GRAD, TRAINING])
def test_by_hand_per_channel(op: str) -> None:
    f, feeds, want = by_hand(op)
    desc = make_desc(op, f)
    leading = every_output(runtime.create(lowering.lower(desc, "t", variant="leading_first"), "t", "cpu"), desc, feeds)
    for got in [*every_target(op, f, feeds), leading]:
        for k, v in want.items():
            np.testing.assert_allclose(got[k], v, rtol=1e-6, atol=1e-6, err_msg=k)


@pytest.mark.parametrize(
    ("shape", "sizes", "split"),
    [
        ((4, 3, 5, 6), (1, 3, 1, 1), ([0], [2, 3])),  # per channel: N (a row reduction), then H, W
        ((4, 1, 3, 5, 6), (1, 1, 3, 1, 1), ([0, 1], [3, 4])),  # a size-1 axis joins the leading run
        ((2, 3, 4, 5), (1, 1, 4, 1), ([0, 1], [3])),
        ((4, 3, 5, 6), (1, 3, 5, 6), None),  # per activation: axis 0 alone is already a row reduction
        ((4, 3, 5, 6), (1, 1, 1, 1), None),  # all axes: one run
        ((1, 3, 5, 6), (1, 3, 1, 1), None),  # N of 1: the sums start at H
        ((4, 3, 5, 6), (4, 3, 1, 1), None),  # axis 0 kept
        ((4, 3, 1, 1), (1, 3, 1, 1), None),  # the rest of size 1
    ],
)
def test_leading_first_splits(shape: tuple[int, ...], sizes: tuple[int, ...], split: Any) -> None:
    """leading_first sums the leading run of reduced axes (the CUDA EP's fast row reduction), then
    the other reduced axes, where both hold more than one element."""
    desc = make_desc(TRAINING, fields_for(F32, shape, sizes))
    assert bng.split_axes(desc) == split
    assert ("leading_first" in choices.available(desc, DEFAULT_OPSET)) == (split is not None)
    if split is not None:
        reduced = [n for n in lowering.lower(desc, "t", variant="leading_first").graph.node if n.op_type == "ReduceSum"]
        assert len(reduced) == 4  # two sums, two steps each


def test_omitted_epsilon_is_dxdispatch_default_zero() -> None:
    """BATCH_NORMALIZATION_GRAD's Epsilon is optional in DirectMLSchema.h: omitted, DxDispatch's
    parser leaves 0.0, written into the desc (TRAINING_GRAD's is required)."""
    f, feeds, want = by_hand(GRAD)
    del f["Epsilon"]
    assert make_desc(GRAD, f)["Epsilon"] == 0.0
    for got in every_target(GRAD, f, feeds):
        np.testing.assert_allclose(got["OutputGradientTensor"], want["OutputGradientTensor"], rtol=1e-6, atol=1e-6)
    f, _, _ = by_hand(TRAINING)
    del f["Epsilon"]
    assert format_path(refusal(TRAINING, f).path) == "desc.Epsilon"


def test_nothing_reduced() -> None:
    """MeanTensor with the input's Sizes: every sum is the element; TRAINING_GRAD gives
    -Scale s dy (x - M)^2 / (V + Epsilon)."""
    x, dy = np.array([1, -2, 3], np.float32), np.array([2, 1, -1], np.float32)
    feeds = {"InputTensor": x, "InputGradientTensor": dy, "MeanTensor": np.zeros(3, np.float32)}
    feeds |= {"VarianceTensor": np.full(3, 3.5, np.float32), "ScaleTensor": np.full(3, 2, np.float32)}
    s = 1 / 2.0  # 1 / sqrt(3.5 + 0.5)
    for op, grad in ((GRAD, dy * 2 * s), (TRAINING, -2 * s * dy * x**2 / 4)):
        for got in every_target(op, fields_for(F32, (3,), (3,), 0.5), feeds):
            np.testing.assert_allclose(got["OutputGradientTensor"], grad, rtol=1e-6)
            np.testing.assert_allclose(got["OutputScaleGradientTensor"], dy * x * s, rtol=1e-6)
            np.testing.assert_array_equal(got["OutputBiasGradientTensor"], dy)


@pytest.mark.parametrize("op", [GRAD, TRAINING])
def test_special_values_propagate(op: str) -> None:
    """A NaN or an infinity in a channel makes its sums NaN or infinite; V + Epsilon of 0 gives
    infinities (0 * inf NaN), a negative one NaN; the other channels are untouched."""
    x = np.array([[np.nan, 1, 1, 0], [1, np.inf, 2, 1], [2, 2, 3, 2], [3, 3, 0, 3]], np.float32)
    dy = np.array([[1, 1, 0, 1], [1, 0, 1, 1], [1, 1, 1, 1], [1, 1, 1, 1]], np.float32)
    feeds = {"InputTensor": x, "InputGradientTensor": dy, "MeanTensor": np.ones((1, 4), np.float32)}
    feeds |= {"VarianceTensor": np.array([[1, 0, -1, 0]], np.float32), "ScaleTensor": np.ones((1, 4), np.float32)}
    for got in every_target(op, fields_for(F32, (4, 4), (1, 4), 0.0), feeds):
        np.testing.assert_array_equal(got["OutputBiasGradientTensor"], [[4, 3, 3, 4]])
        scale_grad = got["OutputScaleGradientTensor"].ravel()
        assert np.isnan(scale_grad[:3]).all() and np.isinf(scale_grad[3])
        assert np.isnan(got["OutputGradientTensor"][:, 2]).all()


_why = dmlapi.missing()


@pytest.mark.skipif(_why is not None, reason=f"DirectML's API under Wine is not set up ({_why})")
@pytest.mark.parametrize("op", [GRAD, TRAINING])
def test_directml_computes_so(op: str) -> None:
    """The by-hand values, and statistics off the batch's own: DirectML's TRAINING_GRAD takes the
    page's mean(Input) as MeanTensor (recomputing the mean would give other values)."""
    f, feeds, want = by_hand(op)
    got = dmlapi.execute(make_desc(op, f), feeds).outputs
    for k, v in want.items():
        np.testing.assert_allclose(got[k], v, rtol=1e-6, atol=1e-6, err_msg=k)
    feeds = dict(feeds, MeanTensor=np.array([1.5, 1], np.float32).reshape(1, 2, 1, 1))
    desc = make_desc(op, f)
    got, want = dmlapi.execute(desc, feeds).outputs, registry.reference_outputs(desc, feeds)
    for k, v in want.items():
        np.testing.assert_allclose(got[k], v, rtol=1e-6, atol=1e-6, err_msg=k)
    assert op == GRAD or not np.allclose(want["OutputGradientTensor"], by_hand(op)[2]["OutputGradientTensor"])


@pytest.mark.skipif(_why is not None, reason=f"DirectML's API under Wine is not set up ({_why})")
def test_directml_float16_sums_in_float32_and_rounds_training_means() -> None:
    """256 gradients 2048, 1, 1, ...: DirectML's bias gradient is 2303 rounded to FLOAT16 (2302),
    not FLOAT16's running 2048; TRAINING_GRAD's mean(dy) = 8.996 is kept in FLOAT16 (9): where the
    result cancels to 0, DirectML gives 2**-7 (the graphs: the FLOAT16 rounding of the true value)."""
    shape, c = (1, 1, 16, 16), (1, 1, 1, 1)
    dy = np.ones(shape, np.float16)
    dy.flat[0] = 2048
    x = np.zeros(shape, np.float16)
    x.flat[1::2] = 1
    feeds = {"InputTensor": x, "InputGradientTensor": dy, "MeanTensor": np.full(c, 0.5, np.float16)}
    feeds |= {"VarianceTensor": np.full(c, 0.25, np.float16), "ScaleTensor": np.ones(c, np.float16)}
    for op in (GRAD, TRAINING):
        desc = make_desc(op, fields_for(dtypes.FLOAT16, shape, c, 0.0))
        got = dmlapi.execute(desc, feeds).outputs
        assert got["OutputBiasGradientTensor"].item() == 2302 and got["OutputScaleGradientTensor"].item() == -2047
    ours = every_target(TRAINING, fields_for(dtypes.FLOAT16, shape, c, 0.0), feeds)[1]["OutputGradientTensor"]
    assert got["OutputGradientTensor"].ravel()[1] == 2.0**-7 and ours.ravel()[1] == 0


BASE = fields_for(F32, (2, 3, 4, 5), (1, 3, 1, 1))


@pytest.mark.parametrize("op", [GRAD, TRAINING])
@pytest.mark.parametrize(
    ("change", "path", "message"),
    [
        ({"MeanTensor": tensor("FLOAT32", (1, 2, 1, 1))}, "desc.MeanTensor.Sizes[1]", "must be 3"),
        ({"MeanTensor": tensor("FLOAT32", (1, 3, 1))}, "desc.MeanTensor.Sizes", "same DimensionCount"),
        ({"VarianceTensor": tensor("FLOAT32", (1, 1, 1, 1))}, "desc.VarianceTensor.Sizes", "same Sizes"),
        ({"ScaleTensor": tensor("FLOAT16", (1, 3, 1, 1))}, "desc.ScaleTensor.DataType", "same DataType"),
        ({"OutputScaleGradientTensor": tensor("FLOAT32", (1, 3, 4, 5))}, "desc.OutputScaleGradientTensor.Sizes", "same Sizes"),
        (
            {"OutputBiasGradientTensor": tensor("FLOAT16", (1, 3, 1, 1))},
            "desc.OutputBiasGradientTensor.DataType",
            "same DataType",
        ),
        ({"InputGradientTensor": tensor("FLOAT32", (2, 3, 4, 4))}, "desc.InputGradientTensor.Sizes", "same Sizes"),
        ({"OutputGradientTensor": tensor("FLOAT16", (2, 3, 4, 5))}, "desc.OutputGradientTensor.DataType", "same DataType"),
        ({"OutputGradientTensor": tensor("FLOAT32", (2, 3, 4, 5, 1))}, "desc.OutputGradientTensor.Sizes", "same DimensionCount"),
        ({"InputTensor": tensor("INT32", (2, 3, 4, 5))}, "desc.InputTensor.DataType", "FLOAT32"),
    ],
)
def test_refusals(op: str, change: dict[str, Any], path: str, message: str) -> None:
    e = refusal(op, BASE | change)
    assert format_path(e.path) == path, str(e)
    assert message in e.rule


def test_feature_levels() -> None:
    assert "3_1" in str(refusal(GRAD, BASE, level="3_0"))
    assert "4_1" in str(refusal(TRAINING, BASE, level="4_0"))
    make_desc(GRAD, BASE)  # the newest level takes both


@pytest.mark.parametrize("engine", ENGINES)
def test_model_runs(engine: str) -> None:
    out = run_model("batch_normalization_grad", engine)
    assert "Resource 'gradient': 2, -2, 0.353553, 0, 1, 1, 0.176777, 0.176777\n" in out, out
    assert "Resource 'scale_gradient': -2, -1.41421\n" in out and "Resource 'bias_gradient': 1, 4\n" in out
    assert "Resource 'training_gradient': 0.5, -1.5, 0.0883883, -0.176777, -0.5, 1.5, 0, 0.0883883\n" in out, out


@EPS
@SETTINGS
@given(
    op=st.sampled_from([GRAD, TRAINING]),
    shape=shapes(max_rank=8),
    dtype=st.sampled_from([dtypes.FLOAT32, dtypes.FLOAT16]),
    mask=st.integers(0, 255),
    epsilon=st.sampled_from([0.0, 1e-5, 0.5]),
    batch_statistics=st.booleans(),
    seed=SEEDS,
)
def test_matches_reference(
    ep: str,
    op: str,
    shape: tuple[int, ...],
    dtype: dtypes.DataType,
    mask: int,
    epsilon: float,
    batch_statistics: bool,
    seed: int,
) -> None:
    """MeanTensor's size 1 on the axes of `mask`'s zero bits (the reduced ones), at most BNG_LENGTH
    elements per sum, the inputs within tolerances.batch_normalization_grad's bounds."""
    sizes = tuple(s if mask >> i & 1 else 1 for i, s in enumerate(shape))
    if bng.length(make_desc(op, fields_for(dtype, shape, sizes, epsilon))) > tolerances.BNG_LENGTH:
        sizes = shape  # nothing reduced instead
    feeds = feeds_for(np.random.default_rng(seed), dtype, shape, sizes, epsilon, batch_statistics=batch_statistics)
    f = fields_for(dtype, shape, sizes, epsilon)
    assert_matches_reference(ep, op, f, feeds)
    desc = make_desc(op, f)
    if bng.split_axes(desc) is not None:  # the leading_first candidate too
        got = every_output(runtime.create(lowering.lower(desc, "t", variant="leading_first"), "t", ep), desc, feeds)
        assert not (bad := mismatches(desc, got, registry.reference_outputs(desc, feeds), ep)), bad
