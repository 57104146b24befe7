"""DML_OPERATOR_CONVOLUTION_INTEGER and DML_OPERATOR_QUANTIZED_LINEAR_CONVOLUTION: the FORWARD
cross-correlation of convolution.py (its shape rules and reference, through `Forward`) over
integers. InputTensor {N, C, [H], W} and FilterTensor {M, C/G, [kH], kW} are INT8 or UINT8 (each
its own), DimensionCount is 1 (3-D tensors, from feature level 4_0) or 2, with Strides,
Dilations, StartPadding, EndPadding and GroupCount G as CONVOLUTION's:

- the accumulation acc[n, m, o] = sum over c < C/G and the kernel positions p of
  (x[n, g*C/G + c, o*Stride + p*Dilation - StartPadding] - InputZeroPoint) *
  (w[m, c, p] - FilterZeroPoint[m]), x being InputZeroPoint outside the input (padding adds
  nothing), exact and wrapped to INT32;
- CONVOLUTION_INTEGER writes acc (INT32);
- QUANTIZED_LINEAR_CONVOLUTION adds the INT32 BiasTensor {1, M, 1...} to acc (in the accumulator's
  domain: the bias is scaled by InputScale * FilterScale, as ONNX QLinearConv's), then requantizes
  into OutputTensor (INT8/UINT8): clamp(round(acc * Multiplier) + OutputZeroPoint, Min, Max).

Zero points and scales: InputZeroPointTensor, InputScaleTensor, OutputScaleTensor and
OutputZeroPointTensor hold one value (sizes all 1); FilterZeroPointTensor and FilterScaleTensor
hold one value or one per output channel (sizes {1, M, 1...}: M on dimension 1). Each zero point
has its tensor's DataType; absent zero points are 0. The rules are the pages': the tensors'
DimensionCounts (InputTensor, FilterTensor, OutputTensor and BiasTensor alike; the two zero points
of CONVOLUTION_INTEGER alike), channels, groups and output sizes as convolution.py checks them.

What the pages leave open, as DirectML's own API computed it (tests/ops/test_convolution_integer.py
pins each, README: quantized convolution), bit for bit:
- the requantization's "round(Input / Scale)" of the dequantized sum is one FLOAT32 product:
  FLOAT32(acc + Bias) * ((InputScale * FilterScale[m]) / OutputScale), the multiplier rounded to
  FLOAT32 at each step in that order (as ONNX Runtime's QLinearConv computes it); every other
  order of the same operations differs from DirectML on some inputs (47 of 47 inputs chosen where
  the orders disagree matched this one, the others missed 14 to 24); rounded halves to even, then
  OutputZeroPoint added, then saturated to INT8/UINT8;
- the accumulation wraps in INT32 like two's complement arithmetic;
- QUANTIZED_LINEAR_CONVOLUTION: a zero point must have its scale's Sizes (FilterZeroPointTensor
  per channel where FilterScaleTensor is, InputZeroPointTensor {1} beside InputScaleTensor {1} and
  not {1, 1, 1, 1}): DirectML's E_INVALIDARG, the page is silent; dml2onnx refuses the same;
- a FilterZeroPointTensor of one dimension holds one value (a {M} one is E_INVALIDARG: refused);
- CONVOLUTION_INTEGER's zero points of different DimensionCounts run on DirectML: dml2onnx
  refuses them (the page's rule).

Lowerings (choices.py), all exact: the centred values a = x - InputZeroPoint and b = w -
FilterZeroPoint (|a|, |b| <= 255) are FLOAT32 integers, every product of two is exact, and a
FLOAT32 Conv sums them exactly while every partial sum stays below 2**24:
- `float32`: one Conv of a and b, cast to INT32; where the accumulation length K = C/G * kernel
  volume times the largest |a| and |b| the types allow stays within 2**24 (K <= 258 with zero
  points);
- `split`: a = 16 * ah + al with al in [0, 15] and ah in [-16, 15] (Floor(a / 16): exact), the
  same for b; acc = 256 * conv(ah, bh) + 16 * (conv(ah, bl) + conv(al, bh)) + conv(al, bl), each
  Conv exact up to K = 65536 (products of at most 256) and combined in INT32; longer accumulations
  are summed over chunks of input channels, and of kernel rows where one channel's kernel is
  longer than that (each chunk a Conv without padding of the zero-padded centred input; a single
  kernel row longer than 65536 is not chunked further);
- `integer` (K < 2**17, kernels of at most 256 taps): im2col and ONNX MatMulInteger on INT8 x INT8
  without zero points, the one pairing the CUDA EP registers (it has no ConvInteger), the offsets
  folded in INT32 as matrix_multiply_integer.py's "integer" does (fold_offsets). X8 = X - SHIFT
  (128 for UINT8) padded with InputZeroPoint - SHIFT (Pad(x - InputZeroPoint, 0) + that offset, in
  FLOAT32, then Cast to INT8) and transposed to [G, C/G, N, spatial...]; one strided Slice per
  kernel tap, the taps concatenated into the GEMM's right operand [G, K, N * output positions] (K
  = C/G * taps, in the filter's own order); W8 = W - SHIFT as [G, M/G, K]; P = MatMulInteger(W8,
  im2col) [G, M/G, N * positions], transposed to [N, G, M/G, positions]; with the offsets oX =
  InputZeroPoint - SHIFT (one) and oW = FilterZeroPoint - SHIFT (one or per output channel), acc =
  P - r * oW - oX * (c - K * oW) in INT32 (wrapping), r being X8's sums over each window and its
  group's channels (ReduceSum over C/G, a FLOAT32 Conv of ones, Round) and c W8's sums over K
  (ReduceSum). Below K = 2**17 each term is exact (|P| <= K * 128 * 128 < 2**31; the sums below
  2**24 in FLOAT32). K and N * positions are padded to multiples of 4 with zeros where they are
  not (cuBLAS's INT8 GEMM); the corrections are left out where an offset is known to be 0 (INT8
  without a zero point). The benchmark's INT8 3x3 layer (N 32, C = M = 128, 28 x 28, padding 1) is
  Cast, Pad, Cast and Transpose of the 3.2 MB input, 9 Slices and a Concat writing the 29 MB
  im2col, one MatMulInteger (128 x 1152 x 25088, 7.4 GOP) and a Transpose of the 12.8 MB INT32
  result: about 120 MB of traffic and 16 kernels, against `split`'s four FLOAT32 Convs (674 us on
  the H200). On the H100 it took 0.30 ms against split's 0.75 (`choose` takes it where it
  applies), exact there; the DirectML EP under Wine ran a third of the matrix (32 cases) on the
  `portable` target bit for bit;
- `native` (the `dml` target only): ONNX ConvInteger and QLinearConv, which the DirectML EP maps
  back onto CONVOLUTION_INTEGER and QUANTIZED_LINEAR_CONVOLUTION (DmlOperatorConvInteger.cpp,
  DmlOperatorQLinearConv.cpp); the CUDA EP has neither.
Each FLOAT32 sum goes through Round before its Cast to INT32 (a Conv algorithm that errs by less
than 1/2, as cuDNN's Winograd or FFT kernels may, still gives the exact sum; cuDNN picked FFT
kernels on the H200 and the sums were exact). Where `integer` does not apply, `choose` takes
`float32` where it applies (not measured against `split`). The requantization: Cast to
FLOAT32, Mul by the multiplier computed in the graph as above, Round, Add the zero point, Clip,
Cast. The CUDA EP and the DirectML EP both register every node; the DirectML EP ran a third of
the matrix on both the `dml` and the `portable` target, bit for bit.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from dml2onnx.core import dtypes
from dml2onnx.core.desc import OperatorDesc
from dml2onnx.core.schema import OperatorSchema
from dml2onnx.graph.builder import GraphBuilder
from dml2onnx.graph.targets import DML_NODE_DOC
from dml2onnx.ops import common, convolution, matrix_multiply_integer
from dml2onnx.ops.convolution_integer_reference import (
    QUANTIZED,
    Forward,
    accumulation_length,
    largest_centred,
    quantized,
    reference,
    validate,
)
from dml2onnx.ops.family import Family

F32, I32 = dtypes.FLOAT32, dtypes.INT32
EXACT = 2**24  # FLOAT32 holds every integer up to this magnitude
PIECE_PRODUCT = 256  # the largest |product| of two pieces of the split (16 * 16)
INT8_K_LIMIT = 1 << 17  # "integer": K * 128 * 128 < 2**31 and K * 128 < 2**24 below it
ALIGN = 4  # "integer": cuBLAS's INT8 GEMM wants its m and k (the GEMM's columns and K) multiples of 4
SHIFT = {dtypes.INT8: 0, dtypes.UINT8: 128}  # X8 = X - SHIFT is INT8
MAX_TAPS = 256  # "integer": one Slice per kernel tap (graph size, build time); larger kernels: `split`

CANDIDATES = ("float32", "split", "integer", "native")
DML_ONLY = ("native",)
DML_PREFERENCE = ("native",)


# -- lowering -------------------------------------------------------------------------------------


def applies(desc: OperatorDesc, candidate: str, opset: int) -> bool:
    if candidate == "integer":
        taps = math.prod(convolution.kernel_sizes(Forward(desc)))  # type: ignore[arg-type]
        return accumulation_length(desc) < INT8_K_LIMIT and taps <= MAX_TAPS
    if candidate == "float32":
        bound = accumulation_length(desc) * largest_centred(desc, "InputTensor", "InputZeroPointTensor")
        return bound * largest_centred(desc, "FilterTensor", "FilterZeroPointTensor") <= EXACT
    return True


def choose(desc: OperatorDesc, target: str, options: tuple[str, ...]) -> str:
    """integer (im2col and cuBLAS's INT8 GEMM) wherever it applies, else one FLOAT32 Conv where it
    is exact, else the split: on the H100, 3x3 over 32x128x28x28 INT8 (ResNet-50 conv3), integer
    0.30 ms against split's 0.75 (PyTorch's FLOAT32 conv2d 0.17; benchmarks/results/h100-part4-2026-11-23.md)."""
    return "integer" if "integer" in options else options[0]


def _scalar_shape(b: GraphBuilder, v: str, rank: int, channels: int, step: str, doc: str) -> str:
    """A zero point or scale as [channels or 1, 1...] of `rank` (dimension 0 along the filter's M)
    or, with rank 0, a scalar."""
    return b.reshape(v, [channels] + [1] * (rank - 1) if rank else [], step, doc)


def _channels(desc: OperatorDesc, name: str) -> int:
    t = desc.tensor(name)
    return t.sizes[1] if t.rank >= 2 else 1


def _centred(b: GraphBuilder, desc: OperatorDesc, inputs: dict[str, str], name: str, zero: str) -> str:
    """value - zero point in FLOAT32 (exact integers)."""
    rank = desc.tensor(name).rank
    v = b.cast(inputs[name], F32, f"{name}_float", f"{name} in FLOAT32 (exact)")
    if desc.optional_tensor(zero) is None:
        return v
    z = b.cast(inputs[zero], F32, f"{zero}_float", f"{zero} in FLOAT32")
    if name == "FilterTensor":
        z = _scalar_shape(b, z, rank, _channels(desc, zero), f"{zero}_per_m", "one value per output channel (or one)")
    else:
        z = _scalar_shape(b, z, 0, 1, f"{zero}_scalar", "one value")
    return b.node("Sub", [v, z], f"{name}_centred", f"{name} - {zero}")


def _conv(b: GraphBuilder, desc: OperatorDesc, x: str, w: str, step: str, doc: str, padded: bool = False, **shape: Any) -> str:
    dims = desc["DimensionCount"]
    attrs = {
        "strides": list(desc["Strides"]),
        "dilations": list(desc["Dilations"]),
        "pads": [0] * (2 * dims) if padded else list(desc["StartPadding"]) + list(desc["EndPadding"]),
        "group": desc["GroupCount"],
        "kernel_shape": list(shape.get("kernel", convolution.kernel_sizes(Forward(desc)))),  # type: ignore[arg-type]
    }
    return b.node("Conv", [x, w], step, doc, **attrs)


def _as_int32(b: GraphBuilder, v: str, step: str) -> str:
    """An integer-valued FLOAT32 sum in INT32, rounded first (robust to a Conv algorithm that
    errs by less than 1/2)."""
    r = b.node("Round", [v], f"{step}_rounded", "the nearest integer")
    return b.cast(r, I32, f"{step}_int32", "the exact sum in INT32")


def _pieces(b: GraphBuilder, v: str, step: str) -> tuple[str, str]:
    """(high, low): v = 16 * high + low, low in [0, 15], high = Floor(v / 16), exact in FLOAT32."""
    high = b.node(
        "Floor",
        [b.node("Mul", [v, b.scalar(1 / 16, F32, "sixteenth")], f"{step}_over16", "v / 16")],
        f"{step}_high",
        "floor(v / 16)",
    )
    low = b.node(
        "Sub",
        [v, b.node("Mul", [high, b.scalar(16.0, F32, "sixteen")], f"{step}_high16", "16 * high")],
        f"{step}_low",
        "v - 16 * high, in [0, 15]",
    )
    return high, low


def _chunks(desc: OperatorDesc, limit: int) -> list[tuple[int, int, int, int]]:
    """(c0, c1, r0, r1): input channel (within each group) and kernel row ranges whose
    accumulation length is at most `limit`."""
    ks = convolution.kernel_sizes(Forward(desc))  # type: ignore[arg-type]
    per_group = desc.tensor("FilterTensor").sizes[1]
    row = math.prod(ks[1:])
    rows = max(1, min(ks[0], limit // row))
    channels = max(1, limit // (row * ks[0])) if rows == ks[0] else 1
    return [
        (c, min(c + channels, per_group), r, min(r + rows, ks[0]))
        for c in range(0, per_group, channels)
        for r in range(0, ks[0], rows)
    ]


def _split_sum(b: GraphBuilder, desc: OperatorDesc, a: str, w: str, step: str, padded: bool, kernel: tuple[int, ...]) -> str:
    """acc (INT32) of one chunk by the 16-split."""
    ah, al = _pieces(b, a, f"{step}_input")
    bh, bl = _pieces(b, w, f"{step}_filter")
    conv = {
        "high": _conv(b, desc, ah, bh, f"{step}_high", "high x high (products of at most 256)", padded, kernel=kernel),
        "mixed1": _conv(b, desc, ah, bl, f"{step}_mixed1", "high x low", padded, kernel=kernel),
        "mixed2": _conv(b, desc, al, bh, f"{step}_mixed2", "low x high", padded, kernel=kernel),
        "low": _conv(b, desc, al, bl, f"{step}_low", "low x low", padded, kernel=kernel),
    }
    i = {k: _as_int32(b, v, f"{step}_{k}") for k, v in conv.items()}
    mixed = b.node("Add", [i["mixed1"], i["mixed2"]], f"{step}_mixed", "high x low + low x high")
    top = b.node("Mul", [i["high"], b.scalar(256, I32, "two_five_six")], f"{step}_high_scaled", "256 * high x high")
    mid = b.node("Mul", [mixed, b.scalar(16, I32, "sixteen_int")], f"{step}_mixed_scaled", "16 * the mixed products")
    return b.node(
        "Add", [b.node("Add", [top, mid], f"{step}_upper", "256 * hh + 16 * mixed"), i["low"]], step, "the exact sum (INT32)"
    )


def _split(b: GraphBuilder, desc: OperatorDesc, a: str, w: str) -> str:
    chunks = _chunks(desc, EXACT // PIECE_PRODUCT)
    ks = convolution.kernel_sizes(Forward(desc))  # type: ignore[arg-type]
    if len(chunks) == 1:
        return _split_sum(b, desc, a, w, "acc", False, ks)
    x = desc.tensor("InputTensor")
    dims, groups = desc["DimensionCount"], desc["GroupCount"]
    n, c = x.sizes[:2]
    pads = b.i64([0, 0, *desc["StartPadding"], 0, 0, *desc["EndPadding"]], "pads")
    padded = b.node("Pad", [a, pads], "padded", "the centred input with zeros around it (padding adds nothing)")
    spatial = [s + st + en for s, st, en in zip(x.sizes[2:], desc["StartPadding"], desc["EndPadding"], strict=True)]
    grouped = b.reshape(padded, [n, groups, c // groups, *spatial], "grouped", "{N, G, C/G, spatial...}")
    out = desc.tensor("OutputTensor").sizes[2:]
    total = None
    for i, (c0, c1, r0, r1) in enumerate(chunks):
        d = desc["Dilations"][0]
        first = r0 * d
        last = first + (out[0] - 1) * desc["Strides"][0] + (r1 - r0 - 1) * d + 1
        xs = b.slice(
            grouped,
            [2, 3],
            [c0, first],
            [c1, last],
            f"chunk{i}_input",
            f"channels {c0}..{c1 - 1} of each group, rows from {first}",
        )
        xs = b.reshape(xs, [n, groups * (c1 - c0), last - first, *spatial[1:]], f"chunk{i}_flat", "{N, G * chunk, ...}")
        ws = b.slice(
            w, [1, 2], [c0, r0], [c1, r1], f"chunk{i}_filter", f"filter channels {c0}..{c1 - 1}, kernel rows {r0}..{r1 - 1}"
        )
        part = _split_sum(b, desc, xs, ws, f"chunk{i}", True, (r1 - r0, *ks[1:]))
        total = part if total is None else b.node("Add", [total, part], f"sum{i}", "the chunks' sums (INT32)")
    assert total is not None and dims >= 1
    return total


def _int8_input(desc: OperatorDesc, b: GraphBuilder, inputs: dict[str, str], want_float: bool) -> tuple[str, str | None]:
    """(X8, X8 in FLOAT32 or None): the input padded, X - SHIFT as INT8, padding holding
    InputZeroPoint - SHIFT (so that it adds nothing): Pad(x - InputZeroPoint, 0) + (InputZeroPoint
    - SHIFT), exact in FLOAT32."""
    x = desc.tensor("InputTensor")
    shift, zero = SHIFT[x.data_type], desc.optional_tensor("InputZeroPointTensor") is not None
    pads = [0, 0, *desc["StartPadding"], 0, 0, *desc["EndPadding"]]
    if not shift and not zero and not any(pads):
        return inputs["InputTensor"], (b.cast(inputs["InputTensor"], F32, "input_float", "X8 in FLOAT32") if want_float else None)
    v = b.cast(inputs["InputTensor"], F32, "input_float", "InputTensor in FLOAT32 (exact)")
    offset = b.scalar(-float(shift), F32, "input_shift") if shift and not zero else None
    if zero:
        z = _scalar_shape(
            b, b.cast(inputs["InputZeroPointTensor"], F32, "input_zero_float", "in FLOAT32"), 0, 1, "input_zero", "one"
        )
        v = b.node("Sub", [v, z], "input_centred", "x - InputZeroPoint")
        offset = (
            b.node("Sub", [z, b.scalar(float(shift), F32, "shift")], "input_offset_float", "InputZeroPoint - SHIFT")
            if shift
            else z
        )
    if any(pads):
        v = b.node("Pad", [v, b.i64(pads, "input_pads")], "input_padded", "padded with zeros (x - InputZeroPoint: adds nothing)")
    if offset is not None:
        v = b.node("Add", [v, offset], "input_shifted", "x - SHIFT, the padding InputZeroPoint - SHIFT")
    return b.cast(v, dtypes.INT8, "input_int8", "X8 (INT8)"), v if want_float else None


def _int8_offset(
    desc: OperatorDesc, b: GraphBuilder, inputs: dict[str, str], name: str, zero: str, shape: list[int]
) -> str | None:
    """The INT32 offset o = zero point - SHIFT (`shape`: [1, G, M/G, 1] per output channel, else
    [1, 1, 1, 1]), None where it is 0 (INT8 without a zero point)."""
    shift = SHIFT[desc.tensor(name).data_type]
    if desc.optional_tensor(zero) is None:
        return None if not shift else b.const(np.full([1, 1, 1, 1], -shift, np.int32), f"{zero}_offset")
    per_channel = _channels(desc, zero) > 1 if name == "FilterTensor" else False
    z = b.reshape(inputs[zero], shape if per_channel else [1, 1, 1, 1], f"{zero}_grouped", "as [1, G, M/G, 1] (or one)")
    z = b.cast(z, I32, f"{zero}_int32", "in INT32")
    return b.node("Sub", [z, b.scalar(shift, I32, f"{zero}_shift")], f"{zero}_offset", f"{zero} - {shift}") if shift else z


def _int8_taps(desc: OperatorDesc, b: GraphBuilder, x8: str) -> str:
    """The padded X8 [N, C, spatial...] as the GEMM's right operand [G, K, N * output positions]:
    one strided Slice per kernel tap of X8 as [G, C/G, N, spatial...], concatenated along K
    (channel, then tap: the filter's own order)."""
    x = desc.tensor("InputTensor")
    n, c = x.sizes[:2]
    groups, dims = desc["GroupCount"], desc["DimensionCount"]
    spatial = [s + st + en for s, st, en in zip(x.sizes[2:], desc["StartPadding"], desc["EndPadding"], strict=True)]
    out = desc.tensor("OutputTensor").sizes[2:]
    ks = convolution.kernel_sizes(Forward(desc))  # type: ignore[arg-type]
    positions = n * math.prod(out)
    v = b.transpose(x8, [1, 0, *range(2, 2 + dims)], "input_channels_first", "X8 as [C, N, spatial...]")
    v = b.reshape(v, [groups, c // groups, n, *spatial], "input_grouped", "[G, C/G, N, spatial...]")
    taps = []
    for i, tap in enumerate(np.ndindex(*ks)):
        starts = [t * d for t, d in zip(tap, desc["Dilations"], strict=True)]
        ends = [s + (o - 1) * st + 1 for s, o, st in zip(starts, out, desc["Strides"], strict=True)]
        bounds = [b.i64(starts, f"tap{i}_starts"), b.i64(ends, f"tap{i}_ends"), b.i64(list(range(3, 3 + dims)), f"tap{i}_axes")]
        t = b.node("Slice", [v, *bounds, b.i64(list(desc["Strides"]), f"tap{i}_steps")], f"tap{i}", f"kernel tap {tap}")
        taps.append(b.reshape(t, [groups, c // groups, 1, positions], f"tap{i}_flat", "[G, C/G, 1, N * positions]"))
    y = b.node("Concat", taps, "taps", "[G, C/G, taps, N * positions]", axis=2) if len(taps) > 1 else taps[0]
    return b.reshape(y, [groups, c // groups * math.prod(ks), positions], "im2col", "[G, K, N * positions]")


def _int8_accumulation(desc: OperatorDesc, b: GraphBuilder, inputs: dict[str, str]) -> str:
    """acc = P - r * oW - oX * (c - K * oW) in INT32 (wrapping), P = MatMulInteger(W8, the
    im2col of X8) (the docstring)."""
    x, w = desc.tensor("InputTensor"), desc.tensor("FilterTensor")
    n, m, groups = x.sizes[0], w.sizes[0], desc["GroupCount"]
    out = desc.tensor("OutputTensor").sizes[2:]
    k, positions = accumulation_length(desc), n * math.prod(out)
    pad_k, pad_p = -k % ALIGN, -positions % ALIGN
    grouped = [1, groups, m // groups, 1]
    x_offset = _int8_offset(desc, b, inputs, "InputTensor", "InputZeroPointTensor", grouped)
    w_offset = _int8_offset(desc, b, inputs, "FilterTensor", "FilterZeroPointTensor", grouped)
    x8, x8_float = _int8_input(desc, b, inputs, w_offset is not None)
    cols = _int8_taps(desc, b, x8)
    if pad_k or pad_p:
        zeros = b.filled([groups, pad_k, positions], 0, np.int8, "k_zeros", "zeros") if pad_k else None
        cols = b.node("Concat", [cols, zeros], "im2col_k", f"K padded to a multiple of {ALIGN}", axis=1) if zeros else cols
        if pad_p:
            zeros = b.filled([groups, k + pad_k, pad_p], 0, np.int8, "p_zeros", "zeros")
            cols = b.node("Concat", [cols, zeros], "im2col_p", f"columns padded to a multiple of {ALIGN}", axis=2)
    w8 = b.reshape(inputs["FilterTensor"], [groups, m // groups, k], "filter_rows", "W as [G, M/G, K]")
    shift, w_sums = SHIFT[w.data_type], None
    if shift or pad_k or x_offset is not None:
        wf = b.cast(w8, F32, "filter_float", "W in FLOAT32 (exact)")
        if shift:
            wf = b.node("Sub", [wf, b.scalar(float(shift), F32, "filter_128")], "filter_less_128", "W - 128")
        if x_offset is not None:
            sums = b.reduce("ReduceSum", wf, [2], "filter_sums", "c: W8's sums over K (exact)")
            w_sums = b.reshape(
                b.cast(sums, I32, "filter_sums_int32", "in INT32"), grouped, "filter_sums_grouped", "[1, G, M/G, 1]"
            )
        if pad_k:
            wf = b.node(
                "Pad", [wf, b.i64([0, 0, 0, 0, 0, pad_k], "filter_pads")], "filter_padded", f"K padded to a multiple of {ALIGN}"
            )
        if shift or pad_k:
            w8 = b.cast(wf, dtypes.INT8, "filter_int8", "W8 (INT8)")
    y = b.node("MatMulInteger", [w8, cols], "matmul_integer", "P = W8 x im2col(X8), INT8 x INT8 -> INT32 (exact)")
    if pad_p:
        y = b.slice(y, [2], [0], [positions], "unpadded", "P's own columns")
    y = b.reshape(y, [groups, m // groups, n, math.prod(out)], "p_grouped", "[G, M/G, N, positions]")
    y = b.transpose(y, [2, 0, 1, 3], "p_batch_first", "[N, G, M/G, positions]")
    x_sums = _window_sums(desc, b, x8_float) if w_offset is not None and x8_float is not None else None
    y = matrix_multiply_integer.fold_offsets(b, y, (x_sums, w_offset), (w_sums, x_offset), k)
    return b.reshape(y, desc.tensor("OutputTensor").sizes, "acc", "acc as [N, M, spatial...]")


def _window_sums(desc: OperatorDesc, b: GraphBuilder, x8_float: str) -> str:
    """r: X8's sums over each output position's window and its group's channels, [N, G, 1,
    positions]: ReduceSum over C/G, then a FLOAT32 Conv of ones (integers below 2**24: exact;
    Round for an algorithm that errs by less than 1/2), in INT32."""
    x = desc.tensor("InputTensor")
    n, c = x.sizes[:2]
    groups, dims = desc["GroupCount"], desc["DimensionCount"]
    spatial = [s + st + en for s, st, en in zip(x.sizes[2:], desc["StartPadding"], desc["EndPadding"], strict=True)]
    ks = convolution.kernel_sizes(Forward(desc))  # type: ignore[arg-type]
    v = b.reshape(x8_float, [n, groups, c // groups, *spatial], "input_sum_groups", "[N, G, C/G, spatial...]")
    v = b.reduce("ReduceSum", v, [2], "input_channel_sums", "over each group's channels", keepdims=False)
    ones = b.const(np.ones([groups, 1, *ks], np.float32), "window_ones")
    attrs = {"strides": list(desc["Strides"]), "dilations": list(desc["Dilations"]), "pads": [0] * (2 * dims)}
    r = b.node("Conv", [v, ones], "window_sums", "each window's sum", group=groups, kernel_shape=list(ks), **attrs)
    r = _as_int32(b, r, "window_sums")
    return b.reshape(r, [n, groups, 1, math.prod(desc.tensor("OutputTensor").sizes[2:])], "rows", "r as [N, G, 1, positions]")


def _accumulation(desc: OperatorDesc, b: GraphBuilder, inputs: dict[str, str]) -> str:
    if b.variant == "integer":
        return _int8_accumulation(desc, b, inputs)
    a = _centred(b, desc, inputs, "InputTensor", "InputZeroPointTensor")
    w = _centred(b, desc, inputs, "FilterTensor", "FilterZeroPointTensor")
    if b.variant == "float32":
        return _as_int32(b, _conv(b, desc, a, w, "conv", "the exact sum of products, in FLOAT32"), "acc")
    return _split(b, desc, a, w)


def _multiplier(desc: OperatorDesc, b: GraphBuilder, inputs: dict[str, str]) -> str:
    """(InputScale * FilterScale) / OutputScale in FLOAT32, as {1, M or 1, 1...}."""
    rank = desc.tensor("OutputTensor").rank
    x_scale = _scalar_shape(b, inputs["InputScaleTensor"], 0, 1, "input_scale", "one value")
    y_scale = _scalar_shape(b, inputs["OutputScaleTensor"], 0, 1, "output_scale", "one value")
    m = _channels(desc, "FilterScaleTensor")
    w_scale = b.reshape(inputs["FilterScaleTensor"], [1, m] + [1] * (rank - 2), "filter_scale", "per output channel (or one)")
    product = b.node("Mul", [x_scale, w_scale], "scale_product", "InputScale * FilterScale")
    return b.node("Div", [product, y_scale], "multiplier", "(InputScale * FilterScale) / OutputScale")


def requantize(desc: OperatorDesc, b: GraphBuilder, inputs: dict[str, str], acc: str) -> str:
    if inputs.get("BiasTensor") is not None:
        acc = b.node("Add", [acc, inputs["BiasTensor"]], "biased", "acc + Bias (INT32)")
    v = b.node(
        "Mul", [b.cast(acc, F32, "acc_float", "acc in FLOAT32"), _multiplier(desc, b, inputs)], "scaled", "acc * multiplier"
    )
    r = b.node("Round", [v], "rounded", "halves to even")
    if inputs.get("OutputZeroPointTensor") is not None:
        zero = b.cast(
            _scalar_shape(b, inputs["OutputZeroPointTensor"], 0, 1, "output_zero", "one value"),
            F32,
            "output_zero_float",
            "in FLOAT32",
        )
        r = b.node("Add", [r, zero], "shifted", "+ OutputZeroPoint")
    out = desc.tensor("OutputTensor").data_type
    lo, hi = common.float32_range(out)
    r = b.node("Clip", [r, b.scalar(lo, F32, "type_min"), b.scalar(hi, F32, "type_max")], "saturated", f"saturated to {out}")
    return b.cast(r, out, "as_output", f"as {out}")


def _native(desc: OperatorDesc, b: GraphBuilder, inputs: dict[str, str]) -> str:
    """ConvInteger / QLinearConv: the DirectML EP's nodes for these operators."""
    dims = desc["DimensionCount"]
    attrs = {
        "strides": list(desc["Strides"]),
        "dilations": list(desc["Dilations"]),
        "pads": list(desc["StartPadding"]) + list(desc["EndPadding"]),
        "group": desc["GroupCount"],
        "kernel_shape": list(desc.tensor("FilterTensor").sizes[2:]),
    }

    def zero(name: str, like: str, per_m: bool) -> str:
        t = desc.optional_tensor(name)
        if t is None:
            return b.const(np.zeros([], desc.tensor(like).data_type.numpy), f"{name}_zero")
        m = _channels(desc, name)
        return b.reshape(inputs[name], [m] if per_m and m > 1 else [], f"{name}_onnx", "ONNX's scalar or 1-D zero point")

    x_zero, w_zero = zero("InputZeroPointTensor", "InputTensor", False), zero("FilterZeroPointTensor", "FilterTensor", True)
    assert dims >= 1
    if not quantized(desc):
        return b.node(
            "ConvInteger", [inputs["InputTensor"], inputs["FilterTensor"], x_zero, w_zero], "conv_integer", DML_NODE_DOC, **attrs
        )
    m = _channels(desc, "FilterScaleTensor")
    scale = b.reshape(inputs["FilterScaleTensor"], [m] if m > 1 else [], "filter_scale_onnx", "ONNX's scalar or 1-D scale")
    args = [
        inputs["InputTensor"],
        b.reshape(inputs["InputScaleTensor"], [], "input_scale_onnx", "scalar"),
        x_zero,
        inputs["FilterTensor"],
        scale,
        w_zero,
        b.reshape(inputs["OutputScaleTensor"], [], "output_scale_onnx", "scalar"),
        zero("OutputZeroPointTensor", "OutputTensor", False),
    ]
    if inputs.get("BiasTensor") is not None:
        args.append(b.reshape(inputs["BiasTensor"], [desc.tensor("OutputTensor").sizes[1]], "bias_onnx", "B {M}"))
    return b.node("QLinearConv", args, "qlinear_conv", DML_NODE_DOC, **attrs)


def lower(desc: OperatorDesc, b: GraphBuilder, inputs: dict[str, str]) -> str:
    if b.variant == "native":
        return _native(desc, b, inputs)
    acc = _accumulation(desc, b, inputs)
    return requantize(desc, b, inputs, acc) if quantized(desc) else acc


# -- examples (onnx_ops) -------------------------------------------------------------------------


def examples(op: OperatorSchema) -> list[common.Example]:
    """onnx_ops: each input type, with zero points (and, quantized, per-channel scales and Bias)."""
    out = []
    for t in common.example_types(op, "InputTensor"):
        desc: common.Example = {
            "InputTensor": common.example_tensor(t, [1, 2, 5, 5]),
            "InputZeroPointTensor": common.example_tensor(t, [1, 1, 1, 1]),
            "FilterTensor": common.example_tensor(t, [4, 2, 3, 3]),
            "FilterZeroPointTensor": common.example_tensor(t, [1, 4, 1, 1]),
            "OutputTensor": common.example_tensor(t if op.name == QUANTIZED else "INT32", [1, 4, 3, 3]),
            "DimensionCount": 2,
            "Strides": [1, 1],
            "Dilations": [1, 1],
            "StartPadding": [0, 0],
            "EndPadding": [0, 0],
            "GroupCount": 1,
        }
        if op.name == QUANTIZED:
            desc |= {
                "InputScaleTensor": common.example_tensor("FLOAT32", [1, 1, 1, 1]),
                "FilterScaleTensor": common.example_tensor("FLOAT32", [1, 4, 1, 1]),
                "BiasTensor": common.example_tensor("INT32", [1, 4, 1, 1]),
                "OutputScaleTensor": common.example_tensor("FLOAT32", [1, 1, 1, 1]),
                "OutputZeroPointTensor": common.example_tensor(t, [1, 1, 1, 1]),
            }
        out.append(desc)
    return out


OPERATOR_FAMILY = Family(
    ("CONVOLUTION_INTEGER", "QUANTIZED_LINEAR_CONVOLUTION"),
    validate,
    lower,
    reference,
    CANDIDATES,
    applies=applies,
    choose=choose,
    dml_only=DML_ONLY,
    dml_preference=DML_PREFERENCE,
    examples=examples,
)
