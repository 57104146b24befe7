"""DML_OPERATOR_ROI_ALIGN_GRAD (dml2onnx/ops/roi_align_grad.py): the page's example and a value by
hand (models/roi_align_grad.json), InputTensor changing nothing, the refusals (a set
OutputROIGradientTensor, MAX, no output, the sizes), and properties: the reference is the adjoint of
ROI_ALIGN1's reference (the same fields, OutOfBoundsInputValue 0), which is what DirectML's API
computed, and the graph computes the reference. The matrix (tests/matrix_roi_align_grad.py) runs it
on every EP present and through DirectML's API."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dml2onnx import dmlapi, ops
from dml2onnx.errors import format_path
from dml2onnx.ops import roi_align_grad as rag
from strategies import SEEDS
from support import assert_matches_reference, make_desc, refusal, run_cli, tensor

ROOT = Path(__file__).resolve().parent.parent
OP = "ROI_ALIGN_GRAD"
live = pytest.mark.skipif(dmlapi.missing() is not None, reason="DirectML's API under Wine is not set up (make dml-setup)")
ENGINES = ["cpu", pytest.param("directml", marks=live), pytest.param("dml", marks=live)]


def fields(
    grad: list[int], out: list[int], mode: str = "LINEAR", offsets: tuple[float, float, bool] = (0.5, -0.5, False), **more: Any
) -> dict[str, Any]:
    dtype = more.pop("dtype", "FLOAT32")
    ipo, opo, corners = offsets
    return {
        "InputGradientTensor": tensor(dtype, grad),
        "ROITensor": tensor(dtype, [grad[0], 4]),
        "BatchIndicesTensor": tensor("UINT32", [grad[0]]),
        "OutputGradientTensor": tensor(dtype, out),
        "ReductionFunction": "AVERAGE",
        "InterpolationMode": mode,
        "SpatialScaleX": 1.0,
        "SpatialScaleY": 1.0,
        "InputPixelOffset": ipo,
        "OutputPixelOffset": opo,
        "MinimumSamplesPerOutput": 1,
        "MaximumSamplesPerOutput": 1,
        "AlignRegionsToCorners": corners,
    } | more


@pytest.mark.parametrize("engine", ENGINES)
def test_model_runs(engine: str) -> None:
    status, out, err = run_cli("run", str(ROOT / "models" / "roi_align_grad.json"), "--ep", engine)
    assert status == 0, err
    assert "Resource 'page_output': 3, 3, 9, 6, 0, 0, 0, 0, 15, 9, 21, 12, 0, 0, 0, 0\n" in out  # the page's
    assert "Resource 'corners_output': 1, 0, 2, 1, 0, 2\n" in out


def test_value_by_hand_linear_two_samples() -> None:
    # region [0.5, 0, 2.5, 0] of a 1 x 4 row to one output, 2 samples per axis (Min = Max = 2), pixel
    # centres: x = (t + 0.5) * 2 / 2 + 0.5 - 0.5 = 0.5 and 1.5, y = (t + 0.5) * 0 + 0 - 0.5 (clamped to
    # row 0); the gradient 4 over the 2 x 2 samples gives each x sample 2, split half and half between
    # its neighbours: [1, 1 + 1, 1, 0]
    f = fields([1, 1, 1, 1], [1, 1, 1, 4], MinimumSamplesPerOutput=2, MaximumSamplesPerOutput=2)
    feeds = {
        "InputGradientTensor": np.array([4], np.float32).reshape(1, 1, 1, 1),
        "ROITensor": np.array([[0.5, 0, 2.5, 0]], np.float32),
        "BatchIndicesTensor": np.array([0], np.uint32),
    }
    assert_matches_reference("cpu", OP, f, feeds)
    np.testing.assert_allclose(rag.reference(make_desc(OP, f), feeds).ravel(), [1, 2, 1, 0])


def test_regions_add_into_their_batch_and_input_tensor_changes_nothing() -> None:
    rng = np.random.default_rng(5)
    f = fields([3, 2, 2, 2], [2, 2, 4, 5], offsets=(0.0, 0.0, True), MaximumSamplesPerOutput=3)
    feeds = {
        "InputGradientTensor": rng.uniform(-1, 1, [3, 2, 2, 2]).astype(np.float32),
        "ROITensor": np.array([[0, 0, 4, 3], [1, 1, 3, 2], [0.5, 0, 4, 3.5]], np.float32),
        "BatchIndicesTensor": np.array([1, 1, 0], np.uint32),
    }
    assert_matches_reference("cpu", OP, f, feeds)
    want = rag.reference(make_desc(OP, f), feeds)
    alone = [
        rag.reference(
            make_desc(OP, f),
            feeds | {"InputGradientTensor": feeds["InputGradientTensor"] * (np.arange(3) == i).reshape(3, 1, 1, 1)},
        )
        for i in range(3)
    ]
    np.testing.assert_allclose(want, sum(alone), atol=1e-6)
    np.testing.assert_allclose(want[0], alone[2][0], atol=1e-6)  # batch 0 has region 2 alone
    with_x = f | {"InputTensor": tensor("FLOAT32", [2, 2, 4, 5])}
    x_feeds = feeds | {"InputTensor": rng.uniform(-1, 1, [2, 2, 4, 5]).astype(np.float32)}
    assert_matches_reference("cpu", OP, with_x, x_feeds)
    np.testing.assert_array_equal(rag.reference(make_desc(OP, with_x), x_feeds), want)


def _nonfinite_case() -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    # the value-by-hand region with 1 sample: x = 1.0 (weight 1 on element 1, 0 on element 2), a second
    # region [1, 0, 3, 0]: x = 1.5 (1/2 on elements 1 and 2); gradients +inf and -inf. The row: y = -0.5,
    # clamped to row 0 (one neighbour only)
    f = fields([2, 1, 1, 1], [1, 1, 1, 4])
    feeds = {
        "InputGradientTensor": np.array([np.inf, -np.inf], np.float32).reshape(2, 1, 1, 1),
        "ROITensor": np.array([[0.5, 0, 2.5, 0], [1, 0, 3, 0]], np.float32),
        "BatchIndicesTensor": np.array([0, 0], np.uint32),
    }
    return f, feeds


def test_non_finite_gradients() -> None:
    """+inf and -inf on element 1 give NaN; element 2 gets +inf's weight-0 tap (0 * inf: NaN) and -inf."""
    f, feeds = _nonfinite_case()
    assert_matches_reference("cpu", OP, f, feeds)
    np.testing.assert_array_equal(rag.reference(make_desc(OP, f), feeds).ravel(), [0, np.nan, np.nan, 0])


# Measured: +inf from one sample at x (1 sample, the row y = 1.5 of 3 x 4: rows 1 and 2 by 1/2), row 1.
# Within [0, W - 1] DirectML multiplies both neighbours floor(x) and min(floor(x) + 1, W - 1), the
# second by 0 at an integer x (NaN); outside it, the edge element alone
WEIGHT_ZERO_TAPS = [
    (-0.75, [np.inf, 0, 0, 0]),
    (-0.5, [np.inf, 0, 0, 0]),
    (0.0, [np.inf, np.nan, 0, 0]),
    (0.25, [np.inf, np.inf, 0, 0]),
    (1.0, [0, np.inf, np.nan, 0]),
    (2.5, [0, 0, np.inf, np.inf]),
    (3.0, [0, 0, 0, np.nan]),
    (3.5, [0, 0, 0, np.inf]),
]


@pytest.mark.parametrize(("x", "row"), WEIGHT_ZERO_TAPS)
def test_an_infinity_reaches_weight_zero_taps_within_the_input(x: float, row: list[float]) -> None:
    f = fields([1, 1, 1, 1], [1, 1, 3, 4])
    feeds = {
        "InputGradientTensor": np.array([np.inf], np.float32).reshape(1, 1, 1, 1),
        "ROITensor": np.array([[x + 0.5, 2, x + 0.5, 2]], np.float32),
        "BatchIndicesTensor": np.array([0], np.uint32),
    }
    assert_matches_reference("cpu", OP, f, feeds)
    np.testing.assert_array_equal(rag.reference(make_desc(OP, f), feeds)[0, 0, 1], row)


@live
def test_directml_non_finite() -> None:
    f, feeds = _nonfinite_case()
    np.testing.assert_array_equal(dmlapi.execute(make_desc(OP, f), feeds).output.ravel(), [0, np.nan, np.nan, 0])


# -- refusals -------------------------------------------------------------------------------------

BASE = fields([2, 3, 2, 2], [1, 3, 5, 5])


@pytest.mark.parametrize(
    ("change", "path", "text"),
    [
        ({"OutputROIGradientTensor": tensor("FLOAT32", [2, 4])}, "desc.OutputROIGradientTensor", "not lowered"),
        ({"ReductionFunction": "MAX", "InputTensor": tensor("FLOAT32", [1, 3, 5, 5])}, "desc.ReductionFunction", "MAX"),
        ({"OutputGradientTensor": None}, "desc.OutputGradientTensor", "must be set"),
        ({"OutputGradientTensor": tensor("FLOAT16", [1, 3, 5, 5])}, "desc.OutputGradientTensor.DataType", "same DataType"),
        ({"InputTensor": tensor("FLOAT32", [1, 3, 5, 4])}, "desc.InputTensor.Sizes", "[1, 3, 5, 5]"),
        ({"ROITensor": tensor("FLOAT32", [2, 5])}, "desc.ROITensor.Sizes", "[NumROIs, 4]"),
        ({"ROITensor": tensor("FLOAT32", [3, 4])}, "desc.InputGradientTensor.Sizes[0]", "NumROIs (3"),
        ({"InputGradientTensor": tensor("FLOAT32", [2, 2, 2, 2])}, "desc.InputGradientTensor.Sizes[1]", "ChannelCount (3)"),
        ({"BatchIndicesTensor": tensor("UINT32", [3])}, "desc.BatchIndicesTensor.Sizes", "[NumROIs] (2)"),
        ({"MinimumSamplesPerOutput": 0}, "desc.MinimumSamplesPerOutput", "1 or more"),
        ({"MinimumSamplesPerOutput": 3, "MaximumSamplesPerOutput": 2}, "desc.MaximumSamplesPerOutput", "at least"),
    ],
)
def test_refusals(change: dict[str, Any], path: str, text: str) -> None:
    f = {k: v for k, v in (BASE | change).items() if v is not None}
    e = refusal(OP, f)
    assert format_path(e.path) == path and text in e.rule, (format_path(e.path), e.rule)


# -- properties ---------------------------------------------------------------------------------------


def adjoint(f: dict[str, Any], feeds: dict[str, np.ndarray]) -> np.ndarray:
    """J^T g with J the Jacobian of ROI_ALIGN1's reference (the same fields), built from one-hot inputs."""
    forward = {k: v for k, v in f.items() if k not in ("InputGradientTensor", "OutputGradientTensor", "InputTensor")}
    forward |= {"InputTensor": f["OutputGradientTensor"], "OutputTensor": f["InputGradientTensor"], "OutOfBoundsInputValue": 0.0}
    fwd = make_desc("ROI_ALIGN1", forward)
    module = ops.MODULES["ROI_ALIGN1"]
    sizes = f["OutputGradientTensor"]["Sizes"]
    count = int(np.prod(sizes))
    out = np.zeros(count)
    g = feeds["InputGradientTensor"].astype(np.float64)
    for i in range(count):
        e = np.zeros(count, np.float32)
        e[i] = 1
        y = module.reference(fwd, {"InputTensor": e.reshape(sizes), **{k: feeds[k] for k in ("ROITensor", "BatchIndicesTensor")}})
        out[i] = np.vdot(y.astype(np.float64), g)
    return out.reshape(sizes)


@st.composite
def cases(draw: st.DrawFn) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    r, c = draw(st.integers(1, 3)), draw(st.integers(1, 2))
    out = [draw(st.integers(1, 2)), c, draw(st.integers(1, 4)), draw(st.integers(1, 4))]
    grad = [r, c, draw(st.integers(1, 3)), draw(st.integers(1, 3))]
    low = draw(st.integers(1, 3))
    high = draw(st.sampled_from([low, low + 2, 2**32 - 1]))
    offsets = draw(st.sampled_from([(0.5, -0.5, False), (0.0, 0.0, True), (0.25, 0.5, False), (0.5, 0.0, False)]))
    mode = draw(st.sampled_from(["LINEAR", "NEAREST_NEIGHBOR"]))
    scale = draw(st.sampled_from([0.5, 1.0, 1.25]))
    f = fields(grad, out, mode, offsets, MinimumSamplesPerOutput=low, MaximumSamplesPerOutput=high, SpatialScaleX=scale)
    rng = np.random.default_rng(draw(SEEDS))
    feeds = {
        "InputGradientTensor": rng.uniform(-1, 1, grad).astype(np.float32),
        "ROITensor": rng.uniform(-1.5, 5.5, [r, 4]).astype(np.float32),
        "BatchIndicesTensor": rng.integers(0, out[0], r).astype(np.uint32),
    }
    return f, feeds


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_reference_is_the_adjoint_of_roi_align1(case: tuple[dict[str, Any], dict[str, np.ndarray]]) -> None:
    f, feeds = case
    got = rag.reference(make_desc(OP, f), feeds).astype(np.float64)
    np.testing.assert_allclose(got, adjoint(f, feeds), rtol=1e-5, atol=1e-5)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases(), st.sampled_from(["FLOAT32", "FLOAT16"]))
def test_graph_computes_the_reference(case: tuple[dict[str, Any], dict[str, np.ndarray]], dtype: str) -> None:
    f, feeds = case
    if dtype == "FLOAT16":
        f = f | {k: tensor(dtype, f[k]["Sizes"]) for k in ("InputGradientTensor", "ROITensor", "OutputGradientTensor")}
        feeds = feeds | {k: feeds[k].astype(np.float16) for k in ("InputGradientTensor", "ROITensor")}
    assert_matches_reference("cpu", OP, f, feeds)
