"""DML_OPERATOR_CONVOLUTION (dml2onnx/ops/convolution.py): DxDispatch's examples and values worked
by hand (both Modes and Directions, strides, dilations, padding, OutputPadding, groups, 1-D to
3-D), validation refusals, the candidates and the nodes each target emits, and properties over
random geometries against the numpy reference. The matrix (dml2onnx/cases/convolution.py) runs on
every EP present and through DirectML's API (tests/backends/test_dmlapi.py)."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dml2onnx import lowering
from dml2onnx.backends import dmlapi, runtime
from dml2onnx.core.errors import ModelError, format_path
from dml2onnx.graph import dml_ep
from dml2onnx.graph.builder import DEFAULT_OPSET
from dml2onnx.graph.targets import DML_NODE_DOC
from dml2onnx.lowering import choices, tolerances
from dml2onnx.ops import convolution, registry
from strategies import SEEDS
from support import EPS, assert_matches_reference, make_desc, printed, refusal, run_cli, tensor

OP = "CONVOLUTION"
MODEL = Path(__file__).parents[2] / "models" / "convolution.json"


def fields(
    x: list[int], w: list[int], y: list[int], dtype: str = "FLOAT32", bias: list[int] | None = None, **more: Any
) -> dict[str, Any]:
    dims = len(x) - 2
    f: dict[str, Any] = {
        "InputTensor": tensor(dtype, x),
        "FilterTensor": tensor(dtype, w),
        "OutputTensor": tensor(dtype, y),
        "Mode": "CROSS_CORRELATION",
        "Direction": "FORWARD",
        "DimensionCount": dims,
        "Strides": [1] * dims,
        "Dilations": [1] * dims,
        "StartPadding": [0] * dims,
        "EndPadding": [0] * dims,
        "OutputPadding": [0] * dims,
        "GroupCount": 1,
    }
    if bias is not None:
        f["BiasTensor"] = tensor(dtype, bias)
    return f | more


def every_variant(f: dict[str, Any], feeds: dict[str, np.ndarray]) -> np.ndarray:
    """The reference, after checking that every candidate on every target passes the static
    DirectML check and gives the reference's bytes on the CPU EP (the tests' values are exact)."""
    desc = make_desc(OP, f)
    want = registry.family(OP).reference(desc, feeds)
    out = desc.tensor("OutputTensor")
    assert want.dtype == out.data_type.numpy and want.shape == out.sizes
    for variant in choices.available(desc, DEFAULT_OPSET):
        for target in ("portable", "cpu", "dml"):
            model = lowering.lower(desc, "t", target=target, variant=variant)
            assert dml_ep.check(model) == [], (target, variant)
            got = runtime.create(model, "t", "cpu").run(feeds)
            assert got.tobytes() == want.tobytes(), (target, variant, got, want)
    return want


def f32(values: Any, shape: tuple[int, ...] | list[int]) -> np.ndarray:
    return np.asarray(values, np.float32).reshape(shape)


# -- DxDispatch's examples and values by hand --------------------------------------------------------


def test_dxdispatch_examples_print_what_dxdispatch_prints() -> None:
    code, out, err = run_cli("run", str(MODEL), "--ep", "cpu")
    assert code == 0, err
    got = printed(out)
    assert got["output"] == [6, 8, 12, 14]  # dml_convolution_2d.json: 0.5 * each 2x2 window of 1..9
    assert got["output3d"] == [4] * 8  # dml_convolution_3d.json: 8 * 0.5 * 1
    # transposed, Stride 3: each input element's 2x2 block, Bias 10 in the gaps, 0 in the OutputPadding row/column
    blocks = np.full((6, 6), 10.0)
    blocks[5, :] = blocks[:, 5] = 0
    for (i, j), v in zip(itertools.product(range(2), range(2)), [1, 2, 3, 4], strict=True):
        blocks[3 * i : 3 * i + 2, 3 * j : 3 * j + 2] += v
    assert got["upsampled"] == blocks.ravel().tolist()
    assert got["slope"] == [1, 4, 8, 12, -9, 1, 2, 2, 2, -3]  # x[i + 1] - x[i - 1] per channel


def test_model_dispatchables_match_dxdispatch_descs() -> None:
    text = "\n".join(line for line in MODEL.read_text().splitlines() if not line.lstrip().startswith("//"))
    model = json.loads(text)
    conv2d = model["dispatchables"]["conv2d"]["desc"]
    assert conv2d["InputTensor"]["Sizes"] == [1, 1, 3, 3] and conv2d["FilterTensor"]["Sizes"] == [1, 1, 2, 2]
    assert model["dispatchables"]["conv3d"]["desc"]["InputTensor"]["Sizes"] == [1, 1, 3, 3, 3]


def test_page_formula_one_dimension() -> None:
    # the page: out[j] = x[i]*w[0] + x[i+1]*w[1] + ... + x[i+k]*w[k] + bias
    x, w, b = f32([1, 2, 3, 4, 5], (1, 1, 5)), f32([1, 10, 100], (1, 1, 3)), f32([0.5], (1, 1, 1))
    f = fields([1, 1, 5], [1, 1, 3], [1, 1, 3], bias=[1, 1, 1])
    assert every_variant(f, {"InputTensor": x, "FilterTensor": w, "BiasTensor": b}).ravel().tolist() == [321.5, 432.5, 543.5]
    # Mode CONVOLUTION flips the filter
    f["Mode"] = "CONVOLUTION"
    assert every_variant(f, {"InputTensor": x, "FilterTensor": w, "BiasTensor": b}).ravel().tolist() == [123.5, 234.5, 345.5]


def test_strides_dilations_and_padding_by_hand() -> None:
    x = f32(np.arange(1, 8), (1, 1, 7))
    w = f32([1, 10], (1, 1, 2))
    # Dilation 2: x[i] + 10 x[i + 2]; Stride 2 from StartPadding 1: i = -1, 1, 3, 5 (x[-1], x[7]: the padding's 0)
    f = fields([1, 1, 7], [1, 1, 2], [1, 1, 4], Strides=[2], Dilations=[2], StartPadding=[1], EndPadding=[1])
    assert every_variant(f, {"InputTensor": x, "FilterTensor": w}).ravel().tolist() == [20, 42, 64, 6]
    # EndPadding only: the last window reads one 0
    f = fields([1, 1, 7], [1, 1, 2], [1, 1, 4], Strides=[2], EndPadding=[1])
    assert every_variant(f, {"InputTensor": x, "FilterTensor": w}).ravel().tolist() == [21, 43, 65, 7]
    # FORWARD's OutputPadding too: zeros after the computed elements, on each axis
    f = fields([1, 1, 7], [1, 1, 2], [1, 1, 6], Strides=[2], EndPadding=[1], OutputPadding=[2])
    assert every_variant(f, {"InputTensor": x, "FilterTensor": w}).ravel().tolist() == [21, 43, 65, 7, 0, 0]
    x2 = f32([1, 2, 3, 4], (1, 1, 2, 2))
    f = fields([1, 1, 2, 2], [1, 1, 1, 1], [1, 1, 4, 3], bias=[1, 1, 1, 1], OutputPadding=[2, 1])
    got = every_variant(f, {"InputTensor": x2, "FilterTensor": f32([1], (1, 1, 1, 1)), "BiasTensor": f32([10], (1, 1, 1, 1))})
    assert got.reshape(4, 3).tolist() == [[11, 12, 0], [13, 14, 0], [0, 0, 0], [0, 0, 0]]


def test_backward_by_hand() -> None:
    # each input element x[i] adds x[i] * w at i * Stride - StartPadding
    x, w = f32([1, 2, 3], (1, 1, 3)), f32([1, 10, 100], (1, 1, 3))
    f = fields([1, 1, 3], [1, 1, 3], [1, 1, 7], Direction="BACKWARD", Strides=[2])
    assert every_variant(f, {"InputTensor": x, "FilterTensor": w}).ravel().tolist() == [1, 10, 102, 20, 203, 30, 300]
    # StartPadding 1, EndPadding 2 crop; OutputPadding 1 adds one element at the end: 0, without the
    # Bias (DirectML; ONNX ConvTranspose's output_padding would compute it: 30.5)
    f = fields(
        [1, 1, 3], [1, 1, 3], [1, 1, 5], bias=[1, 1, 1], Direction="BACKWARD", Strides=[2], StartPadding=[1], EndPadding=[2]
    ) | {"OutputPadding": [1]}
    b = f32([0.5], (1, 1, 1))
    got = every_variant(f, {"InputTensor": x, "FilterTensor": w, "BiasTensor": b})
    assert got.ravel().tolist() == [10.5, 102.5, 20.5, 203.5, 0]
    f = fields([1, 1, 3], [1, 1, 3], [1, 1, 8], Direction="BACKWARD", Strides=[2], OutputPadding=[1], bias=[1, 1, 1])
    got = every_variant(f, {"InputTensor": x, "FilterTensor": w, "BiasTensor": b})
    assert got.ravel().tolist() == [1.5, 10.5, 102.5, 20.5, 203.5, 30.5, 300.5, 0]
    # the fused activation sees those zeros: Linear 1 * y + 7 gives 7 there
    linear = {"FusedActivation": {"Type": "ACTIVATION_LINEAR", "Alpha": 1.0, "Beta": 7.0}}
    got = every_variant(f | linear, {"InputTensor": x, "FilterTensor": w, "BiasTensor": b})
    assert got.ravel().tolist() == [8.5, 17.5, 109.5, 27.5, 210.5, 37.5, 307.5, 7]
    # Mode CONVOLUTION: the flipped filter
    f = fields([1, 1, 3], [1, 1, 3], [1, 1, 7], Direction="BACKWARD", Strides=[2], Mode="CONVOLUTION")
    assert every_variant(f, {"InputTensor": x, "FilterTensor": w}).ravel().tolist() == [100, 10, 201, 20, 302, 30, 3]


def test_groups_and_depthwise_by_hand() -> None:
    # two groups of one channel in, two out: filter {M = 4, C/G = 1, 1}
    x = f32([1, 2], (1, 2, 1))
    w = f32([1, 10, 100, 1000], (4, 1, 1))
    f = fields([1, 2, 1], [4, 1, 1], [1, 4, 1], GroupCount=2)
    assert every_variant(f, {"InputTensor": x, "FilterTensor": w}).ravel().tolist() == [1, 10, 200, 2000]
    # BACKWARD, two groups: filter {C = 2, M/G = 2, 1}; group g's inputs feed outputs 2g, 2g + 1
    f = fields([1, 2, 1], [2, 2, 1], [1, 4, 1], GroupCount=2, Direction="BACKWARD")
    got = every_variant(f, {"InputTensor": x, "FilterTensor": w.reshape(2, 2, 1)})
    assert got.ravel().tolist() == [1, 10, 200, 2000]
    # depthwise 2-D, 3 channels, each its own 1x2 filter
    x = f32(np.arange(18), (1, 3, 2, 3))
    w = f32([1, 1, 1, -1, 0, 2], (3, 1, 1, 2))
    f = fields([1, 3, 2, 3], [3, 1, 1, 2], [1, 3, 2, 2], GroupCount=3)
    want = [[1, 3, 7, 9], [-1, -1, -1, -1], [26, 28, 32, 34]]
    assert every_variant(f, {"InputTensor": x, "FilterTensor": w}).reshape(3, 4).tolist() == want


def test_three_dimensions_and_batches() -> None:
    rng = np.random.default_rng(3)
    x = (rng.integers(-8, 9, (2, 2, 3, 4, 3)) / 8).astype(np.float32)
    w = (rng.integers(-8, 9, (4, 2, 2, 3, 2)) / 8).astype(np.float32)
    f = fields([2, 2, 3, 4, 3], [4, 2, 2, 3, 2], [2, 4, 2, 1, 3], Strides=[1, 2, 1], StartPadding=[0, 0, 1], EndPadding=[0, 0, 0])
    want = every_variant(f, {"InputTensor": x, "FilterTensor": w})
    # against a direct sum
    xp = np.pad(x.astype(np.float64), [(0, 0), (0, 0), (0, 0), (0, 0), (1, 0)])
    for n, m, a, b_, c in itertools.product(range(2), range(4), range(2), range(1), range(3)):
        window = xp[n, :, a : a + 2, 2 * b_ : 2 * b_ + 3, c : c + 2]
        assert want[n, m, a, b_, c] == np.float32((window * w[m]).sum())


def test_float16_rounds_once() -> None:
    # 2049 is no FLOAT16: sum 1024 + 1024 + 1 in FLOAT32, then rounded (to 2048, the even neighbour)
    x = np.array([1024, 1024, 1], np.float16).reshape(1, 3, 1)
    w = np.ones((1, 3, 1), np.float16)
    f = fields([1, 3, 1], [1, 3, 1], [1, 1, 1], dtype="FLOAT16")
    assert every_variant(f, {"InputTensor": x, "FilterTensor": w}).item() == 2048


def test_fused_activation() -> None:
    x, w = f32([1, -2, 3], (1, 1, 3)), f32([1], (1, 1, 1))
    f = fields([1, 1, 3], [1, 1, 1], [1, 1, 3]) | {"FusedActivation": {"Type": "ACTIVATION_RELU"}}
    assert every_variant(f, {"InputTensor": x, "FilterTensor": w}).ravel().tolist() == [1, 0, 3]
    f["FusedActivation"] = {"Type": "ACTIVATION_LEAKY_RELU", "Alpha": 0.5}
    assert every_variant(f, {"InputTensor": x, "FilterTensor": w}).ravel().tolist() == [1, -1, 3]


# -- lowering ------------------------------------------------------------------------------------------


def _ops(f: dict[str, Any], target: str = "portable", variant: str | None = None) -> list[str]:
    return [n.op_type for n in lowering.lower(make_desc(OP, f), "t", target=target, variant=variant).graph.node]


def test_nodes() -> None:
    f = fields([1, 2, 5, 5], [3, 2, 3, 3], [1, 3, 3, 3], bias=[1, 3, 1, 1])
    assert _ops(f) == ["Reshape", "Conv"]
    assert _ops(f | {"Mode": "CONVOLUTION"}) == ["Slice", "Reshape", "Conv"]
    b = fields([1, 2, 3, 3], [2, 3, 3, 3], [1, 3, 5, 5], Direction="BACKWARD")
    assert _ops(b) == ["ConvTranspose"]
    h = fields([1, 2, 5, 5], [3, 2, 3, 3], [1, 3, 3, 3], dtype="FLOAT16")
    assert choices.available(make_desc(OP, h), DEFAULT_OPSET) == ("native", "float32")
    assert choices.available(make_desc(OP, f), DEFAULT_OPSET) == ("native",)
    assert _ops(h) == ["Conv"]  # FLOAT16 Conv: the CUDA EP's cuDNN accumulates it in FLOAT32
    assert _ops(h, variant="float32") == ["Cast", "Cast", "Conv", "Cast"]
    act = {"FusedActivation": {"Type": "ACTIVATION_SIGMOID"}}
    assert _ops(h | act) == ["Conv", "Cast", "Sigmoid", "Cast"]


def test_transposed_pads_are_symmetric_where_the_cuda_ep_runs_them() -> None:
    """The CUDA EP hands a ConvTranspose whose pads differ at the two ends of an axis to the CPU
    EP (ConvTransposeNeedFallbackToCPU in cuda_execution_provider.cc); the H100 refused those
    nodes. Off the dml target, the asymmetric rest is cropped by a Slice, with the same values."""
    f = fields(
        [1, 2, 4, 3], [2, 3, 3, 3], [1, 3, 7, 6], Direction="BACKWARD", Strides=[2, 2], StartPadding=[2, 0], EndPadding=[0, 1]
    )
    for target in ("portable", "cuda", "cpu", "dml"):
        nodes = lowering.lower(make_desc(OP, f), "t", target=target).graph.node
        conv = next(n for n in nodes if n.op_type == "ConvTranspose")
        pads = next(list(a.ints) for a in conv.attribute if a.name == "pads")
        if target == "dml":  # the DirectML EP takes StartPadding/EndPadding as they are
            assert pads == [2, 0, 0, 1] and [n.op_type for n in nodes] == ["ConvTranspose"]
        else:
            assert pads == [0, 0, 0, 0] and [n.op_type for n in nodes] == ["ConvTranspose", "Slice"]
    feeds = {"InputTensor": f32(np.arange(24) % 7 - 3, [1, 2, 4, 3]), "FilterTensor": f32(np.arange(54) % 5 - 2, [2, 3, 3, 3])}
    every_variant(f, feeds)


def test_dml_target_marks_the_nodes_the_directml_ep_maps_back() -> None:
    for f in (
        fields([1, 2, 5, 5], [3, 2, 3, 3], [1, 3, 3, 3]),
        fields([1, 2, 3, 3], [2, 3, 3, 3], [1, 3, 5, 5], Direction="BACKWARD"),
    ):
        for target, marked in (("dml", True), ("portable", False), ("cuda", False)):
            model = lowering.lower(make_desc(OP, f), "t", target=target)
            conv = next(n for n in model.graph.node if n.op_type.startswith("Conv"))
            assert (conv.doc_string == DML_NODE_DOC) == marked


def test_accumulation_length_and_tolerance() -> None:
    desc = make_desc(OP, fields([1, 64, 5, 5], [8, 32, 3, 3], [1, 8, 3, 3], GroupCount=2))
    assert convolution.accumulation_length(desc) == 288 == tolerances.CONVOLUTION_LENGTH
    assert tolerances.tolerance(OP, desc.tensor("OutputTensor").data_type, "cpu") == tolerances.convolution(
        desc.tensor("OutputTensor").data_type, 288, "cpu"
    )


# -- validation ----------------------------------------------------------------------------------------

GOOD = fields([1, 4, 5, 5], [6, 2, 3, 3], [1, 6, 3, 3], bias=[1, 6, 1, 1], GroupCount=2)
GOOD_BACK = fields([1, 4, 3, 3], [4, 3, 3, 3], [1, 6, 7, 7], Direction="BACKWARD", Strides=[2, 2], GroupCount=2)


def _change(base: dict[str, Any], path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    f = json.loads(json.dumps(base))
    target = f
    for p in path[:-1]:
        target = target[p]
    target[path[-1]] = value
    return f


@pytest.mark.parametrize(
    ("base", "path", "value", "where", "message"),
    [
        (GOOD, ("FilterTensor", "DataType"), "FLOAT16", "desc.FilterTensor.DataType", "same DataType"),
        (GOOD, ("BiasTensor", "DataType"), "FLOAT16", "desc.BiasTensor.DataType", "same DataType"),
        (GOOD, ("OutputTensor", "DataType"), "FLOAT16", "desc.OutputTensor.DataType", "same DataType"),
        (GOOD, ("FilterTensor", "Sizes"), [6, 2, 3], "desc.FilterTensor.Sizes", "same DimensionCount"),
        (GOOD, ("BiasTensor", "Sizes"), [1, 6, 1], "desc.BiasTensor.Sizes", "same DimensionCount"),
        (GOOD, ("BiasTensor", "Sizes"), [1, 6, 1, 3], "desc.BiasTensor.Sizes[3]", "must be 1"),
        (GOOD, ("BiasTensor", "Sizes"), [1, 3, 1, 1], "desc.BiasTensor.Sizes[1]", "must be 6"),
        (GOOD, ("GroupCount",), 3, "desc.InputTensor.Sizes[1]", "not divisible by GroupCount 3"),
        (GOOD, ("GroupCount",), 0, "desc.GroupCount", "at least 1"),
        (GOOD, ("FilterTensor", "Sizes"), [6, 4, 3, 3], "desc.FilterTensor.Sizes[1]", "InputTensor's channels / GroupCount"),
        (GOOD, ("FilterTensor", "Sizes"), [4, 2, 3, 3], "desc.FilterTensor.Sizes[0]", "must be 6"),
        (GOOD, ("OutputTensor", "Sizes"), [2, 6, 3, 3], "desc.OutputTensor.Sizes[0]", "batch"),
        (GOOD, ("OutputTensor", "Sizes"), [1, 5, 3, 3], "desc.OutputTensor.Sizes[1]", "not divisible by GroupCount 2"),
        (GOOD, ("Strides",), [1, 0], "desc.Strides[1]", "at least 1"),
        (GOOD, ("Dilations",), [0, 1], "desc.Dilations[0]", "at least 1"),
        (GOOD, ("Dilations",), [1, 1, 1], "desc.Dilations", "DimensionCount (2) elements"),
        (GOOD, ("EndPadding",), [0], "desc.EndPadding", "DimensionCount (2) elements"),
        (GOOD, ("OutputPadding",), [0, 0, 0], "desc.OutputPadding", "DimensionCount (2) elements"),
        (
            GOOD_BACK,
            ("FilterTensor", "Sizes"),
            [4, 6, 3, 3],
            "desc.FilterTensor.Sizes[1]",
            "OutputTensor's channels / GroupCount",
        ),
        (GOOD_BACK, ("FilterTensor", "Sizes"), [6, 3, 3, 3], "desc.FilterTensor.Sizes[0]", "InputTensor's channels"),
        # DirectML takes any OutputTensor spatial size above OutputPadding (test_convolution_output_sizes.py)
        (GOOD, ("OutputPadding",), [0, 3], "desc.OutputTensor.Sizes[3]", "must exceed OutputPadding[1] (3)"),
        (GOOD_BACK, ("OutputPadding",), [7, 0], "desc.OutputTensor.Sizes[2]", "must exceed OutputPadding[0] (7)"),
        # DirectML's paddings are 32-bit signed (test_directml_reads_a_padding_of_2_32_minus_1_as_a_crop)
        (GOOD, ("StartPadding",), [0, 4294967295], "desc.StartPadding[1]", "this is -1 (a crop)"),
        (GOOD_BACK, ("EndPadding",), [2**31, 0], "desc.EndPadding[0]", "must be below 2**31"),
        (GOOD, ("EndPadding",), [0, 2**31 - 5], "desc.EndPadding[1]", "the padded size 5 + 0 + 2147483643"),
    ],
)
def test_refusals(base: dict[str, Any], path: tuple[Any, ...], value: Any, where: str, message: str) -> None:
    e = refusal(OP, _change(base, path, value))
    assert format_path(e.path) == where and message in e.rule, (format_path(e.path), e.rule)


def test_dimension_count_must_be_the_spatial_dimensions() -> None:
    f = GOOD | {"DimensionCount": 3, "Strides": [1] * 3, "Dilations": [1] * 3, "StartPadding": [0] * 3}
    f |= {"EndPadding": [0] * 3, "OutputPadding": [0] * 3}
    e = refusal(OP, f)
    assert format_path(e.path) == "desc.DimensionCount" and "must be 2" in e.rule


def test_one_dimension_needs_feature_level_4_0() -> None:
    f = fields([1, 2, 6], [3, 2, 3], [1, 3, 4])
    e = refusal(OP, f, level="3_1")
    assert format_path(e.path).startswith("desc.InputTensor")
    lowering.validate(make_desc(OP, f))


def test_good_descs_validate() -> None:
    lowering.validate(make_desc(OP, GOOD))
    lowering.validate(make_desc(OP, GOOD_BACK))


# -- properties ------------------------------------------------------------------------------------------


@st.composite
def convolutions(draw: st.DrawFn) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    dims = draw(st.integers(1, 3))
    direction = draw(st.sampled_from(["FORWARD", "BACKWARD"]))
    groups = draw(st.integers(1, 3))
    c, m = groups * draw(st.integers(1, 3)), groups * draw(st.integers(1, 3))
    spatial, kernel, strides, dilations, start, end, extra, out = [], [], [], [], [], [], [], []
    for _ in range(dims):
        n, k = draw(st.integers(1, 6)), draw(st.integers(1, 3))
        s, d = draw(st.integers(1, 3)), draw(st.integers(1, 2))
        window = (k - 1) * d + 1
        if direction == "FORWARD":
            lo, hi = draw(st.integers(0, 3)), draw(st.integers(0, 3))
            if n + lo + hi < window:
                hi = window - n - lo
            op = draw(st.integers(0, 2))
            o = (n + lo + hi - window) // s + 1 + op
        else:
            full = (n - 1) * s + window
            lo, hi = draw(st.integers(0, full - 1)), 0
            hi = draw(st.integers(0, full - 1 - lo))
            op = draw(st.integers(0, s - 1))
            o = full - lo - hi + op
        if draw(st.integers(0, 3)) == 0:  # DirectML computes any OutputTensor size above OutputPadding
            o = max(op + 1, o + draw(st.integers(-3, 3)))
        spatial.append(n), kernel.append(k), strides.append(s), dilations.append(d)
        start.append(lo), end.append(hi), extra.append(op), out.append(o)
    dtype = draw(st.sampled_from(["FLOAT32", "FLOAT16"]))
    batch = draw(st.integers(1, 2))
    w = [c, m // groups, *kernel] if direction == "BACKWARD" else [m, c // groups, *kernel]
    bias = [1, m] + [1] * dims if draw(st.booleans()) else None
    f = fields([batch, c, *spatial], w, [batch, m, *out], dtype=dtype, bias=bias)
    f |= {"Direction": direction, "Mode": draw(st.sampled_from(["CROSS_CORRELATION", "CONVOLUTION"]))}
    f |= {"Strides": strides, "Dilations": dilations, "StartPadding": start, "EndPadding": end, "OutputPadding": extra}
    f |= {"GroupCount": groups}
    if draw(st.booleans()):
        acts = [{"Type": "ACTIVATION_RELU"}, {"Type": "ACTIVATION_TANH"}, {"Type": "ACTIVATION_ELU", "Alpha": 0.5}]
        f["FusedActivation"] = draw(st.sampled_from(acts))
    rng = np.random.default_rng(draw(SEEDS))
    feeds = {
        name: (rng.integers(-8, 9, f[name]["Sizes"]) / 8).astype(dtype.lower())
        for name in ("InputTensor", "FilterTensor", "BiasTensor")
        if name in f
    }
    return f, feeds


@EPS
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(convolutions())
def test_random_convolutions_match_the_reference(ep: str, drawn: tuple[dict[str, Any], dict[str, np.ndarray]]) -> None:
    f, feeds = drawn
    assert_matches_reference(ep, OP, f, feeds)


@settings(max_examples=40, deadline=None)
@given(convolutions())
def test_reference_matches_a_direct_loop(drawn: tuple[dict[str, Any], dict[str, np.ndarray]]) -> None:
    """The reference against the page's sum written out element by element (FLOAT32 only, no
    fused activation): BACKWARD as the scatter of each input element."""
    f, feeds = drawn
    f = {k: v for k, v in f.items() if k != "FusedActivation"}
    desc = make_desc(OP, f)
    want = convolution.reference(desc, feeds).astype(np.float64)
    x, w = feeds["InputTensor"].astype(np.float64), feeds["FilterTensor"].astype(np.float64)
    dims, g = desc["DimensionCount"], desc["GroupCount"]
    if desc["Mode"] == "CONVOLUTION":
        w = w[(slice(None), slice(None)) + (slice(None, None, -1),) * dims]
    y = np.zeros(convolution.computed_sizes(desc))
    c, m = x.shape[1], y.shape[1]
    s, d, lo = desc["Strides"], desc["Dilations"], desc["StartPadding"]
    for n, ci in itertools.product(range(x.shape[0]), range(c)):
        group = ci // (c // g)
        for i in itertools.product(*(range(v) for v in x.shape[2:])):
            for p in itertools.product(*(range(v) for v in w.shape[2:])):
                if desc["Direction"] == "BACKWARD":
                    o = tuple(i[a] * s[a] + p[a] * d[a] - lo[a] for a in range(dims))
                    if all(0 <= o[a] < y.shape[2 + a] for a in range(dims)):
                        for mi in range(m // g):
                            y[(n, group * (m // g) + mi, *o)] += x[(n, ci, *i)] * w[(ci, mi, *p)]
                else:
                    # x[i] reaches output o where o * s + p * d - lo == i
                    o = []
                    for a in range(dims):
                        q, r = divmod(i[a] + lo[a] - p[a] * d[a], s[a])
                        o.append(q if r == 0 else -1)
                    if all(0 <= o[a] < y.shape[2 + a] for a in range(dims)):
                        for mi in range(m // g):
                            y[(n, group * (m // g) + mi, *o)] += x[(n, ci, *i)] * w[(group * (m // g) + mi, ci % (c // g), *p)]
    if "BiasTensor" in feeds:
        y += feeds["BiasTensor"].astype(np.float64)
    y = np.pad(y, [(0, 0), (0, 0)] + [(0, p) for p in desc["OutputPadding"]])
    np.testing.assert_array_equal(want, y.astype(feeds["InputTensor"].dtype).astype(np.float64))


# -- what DirectML's own API computes where the page is silent (README: CONVOLUTION) -----------------

_why = dmlapi.missing()
live = pytest.mark.skipif(_why is not None, reason=f"DirectML's API under Wine is not set up ({_why}): run `make dml-setup`")


def directml(f: dict[str, Any], feeds: dict[str, np.ndarray], flags: int = 0) -> np.ndarray:
    from dml2onnx.core import desc as desc_module

    d = desc_module.parse_operator_desc(OP, f, ("desc",), ("type",))  # not validated: DirectML decides
    return dmlapi.execute(d, feeds, flags=flags).output


@pytest.fixture(scope="module")
def wine() -> Any:
    yield
    from dml2onnx.backends import winhost

    winhost.shutdown()


@live
def test_directml_reads_a_padding_of_2_32_minus_1_as_a_crop(wine: Any) -> None:
    """Why a StartPadding of 2**31 or more is refused: DirectML reads 4294967295 as -1, each output
    element's window starting one element later (the last one past the input: 0)."""
    f = fields([1, 1, 1, 4], [1, 1, 1, 1], [1, 1, 1, 4], StartPadding=[0, 4294967295])
    feeds = {"InputTensor": f32([1, 2, 3, 4], (1, 1, 1, 4)), "FilterTensor": f32([10], (1, 1, 1, 1))}
    assert directml(f, feeds).ravel().tolist() == [20, 30, 40, 0]


@live
def test_directml_output_padding_is_zeros_before_the_activation(wine: Any) -> None:
    x, w, b = f32([1, 2, 3], (1, 1, 1, 3)), f32([1, 10, 100], (1, 1, 1, 3)), f32([1000], (1, 1, 1, 1))
    back = fields([1, 1, 1, 3], [1, 1, 1, 3], [1, 1, 1, 8], bias=[1, 1, 1, 1], Direction="BACKWARD", Strides=[1, 2])
    feeds = {"InputTensor": x, "FilterTensor": w, "BiasTensor": b}
    assert directml(back | {"OutputPadding": [0, 1]}, feeds).ravel().tolist() == [1001, 1010, 1102, 1020, 1203, 1030, 1300, 0]
    linear = {"FusedActivation": {"Type": "ACTIVATION_LINEAR", "Alpha": 1.0, "Beta": 7.0}}
    assert directml(back | {"OutputPadding": [0, 1]} | linear, feeds).ravel()[-1] == 7
    # the DirectML EP's form (OutputPadding zeroed, the output one larger): that element computed
    assert directml(back, feeds).ravel()[-1] == 1000
    xf, wf = f32([1, 2, 3, 4, 5], (1, 1, 1, 5)), f32([1, 10], (1, 1, 1, 2))
    fwd = fields([1, 1, 1, 5], [1, 1, 1, 2], [1, 1, 1, 5], bias=[1, 1, 1, 1], OutputPadding=[0, 1])
    got = directml(fwd, {"InputTensor": xf, "FilterTensor": wf, "BiasTensor": b})
    assert got.ravel().tolist() == [1021, 1032, 1043, 1054, 0]
    for f, feeds_ in (
        (back | {"OutputPadding": [0, 1]} | linear, feeds),
        (fwd, {"InputTensor": xf, "FilterTensor": wf, "BiasTensor": b}),
    ):
        assert directml(f, feeds_).tobytes() == registry.family(OP).reference(make_desc(OP, f), feeds_).tobytes()


@live
@pytest.mark.parametrize("flags", [0, 1])
def test_directml_accumulates_float16_in_float32(wine: Any, flags: int) -> None:
    x = np.ones((1, 64, 1, 1), np.float16)
    x[0, 0] = 1024  # 1024 + 1 is no FLOAT16: a FLOAT16 accumulator would stay at 1024
    f = fields([1, 64, 1, 1], [1, 64, 1, 1], [1, 1, 1, 1], dtype="FLOAT16")
    assert directml(f, {"InputTensor": x, "FilterTensor": np.ones((1, 64, 1, 1), np.float16)}, flags).item() == 1087


@live
def test_directml_accepts_what_dml2onnx_refuses(wine: Any) -> None:
    """Validation disagreements, pinned: DirectML runs these descs; dml2onnx refuses them (other
    OutputTensor sizes: dml2onnx computes them as DirectML does, test_convolution_output_sizes.py)."""
    xf, wf, b = f32([1, 2, 3, 4, 5], (1, 1, 1, 5)), f32([1, 10], (1, 1, 1, 2)), f32([1000], (1, 1, 1, 1))
    feeds = {"InputTensor": xf, "FilterTensor": wf, "BiasTensor": b}
    cases = {
        "dilation-0": (
            fields([1, 1, 1, 5], [1, 1, 1, 2], [1, 1, 1, 5], bias=[1, 1, 1, 1], Dilations=[1, 0]),
            [1011, 1022, 1033, 1044, 1055],
        ),
        "stride-0": (fields([1, 1, 1, 5], [1, 1, 1, 2], [1, 1, 1, 4], bias=[1, 1, 1, 1], Strides=[1, 0]), [1021] * 4),
    }
    three = {
        k: [v] * 3 for k, v in (("Strides", 1), ("Dilations", 1), ("StartPadding", 0), ("EndPadding", 0), ("OutputPadding", 0))
    }
    cases["dimension-count-3"] = (
        fields([1, 1, 1, 5], [1, 1, 1, 2], [1, 1, 1, 4], bias=[1, 1, 1, 1], DimensionCount=3, **three),
        [1021, 1032, 1043, 1054],
    )
    for name, (f, want) in cases.items():
        assert directml(f, feeds).ravel().tolist() == want, name
        with pytest.raises(ModelError):
            lowering.validate(make_desc(OP, f))


@pytest.mark.parametrize("target", ["portable", "cuda"])
def test_a_float16_relu_stays_in_float16_beside_its_convolution(target: str) -> None:
    """RELU of a FLOAT16 value is the FLOAT32 RELU rounded back (no constant, no rounding): the
    Relu follows the Conv with no Cast between them (ONNX Runtime then fuses the two); values as
    the reference, NaN, infinities and negative zero included."""
    relu = {"FusedActivation": {"Type": "ACTIVATION_RELU"}}
    f = fields([1, 1, 1, 6], [1, 1, 1, 1], [1, 1, 1, 6], dtype="FLOAT16", **relu)
    assert _ops(f, target) == ["Conv", "Relu"]
    x = np.array([-2.5, -0.0, 0.0, np.nan, np.inf, -np.inf], np.float16).reshape(1, 1, 1, 6)
    feeds = {"InputTensor": x, "FilterTensor": np.ones((1, 1, 1, 1), np.float16)}
    desc = make_desc(OP, f)
    got = runtime.create(lowering.lower(desc, "t", target=target), "t", "cpu").run(feeds)
    np.testing.assert_array_equal(got, registry.reference_outputs(desc, feeds)["OutputTensor"])
    assert got.ravel().tolist()[:3] == [0, 0, 0] and np.isnan(got.ravel()[3]) and got.ravel()[4] == np.inf
    sigmoid = fields([1, 1, 1, 6], [1, 1, 1, 1], [1, 1, 1, 6], dtype="FLOAT16", FusedActivation={"Type": "ACTIVATION_SIGMOID"})
    assert _ops(sigmoid, target) == ["Conv", "Cast", "Sigmoid", "Cast"]  # its FLOAT32 rounding is DirectML's
