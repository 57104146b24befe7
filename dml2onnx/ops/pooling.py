"""DML_OPERATOR_AVERAGE_POOLING, AVERAGE_POOLING1, LP_POOLING, LP_POOLING1, MAX_POOLING,
MAX_POOLING1 and MAX_POOLING2 (with their optional OutputIndicesTensor): a window of WindowSize
elements (every Dilations-th element in AVERAGE_POOLING1, LP_POOLING1 and MAX_POOLING2; 1
elsewhere) slides over the DimensionCount (2 or 3; ONNX's 1-D pools come as 2-D with a size 1:
DirectML refuses DimensionCount 1) spatial dimensions of
an [N, C, spatial...] InputTensor, padded by StartPadding and EndPadding, in steps of Strides.
Per window:

- AVERAGE: the sum of its input elements divided by their count, or by the whole window's
  (product of WindowSize) with IncludePadding;
- LP: (sum of |x|^P over its input elements) ^ (1/P) (padding adds nothing);
- MAX: the largest of its input elements, and at least the type's lowest finite value;
  OutputIndicesTensor (UINT32 or UINT64) the index of that element in InputTensor seen as one
  contiguous array (batch and channel counted: the pages' words), the first such element in the
  window's order where several are equal.

OutputTensor's spatial sizes are (padded size - window extent) / Strides + 1, rounded down, by
the pages' formula (the window extent is (WindowSize - 1) * Dilations + 1). DirectML's
CreateOperator takes any others too (measured, tests/ops/test_pooling.py CEIL_SETTLED): N and C
must be InputTensor's and the rank the same (E_INVALIDARG otherwise), but every spatial size of 1
or more is taken (1 to 1000 windows over 4 to 8 elements, 1-3 windows, strides, paddings and
dilations; a window larger than the padded input too), and window o still reads element
o * Strides + tap * Dilations - StartPadding. ONNX Runtime's DirectML EP writes ceil_mode
pooling so (MaxPool k3 s2 on 8x8: OutputTensor [1, 1, 4, 4], EndPadding 0). Windows past the
padded input read padding there (`window` extends EndPadding to cover them): MAX's lowest value,
AVERAGE's divisor the count of input elements, or the whole window's with IncludePadding (DirectML
gives (7 + 8) / 3 = 5 for the last window of k3 s2 over 1..8, where ONNX Runtime's CPU AveragePool
with ceil_mode divides by 2), LP adds nothing; fewer windows are the first ones.
QUANTIZED_LINEAR_AVERAGE_POOLING (not measured so) keeps the pages' formula (`check_formula`).

What the pages leave open, as DirectML's own API computed it (tests/ops/test_pooling.py SETTLED):
- a window entirely in padding: MAX gives the type's lowest finite value (-3.4e38 for FLOAT32,
  -65504 for FLOAT16, the integer minimum), AVERAGE 0 / 0 = NaN (0 with IncludePadding), LP 0;
- MAX skips NaN and starts from the lowest finite value (-inf gives -3.4e38; all NaN too);
  AVERAGE and LP propagate NaN and infinities;
- LP takes |x| (the page writes X^P);
- windows past the padded input (OutputTensor's sizes past the formula, above) read padding
  there: EndPadding is extended to cover them (`window`);
- the index: of the first element of the window's largest value after the flooring above (so
  NaN, -inf and the lowest value itself all count as the lowest: a window of only those gives
  its first input element's index); a window entirely in padding gives index 0. The index is
  the logical element's, whatever InputTensor's Strides.

Lowerings (choices.py): "pool" — ONNX AveragePool (count_include_pad), MaxPool (dilations), and
for LP an AveragePool(count_include_pad) of |x|^P times the window size, then ^(1/P) — where
their semantics are exactly the page's (padding smaller than the window, no window entirely in
padding, types the EPs have; MAX's floats first raised to the lowest finite value, NaN too), with
the extended EndPadding as explicit pads (never ceil_mode, whose AveragePool divides a clipped
window by its clipped count), so ONNX's floor formula gives OutputTensor's sizes (not where
OutputTensor has fewer windows than fit);
"slices" — the window written out: the padded input (Concat with a fill), one strided Slice per
window offset, combined by Sum / Max, divided by the count of input elements per output (a
constant). On the `dml` target, "pool" emits AveragePool, MaxPool and LpPool as they are: the
DirectML EP maps them back onto AVERAGE_POOLING, MAX_POOLING (MAX_POOLING2 with dilations) and
LP_POOLING (DmlOperatorPooling.cpp).
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from dml2onnx.core import dtypes
from dml2onnx.core.desc import OperatorDesc
from dml2onnx.core.errors import ModelError
from dml2onnx.core.schema import OperatorSchema
from dml2onnx.graph.builder import GraphBuilder
from dml2onnx.graph.targets import DML_NODE_DOC
from dml2onnx.ops import common
from dml2onnx.ops.element_wise_arithmetic import _extreme
from dml2onnx.ops.family import Family
from dml2onnx.ops.pooling_window import Window, counts, has_empty_windows, lowest, window, windows

ROWS = ("AVERAGE_POOLING", "AVERAGE_POOLING1", "LP_POOLING", "LP_POOLING1", "MAX_POOLING", "MAX_POOLING1", "MAX_POOLING2")
INDICES = "OutputIndicesTensor"
ARRAYS = ("Strides", "WindowSize", "StartPadding", "EndPadding", "Dilations")
CANDIDATES = ("slices", "pool")  # choices.py
DML_PREFERENCE = ("pool",)
# The CPU EP's MaxPool/AveragePool kernels, not a Slice per window position: on the pooling layers
# of real networks (SqueezeNet, ShuffleNet, a small convnet) the slices were 2-4x slower there
# (benchmarks/results/cpu-capture-bench-2026-12-02.md).
CPU_PREFERENCE = ("pool",)
# MaxPool's types on the CPU, CUDA and DirectML EPs (MaxPool-12: float, float16, int8, uint8; the
# CPU EP's float16 is not taken for granted: FLOAT16 and the 16-bit integers go through FLOAT32,
# exactly). AveragePool: FLOAT32 (FLOAT16 through FLOAT32, but on the CUDA EP: average_pool_half).
MAX_POOL_TYPES = (dtypes.FLOAT32, dtypes.INT8, dtypes.UINT8)
MAX_POOL_VIA_FLOAT32 = (dtypes.FLOAT16, dtypes.INT16, dtypes.UINT16)


# -- validation -------------------------------------------------------------------------------


def with_indices(desc: OperatorDesc) -> bool:
    return desc.values.get(INDICES) is not None


def validate(desc: OperatorDesc) -> None:
    if with_indices(desc):
        y, i = desc.tensor("OutputTensor"), desc.tensor(INDICES)
        if i.sizes != y.sizes:
            raise ModelError(desc.at(INDICES, "Sizes"), f"must be OutputTensor's Sizes {list(y.sizes)}, not {list(i.sizes)}")
    common.check_same_type(desc, "OutputTensor", "InputTensor")
    common.check_same_rank(desc, "OutputTensor", "InputTensor")
    x = desc.tensor("InputTensor")
    n = desc["DimensionCount"]
    if n != x.rank - 2:
        raise ModelError(
            desc.at("DimensionCount"), f"must be InputTensor's DimensionCount - 2 ({x.rank - 2}: the spatial dimensions), not {n}"
        )
    for name in ARRAYS:
        if name in desc.values and len(desc[name]) != n:
            raise ModelError(desc.at(name), f"{name} must have DimensionCount ({n}) elements, not {len(desc[name])}")
    for name in ("Strides", "WindowSize", "Dilations"):
        if name in desc.values:
            for i, v in enumerate(desc[name]):
                if v < 1:
                    raise ModelError(desc.at(name, i), f"{name} must be 1 or more, not {v}")
    common.check_paddings(desc, x.sizes[2:])
    if "P" in desc.values and desc["P"] < 1:
        raise ModelError(desc.at("P"), f"P must be 1 or more, not {desc['P']}")
    out = desc.tensor("OutputTensor")
    for i in (0, 1):
        if out.sizes[i] != x.sizes[i]:
            raise ModelError(
                desc.at("OutputTensor", "Sizes", i),
                f"must be InputTensor's {'N' if i == 0 else 'C'} ({x.sizes[i]}), not {out.sizes[i]}"
                " (every spatial size of 1 or more is taken: windows past the padded input read padding)",
            )


def check_formula(desc: OperatorDesc) -> None:
    """The pages' rule, for QUANTIZED_LINEAR_AVERAGE_POOLING (not measured as the others): the
    window within the padded input and OutputTensor's spatial sizes by the formula, rounded down
    (for a dilated window, by its extent or up to the formula with WindowSize)."""
    x, out = desc.tensor("InputTensor"), desc.tensor("OutputTensor")
    w = window(desc, raw=True)
    spatial = x.sizes[2:]
    for i, (size, s, e, extent) in enumerate(zip(spatial, w.start, w.end, w.extents, strict=True)):
        if size + s + e < extent:
            what = "WindowSize" if extent == w.sizes[i] else "the dilated window ((WindowSize - 1) * Dilations + 1)"
            raise ModelError(
                desc.at("WindowSize", i),
                f"{what} ({extent}) is larger than the padded input"
                f" (InputTensor.Sizes[{i + 2}] + StartPadding + EndPadding = {size + s + e})",
            )
    literal = Window(w.kind, w.strides, w.sizes, w.start, w.end, (1,) * len(w.sizes))
    low, high = (*x.sizes[:2], *w.output_sizes(spatial)), (*x.sizes[:2], *literal.output_sizes(spatial))
    if not all(lo <= o <= hi for lo, o, hi in zip(low, out.sizes, high, strict=False)):
        want = str(list(low)) if low == high else f"{list(low)} (the dilated window) or up to {list(high)} (WindowSize)"
        raise ModelError(
            desc.at("OutputTensor", "Sizes"),
            f"must be {want}: N and C of InputTensor, then (padded size - window) / Strides + 1 per spatial"
            f" dimension, rounded down; not {list(out.sizes)}",
        )


# -- windows ------------------------------------------------------------------------------------


def _padding_below_window(w: Window) -> bool:
    """ONNX Runtime's pooling kernels refuse pads of the window's size or more."""
    return all(s < k and e < k for s, e, k in zip(w.start, w.end, w.sizes, strict=True))


def applies(desc: OperatorDesc, candidate: str, opset: int) -> bool:
    if candidate == "slices":
        return True
    w = window(desc)
    spatial = desc.tensor("InputTensor").sizes[2:]
    if not _padding_below_window(w) or has_empty_windows(w, spatial) or w.formula_sizes(spatial) != w.out:
        return False  # fewer windows than fit: the slices
    if w.kind == "MAX":
        return desc.tensor("InputTensor").data_type in (*MAX_POOL_TYPES, *MAX_POOL_VIA_FLOAT32)
    # AveragePool-11 (opset 17) and LpPool-11 have no dilations
    return all(d == 1 for d in w.dilations) and opset < 18


def choose(desc: OperatorDesc, target: str, options: tuple[str, ...]) -> str:
    """The EPs' own pooling kernels where they apply (not measured yet)."""
    return "pool" if "pool" in options else options[0]


# -- lowering ---------------------------------------------------------------------------------


def _pool_attrs(w: Window) -> dict[str, object]:
    return {"kernel_shape": list(w.sizes), "strides": list(w.strides), "pads": [*w.start, *w.end]}


def lower(desc: OperatorDesc, b: GraphBuilder, inputs: dict[str, str]) -> str | dict[str, str]:
    w = window(desc)
    x = inputs["InputTensor"]
    dtype = desc.tensor("InputTensor").data_type
    index_type = desc.tensor(INDICES).data_type if with_indices(desc) else None
    if b.variant == "pool":
        return _lower_pool(b, w, x, dtype, desc.tensor("InputTensor").sizes, index_type)
    return _lower_slices(b, w, x, dtype, desc.tensor("InputTensor").sizes, index_type)


def _lower_pool(
    b: GraphBuilder, w: Window, x: str, dtype: dtypes.DataType, sizes: tuple[int, ...], index_type: dtypes.DataType | None
) -> str | dict[str, str]:
    native = b.target.dml_nodes  # the DirectML EP takes FLOAT16 (and INT8/UINT8 MaxPool) as they are
    if w.kind == "MAX":
        # FLOAT16 as it is where the EP's MaxPool takes it (a max is exact in any float type); the
        # indices' Equal stays in FLOAT32 off the DirectML EP
        half = native or (b.target.max_pool_half and index_type is None)
        carrier = dtype if dtype in MAX_POOL_TYPES or (half and dtype == dtypes.FLOAT16) else dtypes.FLOAT32
    else:
        half = w.kind == "AVERAGE" and b.target.average_pool_half and dtype == dtypes.FLOAT16
        carrier = dtype if native or half else dtypes.FLOAT32
    if carrier != dtype:
        x = b.cast(x, carrier, "to_float32", f"{dtype} in FLOAT32, exactly")
    if w.kind == "MAX" and dtype.is_float and not native:
        x = _floored(b, x, dtype, carrier)
    attrs = _pool_attrs(w)
    doc = DML_NODE_DOC if native else None
    if w.kind == "MAX" and index_type is not None and native:
        # MaxPool's Indices (INT64): the DirectML EP maps it onto MAX_POOLING2's OutputIndicesTensor
        y, i = b.node_outputs("MaxPool", [x], "max_pool", DML_NODE_DOC, 2, dilations=list(w.dilations), **attrs)
        if carrier != dtype:
            y = b.cast(y, dtype, "to_" + dtype.name.lower(), f"back to {dtype}")
        return {"OutputTensor": y, INDICES: b.cast(i, index_type, "indices", f"the indices in {index_type}")}
    if w.kind == "MAX":
        y = b.node(
            "MaxPool", [x], "max_pool", doc or "the largest input element of each window", dilations=list(w.dilations), **attrs
        )
        if index_type is not None:  # not MaxPool's Indices: the CUDA EP's kernel misses ties at the lowest value
            kind = comparable(carrier)
            xc, yc = (
                v if kind == carrier else b.cast(v, kind, f"{n}_comparable", f"{n} in {kind} (exact) for Equal")
                for v, n in ((x, "x"), (y, "max"))
            )
            i = _max_indices(b, w, xc, yc, kind, sizes, index_type)
            if carrier != dtype:
                y = b.cast(y, dtype, "to_" + dtype.name.lower(), f"back to {dtype}")
            return {"OutputTensor": y, INDICES: i}
    elif w.kind == "AVERAGE":
        y = b.node(
            "AveragePool",
            [x],
            "average_pool",
            doc or "sum / count of each window's input elements (or / WindowSize with IncludePadding)",
            count_include_pad=int(w.include_padding),
            **attrs,
        )
    elif native:
        y = b.node("LpPool", [x], "lp_pool", doc, p=w.p, **attrs)
    else:
        y = _lp_by_average_pool(b, w, x, attrs)
    if carrier != dtype:
        y = b.cast(y, dtype, "to_" + dtype.name.lower(), f"back to {dtype}")
    return y


def comparable(carrier: dtypes.DataType) -> dtypes.DataType:
    """A type holding `carrier`'s values exactly that the CUDA EP's Equal takes: INT32 for the
    8/16-bit integers (MaxPool's INT8/UINT8), else the type itself."""
    return carrier if carrier.is_float or carrier.size >= 4 else dtypes.INT32


def _max_indices(
    b: GraphBuilder, w: Window, x: str, y: str, xtype: dtypes.DataType, sizes: tuple[int, ...], index_type: dtypes.DataType
) -> str:
    """OutputIndicesTensor from the floored input x and the window maxima y (same type): per
    window element, its flat position in the (n, c) plane where it equals the maximum, else a
    sentinel past every position (padding is the sentinel everywhere); the smallest over the
    window is the first maximum; plus the plane's offset (n * C + c) * plane size. Not MaxPool's
    Indices output: the CUDA EP's kernel starts from the window's first element minus 1, which
    misses equal windows at the lowest value (and wraps for INT8/UINT8), and gives -1 there."""
    spatial = sizes[2:]
    plane = math.prod(spatial)
    count = math.prod(sizes)
    # INT32 where every index and the sentinel fit (the CPU EP's INT64 Min is wrong past 2**31)
    work = dtypes.INT32 if count < 2**31 - 1 else dtypes.INT64
    sentinel = plane
    out = w.output_sizes(spatial)
    positions = np.arange(plane).reshape(spatial)
    padded = np.pad(positions, list(zip(w.start, w.end, strict=True)), constant_values=sentinel)
    xp, _ = _padded(b, x, list(sizes), w, 0, xtype.numpy)  # padding is never a candidate
    axes, steps, none = (
        b.i64(list(range(2, 2 + len(out))), "axes"),
        b.i64(list(w.strides), "steps"),
        b.scalar(sentinel, work, "sentinel"),
    )
    candidates = []
    for offset in itertools.product(*(range(k) for k in w.sizes)):
        window_slices = tuple(
            slice(o * d, o * d + (n - 1) * s + 1, s) for o, d, n, s in zip(offset, w.dilations, out, w.strides, strict=True)
        )
        table = padded[window_slices].reshape(1, 1, *out).astype(work.numpy)
        if (table == sentinel).all():
            continue  # this window element is padding in every window
        starts = [o * d for o, d in zip(offset, w.dilations, strict=True)]
        ends = [st + (n - 1) * s + 1 for st, n, s in zip(starts, out, w.strides, strict=True)]
        tap = b.node(
            "Slice",
            [xp, b.i64(starts, "starts"), b.i64(ends, "ends"), axes, steps],
            "index_tap",
            f"window element {list(offset)} of every window",
        )
        hit = b.node("Equal", [tap, y], "is_max", "this window element is the maximum")
        candidates.append(
            b.node(
                "Where",
                [hit, b.const(table, "positions"), none],
                "position",
                f"its position in the plane where it is the maximum, else {sentinel}",
            )
        )
    if not candidates:  # every window entirely in padding: DirectML's 0 everywhere
        return b.filled([*sizes[:2], *out], 0, index_type.numpy, "indices", "0: every window is padding")
    nearest = candidates[0] if len(candidates) == 1 else b.node("Min", candidates, "first", "the first maximum of each window")
    planes = (np.arange(sizes[0] * sizes[1]).reshape(sizes[0], sizes[1], *([1] * len(out))) * plane).astype(work.numpy)
    index = b.node("Add", [nearest, b.const(planes, "plane_offsets")], "index", "+ (n * C + c) * the plane's size")
    if (padded_windows := _empty_window_mask(w, spatial)) is not None:  # DirectML gives 0 there
        index = b.node(
            "Where",
            [b.const(padded_windows, "empty"), b.scalar(0, work, "zero"), index],
            "empty_zero",
            "0 for a window entirely in padding",
        )
    return b.cast(index, index_type, "indices", f"the indices in {index_type}")


def _empty_window_mask(w: Window, spatial: tuple[int, ...]) -> np.ndarray | None:
    empty = counts(w, spatial) == 0
    return empty.reshape(1, 1, *empty.shape) if empty.any() else None


def _floored(b: GraphBuilder, x: str, dtype: dtypes.DataType, carrier: dtypes.DataType = dtypes.FLOAT32) -> str:
    """x (held in `carrier`) where x >= `dtype`'s lowest finite value, else (-inf, NaN) that value.
    Not after the MaxPool, on its smaller output: the CPU EP's MaxPool keeps a NaN that follows a
    number in its window ([2, NaN] gives NaN, [NaN, 1] gives 1) and -inf over -inf, the CUDA EP's
    gives NaN for any window holding one (tools/gpu_pool_semantics.py)."""
    floor = b.scalar(lowest(dtype.numpy), carrier, "lowest")
    keep = b.node("GreaterOrEqual", [x, floor], "finite_or_above", "x >= lowest (false for -inf and NaN)")
    return b.node("Where", [keep, x, floor], "floored", f"max(x, {lowest(dtype.numpy)}), NaN skipped: DirectML's start value")


def _powered(b: GraphBuilder, x: str, p: int) -> str:
    """|x|^P in FLOAT32."""
    a = b.node("Abs", [x], "abs", "|x|")
    if p == 1:
        return a
    if p == 2:
        return b.node("Mul", [a, a], "squared", "|x|^2")
    return b.node("Pow", [a, b.scalar(float(p), dtypes.FLOAT32, "p")], "powered", f"|x|^{p}")


def _root(b: GraphBuilder, s: str, p: int) -> str:
    if p == 1:
        return s
    if p == 2:
        return b.node("Sqrt", [s], "root", "(sum)^(1/2)")
    return b.node("Pow", [s, b.scalar(1.0 / p, dtypes.FLOAT32, "one_over_p")], "root", f"(sum)^(1/{p})")


def _lp_by_average_pool(b: GraphBuilder, w: Window, x: str, attrs: dict[str, object]) -> str:
    """(WindowSize * AveragePool(|x|^P, count_include_pad)) ^ (1/P): the padding adds 0."""
    avg = b.node(
        "AveragePool", [_powered(b, x, w.p)], "mean_power", "mean of |x|^P over the whole window", count_include_pad=1, **attrs
    )
    total = b.node("Mul", [avg, b.scalar(float(math.prod(w.sizes)), dtypes.FLOAT32, "window_size")], "sum_power", "sum of |x|^P")
    return _root(b, total, w.p)


def _padded(b: GraphBuilder, x: str, shape: list[int], w: Window, fill: float | int, np_type: np.dtype) -> tuple[str, list[int]]:
    """x with StartPadding and EndPadding elements of `fill` on each spatial axis (Concat)."""
    for a, (s, e) in enumerate(zip(w.start, w.end, strict=True)):
        axis = a + 2
        parts = []
        for side, count in (("start", s), ("end", e)):
            if count:
                pad_shape = [*shape[:axis], count, *shape[axis + 1 :]]
                parts.append((side, b.filled(pad_shape, fill, np_type, f"pad_{side}_{a}", f"{count} padding elements")))
        if not parts:
            continue
        ins = [v for side, v in parts if side == "start"] + [x] + [v for side, v in parts if side == "end"]
        x = b.node("Concat", ins, f"padded_{a}", f"padded along spatial dimension {a}", axis=axis)
        shape[axis] += s + e
    return x, shape


def _lower_slices(
    b: GraphBuilder, w: Window, x: str, dtype: dtypes.DataType, sizes: tuple[int, ...], index_type: dtypes.DataType | None
) -> str | dict[str, str]:
    spatial = sizes[2:]
    out = w.output_sizes(spatial)
    n_spatial = len(spatial)
    axes = list(range(2, 2 + n_spatial))
    if w.kind == "MAX":
        carrier = dtypes.FLOAT32 if dtype == dtypes.FLOAT16 else common.compute_type(dtype)
        fill: float | int = lowest(dtype.numpy)
    else:
        carrier, fill = dtypes.FLOAT32, 0.0
    if carrier != dtype:
        x = b.cast(x, carrier, "widened", f"{dtype} in {carrier}, exactly")
    if w.kind == "MAX" and dtype.is_float:
        x = _floored(b, x, dtype)
    if w.kind == "LP":
        x = _powered(b, x, w.p)
    unpadded = x
    x, _ = _padded(b, x, list(sizes), w, fill, carrier.numpy)
    taps = []
    for offset in itertools.product(*(range(k) for k in w.sizes)):
        starts = [o * d for o, d in zip(offset, w.dilations, strict=True)]
        ends = [st + (n - 1) * s + 1 for st, n, s in zip(starts, out, w.strides, strict=True)]
        bounds = [b.i64(starts, "starts"), b.i64(ends, "ends"), b.i64(axes, "axes"), b.i64(list(w.strides), "steps")]
        taps.append(b.node("Slice", [x, *bounds], "tap", f"window element {list(offset)} of every window"))
    if w.kind == "MAX":
        if carrier.size == 8 and not carrier.is_float:  # the CPU EP's INT64/UINT64 Max is wrong past 2**31
            y = taps[0]
            for tap in taps[1:]:
                y = _extreme(b, y, tap, carrier, True)
        else:
            y = taps[0] if len(taps) == 1 else b.node("Max", taps, "max", "the largest element of each window")
    else:
        y = taps[0] if len(taps) == 1 else b.node("Sum", taps, "sum", "the sum over each window")
        if w.kind == "LP":
            y = _root(b, y, w.p)
        else:
            c = counts(w, spatial)
            if w.include_padding:
                c = np.full_like(c, math.prod(w.sizes))
            divisor = c.astype(np.float32).reshape(1, 1, *out)
            y = b.node("Div", [y, b.const(divisor, "divisor")], "average", "sum / the window's element count")
    indices = None if index_type is None else _max_indices(b, w, unpadded, y, carrier, sizes, index_type)
    if carrier != dtype:
        y = b.cast(y, dtype, "to_" + dtype.name.lower(), f"back to {dtype}")
    return y if indices is None else {"OutputTensor": y, INDICES: indices}


# -- reference --------------------------------------------------------------------------------


def reference(desc: OperatorDesc, inputs: dict[str, np.ndarray]) -> np.ndarray | dict[str, np.ndarray]:
    w = window(desc)
    x = inputs["InputTensor"]
    t = x.dtype
    if w.kind == "MAX":
        floor = lowest(t)
        if t.kind == "f":
            with np.errstate(invalid="ignore"):
                x = np.where(x >= floor, x, floor)
        v, valid = windows(w, x, floor)
        y = v.max(axis=0).astype(t)
        if not with_indices(desc):
            return y
        # the first input element of the window equal to its maximum; 0 for a window of padding
        positions, _ = windows(w, np.arange(x.size, dtype=np.int64).reshape(x.shape), 0)
        first = np.argmax(valid & (v == y), axis=0)
        index = np.take_along_axis(positions, first[None], axis=0)[0]
        index = np.where(valid.any(axis=0), index, 0)
        return {"OutputTensor": y, INDICES: index.astype(desc.tensor(INDICES).data_type.numpy)}
    v, m = windows(w, x.astype(np.float64), 0.0)
    with np.errstate(all="ignore"):
        if w.kind == "LP":
            y = (np.abs(v) ** w.p).sum(axis=0) ** (1.0 / w.p)
        else:
            count = np.full(m.shape[1:], float(math.prod(w.sizes))) if w.include_padding else m.sum(axis=0).astype(np.float64)
            y = v.sum(axis=0) / count
    return y.astype(t)


# -- examples ------------------------------------------------------------------------------------


def examples(op: OperatorSchema) -> list[common.Example]:
    """onnx_ops: each type, a 3x3 window of stride 2 with padding 1 over [1, 2, 5, 5] (and a
    dilated 2x2 window in the "1" versions)."""
    out = []
    for t in common.example_types(op, "InputTensor"):
        desc: common.Example = {
            "InputTensor": common.example_tensor(t, [1, 2, 5, 5]),
            "OutputTensor": common.example_tensor(t, [1, 2, 3, 3]),
            "DimensionCount": 2,
            "Strides": [2, 2],
            "WindowSize": [3, 3],
            "StartPadding": [1, 1],
            "EndPadding": [1, 1],
        }
        if "Dilations" in [f.name for f in op.fields]:
            desc["Dilations"] = [1, 1]
        if op.name.startswith("AVERAGE"):
            desc["IncludePadding"] = False
        if op.name.startswith("LP"):
            desc["P"] = 2
        out.append(desc)
        if INDICES in [f.name for f in op.fields]:  # MAX_POOLING1 and 2: with the indices too
            out.append(desc | {INDICES: common.example_tensor("UINT32", [1, 2, 3, 3])})
    return out


OPERATOR_FAMILY = Family(
    ("AVERAGE_POOLING", "AVERAGE_POOLING1", "LP_POOLING", "LP_POOLING1", "MAX_POOLING", "MAX_POOLING1", "MAX_POOLING2"),
    validate,
    lower,
    reference,
    CANDIDATES,
    applies=applies,
    choose=choose,
    dml_preference=DML_PREFERENCE,
    cpu_preference=CPU_PREFERENCE,
    examples=examples,
)
