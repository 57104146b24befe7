"""DML_OPERATOR_ROI_ALIGN_GRAD: the backpropagation of ROI_ALIGN1 (roi.py). InputGradientTensor has
the forward's output sizes [NumROIs, C, OutputHeight, OutputWidth], OutputGradientTensor its input
sizes [N, C, H, W]; ROITensor [NumROIs, 4] and BatchIndicesTensor [NumROIs] (UINT32) are the
forward's; the fields are ROI_ALIGN1's but OutOfBoundsInputValue (0 here). InputTensor, the
forward's input, is optional but for MAX and OutputROIGradientTensor; both outputs are optional,
one at least (OutputROIGradientTensor: ROITensor's sizes).

What DirectML's own API computed (1.24.4 under Wine; the page is silent on all of it but the
pseudo-code's outline; DirectML wins): the 160 cases of dml2onnx/cases/roi_align_grad.py (both
reductions, interpolations and data types, offsets (0.5, -0.5), (0, 0) with AlignRegionsToCorners,
(0.25, 0.5) and (0.5, 0), samples 1..1, 2..4, 3..3 and 1..UINT32_MAX, 3 regions over 2 batches,
some partly outside, some inverted), and 3,000 more random ones (+-inf and NaN in the gradients
and the input, regions on exact half-integers, both data types) against this reference:

OutputGradientTensor, AVERAGE: the exact adjoint of ROI_ALIGN1 with the same fields and
OutOfBoundsInputValue 0: each element of InputGradientTensor is added into the input elements its
output element read, with the weights it read them by (LINEAR: the bilinear weights of each sample;
NEAREST_NEIGHBOR: 1 on floor(x + 0.5)), divided by the k_y * k_x samples; an out-of-bounds sample
reads nothing and so receives nothing. The page's example reproduces with InputPixelOffset 0.5,
OutputPixelOffset 0 and no AlignRegionsToCorners (models/roi_align_grad.json). InputTensor changes
nothing here; DirectML's API given an InputTensor with AVERAGE and OutputGradientTensor alone
returned garbage (4e8) and then DXGI_ERROR_DEVICE_REMOVED for every later call of the host (with
OutputROIGradientTensor set too it computes right), so the matrix gives AVERAGE an InputTensor
only with both outputs.

OutputGradientTensor, MAX: each output element's gradient goes, by that sample's own weights, to
one sample: the first, in row-major order of the k_y x k_x samples (y samples outer), of the
largest value strictly above -FLT_MAX (FLOAT16 too: -65504 can be chosen; -inf and -FLT_MAX never
are), NaN skipped; an out-of-bounds sample counts as 0 in that order (so -2 everywhere inside loses
to it, and 0 inside ties with it: the first wins), and then nothing receives the gradient. A
sample's value is computed by lerps, x first: top = TL + fx (TR - TL), bottom likewise, top + fy
(bottom - top), with both neighbours read even at weight 0 (+inf on a neighbour makes the value NaN
unless it is the bottom-right one alone with fx, fy > 0), and a coordinate outside [0, size - 1]
(still in bounds) reads the edge element alone (both neighbours). Values that tie only after
FLOAT32 rounding are not pinned: DirectML's arithmetic rounds them differently (3 of the random
cases, integer inputs at positions in thirds; none with continuous values).

Non-finite gradients (either reduction): LINEAR multiplies both neighbours floor(x) and
min(floor(x) + 1, size - 1) of a sample coordinate x within [0, size - 1] (either axis), the second
by 0 at an integer x, so 0 * inf puts NaN there (at x = size - 1 on the edge element itself) - but
along an axis whose region is inverted (x2 < x1) it skips that weight-0 tap except at size - 1; a
coordinate outside [0, size - 1] (still in bounds) reaches the edge element alone; +inf and -inf
meeting give NaN; MAX's reach its chosen sample's taps only.

OutputROIGradientTensor: the page's pseudo-code, as DirectML computes it. Every in-bounds sample
(MAX: the chosen one, as above) with weight w (AVERAGE g / (k_y k_x), MAX g) adds its image
gradients imageGradX = (1 - fy)(TR - TL) + fy (BR - BL) and imageGradY = (1 - fx)(BL - TL) + fx
(BR - TR) times w, where TL..BR are LINEAR's neighbours of the sample (also with NEAREST_NEIGHBOR:
its ROI gradient is LINEAR's) at floor(x) and floor(x) + 1 (the page's ceil would be floor(x) at an
integer x; min(., size - 1) at the last element), fx, fy the fractions; along an axis whose
coordinate is outside [0, size - 1] both neighbours are the edge element and its second term is
left out (no 0 * inf). Each x term goes W (InputTensor's width; W - 1 with AlignRegionsToCorners)
times (1 - f) to [r][0] and times f to [r][2], f = o / (OutputWidth k_x) with o the output
element's index (the page's inputGradientCoordinate.x, scaled; not the sample's), with
AlignRegionsToCorners o / (OutputWidth k_x - 1) and 1/2 for a single sample; y terms likewise to
[r][1] and [r][3]. SpatialScale and the pixel offsets enter only through the sample positions.
This is not the derivative with respect to the ROI (that would weigh each sample by its own place
in the region and by SpatialScale); the reference and the graph compute DirectML's.

Refused (exit 2 at the field's path): no output set (nothing to compute), and the page's rules: the tensors' one data type,
InputGradientTensor [NumROIs, C, OH, OW] against ROITensor and OutputGradientTensor, InputTensor
(when set) with OutputGradientTensor's sizes and required by MAX and OutputROIGradientTensor,
OutputROIGradientTensor with ROITensor's sizes, MinimumSamplesPerOutput at least 1 and
MaximumSamplesPerOutput at least it (as ROI_ALIGN1).

The lowering ("matmul"): AVERAGE is separable. roi._Axis, given the forward ROI_ALIGN1 desc, gives
each axis's enumerated samples (in-bounds flags, neighbour indices and weights, k, the unclamped
positions and spacing) as [R, O, J]; one-hot comparisons with the axis's positions, weighted and
summed over J, make weight matrices Wy [R, OH, H] and Wx [R, OW, W]; MatMul(Wy^T, MatMul(g, Wx)) /
(k_y k_x) is each region's gradient [R, C, H, W], and MatMul with the one-hot [N, R] of the batch
indices (clamped to [0, N - 1], as the forward) adds the regions of each batch. MAX keeps the J
samples apart (Wy [R, OH * JY, H], Wx [R, OW * JX, W]) and sends g through them from its chosen
sample: Gather on the input as [N * H * W, C] rows at every enumerated sample's four neighbours
([R, OH, JY, OW, JX, C]), the lerps, ReduceMax over the samples of the candidates (in bounds,
> -FLT_MAX), the first of the maxima by ReduceMin of a key jy * JX + jx, and the out-of-bounds 0
against it (any sample out of bounds: count < k per axis; whether one comes first: the sample
t = 0 of either axis, or of x with the chosen row t_y > 0). OutputROIGradientTensor reads the same
neighbours, forms the image gradients, masks them by the in-bounds (MAX: chosen) samples, and
ReduceSums them with the fractions (Concat to [R, 4], reshaped to ROITensor's sizes). FLOAT32
arithmetic (FLOAT16 through FLOAT32). Non-finite gradients in OutputGradientTensor: a MatMul by
the weights would put NaN on every element of the region's rows and columns (0 * inf): the graph
sends the gradient through the MatMuls with its non-finite elements as 0, then two more passes of
0/1 matrices mark where each kind lands: +inf, -inf and NaN flags (Concat on the channels) through
the taps of weight > 0, and any non-finite value through the taps of weight 0 (Zy by every tap of
x, every tap of y by Zx): +inf or -inf there, NaN where a NaN, both infinities or a weight-0 tap
arrives. Every node runs on FLOAT32 (bool, INT64 indices) on the CPU, CUDA and DirectML EPs
(cuda_execution_provider.cc registers MatMul, Gather, ReduceSum/Max/Min, Where, Equal, Greater,
GreaterOrEqual, LessOrEqual, Less, IsInf, IsNaN, Clip, Floor, Concat, Slice, And, Or, Not for
them; the DirectML EP: dml_ep_registry), so every target takes this graph (the DirectML EP has no
ONNX node that maps onto ROI_ALIGN_GRAD).
"""

from __future__ import annotations

import numpy as np

from dml2onnx.core import dtypes
from dml2onnx.core.desc import OperatorDesc
from dml2onnx.core.schema import OperatorSchema
from dml2onnx.graph.builder import GraphBuilder
from dml2onnx.ops import common, roi, roi_reference
from dml2onnx.ops.family import Family
from dml2onnx.ops.roi import F32
from dml2onnx.ops.roi_align_grad_reference import IN, OUT, ROI_OUT, X, forward, reference, validate

CANDIDATES = ("matmul",)  # choices.py: one lowering
# -- lowering ---------------------------------------------------------------------------------


def _on_positions(b: GraphBuilder, taps: list[tuple[str, str]], size: int, tag: str, per_sample: bool) -> str:
    """Each (index, weight) tap's [R, O, J] weight put on its position: [R, O, size] summed over the J
    samples, or [R, O * J, size] per sample."""
    positions = b.i64(np.arange(size).reshape(1, 1, 1, size), f"{tag}_positions")
    parts = []
    for i, (index, weight) in enumerate(taps):
        index4 = b.node("Unsqueeze", [index, b.i64([3], f"{tag}_axis_{i}")], f"{tag}_index4_{i}", "[R, O, J, 1]")
        hit = b.node("Equal", [index4, positions], f"{tag}_hit_{i}", "one-hot")
        w4 = b.node("Unsqueeze", [weight, b.i64([3], f"{tag}_axis_w_{i}")], f"{tag}_w4_{i}", "[R, O, J, 1]")
        parts.append(b.node("Where", [hit, w4, b.scalar(0.0, F32, f"{tag}_zero_{i}")], f"{tag}_tap_{i}", "on its position"))
    total = parts[0] if len(parts) == 1 else b.node("Add", parts, f"{tag}_taps", "both neighbours")
    if per_sample:
        return b.reshape(total, [0, -1, size], f"{tag}_matrix", "per sample: [R, O * J, size]")
    return b.reduce("ReduceSum", total, [2], f"{tag}_matrix", "summed over the samples: [R, O, size]", keepdims=False)


def _within(b: GraphBuilder, pos: str, size: int, tag: str) -> str:
    """x within [0, size - 1]."""
    from_0 = b.node("GreaterOrEqual", [pos, b.scalar(0.0, F32, f"{tag}_first")], f"{tag}_from_0", "x >= 0")
    to_last = b.node("LessOrEqual", [pos, b.scalar(size - 1.0, F32, f"{tag}_last_index")], f"{tag}_to_last", "x <= size - 1")
    return b.node("And", [from_0, to_last], f"{tag}_inside", "within [0, size - 1]")


def _flag(b: GraphBuilder, v: str, tag: str) -> str:
    return b.cast(v, F32, f"{tag}_f", "1 where true")


class _Matrices:
    """One axis's [R, O, size] matrices (MAX: [R, O * J, size], per sample): the weights, 1 where a tap
    of weight > 0 lands (`taps`), and 1 where a tap of weight 0 that DirectML applies lands
    (`zero_taps`: LINEAR at a coordinate within [0, size - 1] multiplies both neighbours, the second
    with weight 0 at an integer coordinate; of an inverted region only at size - 1)."""

    def __init__(self, b: GraphBuilder, axis: roi._Axis, size: int, name: str, per_sample: bool) -> None:
        inb = _flag(b, axis.inb, f"{name}_inb")
        if not axis.weights:  # NEAREST_NEIGHBOR: weight 1 on one element
            self.weights = self.taps = _on_positions(b, [(axis.indices[0], inb)], size, f"{name}_w", per_sample)
            self.zero_taps: str | None = None
            return
        ws = [b.node("Mul", [w, inb], f"{name}_w_{i}", "weight, 0 out of bounds") for i, w in enumerate(axis.weights)]
        self.weights = _on_positions(b, list(zip(axis.indices, ws, strict=True)), size, f"{name}_w", per_sample)
        zero = b.scalar(0.0, F32, f"{name}_zero")
        positive = [
            _flag(b, b.node("Greater", [w, zero], f"{name}_pos_{i}", "weight > 0"), f"{name}_pos_{i}") for i, w in enumerate(ws)
        ]
        self.taps = _on_positions(b, list(zip(axis.indices, positive, strict=True)), size, f"{name}_p", per_sample)
        inside = _within(b, axis.pos, size, name)
        not_inverted = b.node("GreaterOrEqual", [axis.step, zero], f"{name}_not_inverted", "spacing >= 0")
        at_last = b.node("Equal", [axis.pos, b.scalar(size - 1.0, F32, f"{name}_last")], f"{name}_at_last", "x = size - 1")
        forward = b.node("Or", [not_inverted, at_last], f"{name}_forward", "not an inverted region, or the last element")
        applied = b.node(
            "And",
            [axis.inb, b.node("And", [inside, forward], f"{name}_both", "both neighbours")],
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
        self.zero_taps = _on_positions(b, list(zip(axis.indices, zeros, strict=True)), size, f"{name}_z", per_sample)


def _sample_grid(b: GraphBuilder, v: str, shape: list[int], tag: str) -> str:
    return b.reshape(v, shape, tag, f"{shape}")


class _Neighbours:
    """What the samples read, for MAX's choice and the ROI gradient: Gather on the input as
    [N * H * W, C] rows at every enumerated sample's LINEAR neighbours, [R, OH, JY, OW, JX, C] each
    (`corners[(i, j)]`, i and j 0 for the low neighbour, 1 for the high one; outside [0, size - 1]
    both the edge element), the fractions fy [R, OH, JY, 1, 1, 1] and fx [R, 1, 1, OW, JX, 1], and
    NEAREST_NEIGHBOR's element (`nearest`)."""

    def __init__(self, desc: OperatorDesc, b: GraphBuilder, x: str, batch: str, ys: roi._Axis, xs: roi._Axis) -> None:
        n, c, h, w = desc.tensor("InputTensor").sizes
        r, _, oh, ow = desc.tensor("OutputTensor").sizes
        jy, jx = roi.sample_bound(desc, h), roi.sample_bound(desc, w)
        table = b.reshape(b.transpose(x, [0, 2, 3, 1], "nb_nhwc", "channels last"), [n * h * w, c], "nb_rows", "[N * H * W, C]")
        base = b.reshape(
            b.node("Mul", [batch, b.i64(h, "nb_height")], "nb_base", "batch * H"), [r, 1, 1, 1, 1], "nb_base5", "[R, 1, 1, 1, 1]"
        )

        def taps(axis: roi._Axis, size: int, tag: str) -> tuple[list[str], str, str]:
            zero, last = b.scalar(0.0, F32, f"{tag}_zero"), b.scalar(size - 1.0, F32, f"{tag}_last")
            # a NaN position (a NaN ROI coordinate) reads element 0: cast to INT64 it would be an
            # index out of Gather's range
            nan = b.node("IsNaN", [axis.pos], f"{tag}_nan", "a NaN position")
            pos = b.node("Where", [nan, zero, axis.pos], f"{tag}_pos_read", "0 for NaN")
            clamped = b.node("Clip", [pos, zero, last], f"{tag}_clamped", "within [0, size - 1]")
            lo = b.node("Floor", [clamped], f"{tag}_lo", "the low neighbour")
            inside = _within(b, axis.pos, size, tag)
            up = b.node(
                "Min",
                [b.node("Add", [lo, b.scalar(1.0, F32, f"{tag}_one")], f"{tag}_next", "+ 1"), last],
                f"{tag}_up",
                "the second neighbour, clamped to the last",
            )
            hi = b.node("Where", [inside, up, lo], f"{tag}_hi", "the high neighbour (the edge element outside)")
            frac = b.node("Sub", [clamped, lo], f"{tag}_frac", "the fraction")
            indices = [b.cast(v, dtypes.INT64, f"{tag}_{i}_index", "index") for i, v in enumerate((lo, hi))]
            return indices, frac, inside

        (y_taps, fy, inside_y), (x_taps, fx, inside_x) = taps(ys, h, "nb_y"), taps(xs, w, "nb_x")

        def read(yi: str, xi: str, tag: str) -> str:
            row = b.node("Add", [base, _sample_grid(b, yi, [r, oh, jy, 1, 1], f"{tag}_y5")], f"{tag}_row", "batch * H + y")
            index = b.node(
                "Add",
                [
                    b.node("Mul", [row, b.i64(w, f"{tag}_w")], f"{tag}_start", "(batch * H + y) * W"),
                    _sample_grid(b, xi, [r, 1, 1, ow, jx], f"{tag}_x5"),
                ],
                f"{tag}_index",
                "flat row of the neighbour",
            )
            return b.node("Gather", [table, index], tag, "[R, OH, JY, OW, JX, C]", axis=0)

        self.corners = {(i, j): read(y_taps[i], x_taps[j], f"nb_{i}{j}") for i in range(2) for j in range(2)}
        self.fy = _sample_grid(b, fy, [r, oh, jy, 1, 1, 1], "nb_fy")
        self.fx = _sample_grid(b, fx, [r, 1, 1, ow, jx, 1], "nb_fx")
        self.inside_y = _sample_grid(b, inside_y, [r, oh, jy, 1, 1, 1], "nb_inside_y")
        self.inside_x = _sample_grid(b, inside_x, [r, 1, 1, ow, jx, 1], "nb_inside_x")
        self.nearest = read(ys.indices[0], xs.indices[0], "nb_nearest") if not ys.weights else None


def _lerp(b: GraphBuilder, a: str, z: str, f: str, tag: str) -> str:
    step = b.node("Mul", [f, b.node("Sub", [z, a], f"{tag}_diff", "b - a")], f"{tag}_step", "f (b - a)")
    return b.node("Add", [a, step], tag, "a + f (b - a)")


def _max_choice_graph(
    desc: OperatorDesc, b: GraphBuilder, nb: _Neighbours, ys: roi._Axis, xs: roi._Axis, g: str
) -> tuple[str, str]:
    """MAX: [R, C, OH, JY, OW, JX] each output element's gradient on its chosen sample (_max_choice),
    0 elsewhere, and the chosen samples. The samples' values as DirectML compares them
    (_sample_values: lerps, x first); the first largest above -FLT_MAX (the lowest key jy * JX + jx
    among the maxima) against the out-of-bounds samples' 0 (module doc)."""
    c, h, w = desc.tensor("InputTensor").sizes[1:]
    r, _, oh, ow = desc.tensor("OutputTensor").sizes
    jy, jx = roi.sample_bound(desc, h), roi.sample_bound(desc, w)
    if nb.nearest is not None:
        v = nb.nearest
    else:
        top = _lerp(b, nb.corners[0, 0], nb.corners[0, 1], nb.fx, "max_top")
        v = _lerp(b, top, _lerp(b, nb.corners[1, 0], nb.corners[1, 1], nb.fx, "max_bottom"), nb.fy, "max_value")
    v = b.transpose(v, [0, 5, 1, 2, 3, 4], "max_values", "[R, C, OH, JY, OW, JX]")
    inb = b.node(
        "And",
        [_sample_grid(b, ys.inb, [r, 1, oh, jy, 1, 1], "max_inb_y"), _sample_grid(b, xs.inb, [r, 1, 1, 1, ow, jx], "max_inb_x")],
        "max_inb",
        "in-bounds samples",
    )
    lowest = b.scalar(float(np.finfo(np.float32).min), F32, "max_lowest")
    ok = b.node("And", [inb, b.node("Greater", [v, lowest], "max_above", "> -FLT_MAX, not NaN")], "max_ok", "candidates")
    cand = b.node("Where", [ok, v, b.scalar(-np.inf, F32, "max_minus_inf")], "max_cand", "candidates' values")
    m = b.reduce("ReduceMax", cand, [3, 5], "max_max", "the largest [R, C, OH, 1, OW, 1]")
    eq = b.node("And", [ok, b.node("Equal", [cand, m], "max_eq", "= the largest")], "max_top_samples", "the maxima")
    key = b.const((np.arange(jy).reshape(jy, 1) * jx + np.arange(jx)).astype(np.float32).reshape(1, 1, 1, jy, 1, jx), "max_key")
    keyed = b.node("Where", [eq, key, b.scalar(float(jy * jx), F32, "max_no_key")], "max_keyed", "keys of the maxima")
    first = b.reduce("ReduceMin", keyed, [3, 5], "max_first", "the first maximum's key")
    chosen = b.node("And", [eq, b.node("Equal", [key, first], "max_is_first", "the first")], "max_chosen", "the chosen sample")

    def oob(axis: roi._Axis, shape: list[int], tag: str) -> tuple[str, str]:
        """Any sample of the bin out of bounds; its first sample (t = 0) out of bounds."""
        some = b.node("Less", [axis.count, axis.k], f"{tag}_some", "fewer in bounds than k")
        t0 = b.slice(axis.t, [2], [0], [1], f"{tag}_t0", "the first enumerated sample's t")
        inb0 = b.slice(axis.inb, [2], [0], [1], f"{tag}_inb0", "... in bounds")
        first_out = b.node(
            "Or",
            [
                b.node("Greater", [t0, b.scalar(0.0, F32, f"{tag}_zero")], f"{tag}_late", "t = 0 not enumerated"),
                b.node("Not", [inb0], f"{tag}_out0", "out"),
            ],
            f"{tag}_first",
            "sample t = 0 out of bounds",
        )
        return _sample_grid(b, some, shape, f"{tag}_some6"), _sample_grid(b, first_out, shape, f"{tag}_first6")

    some_y, first_y = oob(ys, [r, 1, oh, 1, 1, 1], "oob_y")
    some_x, first_x = oob(xs, [r, 1, 1, 1, ow, 1], "oob_x")
    later_row = _sample_grid(
        b, b.node("Greater", [ys.t, b.scalar(0.0, F32, "t_zero")], "later_row", "t_y > 0"), [r, 1, oh, jy, 1, 1], "later_row6"
    )
    precedes = b.node(
        "Or",
        [
            b.node("Or", [first_y, first_x], "oob_first", "sample (0, 0) out of bounds"),
            b.node("And", [some_x, later_row], "oob_row0", "row 0 has one"),
        ],
        "oob_precedes",
        "an out-of-bounds sample comes first",
    )
    zero = b.scalar(0.0, F32, "max_zero")
    beaten = b.node(
        "Or",
        [
            b.node("Less", [m, zero], "max_negative", "0 is larger"),
            b.node("And", [b.node("Equal", [m, zero], "max_is_zero", "0 ties"), precedes], "max_tie_lost", "0 comes first"),
        ],
        "max_beaten",
        "an out-of-bounds sample's 0 wins",
    )
    lost = b.node(
        "And", [b.node("Or", [some_y, some_x], "oob_some", "an out-of-bounds sample"), beaten], "max_lost", "no input element"
    )
    taken = b.node("And", [chosen, b.node("Not", [lost], "max_kept", "kept")], "max_taken", "receives the gradient")
    g6 = b.reshape(g, [r, c, oh, 1, ow, 1], "max_g6", "[R, C, OH, 1, OW, 1]")
    return b.node("Where", [taken, g6, zero], "max_placed", "the gradient on its chosen sample"), taken


def _roi_gradient(
    desc: OperatorDesc, b: GraphBuilder, nb: _Neighbours, ys: roi._Axis, xs: roi._Axis, weights: str, mask: str
) -> str:
    """[R, 4]: the image gradients of each sample (the page's imageGradX/Y, LINEAR's in either mode)
    times its weight (`weights`, where `mask`), all [R, C, OH, JY, OW, JX], summed with the output
    index's fractions (module doc)."""
    h, w = desc.tensor("InputTensor").sizes[2:]
    r, _, oh, ow = desc.tensor("OutputTensor").sizes
    corners = bool(roi_reference._field(desc, "AlignRegionsToCorners"))
    k = nb.corners

    one, fy, fx = b.scalar(1.0, F32, "rg_one"), nb.fy, nb.fx
    zero = b.scalar(0.0, F32, "rg_zero")

    def image_gradient(near: tuple[str, str], far: tuple[str, str], f: str, inside: str, tag: str) -> str:
        """(1 - f)(near difference) + f (far difference), the far term only within [0, size - 1]."""
        first = b.node("Sub", [near[1], near[0]], f"rg_{tag}_near_diff", "the first difference")
        second = b.node("Sub", [far[1], far[0]], f"rg_{tag}_far_diff", "the second difference")
        terms = [
            b.node("Mul", [b.node("Sub", [one, f], f"rg_{tag}_1_f", "1 - lerp"), first], f"rg_{tag}_0", "first term"),
            b.node("Where", [inside, b.node("Mul", [f, second], f"rg_{tag}_1", "second term"), zero], f"rg_{tag}_in", "inside"),
        ]
        v = b.node("Add", terms, f"rg_{tag}_nhwc", "the image gradient")
        return b.transpose(v, [0, 5, 1, 2, 3, 4], f"rg_{tag}", "[R, C, OH, JY, OW, JX]")

    grad_x = image_gradient((k[0, 0], k[0, 1]), (k[1, 0], k[1, 1]), fy, nb.inside_y, "grad_x")  # imageGradX
    grad_y = image_gradient((k[0, 0], k[1, 0]), (k[0, 1], k[1, 1]), fx, nb.inside_x, "grad_y")  # imageGradY
    sums = {}
    for axis, grad, outs, size, shape, tag in (
        (xs, grad_x, ow, w, [r, 1, 1, 1, ow, 1], "x"),
        (ys, grad_y, oh, h, [r, 1, oh, 1, 1, 1], "y"),
    ):
        weighted = b.node(
            "Where",
            [mask, b.node("Mul", [grad, weights], f"rg_{tag}_w", "by the weight"), zero],
            f"rg_{tag}_m",
            "0 where the sample is masked out",
        )
        count = b.node("Mul", [axis.k, b.scalar(float(outs), F32, f"rg_{tag}_outs")], f"rg_{tag}_count", "O * k")
        index = b.const(np.arange(outs, dtype=np.float32).reshape(1, outs, 1), f"rg_{tag}_index")
        if corners:
            single = b.node("Equal", [count, one], f"rg_{tag}_single", "one sample")
            frac = b.node(
                "Where",
                [
                    single,
                    b.scalar(0.5, F32, f"rg_{tag}_half"),
                    b.node(
                        "Div",
                        [index, b.node("Sub", [count, one], f"rg_{tag}_c1", "count - 1")],
                        f"rg_{tag}_d1",
                        "index / (count - 1)",
                    ),
                ],
                f"rg_{tag}_frac",
                "o / (O * k - 1), 1/2 for one sample",
            )
        else:
            frac = b.node("Div", [index, count], f"rg_{tag}_frac", "o / (O * k)")
        frac = _sample_grid(b, frac, shape, f"rg_{tag}_frac6")
        extent = b.scalar(float(size - 1 if corners else size), F32, f"rg_{tag}_extent")
        far = b.node("Mul", [weighted, frac], f"rg_{tag}_far", "toward the second corner")
        near = b.node(
            "Mul",
            [weighted, b.node("Sub", [one, frac], f"rg_{tag}_1_frac", "1 - fraction")],
            f"rg_{tag}_near",
            "toward the first corner",
        )
        for name, v in ((f"{tag}1", near), (f"{tag}2", far)):
            total = b.reduce(
                "ReduceSum", b.reshape(v, [r, -1], f"rg_{name}_rows", "[R, ...]"), [1], f"rg_{name}_sum", "summed", keepdims=True
            )
            sums[name] = b.node("Mul", [total, extent], f"rg_{name}", "x InputWidth (Height)")
    return b.node("Concat", [sums["x1"], sums["y1"], sums["x2"], sums["y2"]], "roi_gradient", "[R, 4]: x1, y1, x2, y2", axis=1)


def lower(desc: OperatorDesc, b: GraphBuilder, inputs: dict[str, str]) -> dict[str, str]:
    fwd = forward(desc)
    dtype = desc.tensor(IN).data_type
    n, c, h, w = fwd.tensor("InputTensor").sizes
    r, _, oh, ow = desc.tensor(IN).sizes
    rois = roi._f32(b, b.reshape(inputs["ROITensor"], [r, 4], "rois", "the [NumROIs, 4] rows"), dtype, "rois")
    batch = b.reshape(b.cast(inputs["BatchIndicesTensor"], dtypes.INT64, "batch_int64", "INT64"), [1, r], "batch", "[1, R]")
    batch = roi._batch_rows(b, batch, n, "batch_clamped")
    ys, xs = roi._Axis(fwd, b, rois, 0), roi._Axis(fwd, b, rois, 1)
    maximum = desc["ReductionFunction"] == "MAX"
    g = roi._f32(b, inputs[IN], dtype, IN)
    nb = None
    if maximum or desc[ROI_OUT] is not None:
        nb = _Neighbours(fwd, b, roi._f32(b, inputs[X], dtype, X), b.reshape(batch, [r], "batch_r", "[R]"), ys, xs)
    out = {}
    if maximum:
        assert nb is not None
        placed, taken = _max_choice_graph(fwd, b, nb, ys, xs, g)
    if desc[OUT] is not None:
        if maximum:
            jy, jx = roi.sample_bound(fwd, h), roi.sample_bound(fwd, w)
            per_sample = b.reshape(placed, [r, c, oh * jy, ow * jx], "max_grad", "[R, C, OH * JY, OW * JX]")
            y = _input_gradient(fwd, b, ys, xs, per_sample, batch, None)
        else:
            k = b.reshape(b.node("Mul", [ys.k, xs.k], "k_total", "k_y * k_x"), [r, 1, 1, 1], "k_4d", "[R, 1, 1, 1]")
            y = _input_gradient(fwd, b, ys, xs, g, batch, k)
        out[OUT] = b.cast(y, dtype, "to_output_type", f"in {dtype}") if dtype != F32 else y
    if desc[ROI_OUT] is not None:
        assert nb is not None
        if maximum:
            weights, mask = placed, taken
        else:
            jy, jx = roi.sample_bound(fwd, h), roi.sample_bound(fwd, w)
            k6 = b.reshape(b.node("Mul", [ys.k, xs.k], "rg_k", "k_y * k_x"), [r, 1, 1, 1, 1, 1], "rg_k6", "[R, 1, ...]")
            weights = b.node(
                "Div", [b.reshape(g, [r, c, oh, 1, ow, 1], "rg_g6", "[R, C, OH, 1, OW, 1]"), k6], "rg_g_avg", "/ k_y k_x"
            )
            mask = b.node(
                "And",
                [
                    _sample_grid(b, ys.inb, [r, 1, oh, jy, 1, 1], "rg_inb_y"),
                    _sample_grid(b, xs.inb, [r, 1, 1, 1, ow, jx], "rg_inb_x"),
                ],
                "rg_inb",
                "in-bounds samples",
            )
        y = b.reshape(
            _roi_gradient(fwd, b, nb, ys, xs, weights, mask), list(desc.tensor("ROITensor").sizes), "rg_out", "ROITensor's sizes"
        )
        out[ROI_OUT] = b.cast(y, dtype, "rg_to_output_type", f"in {dtype}") if dtype != F32 else y
    return out


def _input_gradient(desc: OperatorDesc, b: GraphBuilder, ys: roi._Axis, xs: roi._Axis, g: str, batch: str, k: str | None) -> str:
    """OutputGradientTensor in FLOAT32: g [R, C, OH, OW] (MAX: per sample, [R, C, OH * JY, OW * JX],
    k None) through the weight matrices (module doc)."""
    n, c, h, w = desc.tensor("InputTensor").sizes
    r = desc.tensor("OutputTensor").sizes[0]
    per_sample = k is None
    my, mx = _Matrices(b, ys, h, "y", per_sample), _Matrices(b, xs, w, "x", per_sample)
    oh, ow = desc.tensor("OutputTensor").sizes[2:]
    if per_sample:
        oh, ow = oh * roi.sample_bound(desc, h), ow * roi.sample_bound(desc, w)
    owner = b.node("Equal", [b.i64(np.arange(n).reshape(n, 1), "batches"), batch], "owner", "region r of batch n: [N, R]")
    onehot = b.cast(owner, F32, "owner_f", "one-hot [N, R]")

    def spread(v: str, wy: str, wx: str, channels: int, tag: str) -> str:
        """[R, channels, OH, OW] (MAX: per sample) through the weights onto [N, channels, H, W]."""
        along_x = b.node("MatMul", [v, b.reshape(wx, [r, 1, ow, w], f"{tag}_wx", "[R, 1, OW, W]")], f"{tag}_x", "[R, C, OH, W]")
        wy_t = b.reshape(b.transpose(wy, [0, 2, 1], f"{tag}_wy_t", "[R, H, OH]"), [r, 1, h, oh], f"{tag}_wy", "[R, 1, H, OH]")
        region = b.node("MatMul", [wy_t, along_x], f"{tag}_y", "each region's [R, C, H, W]")
        if tag == "finite" and k is not None:
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
    return b.node("Where", [nan_out, b.scalar(np.nan, F32, "nan_value"), y], "with_nan", "NaN")


# -- examples (onnx_ops) -------------------------------------------------------------------


def examples(op: OperatorSchema) -> list[common.Example]:
    """Each data type; both interpolations, with and without InputTensor (and OutputROIGradientTensor);
    MAX with both."""
    out: list[common.Example] = []
    for t in common.example_types(op, IN):
        for reduction, mode, with_x in (
            ("AVERAGE", "LINEAR", True),
            ("AVERAGE", "NEAREST_NEIGHBOR", False),
            ("MAX", "LINEAR", True),
            ("MAX", "NEAREST_NEIGHBOR", True),
        ):
            desc: common.Example = {
                IN: common.example_tensor(t, [4, 3, 2, 3]),
                "ROITensor": common.example_tensor(t, [4, 4]),
                "BatchIndicesTensor": common.example_tensor("UINT32", [4]),
                OUT: common.example_tensor(t, [2, 3, 6, 5]),
                "ReductionFunction": reduction,
                "InterpolationMode": mode,
                "SpatialScaleX": 0.5,
                "SpatialScaleY": 0.5,
                "InputPixelOffset": 0.5,
                "OutputPixelOffset": -0.5,
                "MinimumSamplesPerOutput": 1,
                "MaximumSamplesPerOutput": 4,
                "AlignRegionsToCorners": mode == "NEAREST_NEIGHBOR",
            }
            if with_x:  # and OutputROIGradientTensor
                desc[X] = common.example_tensor(t, [2, 3, 6, 5])
                desc[ROI_OUT] = common.example_tensor(t, [4, 4])
            out.append(desc)
    return out


OPERATOR_FAMILY = Family(("ROI_ALIGN_GRAD",), validate, lower, reference, CANDIDATES, examples=examples)
