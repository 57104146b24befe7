"""DML_OPERATOR_ROI_ALIGN_GRAD: the backpropagation of ROI_ALIGN1 (roi.py). InputGradientTensor has
the forward's output sizes [NumROIs, C, OutputHeight, OutputWidth], OutputGradientTensor its input
sizes [N, C, H, W]; ROITensor [NumROIs, 4] and BatchIndicesTensor [NumROIs] (UINT32) are the
forward's; the fields are ROI_ALIGN1's but OutOfBoundsInputValue (0 here). InputTensor, the
forward's input, is optional; so are both outputs, OutputGradientTensor and OutputROIGradientTensor.

What DirectML's own API computed (1.24.4 under Wine: random cases of 3 regions over 2 batches,
both interpolations, offsets (0.5, -0.5), (0, 0) with AlignRegionsToCorners, (0.25, 0.5) and
(0.5, 0), samples 1..1, 2..4, 3..3 and 1..UINT32_MAX, FLOAT32 within 1e-6, FLOAT16 within its
tolerance: the 64 cases of tests/matrix_roi_align_grad.py, and 128 with +-inf and NaN gradients):
OutputGradientTensor is the exact adjoint of ROI_ALIGN1 with the same fields and
OutOfBoundsInputValue 0: each element of InputGradientTensor is added into the input elements its
output element read, with the weights it read them by (LINEAR: the bilinear weights of each sample;
NEAREST_NEIGHBOR: 1 on floor(x + 0.5)), divided by the k_y * k_x samples; an out-of-bounds sample
reads nothing and so receives nothing. The page's example reproduces with InputPixelOffset 0.5,
OutputPixelOffset 0 and no AlignRegionsToCorners (models/roi_align_grad.json).
InputTensor changes nothing in OutputGradientTensor (the forward's input is needed only by MAX and
the ROI gradient, both refused); DirectML's API given an InputTensor with OutputGradientTensor alone
returned garbage (4e8) and then DXGI_ERROR_DEVICE_REMOVED for every later call of the host, so the
matrix leaves InputTensor out and tests/test_roi_align_grad.py covers it on the graphs.

Refused (exit 2 at the field's path), because their results are not pinned down:
- a set OutputROIGradientTensor. DirectML's is not the derivative with respect to the ROI: on a
  linear test image it follows the page's pseudo-code with inputWidth/inputHeight = InputTensor's
  W and H and a coordinate term of output index x W / (OutputWidth x samples per output), averaged
  over the samples, independent of SpatialScale and the pixel offsets, with floor and floor + 1
  where the pseudo-code says ceil at integer sample positions; non-linear images, MAX,
  out-of-bounds samples, channels and batches are not settled;
- ReductionFunction MAX: DirectML gives the chosen sample's interpolation weights (out-of-bounds
  samples count as 0 in the maximum), but which sample it chooses among equal values was not
  measured, and the lowering of the forward's per-sample values is not shared from roi.py yet.
Also refused: no output set (nothing to compute), and the page's rules: the tensors' one data type,
InputGradientTensor [NumROIs, C, OH, OW] against ROITensor and OutputGradientTensor, InputTensor
(when set) with OutputGradientTensor's sizes, MinimumSamplesPerOutput at least 1 and
MaximumSamplesPerOutput at least it (as ROI_ALIGN1).

The lowering ("matmul"): AVERAGE is separable. roi._Axis, given the forward ROI_ALIGN1 desc, gives
each axis's enumerated samples (in-bounds flags, neighbour indices and weights, k) as [R, O, J];
one-hot comparisons with the axis's positions, weighted and summed over J, make weight matrices
Wy [R, OH, H] and Wx [R, OW, W]; MatMul(Wy^T, MatMul(g, Wx)) / (k_y k_x) is each region's
gradient [R, C, H, W], and MatMul with the one-hot [N, R] of the batch indices (clamped to
[0, N - 1], as the forward) adds the regions of each batch. FLOAT32 arithmetic (FLOAT16 through
FLOAT32). MatMul, Equal, Where, ReduceSum run on FLOAT32 on the CPU, CUDA and DirectML EPs, so
every target takes this graph (the DirectML EP has no ONNX node that maps onto ROI_ALIGN_GRAD).
Non-finite gradients, as DirectML's API computed them (page silent; tests/test_roi_align_grad.py
pins them): LINEAR multiplies both neighbours floor(x) and min(floor(x) + 1, size - 1) of a sample
coordinate x within [0, size - 1] (either axis), the second by 0 at an integer x, so 0 * inf puts
NaN there (at x = size - 1 on the edge element itself); a coordinate outside [0, size - 1] (still in
bounds) reads the edge element alone; +inf and -inf meeting give NaN. A MatMul by the weights
would instead put NaN on every element of the region's rows and columns (0 * inf): the graph sends
the gradient through the MatMuls with its non-finite elements as 0, then two more passes of 0/1
matrices mark where each kind lands: +inf, -inf and NaN flags (Concat on the channels) through the
taps of weight > 0, and any non-finite value through the taps of weight 0 (Zy by every tap of x,
every tap of y by Zx): +inf or -inf there, NaN where a NaN, both infinities or a weight-0 tap
arrives. IsInf, IsNaN, Concat, Slice, Where are registered on the three EPs.
"""

from __future__ import annotations

import numpy as np

from .. import dtypes, operator_table
from ..builder import GraphBuilder
from ..desc import OperatorDesc
from ..errors import ModelError
from ..schema import OperatorSchema
from . import common, roi
from .roi import F32

CANDIDATES = ("matmul",)  # choices.py: one lowering
IN, OUT, X = "InputGradientTensor", "OutputGradientTensor", "InputTensor"
FORWARD_FIELDS = (
    *("ReductionFunction", "InterpolationMode", "SpatialScaleX", "SpatialScaleY", "InputPixelOffset"),
    *("OutputPixelOffset", "MinimumSamplesPerOutput", "MaximumSamplesPerOutput", "AlignRegionsToCorners"),
)


def forward(desc: OperatorDesc) -> OperatorDesc:
    """The ROI_ALIGN1 desc whose adjoint this is: OutputGradientTensor's sizes in, InputGradientTensor's out."""
    values = {name: desc[name] for name in FORWARD_FIELDS}
    values |= {
        "InputTensor": desc.tensor(OUT),
        "ROITensor": desc.tensor("ROITensor"),
        "BatchIndicesTensor": desc.tensor("BatchIndicesTensor"),
        "OutputTensor": desc.tensor(IN),
        "OutOfBoundsInputValue": 0.0,
    }
    return OperatorDesc(operator_table.OPERATORS["ROI_ALIGN1"], values, desc.path, desc.source, desc.level)


# -- validation -------------------------------------------------------------------------------


def validate(desc: OperatorDesc) -> None:
    if desc["OutputROIGradientTensor"] is not None:
        raise ModelError(
            desc.at("OutputROIGradientTensor"),
            "is not lowered: DirectML's ROI gradient is not the derivative and is not pinned down (ops/roi_align_grad.py)",
        )
    if desc[OUT] is None:
        raise ModelError(desc.at(OUT), "must be set: no output to compute")
    for name in (X, "ROITensor", OUT):
        common.check_same_type(desc, name, IN)
    if desc["ReductionFunction"] not in ("AVERAGE", "MAX"):
        raise ModelError(desc.at("ReductionFunction"), f"must be AVERAGE or MAX, not {desc['ReductionFunction']}")
    if desc["ReductionFunction"] == "MAX":
        raise ModelError(
            desc.at("ReductionFunction"), "MAX is not lowered: DirectML's choice among equal samples is not measured"
        )
    g, out, rois = desc.tensor(IN), desc.tensor(OUT), desc.tensor("ROITensor")
    x = desc.optional_tensor(X)
    if x is not None and x.sizes != out.sizes:
        raise ModelError(desc.at(X, "Sizes"), f"must be {OUT}'s sizes {list(out.sizes)}, not {list(x.sizes)}")
    if rois.sizes[-1] != 4 or any(s != 1 for s in rois.sizes[:-2]):
        raise ModelError(desc.at("ROITensor", "Sizes"), f"must be [NumROIs, 4] (leading 1s allowed), not {list(rois.sizes)}")
    count = rois.sizes[-2]
    if g.sizes[0] != count:
        raise ModelError(desc.at(IN, "Sizes", 0), f"must be NumROIs ({count}: ROITensor's rows), not {g.sizes[0]}")
    if g.sizes[1] != out.sizes[1]:
        raise ModelError(desc.at(IN, "Sizes", 1), f"must be {OUT}'s ChannelCount ({out.sizes[1]}), not {g.sizes[1]}")
    indices = desc.tensor("BatchIndicesTensor")
    if indices.sizes[-1] != count or any(s != 1 for s in indices.sizes[:-1]):
        raise ModelError(
            desc.at("BatchIndicesTensor", "Sizes"), f"must be [NumROIs] ({count}), leading 1s allowed, not {list(indices.sizes)}"
        )
    low, high = desc["MinimumSamplesPerOutput"], desc["MaximumSamplesPerOutput"]
    if low < 1:
        raise ModelError(desc.at("MinimumSamplesPerOutput"), "must be 1 or more (DirectML refuses 0)")
    if high < low:
        raise ModelError(desc.at("MaximumSamplesPerOutput"), f"must be at least MinimumSamplesPerOutput ({low}), not {high}")


# -- lowering ---------------------------------------------------------------------------------


def _on_positions(b: GraphBuilder, taps: list[tuple[str, str]], size: int, tag: str) -> str:
    """[R, O, size]: each (index, weight) tap's [R, O, J] weight put on its position, summed over J and taps."""
    positions = b.i64(np.arange(size).reshape(1, 1, 1, size), f"{tag}_positions")
    parts = []
    for i, (index, weight) in enumerate(taps):
        index4 = b.node("Unsqueeze", [index, b.i64([3], f"{tag}_axis_{i}")], f"{tag}_index4_{i}", "[R, O, J, 1]")
        hit = b.node("Equal", [index4, positions], f"{tag}_hit_{i}", "one-hot")
        w4 = b.node("Unsqueeze", [weight, b.i64([3], f"{tag}_axis_w_{i}")], f"{tag}_w4_{i}", "[R, O, J, 1]")
        parts.append(b.node("Where", [hit, w4, b.scalar(0.0, F32, f"{tag}_zero_{i}")], f"{tag}_tap_{i}", "on its position"))
    total = parts[0] if len(parts) == 1 else b.node("Add", parts, f"{tag}_taps", "both neighbours")
    return b.reduce("ReduceSum", total, [2], f"{tag}_matrix", "summed over the samples: [R, O, size]", keepdims=False)


def _flag(b: GraphBuilder, v: str, tag: str) -> str:
    return b.cast(v, F32, f"{tag}_f", "1 where true")


class _Matrices:
    """One axis's [R, O, size] matrices: the weights, 1 where a tap of weight > 0 lands (`taps`), and
    1 where a tap of weight 0 that DirectML applies lands (`zero_taps`: LINEAR at a coordinate within
    [0, size - 1] multiplies both neighbours, the second with weight 0 at an integer coordinate)."""

    def __init__(self, b: GraphBuilder, axis: roi._Axis, size: int, name: str) -> None:
        inb = _flag(b, axis.inb, f"{name}_inb")
        if not axis.weights:  # NEAREST_NEIGHBOR: weight 1 on one element
            self.weights = self.taps = _on_positions(b, [(axis.indices[0], inb)], size, f"{name}_w")
            self.zero_taps: str | None = None
            return
        ws = [b.node("Mul", [w, inb], f"{name}_w_{i}", "weight, 0 out of bounds") for i, w in enumerate(axis.weights)]
        self.weights = _on_positions(b, list(zip(axis.indices, ws, strict=True)), size, f"{name}_w")
        zero = b.scalar(0.0, F32, f"{name}_zero")
        positive = [
            _flag(b, b.node("Greater", [w, zero], f"{name}_pos_{i}", "weight > 0"), f"{name}_pos_{i}") for i, w in enumerate(ws)
        ]
        self.taps = _on_positions(b, list(zip(axis.indices, positive, strict=True)), size, f"{name}_p")
        # the sample's coordinate before clamping: the input of roi._Axis's Clip into [0, size - 1]
        pos = next(n.input[0] for n in reversed(b.nodes) if n.name == f"{b.prefix}/{name}_clamped")
        applied = b.node(
            "And",
            [
                axis.inb,
                b.node(
                    "And",
                    [
                        b.node("GreaterOrEqual", [pos, zero], f"{name}_from_0", "x >= 0"),
                        b.node(
                            "LessOrEqual", [pos, b.scalar(size - 1.0, F32, f"{name}_last")], f"{name}_to_last", "x <= size - 1"
                        ),
                    ],
                    f"{name}_inside",
                    "within [0, size - 1]",
                ),
            ],
            f"{name}_applied",
            "both neighbours multiplied",
        )
        zeros = [
            _flag(
                b,
                b.node(
                    "And",
                    [applied, b.node("Equal", [w, zero], f"{name}_is_zero_{i}", "weight 0")],
                    f"{name}_zero_tap_{i}",
                    "applied with weight 0",
                ),
                f"{name}_zt_{i}",
            )
            for i, w in enumerate(axis.weights)
        ]
        self.zero_taps = _on_positions(b, list(zip(axis.indices, zeros, strict=True)), size, f"{name}_z")


def lower(desc: OperatorDesc, b: GraphBuilder, inputs: dict[str, str]) -> str:
    fwd = forward(desc)
    dtype = desc.tensor(IN).data_type
    n, c, h, w = desc.tensor(OUT).sizes
    r, _, oh, ow = desc.tensor(IN).sizes
    rois = roi._f32(b, b.reshape(inputs["ROITensor"], [r, 4], "rois", "the [NumROIs, 4] rows"), dtype, "rois")
    batch = b.reshape(b.cast(inputs["BatchIndicesTensor"], dtypes.INT64, "batch_int64", "INT64"), [1, r], "batch", "[1, R]")
    batch = roi._batch_rows(b, batch, n, "batch_clamped")
    ys, xs = roi._Axis(fwd, b, rois, 0), roi._Axis(fwd, b, rois, 1)
    my, mx = _Matrices(b, ys, h, "y"), _Matrices(b, xs, w, "x")
    g = roi._f32(b, inputs[IN], dtype, IN)
    k = b.reshape(b.node("Mul", [ys.k, xs.k], "k_total", "k_y * k_x"), [r, 1, 1, 1], "k_4d", "[R, 1, 1, 1]")
    owner = b.node("Equal", [b.i64(np.arange(n).reshape(n, 1), "batches"), batch], "owner", "region r of batch n: [N, R]")
    onehot = b.cast(owner, F32, "owner_f", "one-hot [N, R]")

    def spread(v: str, wy: str, wx: str, channels: int, tag: str) -> str:
        """[R, channels, OH, OW] through the weights onto [N, channels, H, W]."""
        along_x = b.node("MatMul", [v, b.reshape(wx, [r, 1, ow, w], f"{tag}_wx", "[R, 1, OW, W]")], f"{tag}_x", "[R, C, OH, W]")
        wy_t = b.reshape(b.transpose(wy, [0, 2, 1], f"{tag}_wy_t", "[R, H, OH]"), [r, 1, h, oh], f"{tag}_wy", "[R, 1, H, OH]")
        region = b.node("MatMul", [wy_t, along_x], f"{tag}_y", "each region's [R, C, H, W]")
        if tag == "finite":
            region = b.node("Div", [region, k], "average", "/ the k_y * k_x samples")
        rows = b.reshape(region, [r, channels * h * w], f"{tag}_rows", "[R, C * H * W]")
        return b.reshape(
            b.node("MatMul", [onehot, rows], f"{tag}_batches", "each batch's regions added"),
            [n, channels, h, w],
            f"{tag}_out",
            "[N, C, H, W]",
        )

    # finite gradients through the weights; a non-finite one reaches only the elements it has weight in
    inf = b.node("IsInf", [g], "is_inf", "+-inf")
    nan = b.node("IsNaN", [g], "is_nan", "NaN")
    bad = b.node("Or", [inf, nan], "non_finite", "inf or NaN")
    y = spread(
        b.node("Where", [bad, b.scalar(0.0, F32, "zero"), g], "finite_g", "non-finite as 0"), my.weights, mx.weights, c, "finite"
    )
    kinds = [
        b.node("IsInf", [g], f"is_{s}", f"{s}", detect_positive=int(s == "pos"), detect_negative=int(s == "neg"))
        for s in ("pos", "neg")
    ]
    flags = b.node(
        "Concat",
        [b.cast(v, F32, f"flag_{i}", "1 where so") for i, v in enumerate([*kinds, nan])],
        "flags",
        "[R, 3C, OH, OW]",
        axis=1,
    )
    hits = b.node(
        "Greater",
        [spread(flags, my.taps, mx.taps, 3 * c, "flags"), b.scalar(0.0, F32, "hit_zero")],
        "hits",
        "reached by a non-finite value",
    )
    pos, neg, nans = (
        b.slice(hits, [1], [i * c], [(i + 1) * c], f"hit_{t}", f"reached by {t}")
        for i, t in enumerate(("pos_inf", "neg_inf", "nan"))
    )
    nan_out = b.node("Or", [nans, b.node("And", [pos, neg], "both_inf", "+inf and -inf")], "nan_out", "NaN")
    if my.zero_taps is not None and mx.zero_taps is not None:  # 0 * inf = NaN on the taps of weight 0
        any_bad = _flag(b, bad, "bad")
        every = [b.node("Max", [m.taps, m.zero_taps], f"{t}_every_tap", "any applied tap") for m, t in ((my, "y"), (mx, "x"))]
        zero_hit = b.node(
            "Add",
            [spread(any_bad, my.zero_taps, every[1], c, "zero_y"), spread(any_bad, every[0], mx.zero_taps, c, "zero_x")],
            "zero_hits",
            "a weight-0 tap of a non-finite value",
        )
        nan_out = b.node(
            "Or",
            [nan_out, b.node("Greater", [zero_hit, b.scalar(0.0, F32, "zero_hit_zero")], "zero_nan", "0 * inf")],
            "nan_out_zero",
            "NaN",
        )
    y = b.node("Where", [neg, b.scalar(-np.inf, F32, "minus_inf"), y], "with_neg_inf", "-inf")
    y = b.node("Where", [pos, b.scalar(np.inf, F32, "plus_inf"), y], "with_pos_inf", "+inf")
    y = b.node("Where", [nan_out, b.scalar(np.nan, F32, "nan_value"), y], "with_nan", "NaN")
    return b.cast(y, dtype, "to_output_type", f"in {dtype}") if dtype != F32 else y


# -- reference --------------------------------------------------------------------------------


def _matrices(desc: OperatorDesc, positions: np.ndarray, k: int, outs: int, size: int) -> tuple[np.ndarray, ...]:
    """[outs, size] each: the samples' weights on the input positions (roi._interpolate's), where a tap
    of weight > 0 lands, and where a tap of weight 0 that DirectML applies lands (_Matrices)."""
    if roi._field(desc, "AlignRegionsToCorners"):
        inb = (positions >= 0) & (positions <= size - 1)
    else:
        inb = (positions > -1) & (positions < size)
    p = np.clip(positions, 0, size - 1)
    rows = np.arange(len(positions))
    if desc["InterpolationMode"] == "NEAREST_NEIGHBOR":
        taps = [(np.minimum(np.floor(p + np.float32(0.5)), size - 1).astype(np.int64), np.ones(len(p)))]
    else:
        lo = np.floor(p).astype(np.int64)
        frac = (p - lo).astype(np.float64)
        taps = [(lo, 1 - frac), (np.minimum(lo + 1, size - 1), frac)]
    applied = inb & (positions >= 0) & (positions <= size - 1) & (desc["InterpolationMode"] == "LINEAR")
    out = np.zeros((3, len(positions), size))
    for index, weight in taps:
        np.add.at(out[0], (rows, index), weight * inb)
        np.add.at(out[1], (rows, index), (weight > 0) & inb)
        np.add.at(out[2], (rows, index), (weight == 0) & applied)
    return tuple(m.reshape(outs, k, size).sum(axis=1) for m in out)


def reference(desc: OperatorDesc, inputs: dict[str, np.ndarray]) -> np.ndarray:
    fwd = forward(desc)
    g = inputs[IN].astype(np.float64)
    n, c, h, w = desc.tensor(OUT).sizes
    r, _, oh, ow = g.shape
    rois = inputs["ROITensor"].reshape(r, 4).astype(np.float32)
    batches = inputs["BatchIndicesTensor"].reshape(r)
    out = np.zeros((n, c, h, w))
    hits = np.zeros((3, n, c, h, w), bool)  # reached by +inf, -inf, NaN
    zero = np.zeros((n, c, h, w), bool)  # reached by a non-finite value's tap of weight 0
    flags = np.stack([np.isposinf(g), np.isneginf(g), np.isnan(g)])
    finite = np.where(flags.any(axis=0), 0, g)
    for i in range(r):
        x1, y1, x2, y2 = rois[i]
        xs, kx = roi._positions(fwd, x1, x2, ow, "X")
        ys, ky = roi._positions(fwd, y1, y2, oh, "Y")
        (wy, py, zy), (wx, px, zx) = _matrices(fwd, ys, ky, oh, h), _matrices(fwd, xs, kx, ow, w)
        batch = min(int(batches[i]), n - 1)
        out[batch] += np.einsum("yh,xw,cyx->chw", wy, wx, finite[i]) / (ky * kx)
        hits[:, batch] |= np.einsum("yh,xw,kcyx->kchw", py > 0, px > 0, flags[:, i]) > 0
        bad = flags[:, i].any(axis=0)
        ay, ax = (py + zy) > 0, (px + zx) > 0
        zero[batch] |= np.einsum("yh,xw,cyx->chw", zy > 0, ax, bad) + np.einsum("yh,xw,cyx->chw", ay, zx > 0, bad) > 0
    out = np.where(hits[1], -np.inf, out)
    out = np.where(hits[0], np.inf, out)
    out = np.where(hits[2] | (hits[0] & hits[1]) | zero, np.nan, out)
    return out.astype(inputs[IN].dtype)


# -- examples (lowered_ops) -------------------------------------------------------------------


def examples(op: OperatorSchema) -> list[common.Example]:
    """Each data type; both interpolations, with and without InputTensor."""
    out: list[common.Example] = []
    for t in common.example_types(op, IN):
        for mode, with_x in (("LINEAR", True), ("NEAREST_NEIGHBOR", False)):
            desc: common.Example = {
                IN: common.example_tensor(t, [4, 3, 2, 3]),
                "ROITensor": common.example_tensor(t, [4, 4]),
                "BatchIndicesTensor": common.example_tensor("UINT32", [4]),
                OUT: common.example_tensor(t, [2, 3, 6, 5]),
                "ReductionFunction": "AVERAGE",
                "InterpolationMode": mode,
                "SpatialScaleX": 0.5,
                "SpatialScaleY": 0.5,
                "InputPixelOffset": 0.5,
                "OutputPixelOffset": -0.5,
                "MinimumSamplesPerOutput": 1,
                "MaximumSamplesPerOutput": 4,
                "AlignRegionsToCorners": not with_x,
            }
            if with_x:
                desc[X] = common.example_tensor(t, [2, 3, 6, 5])
            out.append(desc)
    return out
