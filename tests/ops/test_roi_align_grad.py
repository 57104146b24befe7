"""DML_OPERATOR_ROI_ALIGN_GRAD (dml2onnx/ops/roi_align_grad.py): the page's example and a value by
hand (models/roi_align_grad.json), InputTensor changing nothing, the refusals (a set
OutputROIGradientTensor, MAX, no output, the sizes), and properties: the reference is the adjoint of
ROI_ALIGN1's reference (the same fields, OutOfBoundsInputValue 0), which is what DirectML's API
computed, and the graph computes the reference. The matrix (dml2onnx/cases/roi_align_grad.py) runs it
on every EP present and through DirectML's API."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dml2onnx.backends import dmlapi
from dml2onnx.core.errors import format_path
from dml2onnx.ops import registry
from dml2onnx.ops import roi_align_grad as rag
from strategies import SEEDS
from support import assert_matches_reference, make_desc, refusal, run_cli, tensor

ROOT = Path(__file__).resolve().parents[2]
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


def gradient(f: dict[str, Any], feeds: dict[str, np.ndarray], output: str = "OutputGradientTensor") -> np.ndarray:
    """The reference's `output`."""
    return rag.reference(make_desc(OP, f), feeds)[output]


@pytest.mark.parametrize("engine", ENGINES)
def test_model_runs(engine: str) -> None:
    status, out, err = run_cli("run", str(ROOT / "models" / "roi_align_grad.json"), "--ep", engine)
    assert status == 0, err
    assert "Resource 'page_output': 3, 3, 9, 6, 0, 0, 0, 0, 15, 9, 21, 12, 0, 0, 0, 0\n" in out  # the page's
    assert "Resource 'corners_output': 1, 0, 2, 1, 0, 2\n" in out
    assert "Resource 'pseudo_code_output': 0.75, 3.75, 0, 0, 0, 0.25, 1.25, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0\n" in out
    assert "Resource 'pseudo_code_roi_output': 25, 92, 12.5, 0\n" in out  # the pseudo-code by hand
    assert "Resource 'max_output': 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0.5, 0.5, 0, 0, 0, 0.5, 0.5, 0, 0, 0\n" in out


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
    np.testing.assert_allclose(gradient(f, feeds).ravel(), [1, 2, 1, 0])


def test_regions_add_into_their_batch_and_input_tensor_changes_nothing() -> None:
    rng = np.random.default_rng(5)
    f = fields([3, 2, 2, 2], [2, 2, 4, 5], offsets=(0.0, 0.0, True), MaximumSamplesPerOutput=3)
    feeds = {
        "InputGradientTensor": rng.uniform(-1, 1, [3, 2, 2, 2]).astype(np.float32),
        "ROITensor": np.array([[0, 0, 4, 3], [1, 1, 3, 2], [0.5, 0, 4, 3.5]], np.float32),
        "BatchIndicesTensor": np.array([1, 1, 0], np.uint32),
    }
    assert_matches_reference("cpu", OP, f, feeds)
    want = gradient(f, feeds)
    alone = [
        gradient(f, feeds | {"InputGradientTensor": feeds["InputGradientTensor"] * (np.arange(3) == i).reshape(3, 1, 1, 1)})
        for i in range(3)
    ]
    np.testing.assert_allclose(want, sum(alone), atol=1e-6)
    np.testing.assert_allclose(want[0], alone[2][0], atol=1e-6)  # batch 0 has region 2 alone
    with_x = f | {"InputTensor": tensor("FLOAT32", [2, 2, 4, 5])}
    x_feeds = feeds | {"InputTensor": rng.uniform(-1, 1, [2, 2, 4, 5]).astype(np.float32)}
    assert_matches_reference("cpu", OP, with_x, x_feeds)
    np.testing.assert_array_equal(gradient(with_x, x_feeds), want)


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
    np.testing.assert_array_equal(gradient(f, feeds).ravel(), [0, np.nan, np.nan, 0])


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
    np.testing.assert_array_equal(gradient(f, feeds)[0, 0, 1], row)


@live
def test_directml_non_finite() -> None:
    f, feeds = _nonfinite_case()
    np.testing.assert_array_equal(dmlapi.execute(make_desc(OP, f), feeds).output.ravel(), [0, np.nan, np.nan, 0])


# Inverted regions (measured): along an axis whose region is inverted (x2 < x1), the weight-0 tap at an
# integer coordinate is not applied (no 0 * inf), but at size - 1 (the element itself) it is. +inf from
# one sample (1 sample per axis, pixel offsets 0: the sample at (x1, y1)) on a 4 x 6 input
INVERTED_TAPS = [
    ([2, 1.5, 4, 1.5], {(1, 2): np.inf, (1, 3): np.nan, (2, 2): np.inf, (2, 3): np.nan}),  # increasing: 0 * inf
    ([2, 1.5, 0, 1.5], {(1, 2): np.inf, (2, 2): np.inf}),
    ([5, 1.5, 3, 1.5], {(1, 5): np.nan, (2, 5): np.nan}),
    ([2.5, 1, 2.5, 0], {(1, 2): np.inf, (1, 3): np.inf}),
    ([2, 1, 0, 0], {(1, 2): np.inf}),
]


def _plane(values: dict[tuple[int, int], float], h: int, w: int) -> np.ndarray:
    out = np.zeros((h, w), np.float32)
    for (i, j), v in values.items():
        out[i, j] = v
    return out


@pytest.mark.parametrize("engine", ["cpu", pytest.param("directml", marks=live)])
@pytest.mark.parametrize(("region", "want"), INVERTED_TAPS)
@pytest.mark.parametrize("reduction", ["AVERAGE", "MAX"])
def test_inverted_regions_skip_the_weight_zero_tap(
    reduction: str, region: list[float], want: dict[tuple[int, int], float], engine: str
) -> None:
    f = fields([1, 1, 1, 1], [1, 1, 4, 6], offsets=(0.0, 0.0, False), ReductionFunction=reduction)
    feeds = {
        "InputGradientTensor": np.array([np.inf], np.float32).reshape(1, 1, 1, 1),
        "ROITensor": np.array([region], np.float32),
        "BatchIndicesTensor": np.array([0], np.uint32),
    }
    if reduction == "MAX":
        f["InputTensor"] = tensor("FLOAT32", [1, 1, 4, 6])
        feeds["InputTensor"] = np.arange(1, 25, dtype=np.float32).reshape(1, 1, 4, 6)
    expected = _plane(want, 4, 6)
    np.testing.assert_array_equal(gradient(f, feeds)[0, 0], expected)
    if engine == "cpu":
        assert_matches_reference("cpu", OP, f, feeds)
    else:
        np.testing.assert_array_equal(dmlapi.execute(make_desc(OP, f), feeds).output[0, 0], expected)


# -- MAX ------------------------------------------------------------------------------------------------

LOWEST = float(np.finfo(np.float32).min)


def _filled(h: int, w: int, value: float, **cells: float) -> np.ndarray:
    """An h x w plane of `value`, with cells named "r<i>c<j>" set."""
    out = np.full((h, w), value, np.float32)
    for name, v in cells.items():
        i, j = name[1:].split("c")
        out[int(i), int(j)] = v
    return out


# (input plane, region, samples per axis (Min = Max), gradient, what OutputGradientTensor holds): one
# output element, pixel offsets 0 (samples at x1 + t * size / k), measured with DirectML's API
MAX_RULES = {
    # samples (y, x) in {0, 4}^2 read 0, 5, 5, 0: the first of the equal largest, y samples outer
    "ties_first_y_outer": (_filled(6, 8, 0.0, r0c4=5, r4c0=5), [0, 0, 8, 8], 2, 1.0, {(0, 4): 1}),
    # x samples -3 (out of bounds: 0) and 1: -2 loses to the out-of-bounds sample's 0, nothing receives
    "negatives_lose_to_outside": (_filled(6, 8, -2.0), [-3, 0, 5, 4], 2, 1.0, {}),
    # 0 against the out-of-bounds 0: the first sample wins, out of bounds (nothing) or in bounds
    "zero_tie_outside_first": (_filled(6, 8, 0.0), [-3, 0, 5, 4], 2, 1.0, {}),
    "zero_tie_inside_first": (_filled(6, 8, 0.0), [5, 0, -3, 4], 2, 1.0, {(0, 5): 1}),
    # NaN skipped (the sample at (0, 0) reads it); -FLT_MAX and -inf never chosen
    "nan_skipped": (_filled(6, 8, 1.0, r0c0=np.nan), [0, 0, 8, 8], 2, 1.0, {(0, 4): 1}),
    "lowest_never_chosen": (_filled(6, 8, LOWEST), [0, 0, 4, 4], 2, 1.0, {}),
    "minus_inf_never_chosen": (_filled(6, 8, -np.inf), [0, 0, 4, 4], 2, 1.0, {}),
    # lerps (x first): +inf on every neighbour reads NaN (inf - inf), on the bottom-right one alone +inf;
    # samples x in {0, 1.5}, both y samples at 1.5 (an empty region), the first taken
    "inf_everywhere_is_nan": (_filled(6, 8, np.inf), [0.5, 0.5, 4.5, 4.5], 2, 1.0, {}),
    "inf_bottom_right": (
        _filled(6, 8, 0.0, r1c0=5, r2c0=5, r2c2=np.inf),
        [0, 1.5, 3, 1.5],
        2,
        1.0,
        {(1, 1): 0.25, (1, 2): 0.25, (2, 1): 0.25, (2, 2): 0.25},
    ),
    # ... on a weight-0 neighbour too (x = 0 reads columns 0 and 1): both samples NaN
    "inf_weight_zero_neighbour_is_nan": (_filled(6, 8, 0.0, r1c0=5, r2c0=5, r1c1=np.inf), [0, 1.5, 3, 1.5], 2, 1.0, {}),
    # x in {-0.5, 1}: -0.5 reads column 0 alone (outside [0, W - 1]), 1 reads +inf top-left: NaN
    "inf_top_left_is_nan": (
        _filled(6, 8, 0.0, r1c0=5, r2c0=5, r1c1=np.inf),
        [-0.5, 1.5, 2.5, 1.5],
        2,
        1.0,
        {(1, 0): 0.5, (2, 0): 0.5},
    ),
    # a non-finite gradient reaches the chosen sample's taps only, 0 * inf = NaN on its weight-0 ones
    "inf_gradient": (
        np.arange(48, dtype=np.float32).reshape(6, 8),
        [0, 0, 4, 4],
        2,
        np.inf,
        {(2, 2): np.inf, (2, 3): np.nan, (3, 2): np.nan, (3, 3): np.nan},
    ),
    # by hand: samples x, y in {0.5, 2.5} of 4 x 5 (columns 3, 4 less 5) read the means of 2 x 2 blocks:
    # (0 + 1 + 5 + 6) / 4 = 3, (2 - 2 + 7 + 3) / 4 = 2.5, (10 + 11 + 15 + 16) / 4 = 13 and
    # (12 + 8 + 17 + 13) / 4 = 12.5: the gradient 2 goes to rows 2, 3 and columns 0, 1 by 1/4 each
    "by_hand": (
        np.arange(20, dtype=np.float32).reshape(4, 5) - np.array([0, 0, 0, 5, 5], np.float32),
        [0.5, 0.5, 4.5, 4.5],
        2,
        2.0,
        {(2, 0): 0.5, (2, 1): 0.5, (3, 0): 0.5, (3, 1): 0.5},
    ),
}


def _max_case(name: str) -> tuple[dict[str, Any], dict[str, np.ndarray], np.ndarray]:
    plane, region, k, g, want = MAX_RULES[name]
    h, w = plane.shape
    f = fields([1, 1, 1, 1], [1, 1, h, w], offsets=(0.0, 0.0, False), ReductionFunction="MAX")
    f |= {"InputTensor": tensor("FLOAT32", [1, 1, h, w]), "MinimumSamplesPerOutput": k, "MaximumSamplesPerOutput": k}
    feeds = {
        "InputTensor": plane.reshape(1, 1, h, w),
        "InputGradientTensor": np.array([g], np.float32).reshape(1, 1, 1, 1),
        "ROITensor": np.array([region], np.float32),
        "BatchIndicesTensor": np.array([0], np.uint32),
    }
    return f, feeds, _plane(want, h, w)


@pytest.mark.parametrize("engine", ["cpu", pytest.param("directml", marks=live)])
@pytest.mark.parametrize("name", list(MAX_RULES))
def test_max_rules(name: str, engine: str) -> None:
    f, feeds, want = _max_case(name)
    np.testing.assert_array_equal(gradient(f, feeds)[0, 0], want)
    if engine == "cpu":
        assert_matches_reference("cpu", OP, f, feeds)
    else:
        np.testing.assert_array_equal(dmlapi.execute(make_desc(OP, f), feeds).output[0, 0], want)


# -- OutputROIGradientTensor -------------------------------------------------------------------------

IMAGE = np.array([[0, 1, 2, 4, 7], [3, 5, 7, 8, 8], [6, 6, 9, 13, 12], [10, 11, 11, 15, 20]], np.float32)

# (region, OutputWidth, gradient, interpolation, reduction, samples (Min = Max), pixel offsets and
# AlignRegionsToCorners, OutputROIGradientTensor): one region of IMAGE (4 x 5), OutputHeight 1;
# DirectML's API gave these values (module doc: the pseudo-code as DirectML computes it)
ROI_RULES = {
    # by hand: samples (y, x) = (0.25, 0.5) and (0.25, 1): image gradients (x, y) (3/4 * 1 + 1/4 * 2,
    # 1/2 * 3 + 1/2 * 4) = (1.25, 3.5) and (1.25, 4) (x = 1: columns 1 and 2, the second by 0), times
    # the gradients 2 and 4; the x terms times W = 5 split by the output index's o / OW = 0 and 1/2,
    # the y terms times H = 4 (o = 0): [2.5 * 5 + 5 * 5 / 2, 7 * 4 + 16 * 4, 5 * 5 / 2, 0]
    "by_hand": ([0.5, 0.25, 1.5, 0.25], 2, [2, 4], "LINEAR", "AVERAGE", 1, (0.0, 0.0, False), [25, 92, 12.5, 0]),
    # 2 x 2 samples: each by g / 4; the fraction of output 0 is 0 (o / (OW k), not the sample's)
    "two_samples": ([0.5, 0.5, 2.5, 2.5], 1, [4], "LINEAR", "AVERAGE", 2, (0.0, 0.0, False), [32.5, 46, 0, 0]),
    # AlignRegionsToCorners: W - 1 and H - 1, fractions o / (OW k - 1), 1/2 for a single sample
    "corners": ([0.5, 0.5, 3.5, 2.5], 2, [1, 2], "LINEAR", "AVERAGE", 1, (0.0, 0.0, True), [4, 16.5, -4, 16.5]),
    "corners_single": ([0.5, 0.5, 3.5, 2.5], 1, [1], "LINEAR", "AVERAGE", 1, (0.0, 0.0, True), [5, 3, 5, 3]),
    # NEAREST_NEIGHBOR: LINEAR's image gradients all the same (by_hand's values)
    "nearest": ([0.5, 0.25, 1.5, 0.25], 2, [2, 4], "NEAREST_NEIGHBOR", "AVERAGE", 1, (0.0, 0.0, False), [25, 92, 12.5, 0]),
    # x = -0.5 reads column 0 alone: no x gradient, the y gradient of column 0 alone
    "edge_alone": ([-0.5, 1.5, 4.5, 1.5], 2, [1, 1], "LINEAR", "AVERAGE", 1, (0.0, 0.0, False), [6.25, 20, 6.25, 0]),
    # x = -1.5 is out of bounds: nothing from it
    "out_of_bounds": ([-1.5, 1.5, 2.5, 1.5], 2, [1, 1], "LINEAR", "AVERAGE", 1, (0.0, 0.0, False), [2.5, 8, 2.5, 0]),
    # MAX: the chosen sample (1.5, 1.5) alone, by g
    "max": ([0.5, 0.5, 2.5, 2.5], 1, [4], "LINEAR", "MAX", 2, (0.0, 0.0, False), [50, 24, 0, 0]),
    "pixel_offsets": ([0.5, 0.5, 3.5, 2.5], 2, [1, 2], "LINEAR", "AVERAGE", 2, (0.5, -0.5, False), [23.125, 40.875, 5, 0]),
}


@pytest.mark.parametrize("engine", ["cpu", pytest.param("directml", marks=live)])
@pytest.mark.parametrize("name", list(ROI_RULES))
def test_roi_gradient(name: str, engine: str) -> None:
    region, ow, g, mode, reduction, k, offsets, want = ROI_RULES[name]
    f = fields([1, 1, 1, ow], [1, 1, 4, 5], mode, offsets, ReductionFunction=reduction)
    del f["OutputGradientTensor"]
    f |= {"InputTensor": tensor("FLOAT32", [1, 1, 4, 5]), "OutputROIGradientTensor": tensor("FLOAT32", [1, 4])}
    f |= {"MinimumSamplesPerOutput": k, "MaximumSamplesPerOutput": k}
    feeds = {
        "InputTensor": IMAGE.reshape(1, 1, 4, 5),
        "InputGradientTensor": np.array(g, np.float32).reshape(1, 1, 1, ow),
        "ROITensor": np.array([region], np.float32),
        "BatchIndicesTensor": np.array([0], np.uint32),
    }
    np.testing.assert_allclose(gradient(f, feeds, "OutputROIGradientTensor").ravel(), want, rtol=1e-6)
    if engine == "cpu":
        assert_matches_reference("cpu", OP, f, feeds)
    else:
        np.testing.assert_allclose(
            dmlapi.execute(make_desc(OP, f), feeds).outputs["OutputROIGradientTensor"].ravel(), want, rtol=1e-6
        )


@pytest.mark.parametrize("engine", ["cpu", pytest.param("directml", marks=live)])
def test_roi_gradient_non_finite(engine: str) -> None:
    """+inf on column 0 read from x = -0.5 (the edge alone): the x gradient inf - inf (NaN), the y
    gradient from column 0 alone (-inf: no 0 * inf from a second column); NaN where 0 multiplies it."""
    f = fields([1, 1, 1, 1], [1, 1, 4, 5], offsets=(0.0, 0.0, False))
    del f["OutputGradientTensor"]
    f |= {"InputTensor": tensor("FLOAT32", [1, 1, 4, 5]), "OutputROIGradientTensor": tensor("FLOAT32", [1, 4])}
    feeds = {
        "InputTensor": np.where(np.arange(20).reshape(4, 5) == 5, np.inf, IMAGE).astype(np.float32).reshape(1, 1, 4, 5),
        "InputGradientTensor": np.ones((1, 1, 1, 1), np.float32),
        "ROITensor": np.array([[-0.5, 1.25, -0.5, 1.25]], np.float32),
        "BatchIndicesTensor": np.array([0], np.uint32),
    }
    want = [np.nan, -np.inf, np.nan, np.nan]
    np.testing.assert_array_equal(gradient(f, feeds, "OutputROIGradientTensor").ravel(), want)
    if engine == "cpu":
        assert_matches_reference("cpu", OP, f, feeds)
    else:
        np.testing.assert_array_equal(dmlapi.execute(make_desc(OP, f), feeds).outputs["OutputROIGradientTensor"].ravel(), want)


# -- refusals -------------------------------------------------------------------------------------

BASE = fields([2, 3, 2, 2], [1, 3, 5, 5])


@pytest.mark.parametrize(
    ("change", "path", "text"),
    [
        ({"OutputROIGradientTensor": tensor("FLOAT32", [2, 4])}, "desc.InputTensor", "must be set with OutputROIGradientTensor"),
        (
            {"OutputROIGradientTensor": tensor("FLOAT32", [1, 2, 4]), "InputTensor": tensor("FLOAT32", [1, 3, 5, 5])},
            "desc.OutputROIGradientTensor.Sizes",
            "ROITensor's sizes [2, 4]",
        ),
        (
            {"OutputROIGradientTensor": tensor("FLOAT16", [2, 4]), "InputTensor": tensor("FLOAT32", [1, 3, 5, 5])},
            "desc.OutputROIGradientTensor.DataType",
            "same DataType",
        ),
        ({"ReductionFunction": "MAX"}, "desc.InputTensor", "must be set with ReductionFunction MAX"),
        ({"OutputGradientTensor": None}, "desc.OutputGradientTensor", "must be set, or OutputROIGradientTensor"),
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
    module = registry.family("ROI_ALIGN1")
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
def cases(
    draw: st.DrawFn, reductions: tuple[str, ...] = ("AVERAGE", "MAX"), roi_gradient: bool = False
) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    reduction = draw(st.sampled_from(reductions))
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
    if reduction == "MAX":  # values in [-1, 1], or integers in [-2, 2] (ties)
        f |= {"ReductionFunction": "MAX", "InputTensor": tensor("FLOAT32", out)}
        x = rng.integers(-2, 3, out) if draw(st.booleans()) else rng.uniform(-1, 1, out)
        feeds["InputTensor"] = x.astype(np.float32)
    if roi_gradient and draw(st.booleans()):  # OutputROIGradientTensor too, or alone
        f |= {"InputTensor": tensor("FLOAT32", out), "OutputROIGradientTensor": tensor("FLOAT32", [r, 4])}
        feeds.setdefault("InputTensor", rng.uniform(-1, 1, out).astype(np.float32))
        if draw(st.booleans()):
            del f["OutputGradientTensor"]
    return f, feeds


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases(("AVERAGE",)))
def test_reference_is_the_adjoint_of_roi_align1(case: tuple[dict[str, Any], dict[str, np.ndarray]]) -> None:
    f, feeds = case
    got = gradient(f, feeds).astype(np.float64)
    np.testing.assert_allclose(got, adjoint(f, feeds), rtol=1e-5, atol=1e-5)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases(("MAX",)))
def test_max_reference_reads_back_roi_align1_max(case: tuple[dict[str, Any], dict[str, np.ndarray]]) -> None:
    """MAX's gradient is the chosen sample's weights: <reference(g), x> = <g, ROI_ALIGN1 MAX(x)> with
    OutOfBoundsInputValue 0 (equal values tie, whichever is chosen; an out-of-bounds choice gives 0)."""
    f, feeds = case
    x = feeds["InputTensor"].astype(np.float64)
    forward = {k: v for k, v in f.items() if k not in ("InputGradientTensor", "OutputGradientTensor")}
    forward |= {"OutputTensor": f["InputGradientTensor"], "OutOfBoundsInputValue": 0.0}
    pooled = registry.family("ROI_ALIGN1").reference(
        make_desc("ROI_ALIGN1", forward), {k: feeds[k] for k in ("InputTensor", "ROITensor", "BatchIndicesTensor")}
    )
    got = np.vdot(gradient(f, feeds).astype(np.float64), x)
    np.testing.assert_allclose(got, np.vdot(feeds["InputGradientTensor"].astype(np.float64), pooled), rtol=1e-5, atol=1e-5)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases(("AVERAGE",)), st.floats(-2, 2), st.floats(-2, 2))
def test_roi_gradient_of_a_linear_image(case: tuple[dict[str, Any], dict[str, np.ndarray]], a: float, c: float) -> None:
    """On x a + y c every sample within [0, size - 1) has image gradients (a, c): a region's x1 and x2
    (y1 and y2) entries add up to W a (H c) times its gradients' sum (AVERAGE: the samples' weights
    add up to g)."""
    f, feeds = case
    n, ch, h, w = f["OutputGradientTensor"]["Sizes"]
    n, ch, h, w = n, ch, h + 2, w + 2  # at least 3 x 3
    r = f["InputGradientTensor"]["Sizes"][0]
    image = np.add.outer(np.arange(h) * c, np.arange(w) * a).astype(np.float32)
    sizes = tensor("FLOAT32", [n, ch, h, w])
    f = f | {"InputTensor": sizes, "OutputGradientTensor": sizes, "OutputROIGradientTensor": tensor("FLOAT32", [r, 4])}
    f |= {"AlignRegionsToCorners": False, "OutputPixelOffset": 0.0, "InputPixelOffset": 0.0, "SpatialScaleX": 1.0}
    region = np.array([0.25, 0.5, w - 1.5, h - 1.25], np.float32)  # every sample within [0, size - 1)
    feeds = feeds | {"InputTensor": np.broadcast_to(image, (n, ch, h, w)).copy(), "ROITensor": np.tile(region, (r, 1))}
    got = gradient(f, feeds, "OutputROIGradientTensor").astype(np.float64)
    total = feeds["InputGradientTensor"].astype(np.float64).sum(axis=(1, 2, 3))
    np.testing.assert_allclose(got[:, 0] + got[:, 2], w * a * total, atol=1e-4)
    np.testing.assert_allclose(got[:, 1] + got[:, 3], h * c * total, atol=1e-4)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases(roi_gradient=True), st.sampled_from(["FLOAT32", "FLOAT16"]))
def test_graph_computes_the_reference(case: tuple[dict[str, Any], dict[str, np.ndarray]], dtype: str) -> None:
    f, feeds = case
    if dtype == "FLOAT16":
        names = ("InputGradientTensor", "ROITensor", "OutputGradientTensor", "InputTensor", "OutputROIGradientTensor")
        floats = [k for k in names if k in f]
        f = f | {k: tensor(dtype, f[k]["Sizes"]) for k in floats}
        feeds = feeds | {k: feeds[k].astype(np.float16) for k in floats if k in feeds}
    assert_matches_reference("cpu", OP, f, feeds)
