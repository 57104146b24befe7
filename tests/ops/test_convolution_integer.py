"""DML_OPERATOR_CONVOLUTION_INTEGER and QUANTIZED_LINEAR_CONVOLUTION
(dml2onnx/ops/convolution_integer.py): the model's values by hand (the pages have no example),
zero points per tensor and per channel, the requantization's FLOAT32 order and rounding pinned to
DirectML's outputs, INT32 wrapping, refusals, the candidates and the nodes each target emits, and
properties over random geometries against the numpy reference. The matrix
(dml2onnx/cases/convolution_integer.py) runs on every EP present and through DirectML's API."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dml2onnx import lowering
from dml2onnx.backends import dmlapi, runtime
from dml2onnx.core.errors import format_path
from dml2onnx.graph import dml_ep
from dml2onnx.graph.builder import DEFAULT_OPSET
from dml2onnx.lowering import choices
from dml2onnx.ops import convolution_integer
from strategies import SEEDS
from support import EPS, make_desc, printed, refusal, run_cli, tensor

CI, QL = "CONVOLUTION_INTEGER", "QUANTIZED_LINEAR_CONVOLUTION"
MODEL = Path(__file__).parents[2] / "models" / "convolution_integer.json"
SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
live = pytest.mark.skipif(dmlapi.missing() is not None, reason="DirectML's API under Wine is not set up")


def fields(x: list[int], w: list[int], y: list[int], xt: str = "UINT8", wt: str = "INT8", **more: Any) -> dict[str, Any]:
    dims = len(x) - 2
    f: dict[str, Any] = {"InputTensor": tensor(xt, x), "FilterTensor": tensor(wt, w), "OutputTensor": tensor("INT32", y)}
    f |= {name: [value] * dims for name, value in (("Strides", 1), ("Dilations", 1), ("StartPadding", 0), ("EndPadding", 0))}
    f |= {"DimensionCount": dims, "GroupCount": 1}
    return f | more


def quantized(
    x: list[int], w: list[int], y: list[int], yt: str = "INT8", per_channel: bool = False, **more: Any
) -> dict[str, Any]:
    one = [1] * len(x)
    w_sizes = [1, w[0]] + [1] * (len(x) - 2) if per_channel else one
    f = fields(x, w, y, **more) | {"OutputTensor": tensor(yt, y)}
    f |= {"InputScaleTensor": tensor("FLOAT32", one), "FilterScaleTensor": tensor("FLOAT32", w_sizes)}
    return f | {"OutputScaleTensor": tensor("FLOAT32", one)} | more


def every_variant(op: str, f: dict[str, Any], feeds: dict[str, np.ndarray]) -> np.ndarray:
    """The reference, after checking that every portable candidate gives its bytes on the CPU EP
    and every target's graph passes the static DirectML check."""
    desc = make_desc(op, f)
    want = convolution_integer.reference(desc, feeds)
    out = desc.tensor("OutputTensor")
    assert want.dtype == out.data_type.numpy and want.shape == out.sizes
    for variant in choices.available(desc, DEFAULT_OPSET):
        target = choices.target_of(op, variant)
        model = lowering.lower(desc, "t", target=target, variant=variant)
        assert dml_ep.check(model) == [], variant
        if target != "dml":
            got = runtime.create(model, "t", "cpu").run(feeds)
            assert got.tobytes() == want.tobytes(), (variant, got, want)
    return want


def u8(values: Any, shape: list[int]) -> np.ndarray:
    return np.asarray(values, np.uint8).reshape(shape)


def i8(values: Any, shape: list[int]) -> np.ndarray:
    return np.asarray(values, np.int8).reshape(shape)


def f32(value: float, shape: list[int] | None = None) -> np.ndarray:
    return np.full(shape or [1, 1, 1, 1], value, np.float32)


# -- values by hand ---------------------------------------------------------------------------------


def test_model_prints_the_sums_and_the_requantized_values() -> None:
    code, out, err = run_cli("run", str(MODEL), "--ep", "cpu")
    assert code == 0, err
    got = printed(out)
    assert got["sums"] == [19, 25, 37, 43]  # (1..9 - 1) * (1, 2, 3, 4 - 1) over each 2x2 window
    assert got["quantized"] == [12, 13, 15, 16]  # 2.5 -> 2, 3.25, 4.75, 5.5 -> 6 (halves to even), + 10


def test_padding_strides_dilations_and_zero_points_by_hand() -> None:
    # 1-D: x - 3 = [-3, -2, ..., 3], padded by 2 zeros of the centred input at the start, 1 at the end
    x = u8(np.arange(7), [1, 1, 7])
    w = i8([1, 10, 100], [1, 1, 3])
    f = fields([1, 1, 7], [1, 1, 3], [1, 1, 3], InputZeroPointTensor=tensor("UINT8", [1, 1, 1]))
    f |= {"Strides": [2], "Dilations": [2], "StartPadding": [2], "EndPadding": [1]}
    got = every_variant(CI, f, {"InputTensor": x, "FilterTensor": w, "InputZeroPointTensor": u8([3], [1, 1, 1])})
    c = np.pad(np.arange(7) - 3, (2, 1))  # the padded centred input
    want = [c[o * 2] + 10 * c[o * 2 + 2] + 100 * c[o * 2 + 4] for o in range(3)]
    assert got.ravel().tolist() == want


def test_per_channel_filter_zero_points_and_groups() -> None:
    # 2 groups of 1 input channel, 2 output channels each; FilterZeroPoint per output channel
    x = i8([[1, 2, 3], [4, 5, 6]], [1, 2, 3])
    w = i8([[[1, 1]], [[2, 2]], [[3, 3]], [[-128, 127]]], [4, 1, 2])
    zero = i8([1, 0, 3, -128], [1, 4, 1])
    f = fields([1, 2, 3], [4, 1, 2], [1, 4, 2], xt="INT8", GroupCount=2, FilterZeroPointTensor=tensor("INT8", [1, 4, 1]))
    f["InputZeroPointTensor"] = tensor("INT8", [1, 1, 1])
    got = every_variant(
        CI, f, {"InputTensor": x, "FilterTensor": w, "FilterZeroPointTensor": zero, "InputZeroPointTensor": i8([0], [1, 1, 1])}
    )
    # channel 0: w - 1 = 0; channel 1: w = 2 over input channel 0; channels 2, 3 over input channel 1
    assert got.reshape(4, 2).tolist() == [[0, 0], [6, 10], [0, 0], [255 * 5, 255 * 6]]


def test_products_of_the_extremes_and_int32_wrapping() -> None:
    # K = 35000 products of 255 * 255 (2,275,875,000 > 2**31 - 1): DirectML wraps (matrix: *-wrap)
    x = np.full([1, 35, 1000], 255, np.uint8)
    f = fields([1, 35, 1000], [1, 35, 1000], [1, 1, 1], wt="UINT8")
    got = every_variant(CI, f, {"InputTensor": x, "FilterTensor": x.copy()})
    assert got.item() == 35000 * 255 * 255 - 2**32


@pytest.mark.parametrize(
    ("acc", "x_scale", "w_scale", "y_scale", "directml"),
    # inputs where FLOAT32 orders of the same products disagree; DirectML's outputs (dml_exec)
    [
        (-2997, 0.0373506024479866, 0.058070335537195206, 0.06667055934667587, -98),
        (617, 0.07122994214296341, 0.011110653169453144, 0.006142147816717625, 80),
        (-521, 0.02254791557788849, 0.05939579755067825, 0.007462567184120417, -94),
    ],
)
def test_requantization_multiplies_by_the_float32_multiplier(
    acc: int, x_scale: float, w_scale: float, y_scale: float, directml: int
) -> None:
    """acc * ((InputScale * FilterScale) / OutputScale) in FLOAT32: (acc * (InputScale * FilterScale))
    / OutputScale and the exact (FLOAT64) value give one less in magnitude on these."""
    f = quantized([1, 1, 1, 1], [1, 1, 1, 1], [1, 1, 1, 1], BiasTensor=tensor("INT32", [1, 1, 1, 1]))
    feeds = {"InputTensor": u8([0], [1, 1, 1, 1]), "FilterTensor": i8([0], [1, 1, 1, 1])}
    feeds |= {"InputScaleTensor": f32(x_scale), "FilterScaleTensor": f32(w_scale), "OutputScaleTensor": f32(y_scale)}
    feeds["BiasTensor"] = np.full([1, 1, 1, 1], acc, np.int32)
    assert every_variant(QL, f, feeds).item() == directml
    s = np.float32
    assert np.rint(s(acc) * (s(x_scale) * s(w_scale)) / s(y_scale)) != directml
    assert np.rint(acc * np.float64(s(x_scale)) * np.float64(s(w_scale)) / np.float64(s(y_scale))) != directml


def test_per_channel_scales_saturation_and_no_zero_points() -> None:
    x = u8([10, 20, 30], [1, 1, 3])
    w = i8([1, 1, -1], [3, 1, 1])
    f = quantized([1, 1, 3], [3, 1, 1], [1, 3, 3], yt="UINT8", per_channel=True)
    feeds = {"InputTensor": x, "FilterTensor": w, "InputScaleTensor": f32(1.0, [1, 1, 1])}
    feeds |= {"FilterScaleTensor": np.array([1, 20, 1], np.float32).reshape(1, 3, 1), "OutputScaleTensor": f32(2.0, [1, 1, 1])}
    got = every_variant(QL, f, feeds)
    # x * w * scale / 2: [5, 10, 15], [100, 200, 300 -> 255], [-5, -10, -15 -> 0]
    assert got.reshape(3, 3).tolist() == [[5, 10, 15], [100, 200, 255], [0, 0, 0]]


# -- refusals ---------------------------------------------------------------------------------------


def _q(**more: Any) -> dict[str, Any]:
    return quantized([1, 2, 4, 4], [3, 2, 3, 3], [1, 3, 2, 2], per_channel=True) | more


@pytest.mark.parametrize(
    ("op", "f", "path", "message"),
    [
        (CI, fields([1, 2, 4, 4], [3, 2, 3, 3], [1, 3, 2, 3]), "desc.OutputTensor.Sizes[3]", "must be 2"),
        (CI, fields([1, 2, 4, 4], [3, 1, 3, 3], [1, 3, 2, 2]), "desc.FilterTensor.Sizes[1]", "must be 2"),
        (CI, fields([1, 4, 4, 4], [3, 2, 3, 3], [1, 3, 2, 2], GroupCount=2), "desc.OutputTensor.Sizes[1]", "not divisible"),
        (
            CI,
            fields([1, 2, 4, 4], [3, 2, 3, 3], [1, 3, 2, 2], DimensionCount=1, Strides=[1], Dilations=[1])
            | {"StartPadding": [0], "EndPadding": [0]},
            "desc.DimensionCount",
            "must be 2",
        ),
        (CI, fields([1, 2, 4, 4], [3, 2, 3, 3], [1, 3, 2, 2], Strides=[1, 0]), "desc.Strides[1]", "at least 1"),
        (
            CI,
            fields([1, 2, 4, 4], [3, 2, 3, 3], [1, 3, 2, 2], InputZeroPointTensor=tensor("INT8", [1, 1, 1, 1])),
            "desc.InputZeroPointTensor.DataType",
            "same DataType",
        ),
        (
            CI,
            fields([1, 2, 4, 4], [3, 2, 3, 3], [1, 3, 2, 2], InputZeroPointTensor=tensor("UINT8", [1, 2, 1, 1])),
            "desc.InputZeroPointTensor.Sizes[1]",
            "must be 1",
        ),
        (
            CI,  # {M}: DirectML refuses a 1-D per-channel zero point
            fields([1, 2, 4, 4], [3, 2, 3, 3], [1, 3, 2, 2], FilterZeroPointTensor=tensor("INT8", [3])),
            "desc.FilterZeroPointTensor.Sizes[0]",
            "must be 1",
        ),
        (
            CI,  # the page: the zero points have the same DimensionCount
            fields(
                [1, 2, 4, 4],
                [3, 2, 3, 3],
                [1, 3, 2, 2],
                InputZeroPointTensor=tensor("UINT8", [1]),
                FilterZeroPointTensor=tensor("INT8", [1, 3, 1, 1]),
            ),
            "desc.FilterZeroPointTensor.Sizes",
            "same DimensionCount",
        ),
        (CI, fields([1, 2, 4, 4], [3, 2, 3], [1, 3, 2, 2]), "desc.FilterTensor.Sizes", "same DimensionCount"),
        (QL, _q(BiasTensor=tensor("INT32", [1, 3, 1, 2])), "desc.BiasTensor.Sizes[3]", "must be 1"),
        (QL, _q(OutputZeroPointTensor=tensor("UINT8", [1, 1, 1, 1])), "desc.OutputZeroPointTensor.DataType", "same DataType"),
        (QL, _q(InputScaleTensor=tensor("FLOAT32", [1, 2, 1, 1])), "desc.InputScaleTensor.Sizes[1]", "must be 1"),
        (
            QL,  # DirectML: a zero point has its scale's sizes
            _q(FilterZeroPointTensor=tensor("INT8", [1, 1, 1, 1])),
            "desc.FilterZeroPointTensor.Sizes",
            "FilterScaleTensor's Sizes",
        ),
        (
            QL,
            _q(InputZeroPointTensor=tensor("UINT8", [1])),
            "desc.InputZeroPointTensor.Sizes",
            "InputScaleTensor's Sizes",
        ),
    ],
)
def test_refusals(op: str, f: dict[str, Any], path: str, message: str) -> None:
    e = refusal(op, f)
    assert format_path(e.path) == path, str(e)
    assert message in e.rule, e.rule


def test_feature_levels_refuse_3d_tensors_before_4_0() -> None:
    e = refusal(CI, fields([1, 1, 5], [1, 1, 3], [1, 1, 3]), level="2_1")
    assert "InputTensor" in format_path(e.path)


# -- candidates and targets -------------------------------------------------------------------------


def test_float32_applies_only_while_its_sums_stay_exact() -> None:
    short = make_desc(CI, fields([1, 28, 3, 3], [1, 28, 3, 3], [1, 1, 1, 1]))  # K = 252, 252 * 255 * 128 < 2**24
    assert choices.available(short, DEFAULT_OPSET, "portable") == ("float32", "split", "integer")
    zero = {"InputZeroPointTensor": tensor("UINT8", [1, 1, 1, 1]), "FilterZeroPointTensor": tensor("INT8", [1, 1, 1, 1])}
    centred = make_desc(CI, fields([1, 29, 3, 3], [1, 29, 3, 3], [1, 1, 1, 1], **zero))  # K = 261 > 258
    assert choices.available(centred, DEFAULT_OPSET, "portable") == ("split", "integer")


def test_integer_applies_below_k_2_17() -> None:
    """ "integer": K * 128 * 128 < 2**31 (the INT8 GEMM's sums) and K * 128 < 2**24 (the FLOAT32
    window sums) below K = 2**17."""
    longest = make_desc(CI, fields([1, 511, 256], [1, 511, 256], [1, 1, 1]))  # K = 2**17 - 256
    assert convolution_integer.applies(longest, "integer", DEFAULT_OPSET)
    assert not convolution_integer.applies(make_desc(CI, fields([1, 512, 256], [1, 512, 256], [1, 1, 1])), "integer", 17)
    # one Slice per kernel tap: 256 at most
    assert convolution_integer.applies(make_desc(CI, fields([1, 1, 16, 16], [1, 1, 16, 16], [1, 1, 1, 1])), "integer", 17)
    assert not convolution_integer.applies(make_desc(CI, fields([1, 1, 16, 17], [1, 1, 16, 17], [1, 1, 1, 1])), "integer", 17)


@pytest.mark.parametrize(
    ("xt", "wt", "zero", "nodes"),
    [
        # INT8 x INT8 without zero points or padding, K = 8, N * positions = 4: the taps, W as rows
        ("INT8", "INT8", False, ["Transpose", "Reshape", "Slice", "Reshape", "Slice", "Reshape", "Concat", "Reshape", "Reshape"]),
        ("UINT8", "INT8", True, None),
    ],
)
def test_integer_graph(xt: str, wt: str, zero: bool, nodes: list[str] | None) -> None:
    """The "integer" graph: one strided Slice per kernel tap of the INT8 input, one MatMulInteger
    (INT8 x INT8, no zero points passed), and the offsets' corrections only where they are not 0."""
    f = fields([2, 4, 1, 3], [2, 4, 1, 2], [2, 2, 1, 2], xt=xt, wt=wt)
    if zero:
        f |= {"InputZeroPointTensor": tensor(xt, [1, 1, 1, 1]), "FilterZeroPointTensor": tensor(wt, [1, 2, 1, 1])}
    model = lowering.lower(make_desc(CI, f), "t", variant="integer")
    ops = [n.op_type for n in model.graph.node]
    matmul = [n for n in model.graph.node if n.op_type == "MatMulInteger"]
    assert len(matmul) == 1 and len(matmul[0].input) == 2
    if nodes is not None:
        assert ops == [*nodes, "MatMulInteger", "Reshape", "Transpose", "Reshape"], ops
    else:
        assert {"Conv", "ReduceSum", "Mul", "Sub"} <= set(ops), ops


def test_split_sums_long_kernels_in_chunks() -> None:
    # one channel's kernel of 300 x 300 = 90000 > 65536 products: chunks of kernel rows
    rng = np.random.default_rng(1)
    x, w = rng.integers(0, 256, [1, 1, 302, 300]).astype(np.uint8), rng.integers(-128, 128, [1, 1, 300, 300]).astype(np.int8)
    f = fields([1, 1, 302, 300], [1, 1, 300, 300], [1, 1, 3, 1])
    desc = make_desc(CI, f)
    model = lowering.lower(desc, "t", variant="split")
    assert sum(n.op_type == "Conv" for n in model.graph.node) == 8  # 2 chunks of 4 Convs
    got = runtime.create(model, "t", "cpu").run({"InputTensor": x, "FilterTensor": w})
    assert got.tobytes() == convolution_integer.reference(desc, {"InputTensor": x, "FilterTensor": w}).tobytes()


@pytest.mark.parametrize(("op", "node"), [(CI, "ConvInteger"), (QL, "QLinearConv")])
def test_dml_target_emits_the_directml_ep_nodes(op: str, node: str) -> None:
    f = fields([1, 2, 4, 4], [3, 2, 3, 3], [1, 3, 2, 2]) if op == CI else _q()
    desc = make_desc(op, f)
    dml = lowering.lower(desc, "t", target="dml")
    assert node in [n.op_type for n in dml.graph.node] and dml_ep.check(dml) == []
    portable = lowering.lower(desc, "t")
    assert node not in [n.op_type for n in portable.graph.node]  # the CUDA EP has neither


# -- DirectML's own API -----------------------------------------------------------------------------


@live
@pytest.mark.parametrize(
    ("zero", "sizes", "accepted"),
    [
        ("FilterZeroPointTensor", [1, 3, 1, 1], True),
        ("FilterZeroPointTensor", [1, 1, 1, 1], False),  # per-channel scale, per-tensor zero point
        ("InputZeroPointTensor", [1], False),  # {1} beside InputScaleTensor {1, 1, 1, 1}
    ],
)
def test_directml_refuses_zero_points_without_their_scales_sizes(zero: str, sizes: list[int], accepted: bool) -> None:
    """Pins the rule validate() adds where the page is silent (DirectML: E_INVALIDARG)."""
    from dml2onnx.backends import winhost
    from dml2onnx.backends.dmlapi import DmlApiError
    from dml2onnx.core.desc import parse_operator_desc

    t = "INT8" if zero.startswith("Filter") else "UINT8"
    desc = parse_operator_desc(QL, _q(**{zero: tensor(t, sizes)}), ("desc",), ("type",))
    rng = np.random.default_rng(2)
    feeds = {
        "InputTensor": rng.integers(0, 256, [1, 2, 4, 4]).astype(np.uint8),
        "FilterTensor": rng.integers(-128, 128, [3, 2, 3, 3]).astype(np.int8),
        "InputScaleTensor": f32(0.1),
        "FilterScaleTensor": f32(0.1, [1, 3, 1, 1]),
        "OutputScaleTensor": f32(4.0),
        zero: np.ones(sizes, np.int8 if t == "INT8" else np.uint8),
    }
    try:
        if accepted:
            got = dmlapi.execute(desc, feeds).output
            assert got.tobytes() == convolution_integer.reference(desc, feeds).tobytes()
        else:
            with pytest.raises(DmlApiError, match="E_INVALIDARG"):
                dmlapi.execute(desc, feeds)
            assert refusal(QL, _q(**{zero: tensor(t, sizes)})).path
    finally:
        winhost.shutdown()


# -- properties -------------------------------------------------------------------------------------


@st.composite
def geometries(draw: st.DrawFn) -> dict[str, Any]:
    dims = draw(st.integers(1, 2))
    groups = draw(st.integers(1, 3))
    c, m = groups * draw(st.integers(1, 3)), groups * draw(st.integers(1, 2))
    spatial, kernel, strides, dilations, start, end, out = [], [], [], [], [], [], []
    for _ in range(dims):
        k, d, s = draw(st.integers(1, 3)), draw(st.integers(1, 2)), draw(st.integers(1, 3))
        p0, p1 = draw(st.integers(0, 3)), draw(st.integers(0, 3))
        n = draw(st.integers(max(1, (k - 1) * d + 1 - p0 - p1), 7))
        spatial.append(n), kernel.append(k), strides.append(s), dilations.append(d), start.append(p0), end.append(p1)
        out.append((n + p0 + p1 - ((k - 1) * d + 1)) // s + 1)
    batch = draw(st.integers(1, 2))
    return {
        "x": [batch, c, *spatial],
        "w": [m, c // groups, *kernel],
        "y": [batch, m, *out],
        "Strides": strides,
        "Dilations": dilations,
        "StartPadding": start,
        "EndPadding": end,
        "GroupCount": groups,
    }


def _ints(rng: np.random.Generator, t: str, shape: list[int]) -> np.ndarray:
    return rng.integers(-128, 128, shape).astype(np.int8) if t == "INT8" else rng.integers(0, 256, shape).astype(np.uint8)


@EPS
@SETTINGS
@given(
    g=geometries(),
    types=st.tuples(*(st.sampled_from(["INT8", "UINT8"]),) * 3),
    op=st.sampled_from([CI, QL]),
    zero_points=st.sampled_from(["none", "tensor", "channel"]),
    seed=SEEDS,
)
def test_matches_reference(ep: str, g: dict[str, Any], types: tuple[str, str, str], op: str, zero_points: str, seed: int) -> None:
    rng = np.random.default_rng(seed)
    xt, wt, yt = types
    x, w, y = g.pop("x"), g.pop("w"), g.pop("y")
    rank, m = len(x), w[0]
    params = [1] * rank if zero_points != "channel" else [1, m] + [1] * (rank - 2)
    f = fields(x, w, y, xt=xt, wt=wt, **g)
    feeds = {"InputTensor": _ints(rng, xt, x), "FilterTensor": _ints(rng, wt, w)}
    if zero_points != "none":
        f |= {"InputZeroPointTensor": tensor(xt, [1] * rank), "FilterZeroPointTensor": tensor(wt, params)}
        feeds |= {"InputZeroPointTensor": _ints(rng, xt, [1] * rank), "FilterZeroPointTensor": _ints(rng, wt, params)}
    if op == QL:
        one = [1] * rank
        f |= {
            "OutputTensor": tensor(yt, y),
            "InputScaleTensor": tensor("FLOAT32", one),
            "OutputScaleTensor": tensor("FLOAT32", one),
        }
        f |= {"FilterScaleTensor": tensor("FLOAT32", params), "OutputZeroPointTensor": tensor(yt, one)}
        f["BiasTensor"] = tensor("INT32", [1, m] + [1] * (rank - 2))
        feeds |= {"InputScaleTensor": f32(rng.uniform(0.01, 0.1), one), "OutputScaleTensor": f32(rng.uniform(0.5, 8), one)}
        feeds |= {
            "FilterScaleTensor": rng.uniform(0.01, 0.1, params).astype(np.float32),
            "OutputZeroPointTensor": _ints(rng, yt, one),
        }
        feeds["BiasTensor"] = rng.integers(-3000, 3000, [1, m] + [1] * (rank - 2)).astype(np.int32)
    desc = make_desc(op, f)
    want = convolution_integer.reference(desc, feeds)
    for variant in choices.available(desc, DEFAULT_OPSET, "portable"):
        got = runtime.create(lowering.lower(desc, "t", variant=variant), "t", ep).run(feeds)
        assert got.tobytes() == want.tobytes(), variant
