"""DML_OPERATOR_ROI_POOLING, ROI_ALIGN and ROI_ALIGN1: crops of an [N, C, H, W] InputTensor, one
per region of interest, pooled to OutputTensor's [NumROIs, C, OutputHeight, OutputWidth].

ROI_POOLING (ROITensor [1, 1, NumROIs, 5] of [BatchID, x1, y1, x2, y2]): the page's formulas. The
corners are round(coordinate * SpatialScale); RegionWidth = x2 - x1 + 1 (RegionHeight likewise);
bin X spans [X * RegionWidth / PooledSize.Width + x1, ((X + 1) * RegionWidth + PooledSize.Width -
1) / PooledSize.Width + x1) in integer division, clamped to the input; the output is the bin's
maximum. Where the page is silent, DirectML's own API settled it (tests/ops/test_roi.py SETTLED):
round() rounds halves to even (2.5 -> 2, 3.5 -> 4, -1.5 -> -2); BatchID is truncated toward
zero (1.5 reads batch 1); an inverted region (x2 < x1) counts as one pixel wide (RegionWidth at
least 1); an empty bin (entirely outside the input) is 0; the maximum skips NaN and starts from
the type's lowest finite value (-inf gives -3.4e38, -65504 in FLOAT16). PooledSize must equal
OutputTensor's [Height, Width] (DirectML refuses others).

ROI_ALIGN1 (ROITensor [NumROIs, 4] of [x1, y1, x2, y2], BatchIndicesTensor [NumROIs]): the page's
pseudo-code. Per axis, the region is scaled (x * SpatialScaleX), each output element takes
k = clamp(ceil(|size| / OutputSize), MinimumSamplesPerOutput, MaximumSamplesPerOutput) samples
(the page's size / OutputSize, as DirectML computes it: rounded up, of the absolute size; an
inverted region samples mirrored), sample s of the axis (s = output index * k + t, t < k) at
(s - OutputPixelOffset) * size / (OutputSize * k) + x1 - InputPixelOffset; with
AlignRegionsToCorners the divisor is OutputSize * k - 1, and a single sample (OutputSize * k = 1)
sits at x1 + size / 2 - InputPixelOffset whatever OutputPixelOffset is. A sample at x reads
OutOfBoundsInputValue where x <= -1 or x >= InputWidth (either axis; with AlignRegionsToCorners
where x < 0 or x > InputWidth - 1), else the input at x clamped to [0, InputWidth - 1]: LINEAR
interpolates the two (four) neighbours, NEAREST_NEIGHBOR takes floor(x + 0.5). AVERAGE is the
mean of all k_x * k_y samples (out-of-bounds ones included); MAX their maximum, NaN skipped, from
the lowest finite value. ROI_ALIGN is ROI_ALIGN1
with InputPixelOffset 0.5, OutputPixelOffset -0.5 and no AlignRegionsToCorners. DirectML refuses
MinimumSamplesPerOutput 0 and a maximum below the minimum; so does validate.

Lowering ("gather"): FLOAT32 arithmetic (FLOAT16 through FLOAT32) with static shapes. ROI_POOLING:
per region, the bins' [start, end) ranges from the ROI values (Round, integer Div), masks of them
over the input's rows and columns, and two masked ReduceMax passes (columns, then rows) over the
region's batch (Gather). ROI_ALIGN(1): k per region and axis is a runtime value, so each output
element enumerates a static number J of samples per axis beginning at the first one that can be
in bounds (computed from the ROI), which covers every in-bounds sample: the samples of one output
element that land inside the input number at most max(Min, 2 * InputSize + 3), capped at Max
(when k is adaptive, ceil(|size| / O) >= 2, the spacing |size| / (O k) exceeds 1/2). Their values
come from Gather on the input as [N * H * W, C] rows (four corners for LINEAR); AVERAGE sums them
and adds OutOfBoundsInputValue times the count of out-of-bounds samples, k_x k_y - n_x n_y, MAX
takes the largest in-bounds value and OutOfBoundsInputValue where any sample is out of bounds.

On the `dml` target (Target.dml_nodes), ONNX RoiAlign-16 is emitted where the DirectML EP's
DmlOperatorRoiAlign.cpp sets the desc's fields exactly (LINEAR, OutOfBoundsInputValue 0, one
SpatialScale, OutputPixelOffset -0.5, InputPixelOffset 0.5 (half_pixel) or 0
(output_half_pixel), no AlignRegionsToCorners, samples 1..UINT32_MAX (sampling_ratio 0) or a
fixed count), and MaxRoiPool for ROI_POOLING where PooledSize is square (DmlOperatorRoiPooling.cpp
passes pooled_shape's height as DML_SIZE_2D's Width).
"""

from __future__ import annotations

import numpy as np

from dml2onnx.core import dtypes
from dml2onnx.core.desc import OperatorDesc
from dml2onnx.core.schema import OperatorSchema
from dml2onnx.graph.builder import GraphBuilder
from dml2onnx.graph.targets import DML_NODE_DOC
from dml2onnx.ops import common
from dml2onnx.ops.family import Family
from dml2onnx.ops.roi_reference import (
    F32,
    _field,
    _lowest,
    reference,
    validate,
)

CANDIDATES = ("gather",)  # choices.py: one lowering (the dml nodes are taken inside it)
UINT32_MAX = 2**32 - 1
# -- the dml target's nodes -------------------------------------------------------------------


def roi_align_node(desc: OperatorDesc, opset: int) -> str | None:
    """RoiAlign-16's coordinate_transformation_mode where the DirectML EP's RoiAlign computes this
    desc (DmlOperatorRoiAlign.cpp), else None."""
    if opset < 16 or desc["InterpolationMode"] != "LINEAR" or _field(desc, "AlignRegionsToCorners"):
        return None
    if np.float32(desc["OutOfBoundsInputValue"]) != 0 or np.float32(desc["SpatialScaleX"]) != np.float32(desc["SpatialScaleY"]):
        return None
    if np.float32(_field(desc, "OutputPixelOffset")) != -0.5:
        return None
    low, high = desc["MinimumSamplesPerOutput"], desc["MaximumSamplesPerOutput"]
    if not ((low, high) == (1, UINT32_MAX) or (low == high and low < 2**31)):
        return None
    offset = np.float32(_field(desc, "InputPixelOffset"))
    return {0.5: "half_pixel", 0.0: "output_half_pixel"}.get(float(offset))


# -- lowering ---------------------------------------------------------------------------------


def lower(desc: OperatorDesc, b: GraphBuilder, inputs: dict[str, str]) -> str:
    if desc.schema.name == "ROI_POOLING":
        return _lower_pooling(desc, b, inputs)
    return _lower_align(desc, b, inputs)


def _f32(b: GraphBuilder, v: str, dtype: dtypes.DataType, name: str) -> str:
    return b.cast(v, F32, f"{name}_to_float32", f"{name} in FLOAT32") if dtype != F32 else v


def _column(b: GraphBuilder, rois: str, i: int, shape: list[int], step: str, doc: str) -> str:
    """Column i of the [R, width] ROI rows, reshaped to `shape` (R first)."""
    col = b.slice(rois, [1], [i], [i + 1], f"{step}_column", doc)
    return b.reshape(col, shape, step, doc)


def _batch_rows(b: GraphBuilder, index: str, n: int, step: str) -> str:
    """INT64 batch indices clamped to [0, N - 1] (the pages leave others undefined; Gather would fail)."""
    lo, hi = b.i64(0, f"{step}_min"), b.i64(n - 1, f"{step}_max")
    clamped = b.node("Max", [b.node("Min", [index, hi], f"{step}_upper", "at most N - 1"), lo], step, "at least 0")
    return clamped


def _lower_pooling(desc: OperatorDesc, b: GraphBuilder, inputs: dict[str, str]) -> str:
    x_t, out_t = desc.tensor("InputTensor"), desc.tensor("OutputTensor")
    dtype = x_t.data_type
    n, c, h, w = x_t.sizes
    r, _, ph, pw = out_t.sizes
    rois = b.reshape(inputs["ROITensor"], [r, 5], "rois", "the [NumROIs, 5] rows")
    if b.target.dml_nodes and ph == pw:
        return b.node(
            "MaxRoiPool",
            [inputs["InputTensor"], rois],
            "max_roi_pool",
            DML_NODE_DOC,
            pooled_shape=[ph, pw],
            spatial_scale=desc["SpatialScale"],
        )
    x = _f32(b, inputs["InputTensor"], dtype, "InputTensor")
    rois = _f32(b, rois, dtype, "rois")
    lowest = b.scalar(_lowest(dtype), F32, "lowest")
    batch = b.cast(_column(b, rois, 0, [r], "batch_id", "BatchID"), dtypes.INT64, "batch_trunc", "BatchID truncated toward zero")
    crops = b.node("Gather", [x, _batch_rows(b, batch, n, "batch")], "crops", "each region's batch: [R, C, H, W]", axis=0)
    # the maximum skips NaN and starts from the lowest finite value
    crops = b.node("Where", [b.node("IsNaN", [crops], "is_nan", "NaN"), lowest, crops], "no_nan", "NaN as the lowest value")
    crops = b.node("Max", [crops, lowest], "from_lowest", "at least the lowest finite value")
    scale = b.scalar(desc["SpatialScale"], F32, "spatial_scale")
    masks, empties = [], []
    for axis, (lo_col, hi_col, size, pooled) in enumerate(((2, 4, h, ph), (1, 3, w, pw))):
        name = "y" if axis == 0 else "x"
        corners = []
        for col, which in ((lo_col, "1"), (hi_col, "2")):
            v = _column(b, rois, col, [r, 1, 1], f"{name}{which}", f"{name}{which}")
            v = b.node(
                "Round",
                [b.node("Mul", [v, scale], f"{name}{which}_scaled", "x SpatialScale")],
                f"{name}{which}_round",
                "round(.) (halves to even)",
            )
            v = b.node(
                "Clip",
                [v, b.scalar(-(2.0**30), F32, f"{name}{which}_lo"), b.scalar(2.0**30, F32, f"{name}{which}_hi")],
                f"{name}{which}_clip",
                "within INT64 arithmetic's reach",
            )
            corners.append(b.cast(v, dtypes.INT64, f"{name}{which}_int", "integer corner"))
        one = b.i64(1, f"{name}_one")
        extent = b.node(
            "Add", [b.node("Sub", [corners[1], corners[0]], f"{name}_diff", "x2 - x1"), one], f"{name}_extent", "x2 - x1 + 1"
        )
        extent = b.node("Max", [extent, one], f"{name}_region", "RegionWidth, at least 1")
        o = b.i64(np.arange(pooled).reshape(1, pooled, 1), f"{name}_bins")
        p = b.i64(pooled, f"{name}_pooled")
        start = b.node(
            "Add",
            [
                b.node(
                    "Div", [b.node("Mul", [o, extent], f"{name}_o_extent", "X * RegionWidth"), p], f"{name}_start_off", "/ Pooled"
                ),
                corners[0],
            ],
            f"{name}_start",
            "bin start",
        )
        o1 = b.node("Add", [o, one], f"{name}_bins_next", "X + 1")
        upper = b.node(
            "Add",
            [b.node("Mul", [o1, extent], f"{name}_o1_extent", "(X + 1) * RegionWidth"), b.i64(pooled - 1, f"{name}_round_up")],
            f"{name}_end_num",
            "+ Pooled - 1",
        )
        end = b.node("Add", [b.node("Div", [upper, p], f"{name}_end_off", "/ Pooled"), corners[0]], f"{name}_end", "bin end")
        positions = b.i64(np.arange(size).reshape(1, 1, size), f"{name}_positions")
        inside = b.node(
            "And",
            [
                b.node("GreaterOrEqual", [positions, start], f"{name}_after_start", ">= start"),
                b.node("Less", [positions, end], f"{name}_before_end", "< end"),
            ],
            f"{name}_mask",
            "the bin's elements: [R, Pooled, size]",
        )
        masks.append(inside)
        # clamped to the input, the bin is empty where end <= 0, start >= size or end <= start
        lo = b.node("Max", [start, b.i64(0, f"{name}_zero")], f"{name}_start_clamped", "clamped start")
        hi = b.node("Min", [end, b.i64(size, f"{name}_size")], f"{name}_end_clamped", "clamped end")
        empties.append(
            b.node("Not", [b.node("Less", [lo, hi], f"{name}_nonempty", "start < end")], f"{name}_empty", "an empty bin")
        )
    rows, cols = masks
    # columns first: [R, C, H, 1, W] against [R, 1, 1, PW, W]
    x5 = b.reshape(crops, [r, c, h, 1, w], "crops_5d", "[R, C, H, 1, W]")
    col_mask = b.reshape(cols, [r, 1, 1, pw, w], "col_mask", "[R, 1, 1, PW, W]")
    picked = b.node("Where", [col_mask, x5, lowest], "cols_masked", "the bin's columns")
    by_col = b.reduce("ReduceMax", picked, [4], "cols_max", "max over the bin's columns: [R, C, H, PW]", keepdims=False)
    y5 = b.reshape(by_col, [r, c, 1, h, pw], "rows_5d", "[R, C, 1, H, PW]")
    row_mask = b.reshape(rows, [r, 1, ph, h, 1], "row_mask", "[R, 1, PH, H, 1]")
    picked = b.node("Where", [row_mask, y5, lowest], "rows_masked", "the bin's rows")
    y = b.reduce("ReduceMax", picked, [3], "rows_max", "max over the bin's rows: [R, C, PH, PW]", keepdims=False)
    empty = b.node(
        "Or",
        [
            b.reshape(empties[0], [r, 1, ph, 1], "empty_rows", "[R, 1, PH, 1]"),
            b.reshape(empties[1], [r, 1, 1, pw], "empty_cols", "[R, 1, 1, PW]"),
        ],
        "empty",
        "an empty bin",
    )
    y = b.node("Where", [empty, b.scalar(0.0, F32, "zero"), y], "empty_zero", "0 for an empty bin")
    return b.cast(y, dtype, "to_output_type", f"in {dtype}") if dtype != F32 else y


def sample_bound(desc: OperatorDesc, size: int) -> int:
    """The samples enumerated per output element along an axis of `size` input elements (module doc)."""
    low, high = desc["MinimumSamplesPerOutput"], desc["MaximumSamplesPerOutput"]
    return min(high, max(low, 2 * size + 3) + 3)


class _Axis:
    """One axis of ROI_ALIGN's sampling, as [R, O, J] tensors: the in-bounds flag of each
    enumerated sample, its neighbours' indices and weights (LINEAR) or index (NEAREST), and k."""

    def __init__(self, desc: OperatorDesc, b: GraphBuilder, rois: str, axis: int) -> None:
        name = "y" if axis == 0 else "x"
        out_t, in_t = desc.tensor("OutputTensor"), desc.tensor("InputTensor")
        r, outs, size = out_t.sizes[0], out_t.sizes[2 + axis], in_t.sizes[2 + axis]
        j = sample_bound(desc, size)
        scale = desc["SpatialScaleY" if axis == 0 else "SpatialScaleX"]
        ipo, opo = float(_field(desc, "InputPixelOffset")), float(_field(desc, "OutputPixelOffset"))
        corners = bool(_field(desc, "AlignRegionsToCorners"))
        low, high = desc["MinimumSamplesPerOutput"], desc["MaximumSamplesPerOutput"]

        def s(v: float, step: str) -> str:
            return b.scalar(v, F32, f"{name}_{step}")

        def node(op: str, ins: list[str], step: str, doc: str) -> str:
            return b.node(op, ins, f"{name}_{step}", doc)

        first = node(
            "Mul",
            [_column(b, rois, 1 - axis, [r, 1, 1], f"{name}1", f"{name}1"), s(scale, "scale")],
            "r1",
            f"{name}1 * SpatialScale",
        )
        second = node(
            "Mul",
            [_column(b, rois, 3 - axis, [r, 1, 1], f"{name}2", f"{name}2"), s(scale, "scale2")],
            "r2",
            f"{name}2 * SpatialScale",
        )
        extent = node("Sub", [second, first], "size", "scaled region size")
        per = node(
            "Ceil",
            [node("Div", [node("Abs", [extent], "abs_size", "|size|"), s(outs, "outs")], "per_out", "|size| / OutputSize")],
            "ceil",
            "rounded up",
        )
        k = node("Clip", [per, s(low, "min_samples"), s(min(high, 2.0**31), "max_samples")], "k", "samples per output element")
        denom = node("Mul", [k, s(outs, "outs2")], "sample_count", "OutputSize * k")
        if corners:
            denom = node(
                "Max",
                [node("Sub", [denom, s(1, "one")], "minus_one", "OutputSize * k - 1"), s(1, "one2")],
                "corner_count",
                "at least 1",
            )
        step = node("Div", [extent, denom], "spacing", "size / (samples): signed")
        # where the in-bounds samples of the axis begin: s > (bound - x1 + InputPixelOffset) / spacing + OutputPixelOffset
        positive = node("Greater", [step, s(0, "zero")], "increasing", "spacing > 0")
        edges = (0, size - 1) if corners else (-1, size)  # the in-bounds interval's ends
        bound = node(
            "Where",
            [positive, s(edges[0], "low_bound"), s(edges[1], "high_bound")],
            "entry_bound",
            "its low end going up, high end going down",
        )
        offset = node(
            "Add",
            [node("Sub", [bound, first], "bound_minus_x1", "bound - x1"), s(ipo, "ipo")],
            "bound_offset",
            "+ InputPixelOffset",
        )
        flat = node("Equal", [step, s(0, "zero2")], "flat", "an empty region: every sample at x1")
        safe = node("Where", [flat, s(1, "one3"), step], "safe_spacing", "no division by 0")
        entry = node(
            "Add",
            [node("Div", [offset, safe], "entry_div", "/ spacing"), s(opo, "opo")],
            "entry",
            "first sample index in bounds (real)",
        )
        entry = node("Where", [flat, s(0, "zero3"), entry], "entry_flat", "0 for an empty region")
        o = b.const(np.arange(outs, dtype=np.float32).reshape(1, outs, 1), f"{name}_outputs")
        bin_first = node("Mul", [o, k], "bin_first", "output index * k")
        t0 = node(
            "Sub",
            [
                node("Sub", [node("Floor", [entry], "entry_floor", "floor"), bin_first], "t_entry", "within the bin"),
                s(1, "margin"),
            ],
            "t_margin",
            "one before",
        )
        t0 = node("Min", [node("Max", [t0, s(0, "zero4")], "t0_lo", "at least 0"), k], "t0_clamped", "within the bin")
        few = node("LessOrEqual", [k, s(j, "enumerated_count")], "few", "k <= J: every sample enumerated")
        t0 = node("Where", [few, s(0, "zero5"), t0], "t0", "the first enumerated sample of the bin")
        t = node(
            "Add",
            [t0, b.const(np.arange(j, dtype=np.float32).reshape(1, 1, j), f"{name}_enumerated")],
            "t",
            "enumerated samples [R, O, J]",
        )
        sample = node("Add", [bin_first, t], "sample", "the sample's index on the axis")
        pos = node(
            "Sub",
            [
                node(
                    "Add",
                    [
                        node(
                            "Mul",
                            [node("Sub", [sample, s(opo, "opo2")], "s_opo", "s - OutputPixelOffset"), step],
                            "s_scaled",
                            "* spacing",
                        ),
                        first,
                    ],
                    "plus_x1",
                    "+ x1",
                ),
                s(ipo, "ipo2"),
            ],
            "pos",
            "- InputPixelOffset",
        )
        if corners and outs == 1:  # a single sample (k = 1) sits at the region's centre
            centre = node(
                "Sub",
                [
                    node(
                        "Add", [node("Mul", [extent, s(0.5, "half_size")], "half", "size / 2"), first], "centre", "x1 + size / 2"
                    ),
                    s(ipo, "ipo3"),
                ],
                "centre_pos",
                "- InputPixelOffset",
            )
            single = node("Equal", [k, s(1, "single")], "single_sample", "OutputSize * k == 1")
            pos = node("Where", [single, centre, pos], "pos_single", "the centre for a single sample")
        valid = node("Less", [t, k], "in_bin", "one of the bin's k samples")
        if corners:  # [0, size - 1]
            above = node("GreaterOrEqual", [pos, s(0, "first_index")], "above", "x >= 0")
            below = node("LessOrEqual", [pos, s(size - 1, "last_index")], "below", "x <= size - 1")
        else:  # (-1, size)
            above = node("Greater", [pos, s(-1, "minus_one")], "above", "x > -1")
            below = node("Less", [pos, s(size, "size")], "below", "x < size")
        inside = node("And", [above, below], "inside", "in bounds")
        self.inb = node("And", [valid, inside], "in_bounds", "an in-bounds sample of the bin")
        self.count = node(
            "ReduceSum",
            [b.cast(self.inb, F32, f"{name}_inb_f", "1 in bounds"), b.i64([2], f"{name}_count_axes")],
            "in_count",
            "in-bounds samples per output element [R, O, 1]",
        )
        self.k, self.t, self.pos, self.step = k, t, pos, step  # ROI_ALIGN_GRAD's too (roi_align_grad.py)
        # Out-of-bounds samples (NaN positions too: a NaN ROI coordinate or scale) read element 0
        # and are masked out: a NaN cast to INT64 would be an index out of Gather's range.
        anywhere = node("Where", [inside, pos, s(0, "outside_at")], "pos_read", "the position read (0 outside)")
        clamped = node("Clip", [anywhere, s(0, "clip_lo"), s(size - 1, "clip_hi")], "clamped", "clamped into the input")
        if desc["InterpolationMode"] == "NEAREST_NEIGHBOR":
            nearest = node(
                "Min",
                [
                    node("Floor", [node("Add", [clamped, s(0.5, "half")], "plus_half", "x + 0.5")], "nearest", "floor(x + 0.5)"),
                    s(size - 1, "last"),
                ],
                "nearest_in",
                "within the input",
            )
            self.indices = [b.cast(nearest, dtypes.INT64, f"{name}_index", "index")]
            self.weights: list[str] = []
        else:
            lo = node("Floor", [clamped], "lo", "the lower neighbour")
            hi = node(
                "Min", [node("Add", [lo, s(1, "one4")], "lo_plus_one", "+ 1"), s(size - 1, "last2")], "hi", "the upper neighbour"
            )
            frac = node("Sub", [clamped, lo], "frac", "distance from the lower neighbour")
            self.indices = [b.cast(v, dtypes.INT64, f"{name}_{n}_index", f"{n} index") for v, n in ((lo, "lo"), (hi, "hi"))]
            self.weights = [node("Sub", [s(1, "one5"), frac], "w_lo", "1 - frac"), frac]


def _lower_align(desc: OperatorDesc, b: GraphBuilder, inputs: dict[str, str]) -> str:
    x_t, out_t = desc.tensor("InputTensor"), desc.tensor("OutputTensor")
    dtype = x_t.data_type
    n, c, h, w = x_t.sizes
    r, _, oh, ow = out_t.sizes
    rois = b.reshape(inputs["ROITensor"], [r, 4], "rois", "the [NumROIs, 4] rows")
    batch = b.reshape(
        b.cast(inputs["BatchIndicesTensor"], dtypes.INT64, "batch_int64", "batch indices in INT64"), [r], "batch", "[NumROIs]"
    )
    mode = roi_align_node(desc, b.opset) if b.target.dml_nodes else None
    if mode is not None:
        low = desc["MinimumSamplesPerOutput"]
        return b.node(
            "RoiAlign",
            [inputs["InputTensor"], rois, batch],
            "roi_align",
            DML_NODE_DOC,
            coordinate_transformation_mode=mode,
            mode="avg" if desc["ReductionFunction"] == "AVERAGE" else "max",
            output_height=oh,
            output_width=ow,
            sampling_ratio=0 if desc["MaximumSamplesPerOutput"] == UINT32_MAX and low == 1 else low,
            spatial_scale=desc["SpatialScaleX"],
        )
    x = _f32(b, inputs["InputTensor"], dtype, "InputTensor")
    rois = _f32(b, rois, dtype, "rois")
    ys, xs = _Axis(desc, b, rois, 0), _Axis(desc, b, rois, 1)
    jy, jx = sample_bound(desc, h), sample_bound(desc, w)
    # the input as rows of C values: [N * H * W, C]
    table = b.reshape(b.transpose(x, [0, 2, 3, 1], "nhwc", "channels last"), [n * h * w, c], "rows", "[N * H * W, C]")
    base = b.reshape(
        b.node("Mul", [_batch_rows(b, batch, n, "batch_clamped"), b.i64(h, "height")], "batch_base", "batch * H"),
        [r, 1, 1, 1, 1],
        "batch_base_5d",
        "[R, 1, 1, 1, 1]",
    )
    width = b.i64(w, "width")

    def row_index(yi: str, tag: str) -> str:
        y5 = b.reshape(yi, [r, oh, jy, 1, 1], f"y_{tag}_5d", "[R, OH, JY, 1, 1]")
        return b.node(
            "Mul", [b.node("Add", [base, y5], f"row_{tag}", "batch * H + y"), width], f"row_{tag}_start", "(batch * H + y) * W"
        )

    def gather(row: str, xi: str, tag: str) -> str:
        x5 = b.reshape(xi, [r, 1, 1, ow, jx], f"x_{tag}_5d", "[R, 1, 1, OW, JX]")
        index = b.node("Add", [row, x5], f"index_{tag}", "flat row of the sample's neighbour")
        return b.node("Gather", [table, index], f"gather_{tag}", "[R, OH, JY, OW, JX, C]", axis=0)

    def as6(v: str, shape: list[int], tag: str) -> str:
        return b.reshape(v, shape, tag, f"{shape}")

    if desc["InterpolationMode"] == "NEAREST_NEIGHBOR":
        value = gather(row_index(ys.indices[0], "n"), xs.indices[0], "n")
    else:
        rows = [row_index(v, t) for v, t in zip(ys.indices, ("lo", "hi"), strict=True)]
        wy = [as6(v, [r, oh, jy, 1, 1, 1], f"wy_{t}") for v, t in zip(ys.weights, ("lo", "hi"), strict=True)]
        wx = [as6(v, [r, 1, 1, ow, jx, 1], f"wx_{t}") for v, t in zip(xs.weights, ("lo", "hi"), strict=True)]
        parts = []
        for i, ty in enumerate(("lo", "hi")):
            left = b.node("Mul", [wx[0], gather(rows[i], xs.indices[0], f"{ty}_lo")], f"{ty}_left", "w_x_lo * v")
            right = b.node("Mul", [wx[1], gather(rows[i], xs.indices[1], f"{ty}_hi")], f"{ty}_right", "w_x_hi * v")
            parts.append(
                b.node("Mul", [wy[i], b.node("Add", [left, right], f"{ty}_row", "along x")], f"{ty}_weighted", "w_y * ...")
            )
        value = b.node("Add", parts, "bilinear", "the sample's bilinear value")
    inb = b.node(
        "And",
        [as6(ys.inb, [r, oh, jy, 1, 1, 1], "inb_y"), as6(xs.inb, [r, 1, 1, ow, jx, 1], "inb_x")],
        "inb",
        "in-bounds samples [R, OH, JY, OW, JX, 1]",
    )
    oob = b.scalar(desc["OutOfBoundsInputValue"], F32, "oob_value")
    total = b.node("Mul", [as6(ys.k, [r, 1, 1, 1], "ky"), as6(xs.k, [r, 1, 1, 1], "kx")], "total", "k_y * k_x [R, 1, 1, 1]")
    inside = b.node(
        "Mul",
        [as6(ys.count, [r, oh, 1, 1], "ny"), as6(xs.count, [r, 1, ow, 1], "nx")],
        "inside_count",
        "in-bounds samples [R, OH, OW, 1]",
    )
    outside = b.node("Sub", [total, inside], "outside_count", "out-of-bounds samples")
    if desc["ReductionFunction"] == "AVERAGE":
        kept = b.node("Where", [inb, value, b.scalar(0.0, F32, "zero")], "kept", "in-bounds values")
        summed = b.reduce("ReduceSum", kept, [2, 4], "sum", "sum over the samples [R, OH, OW, C]", keepdims=False)
        y = b.node(
            "Add", [summed, b.node("Mul", [outside, oob], "oob_sum", "out-of-bounds samples' values")], "all_sum", "every sample"
        )
        y = b.node("Div", [y, total], "average", "the mean of the k_y * k_x samples")
    else:
        lowest = b.scalar(_lowest(dtype), F32, "lowest")
        clean = b.node("Where", [b.node("IsNaN", [value], "is_nan", "NaN"), lowest, value], "no_nan", "NaN skipped")
        kept = b.node("Where", [inb, clean, lowest], "kept", "in-bounds values")
        y = b.reduce("ReduceMax", kept, [2, 4], "max", "max over the samples [R, OH, OW, C]", keepdims=False)
        any_out = b.node("Greater", [outside, b.scalar(0.0, F32, "zero")], "any_outside", "a sample out of bounds")
        y = b.node("Where", [any_out, b.node("Max", [y, oob], "with_oob", "OutOfBoundsInputValue too"), y], "with_outside", "max")
        y = b.node("Max", [y, lowest], "from_lowest", "at least the lowest finite value")
    y = b.transpose(y, [0, 3, 1, 2], "nchw", "[R, C, OH, OW]")
    return b.cast(y, dtype, "to_output_type", f"in {dtype}") if dtype != F32 else y


# -- examples (onnx_ops) -------------------------------------------------------------------


def examples(op: OperatorSchema) -> list[common.Example]:
    """Each data type; ROI_ALIGN(1): both reductions and interpolations, each batch index type."""
    out: list[common.Example] = []
    for t in common.example_types(op, "InputTensor"):
        x = common.example_tensor(t, [2, 3, 6, 5])
        if op.name == "ROI_POOLING":
            out.append(
                {
                    "InputTensor": x,
                    "ROITensor": common.example_tensor(t, [1, 1, 4, 5]),
                    "OutputTensor": common.example_tensor(t, [4, 3, 2, 3]),
                    "SpatialScale": 0.5,
                    "PooledSize": {"Width": 3, "Height": 2},
                }
            )
            continue
        for index_type in common.example_types(op, "BatchIndicesTensor"):
            for reduction, mode in (("AVERAGE", "LINEAR"), ("MAX", "NEAREST_NEIGHBOR")):
                desc: common.Example = {
                    "InputTensor": x,
                    "ROITensor": common.example_tensor(t, [4, 4]),
                    "BatchIndicesTensor": common.example_tensor(index_type, [4]),
                    "OutputTensor": common.example_tensor(t, [4, 3, 2, 3]),
                    "ReductionFunction": reduction,
                    "InterpolationMode": mode,
                    "SpatialScaleX": 0.5,
                    "SpatialScaleY": 0.5,
                    "OutOfBoundsInputValue": 0.0,
                    "MinimumSamplesPerOutput": 1,
                    "MaximumSamplesPerOutput": 4,
                }
                if op.name == "ROI_ALIGN1":
                    corners = reduction == "MAX"  # its bounds compare with >= and <=
                    desc |= {"InputPixelOffset": 0.5, "OutputPixelOffset": -0.5, "AlignRegionsToCorners": corners}
                out.append(desc)
    return out


OPERATOR_FAMILY = Family(("ROI_POOLING", "ROI_ALIGN", "ROI_ALIGN1"), validate, lower, reference, CANDIDATES, examples=examples)
