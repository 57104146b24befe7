"""DML_OPERATOR_AVERAGE_POOLING_GRAD and DML_OPERATOR_MAX_POOLING_GRAD: the backpropagation of
AVERAGE_POOLING and MAX_POOLING2 (pooling.py). InputGradientTensor has the forward's output sizes
[N, C, O...], OutputGradientTensor (and MAX's InputTensor, the forward's input) its input sizes
[N, C, X...]; DimensionCount (2 or 3) spatial dimensions, windows of WindowSize elements (every
Dilations-th element for MAX) in steps of Strides over the input padded by StartPadding and
EndPadding. Window o's tap t reads input element o * Strides + t * Dilations - StartPadding.

- AVERAGE: each window's gradient divided by its divisor goes to every input element of the
  window: OutputGradient[i] = sum over the windows that hold i of InputGradient[o] / divisor[o]
  (the page's example: [[1, 2], [3, 4]] by a 2x2 window gives [[0.25, 0.75, 0.5], [1, 2.5,
  1.5], [0.75, 1.75, 1]]).
- MAX: each window's gradient goes to the element of InputTensor that the forward picked, the one
  with the lowest logical index where several are equal (the page's words); sums where windows
  overlap, zeros elsewhere (the page's example: [[1, 2], [4, 5]] over [[1, 2, 3], [2, 4, 2],
  [5, 6, 7]] gives [[0, 0, 0], [0, 3, 0], [0, 4, 5]]).

What the pages leave open, as DirectML's own API computed it (1.24.4 under Wine; tests/
test_pooling_grad.py pins each):
- the AVERAGE divisor is the count of the window's input elements, and with IncludePadding the
  count of its elements within the padded input [-StartPadding, InputSize + EndPadding);
- AVERAGE takes InputGradientTensor's spatial sizes as they are: fewer windows than the forward's
  formula, or more (windows past the padded input: their elements there count in neither
  divisor), a window larger than the padded input; N and C must be OutputGradientTensor's;
- MAX picks as MAX_POOLING2 does (pooling.py): NaN and -inf count as the type's lowest finite
  value, so a window of only those gives its first input element the gradient; ties go to the
  first element in window order (the lowest logical index);
- a window entirely in padding passes its gradient nowhere (AVERAGE: no input element; MAX: not
  to element 0, which the forward's index names);
- MAX requires InputGradientTensor's spatial sizes to be the forward's formula with the dilated
  window, (padded size - (WindowSize - 1) * Dilations - 1) / Strides + 1 rounded down, and 1
  where the window is larger than the padded input (E_INVALIDARG otherwise), InputTensor's sizes
  to be OutputGradientTensor's;
- DirectML accepts Strides or WindowSize 0 (AVERAGE: a zero gradient) and refuses Dilations 0:
  all three are refused here (1 or more, as the forward's pages);
- FLOAT16 is accumulated in FLOAT32 (tolerances.training_grad).

The lowering ("taps"), FLOAT32 throughout (FLOAT16 cast there and back), static shapes, no
multiplication of a gradient by a 0 weight (a NaN or an infinity reaches only its own elements):
per window tap the contributions C_t [N, C, O...] (AVERAGE: InputGradient / divisor, the same for
every tap; MAX: InputGradient where tap t is the window's first maximum, else 0, from pooling's
floored, padded input: a Slice per tap, Max, Equal, Where, Min of the tap numbers); then axis by
axis, last first, the adjoint of the strided tap read: C spread to every Strides-th element
(Reshape, Pad, Reshape, Slice), each tap's copy moved into place (Pad, Slice: element o * Strides +
t * Dilations - StartPadding, the rest cropped) and the taps summed (Sum), so AVERAGE costs the sum
of the window sizes in nodes, MAX the product (its taps' masks) plus the sum. A ConvTranspose with
a one-hot kernel (MAX) computes the same on finite gradients, but a kernel's 0 times an infinite
gradient puts NaN where DirectML has none (AVERAGE's ones kernel has no 0: conv_transpose below).
The DirectML EP registers no ONNX node that maps onto these operators (MaxPoolGrad and
AveragePoolGrad are training operators outside its registrations): no `dml` preference.

Two faster candidates (choices.py; `choose` takes them where they apply, measured on the H100),
each exact against the reference on every matrix case (the CPU EP):
- "conv_transpose" (AVERAGE, every target): the averaged gradients [N, C, O...] through one
  depthwise ConvTranspose (group C: no Reshape makes the output, which would be a copy there) with a
  ones kernel [C, 1, WindowSize...], Strides, symmetric pads (the CUDA EP hands
  asymmetric ones to the CPU EP, ConvTransposeNeedFallbackToCPU) and output_padding below Strides
  (ONNX's bound) for the windows' last elements; a Slice and a Pad only where the geometry is not
  ConvTranspose's own (padding as large as the window, windows past the padded input, fewer
  windows). Every weight is 1: no gradient is multiplied by 0, so a NaN or an infinity reaches its
  own window's elements only (on the CPU EP; cuDNN may pick an FFT or Winograd algorithm, whose
  transforms mix neighbouring values: finite gradients stay within tolerances.training_grad, a
  non-finite one may spread; the DirectML EP under Wine ran all 26 AVERAGE matrix cases so, every
  node on it, matching; the CUDA EP kept the non-finite gradients in their windows in every matrix
  case with them and at the benchmark size). Nodes for the ResNet-50 stem (3x3, stride 2, padding 1
  over 112 x 112): Div, ConvTranspose
  (FLOAT16: a Cast before and after, FLOAT32 inside as taps, so tolerances.training_grad's bound
  holds as derived: sums of at most POOLING_WINDOW FLOAT32 terms, one FLOAT16 rounding; with the
  CUDA EP's use_tf32 on, its default, which dml2onnx's sessions turn off, cuDNN would round each
  gradient to 10 mantissa bits first).
- "scatter" (MAX, the `cuda` and `cpu` targets: ScatterElements' reduction add, opset 16, has no
  DirectML operator): the floored input padded with -inf (below every floored element, so padding
  never is a maximum), every window's elements gathered at once (Gather of [O..., taps] padded
  positions: [N, C, O..., taps]), ArgMax over the taps (the first maximum: the lowest logical
  index; the CUDA EP's last-axis ArgMax gives 0 for an all -inf row, docs/patterns.md), the tap's
  input position (Gather of the taps' offsets + the window's origin), and ScatterElements with
  reduction add into zeros [N, C, X...]: each gradient added once, at one element, none multiplied
  (the CUDA EP adds atomically, in no fixed order: training_grad's bound is for any order);
  windows entirely in padding pass 0 (to element 0). Nodes: GreaterOrEqual, Where, Pad, Reshape,
  Add, Gather, ArgMax, Gather, Add, Reshape x2, ConstantOfShape, ScatterElements, Reshape (a Where
  on the positions and one on the gradients with windows entirely in padding; FLOAT16: Casts). The
  forward's MaxPool Indices output was not taken: the CUDA EP's kernel (max_pool_with_index.cu)
  scans a window column-major (W outer, H inner) from its first element - 1, so it breaks ties
  unlike DirectML (row-major) and unlike the CPU EP.
The CUDA EP registers every node in FLOAT32 (onnxruntime/core/providers/cuda: nn/conv_transpose.cc
ConvTranspose 1-22; tensor/scatter_elements.cc ScatterElements 16-17 and 18 with reduction add over
AllFixedSizeTensorTypes, int64 indices; Gather, ArgMax, Pad, Where, GreaterOrEqual, Add,
ConstantOfShape in cuda_execution_provider.cc)."""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np

from dml2onnx.core import dtypes
from dml2onnx.core.desc import OperatorDesc
from dml2onnx.core.errors import ModelError
from dml2onnx.core.schema import OperatorSchema
from dml2onnx.graph.builder import GraphBuilder
from dml2onnx.ops import common, pooling
from dml2onnx.ops.family import Family

ROWS = ("AVERAGE_POOLING_GRAD", "MAX_POOLING_GRAD")
IN, OUT, X = "InputGradientTensor", "OutputGradientTensor", "InputTensor"
ARRAYS = ("Strides", "WindowSize", "StartPadding", "EndPadding", "Dilations")
CANDIDATES = ("taps", "conv_transpose", "scatter")  # choices.py
# ScatterElements' reduction has no DirectML operator (DML_SCATTER_OPERATOR_DESC has none): the
# scatter graph is built for the `cuda` target (its tests' target) and `cpu`, never `portable`/`dml`
ONLY_ON = {"scatter": ("cuda", "cpu")}
F32 = dtypes.FLOAT32


@dataclass(frozen=True)
class Axis:
    """One spatial axis: the input's size, the windows' count, and the desc's window fields."""

    size: int  # X: OutputGradientTensor's (the forward input's) size
    windows: int  # O: InputGradientTensor's size
    stride: int
    window: int
    dilation: int
    start: int
    end: int

    def positions(self) -> np.ndarray:
        """[O, WindowSize]: the input position each tap of each window reads."""
        return np.arange(self.windows)[:, None] * self.stride + np.arange(self.window)[None, :] * self.dilation - self.start

    def inside(self) -> np.ndarray:
        p = self.positions()
        return (p >= 0) & (p < self.size)


def is_max(desc: OperatorDesc) -> bool:
    return desc.schema.name == "MAX_POOLING_GRAD"


def axes(desc: OperatorDesc) -> list[Axis]:
    n = desc["DimensionCount"]
    dil = desc["Dilations"] if is_max(desc) else (1,) * n
    out, g = desc.tensor(OUT).sizes[2:], desc.tensor(IN).sizes[2:]
    fields = zip(out, g, desc["Strides"], desc["WindowSize"], dil, desc["StartPadding"], desc["EndPadding"], strict=True)
    return [Axis(*f) for f in fields]


def max_windows(a: Axis) -> int:
    """MAX_POOLING_GRAD's window count along an axis (DirectML's rule: the dilated window's
    formula, at least 1)."""
    extent = (a.window - 1) * a.dilation + 1
    return max(1, (a.size + a.start + a.end - extent) // a.stride + 1)


# -- validation -------------------------------------------------------------------------------


def validate(desc: OperatorDesc) -> None:
    common.check_same_type(desc, OUT, IN)
    common.check_same_rank(desc, OUT, IN)
    if is_max(desc):
        common.check_same_type(desc, X, IN)
        common.check_same_sizes(desc, X, OUT)
    g, out = desc.tensor(IN), desc.tensor(OUT)
    spatial = out.rank - 2
    if desc["DimensionCount"] != spatial:
        raise ModelError(
            desc.at("DimensionCount"), f"must be {OUT}'s DimensionCount - 2 ({spatial}), not {desc['DimensionCount']}"
        )
    for name in (a for a in ARRAYS if a in desc.values):
        values = desc[name]
        if len(values) != spatial:
            raise ModelError(desc.at(name), f"{name} must have DimensionCount ({spatial}) elements, not {len(values)}")
        low = next((i for i, v in enumerate(values) if v < 1 and name in ("Strides", "WindowSize", "Dilations")), None)
        if low is not None:  # DirectML takes Strides and WindowSize 0 (zeros) and refuses Dilations 0
            raise ModelError(desc.at(name, low), f"{name} must be 1 or more, not {values[low]}")
    common.check_paddings(desc, out.sizes[2:])
    for i in range(2):
        if g.sizes[i] != out.sizes[i]:
            what = ("N", "C")[i]
            raise ModelError(desc.at(IN, "Sizes", i), f"must be {OUT}'s {what} ({out.sizes[i]}), not {g.sizes[i]}")
    if is_max(desc):
        want = [max_windows(a) for a in axes(desc)]
        if list(g.sizes[2:]) != want:
            raise ModelError(
                desc.at(IN, "Sizes"),
                f"must be {list(out.sizes[:2]) + want}: N and C of {OUT}, then (padded size - (WindowSize - 1) *"
                f" Dilations - 1) / Strides + 1 per spatial dimension, rounded down (1 for a window larger than the"
                f" padded input); not {list(g.sizes)}",
            )


# -- the divisors and the forward's window ----------------------------------------------------


def divisors(desc: OperatorDesc) -> np.ndarray:
    """AVERAGE's divisor of each window [O...]: its input elements, or with IncludePadding its
    elements within the padded input (DirectML's counts); 0 for a window with none."""
    total = np.ones((), np.int64)
    for a in axes(desc):
        p = a.positions()
        low, high = (-a.start, a.size + a.end) if desc["IncludePadding"] else (0, a.size)
        total = np.multiply.outer(total, ((p >= low) & (p < high)).sum(axis=1))
    return total


def forward_window(desc: OperatorDesc) -> pooling.Window:
    """MAX_POOLING2's window with EndPadding extended to cover every window (a window larger than
    the padded input: pooling.window's rule)."""
    ax = axes(desc)
    end = tuple(
        a.end + max(0, (a.windows - 1) * a.stride + (a.window - 1) * a.dilation + 1 - (a.size + a.start + a.end)) for a in ax
    )
    return pooling.Window(
        "MAX",
        tuple(a.stride for a in ax),
        tuple(a.window for a in ax),
        tuple(a.start for a in ax),
        end,
        tuple(a.dilation for a in ax),
    )


# -- lowering ---------------------------------------------------------------------------------


class _Spread:
    """The adjoint of the taps' strided reads, axis by axis (the module's docstring)."""

    def __init__(self, b: GraphBuilder, shape: list[int], ax: list[Axis], taps: bool) -> None:
        self.b, self.shape, self.ax, self.taps = b, shape, ax, taps

    def run(self, c: str) -> str:
        n = len(self.ax)
        for a in reversed(range(n)):
            c = self._axis(c, a, (a + 1 if self.taps else 0) + 2 + a)
        return c

    def _axis(self, c: str, a: int, at: int) -> str:
        b, ax = self.b, self.ax[a]
        c, length = self._strided(c, a, at)
        parts = []
        for t in range(ax.window):
            part, pos = c, at
            if self.taps:
                part = b.node("Gather", [c, b.i64(t, f"axis{a}_tap{t}")], f"axis{a}_tap{t}", f"tap {t}'s contributions", axis=a)
                pos = at - 1
            shift = ax.start - t * ax.dilation  # out[i] = spread[i + shift]
            if shift >= length or shift + ax.size <= 0:
                continue  # every window's tap t is in padding
            parts.append(self._place(part, a, t, pos, length, shift))
        if self.taps:
            del self.shape[a]
            at -= 1
        self.shape[at] = ax.size
        if not parts:
            return b.filled(self.shape, 0.0, np.float32, f"axis{a}_zeros", "every tap in padding")
        return parts[0] if len(parts) == 1 else b.node("Sum", parts, f"axis{a}_sum", f"the taps' contributions along axis {a}")

    def _strided(self, c: str, a: int, at: int) -> tuple[str, int]:
        """c with Strides - 1 zeros after each element along `at`: window o at o * Strides."""
        b, ax, shape = self.b, self.ax[a], self.shape
        if ax.stride == 1 or ax.windows == 1:
            return c, ax.windows
        # 4-D whatever the rank: MAX's [WindowSize..., N, C, O...] has 8 dimensions with 3 spatial
        # ones, and the CUDA EP's Pad takes at most 8 (one more failed on the H100)
        split = [math.prod(shape[:at]), shape[at], 1, math.prod(shape[at + 1 :])]
        c = b.reshape(c, split, f"axis{a}_split", "a new axis after the windows' (the others merged)")
        pads = [0] * 8
        pads[4 + 2] = ax.stride - 1
        c = b.node(
            "Pad", [c, b.i64(pads, f"axis{a}_stride_pads")], f"axis{a}_strided", f"{ax.stride - 1} zeros after each window"
        )
        merged = [*shape[:at], ax.windows * ax.stride, *shape[at + 1 :]]
        c = b.reshape(c, merged, f"axis{a}_merged", "window o at o * Strides")
        length = (ax.windows - 1) * ax.stride + 1
        c = b.slice(c, [at], [0], [length], f"axis{a}_trimmed", "to the last window")
        return c, length

    def _place(self, c: str, a: int, t: int, at: int, length: int, shift: int) -> str:
        """out[i] = c[i + shift] along `at` for i < the input's size, zeros outside c."""
        b, size = self.b, self.ax[a].size
        before, after = max(0, -shift), max(0, size + shift - length)
        rank = len(self.shape) - (1 if self.taps else 0)
        if before or after:
            pads = [0] * (2 * rank)
            pads[at], pads[rank + at] = before, after
            c = b.node("Pad", [c, b.i64(pads, f"axis{a}_tap{t}_pads")], f"axis{a}_tap{t}_padded", "zeros past the windows")
        begin = shift + before
        if begin == 0 and before + length + after == size:
            return c
        return b.slice(c, [at], [begin], [begin + size], f"axis{a}_tap{t}_placed", f"tap {t}'s input positions")


def applies(desc: OperatorDesc, candidate: str, opset: int) -> bool:
    """conv_transpose for AVERAGE, scatter for MAX (ScatterElements' reduction: opset 16), taps for both."""
    if candidate == "conv_transpose":
        return not is_max(desc)
    if candidate == "scatter":
        return is_max(desc) and opset >= 16
    return True


def choose(desc: OperatorDesc, target: str, options: tuple[str, ...]) -> str:
    """conv_transpose (AVERAGE) and scatter (MAX, `cuda` only) wherever they apply: on the H100,
    3x3 stride 2 over 32x64x112x112 FLOAT32 (benchmarks/results/h100-part4-2026-11-23.md),
    AVERAGE 0.37 ms against taps' 1.18 (PyTorch's backward 0.57; 0.45 ms
    when the ConvTranspose ran on [N * C, 1, ...] and a Reshape made the output), MAX 0.97 ms against taps' 20.4
    (PyTorch's 0.35, which reads the forward's saved indices)."""
    return next((c for c in ("conv_transpose", "scatter") if c in options), options[0])


def lower(desc: OperatorDesc, b: GraphBuilder, inputs: dict[str, str]) -> str:
    dtype = desc.tensor(IN).data_type
    ax = axes(desc)
    g = inputs[IN] if dtype == F32 else b.cast(inputs[IN], F32, "gradient_float32", "in FLOAT32")
    shape = list(desc.tensor(IN).sizes)
    if b.variant == "scatter":
        y = _max_scatter(desc, b, inputs, g)
    elif is_max(desc):
        c = _max_contributions(desc, b, inputs, g)
        y = _Spread(b, [a.window for a in ax] + shape, ax, True).run(c)
    else:
        d = divisors(desc)
        safe = np.where(d == 0, 1, d).astype(np.float32).reshape(1, 1, *d.shape)
        c = b.node("Div", [g, b.const(safe, "divisors")], "averaged", "each window's gradient / its divisor")
        y = _transposed(desc, b, c) if b.variant == "conv_transpose" else _Spread(b, shape, ax, False).run(c)
    return y if dtype == F32 else b.cast(y, dtype, "output", f"in {dtype}")


def _max_contributions(desc: OperatorDesc, b: GraphBuilder, inputs: dict[str, str], g: str) -> str:
    """[WindowSize..., N, C, O...]: the gradient at the tap that is its window's first maximum."""
    dtype, ax = desc.tensor(X).data_type, axes(desc)
    w = forward_window(desc)
    x = inputs[X] if dtype == F32 else b.cast(inputs[X], F32, "input_float32", "in FLOAT32, exactly")
    x = pooling._floored(b, x, dtype)
    xp, _ = pooling._padded(b, x, list(desc.tensor(X).sizes), w, pooling.lowest(dtype.numpy), np.float32)
    n, out = len(ax), [a.windows for a in ax]
    spatial_axes = b.i64(list(range(2, 2 + n)), "axes")
    steps = b.i64([a.stride for a in ax], "steps")
    inside = [a.inside() for a in ax]
    taps, valid = [], []
    for number, offset in enumerate(itertools.product(*(range(a.window) for a in ax))):
        mask = np.ones((), bool)
        for i, t in zip(inside, offset, strict=True):
            mask = np.logical_and.outer(mask, i[:, t])
        if not mask.any():
            continue  # this tap is padding in every window
        starts = [t * a.dilation for t, a in zip(offset, ax, strict=True)]
        ends = [s + (o - 1) * a.stride + 1 for s, o, a in zip(starts, out, ax, strict=True)]
        tap = b.node(
            "Slice",
            [xp, b.i64(starts, "starts"), b.i64(ends, "ends"), spatial_axes, steps],
            "tap",
            f"window element {list(offset)}",
        )
        taps.append((number, tap, mask))
    total = math.prod(a.window for a in ax)
    if not taps:  # every window entirely in padding: no gradient anywhere
        return b.filled([*(a.window for a in ax), *desc.tensor(IN).sizes], 0.0, np.float32, "nothing", "every window padding")
    y = taps[0][1] if len(taps) == 1 else b.node("Max", [t for _, t, _ in taps], "max", "each window's largest element")
    none = b.scalar(total, dtypes.INT32, "no_tap")
    for number, tap, mask in taps:
        hit = b.node("Equal", [tap, y], "is_max", "this tap holds the maximum")
        if not mask.all():
            hit = b.node("And", [hit, b.const(mask.reshape(1, 1, *mask.shape), "inside")], "is_max_inside", "an input element")
        valid.append(b.node("Where", [hit, b.scalar(number, dtypes.INT32, "tap_number"), none], "tap_if_max", "its number"))
    first = valid[0] if len(valid) == 1 else b.node("Min", valid, "first", "the first maximum's tap (none: WindowSize product)")
    first = b.reshape(first, [1] * n + list(desc.tensor(IN).sizes), "first_front", "tap axes in front")
    numbers = np.arange(total, dtype=np.int32).reshape(*(a.window for a in ax), *([1] * (n + 2)))
    chosen = b.node("Equal", [first, b.const(numbers, "tap_numbers")], "chosen", "[WindowSize..., N, C, O...]: the chosen tap")
    return b.node("Where", [chosen, g, b.scalar(0.0, F32, "zero")], "contributions", "the gradient at its window's maximum")


# -- conv_transpose (AVERAGE) ----------------------------------------------------------------------


@dataclass(frozen=True)
class _Reach:
    """One axis of the ones-kernel ConvTranspose: its full output holds positions [0, L) of the
    padded input, L = (windows - 1) * Strides + WindowSize (input element i at L-position i +
    StartPadding); symmetric `pad` (the CUDA EP hands asymmetric pads to the CPU EP) and
    `extra` output_padding (< Strides: ONNX's bound) keep [pad, L + extra - pad), of which
    [begin, end) is cropped and `zeros` zeros follow (input elements no window reaches)."""

    pad: int
    extra: int
    begin: int
    end: int
    zeros: int

    @property
    def length(self) -> int:
        return self.end - self.begin + self.zeros


def _reach(a: Axis) -> _Reach | None:
    """None where every window lies in StartPadding (no input element along this axis)."""
    full = (a.windows - 1) * a.stride + a.window
    if full <= a.start:
        return None
    want = a.start + a.size  # the input's elements end there
    pad = min(a.start, (full - 1) // 2)  # at least one output element
    while True:  # every reached element computed: [pad, full + extra - pad) holds [start, min(want, full))
        extra = min(max(0, want - (full - pad)), a.stride - 1)
        kept = full + extra - pad  # the ConvTranspose's output ends there
        if kept >= min(want, full):
            break
        pad -= 1
    return _Reach(pad, extra, a.start - pad, min(want, kept) - pad, want - min(want, kept))


def _transposed(desc: OperatorDesc, b: GraphBuilder, c: str) -> str:
    """AVERAGE's spread as one depthwise ConvTranspose (group C) of the averaged gradients with a
    ones kernel [C, 1, WindowSize...] and Strides: input element i sums the windows that hold it,
    each gradient times 1 (exact, a NaN or an infinity reaching its own window's elements only);
    a Slice and a Pad where the window geometry is not ConvTranspose's own."""
    ax, sizes = axes(desc), desc.tensor(IN).sizes
    out = list(desc.tensor(OUT).sizes)
    reach = [_reach(a) for a in ax]
    if any(r is None for r in reach):
        return b.filled(out, 0.0, np.float32, "zeros", "every window in StartPadding: no input element")
    rs = [r for r in reach if r is not None]
    channels = sizes[1]
    ones = b.const(np.ones((channels, 1, *(a.window for a in ax)), np.float32), "ones")
    attrs: dict[str, object] = {
        "kernel_shape": [a.window for a in ax],
        "strides": [a.stride for a in ax],
        "pads": [r.pad for r in rs] * 2,
        "group": channels,
    }
    if any(r.extra for r in rs):
        attrs["output_padding"] = [r.extra for r in rs]
    # depthwise (group = C): [N, C, ...] in and out, so no Reshape makes the output (a copy there)
    y = b.node("ConvTranspose", [c, ones], "spread", "each window's averaged gradient to its elements", **attrs)
    kept = [a.stride * (a.windows - 1) + a.window + r.extra - 2 * r.pad for a, r in zip(ax, rs, strict=True)]
    spatial = list(range(2, 2 + len(ax)))
    if any(r.begin or r.end != k for r, k in zip(rs, kept, strict=True)):
        y = b.slice(y, spatial, [r.begin for r in rs], [r.end for r in rs], "cropped", "the input's elements")
    if any(r.zeros for r in rs):
        pads = [0] * (2 + len(ax)) * 2
        for i, r in enumerate(rs):
            pads[2 + len(ax) + 2 + i] = r.zeros
        y = b.node("Pad", [y, b.i64(pads, "zeros_pads")], "past_the_windows", "zeros where no window reaches")
    return y


# -- scatter (MAX) ---------------------------------------------------------------------------------


def _flat_positions(ax: list[Axis], sizes: list[int], shift: bool) -> tuple[np.ndarray, np.ndarray]:
    """Row-major positions in a tensor of spatial `sizes`: each window's origin [O...] (its tap 0,
    less StartPadding where `shift`: the input's coordinates, else the padded input's) and each
    tap's offset from it [taps]."""
    n = len(ax)
    pitch = [math.prod(sizes[i + 1 :]) for i in range(n)]
    origin = np.zeros((), np.int64)
    for a, p in zip(ax, pitch, strict=True):
        origin = np.add.outer(origin, (np.arange(a.windows) * a.stride - (a.start if shift else 0)) * p)
    taps = itertools.product(*(range(a.window) for a in ax))
    offsets = [sum(t * a.dilation * p for t, a, p in zip(tap, ax, pitch, strict=True)) for tap in taps]
    return origin.astype(np.int64), np.array(offsets, np.int64)


def _max_scatter(desc: OperatorDesc, b: GraphBuilder, inputs: dict[str, str], g: str) -> str:
    """MAX's gradients added at their windows' first maxima: the floored input padded with -inf
    (below every floored element, so a padding element is never a maximum), every window's
    elements gathered at once [N, C, O..., taps], ArgMax over the taps (the first maximum: the
    lowest logical index), its input position (tap offset + window origin), ScatterElements with
    reduction add into zeros [N, C, X...] (each gradient added once, to one element)."""
    dtype, ax = desc.tensor(X).data_type, axes(desc)
    w = forward_window(desc)
    xs, gs = list(desc.tensor(X).sizes), list(desc.tensor(IN).sizes)
    x = inputs[X] if dtype == F32 else b.cast(inputs[X], F32, "input_float32", "in FLOAT32, exactly")
    x = pooling._floored(b, x, dtype)
    pads = b.i64([0, 0, *w.start, 0, 0, *w.end], "pads")
    xp = b.node("Pad", [x, pads, b.scalar(-np.inf, F32, "below_all")], "padded", "-inf padding: never a maximum")
    padded = [s + p + e for s, p, e in zip(xs[2:], w.start, w.end, strict=True)]
    xp = b.reshape(xp, [*xs[:2], math.prod(padded)], "flat", "[N, C, padded elements]")
    origin, offsets = _flat_positions(ax, padded, shift=False)
    at = b.node(
        "Add",
        [b.const(origin[..., None], "window_origins"), b.const(offsets, "tap_offsets")],
        "tap_positions",
        "each tap's padded position: window origin + tap offset",
    )
    gathered = b.node("Gather", [xp, at], "window_elements", "[N, C, O..., taps]", axis=2)
    first = b.node("ArgMax", [gathered], "first_max", "the first maximum's tap", axis=-1, keepdims=0)
    origin, offsets = _flat_positions(ax, xs[2:], shift=True)
    position = b.node("Gather", [b.const(offsets, "input_offsets"), first], "tap_offset", "the tap's offset in the input")
    position = b.node("Add", [position, b.const(origin[None, None], "input_origins")], "position", "its input position")
    inside = np.ones((), bool)
    for a in ax:
        inside = np.logical_and.outer(inside, a.inside().any(axis=1))
    if not inside.all():  # windows entirely in padding: nothing, added to element 0
        keep = b.const(inside.reshape(1, 1, *inside.shape), "some_element")
        position = b.node("Where", [keep, position, b.scalar(0, dtypes.INT64, "element_0")], "valid_position", "element 0")
        g = b.node("Where", [keep, g, b.scalar(0.0, F32, "nothing")], "valid_gradient", "0 for windows in padding")
    count = math.prod(gs[2:])
    position = b.reshape(position, [*gs[:2], count], "flat_positions", "[N, C, windows]")
    g = b.reshape(g, [*gs[:2], count], "flat_gradients", "[N, C, windows]")
    zeros = b.filled([*xs[:2], math.prod(xs[2:])], 0.0, np.float32, "zeros", "[N, C, input elements]")
    doc = "each gradient added at its window's maximum"
    y = b.node("ScatterElements", [zeros, position, g], "scattered", doc, axis=2, reduction="add")
    return b.reshape(y, xs, "output_sizes", "[N, C, X...]")


# -- reference --------------------------------------------------------------------------------


def reference(desc: OperatorDesc, inputs: dict[str, np.ndarray]) -> np.ndarray:
    """The pages' sums in FLOAT64, rounded once: each window's gradient (AVERAGE: / its divisor)
    added into its input elements (MAX: its first maximum's, from pooling's forward reference)."""
    g = np.asarray(inputs[IN])
    out = np.zeros(desc.tensor(OUT).sizes, np.float64)
    if is_max(desc):
        x = np.asarray(inputs[X])
        floor = pooling.lowest(x.dtype)
        with np.errstate(invalid="ignore"):
            x = np.where(x >= floor, x, floor)
        w = forward_window(desc)
        v, valid = pooling.windows(w, x, floor)
        positions, _ = pooling.windows(w, np.arange(x.size, dtype=np.int64).reshape(x.shape), 0)
        first = np.argmax(valid & (v == v.max(axis=0)), axis=0)
        index = np.take_along_axis(positions, first[None], axis=0)[0]
        some = valid.any(axis=0)
        np.add.at(out.reshape(-1), index[some], g.astype(np.float64)[some])
        return out.astype(g.dtype)
    ax = axes(desc)
    d = divisors(desc)
    with np.errstate(divide="ignore", invalid="ignore"):
        share = g.astype(np.float64) / np.where(d == 0, 1, d)
    for offset in itertools.product(*(range(a.window) for a in ax)):
        pos = [a.positions()[:, t] for a, t in zip(ax, offset, strict=True)]
        keep = [(p >= 0) & (p < a.size) for p, a in zip(pos, ax, strict=True)]
        if not all(k.any() for k in keep):
            continue
        target = (slice(None), slice(None), *np.ix_(*(p[k] for p, k in zip(pos, keep, strict=True))))
        source = (slice(None), slice(None), *np.ix_(*(np.flatnonzero(k) for k in keep)))
        out[target] += share[source]
    with np.errstate(over="ignore"):
        return out.astype(g.dtype)


def examples(op: OperatorSchema) -> list[common.Example]:
    """onnx_ops: each type, a 3x3 window of stride 2 with padding 1 over [1, 2, 5, 5]."""
    out = []
    for t in common.example_types(op, IN):
        desc: common.Example = {
            IN: common.example_tensor(t, [1, 2, 3, 3]),
            OUT: common.example_tensor(t, [1, 2, 5, 5]),
            "DimensionCount": 2,
            "Strides": [2, 2],
            "WindowSize": [3, 3],
            "StartPadding": [1, 1],
            "EndPadding": [1, 1],
        }
        if op.name == "MAX_POOLING_GRAD":
            desc |= {X: common.example_tensor(t, [1, 2, 5, 5]), "Dilations": [1, 1]}
        else:
            desc["IncludePadding"] = False
        out.append(desc)
    return out


OPERATOR_FAMILY = Family(
    ("AVERAGE_POOLING_GRAD", "MAX_POOLING_GRAD"),
    validate,
    lower,
    reference,
    CANDIDATES,
    applies=applies,
    choose=choose,
    only_on=ONLY_ON,
    examples=examples,
)
