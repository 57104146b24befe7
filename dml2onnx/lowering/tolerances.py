"""How close an execution provider's result must be to the numpy reference, per operator and
data type: indices and 0/1 outputs exactly, floats within measured bounds."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from dml2onnx.core import dtypes
from dml2onnx.core.operator_table import OPERATORS

# MAX_UNPOOLING moves its input's values (bit for bit) and writes zeros: exact for every type; so do
# the slices, paddings and TILE (ops/slice.py, padding.py, tile.py: byte moves and the fill value)
# the GATHER and SCATTER families move elements bit for bit (NaN payloads, -0, 64-bit integers)
EXACT_OPERATORS = {
    "ACTIVATION_HARDMAX",
    "ACTIVATION_HARDMAX1",
    "ARGMAX",
    "ARGMIN",
    "ONE_HOT",
    "MAX_UNPOOLING",
    "GATHER",
    "GATHER_ELEMENTS",
    "GATHER_ND",
    "GATHER_ND1",
    "SCATTER",
    "SCATTER_ND",
}
EXACT_OPERATORS |= {"SLICE", "SLICE1", "SLICE_GRAD", "PADDING", "PADDING1", "TILE"}
EXACT_OPERATORS |= {"JOIN", "SPLIT"}  # join.py, split.py: byte moves
EXACT_OPERATORS |= {"TOP_K", "TOP_K1", "NONZERO_COORDINATES"}  # values moved bit for bit, and indices
EXACT_OPERATORS |= {"RANDOM_GENERATOR"}  # random_generator.py: Philox in exact integer arithmetic, bit for bit
EXACT_OPERATORS |= {"QUANTIZE", "DEQUANTIZE", "DYNAMIC_QUANTIZE_LINEAR"}  # quantize.py: DirectML's FLOAT32 steps, bit for bit
EXACT_OPERATORS |= {"CONVOLUTION_INTEGER", "QUANTIZED_LINEAR_CONVOLUTION", "QUANTIZED_LINEAR_AVERAGE_POOLING"}  # integer outputs

_ELEMENT_WISE = {name for name, op in OPERATORS.items() if op.fusable}
_INVERSE_TRIG = {"ELEMENT_WISE_ASIN", "ELEMENT_WISE_ACOS", "ELEMENT_WISE_ATAN", "ELEMENT_WISE_ATAN_YX"}


@dataclass(frozen=True)
class Tolerance:
    rtol: float
    atol: float

    @property
    def exact(self) -> bool:
        return self.rtol == 0 and self.atol == 0


# BATCH_NORMALIZATION, LOCAL_RESPONSE_NORMALIZATION, LP_NORMALIZATION in FLOAT32 (FLOAT16 above): no
# long accumulation (one element's formula; LRN's window sum of LocalSize or LocalSize^2 squares, LP's
# norm along one axis of the matrix's few elements) but a chain of roundings: Sqrt and Div, Pow of a
# FLOAT32 base (each EP's powf within 2 ulps), cuDNN folding Scale / sqrt(Variance + Epsilon) first;
# x - Mean near 0 makes the relative error large, so an absolute floor too.
_NORMALIZATIONS = {
    "BATCH_NORMALIZATION": Tolerance(1e-5, 1e-5),
    "LOCAL_RESPONSE_NORMALIZATION": Tolerance(1e-5, 1e-5),
    "LP_NORMALIZATION": Tolerance(1e-5, 1e-5),
}


# GEMM's tests (matrix, property, DirectML's API) keep K <= GEMM_LENGTH, |A|, |B|, |C| <= 1 and
# |Alpha|, |Beta| <= 2; a test of a longer K asks gemm() for its own length.
GEMM_LENGTH = 64


# DirectML's answers, through the DirectML EP or its own API (`directml`: that API's first spelling).
_DIRECTML_ENGINES = ("dml", "dml-api", "directml")


def gemm(dtype: dtypes.DataType, k: int, ep: str) -> Tolerance:
    """GEMM with accumulation length k, on the tests' inputs (above): |Alpha * sum(a * b)| +
    |Beta * c| <= S = 2k + 2. A sum of k products in a working precision u errs by at most
    (k + 1) u sum|a * b| however the engine orders or splits it (Higham's gamma_k), and Alpha, Beta
    and C add one rounding each: atol (k + 2) u S, with u = 2**-24 (FLOAT32 accumulation: DirectML
    for FLOAT32 and FLOAT16, measured; cuBLAS; the CPU EP). The CUDA EP's FLOAT32 MatMul and Gemm
    run in TF32 by default (its use_tf32 option: inputs rounded to 10 mantissa bits, 2**-10 of each
    product), and the FLOAT16 graphs of the cuda and dml targets (on those EPs) round A x B to
    FLOAT16 before C is added (2**-11 S); the result's own rounding is relative (a FLOAT16 ulp is
    2**-10). Measured on the matrix: FLOAT32 within 5e-7 (CPU EP), FLOAT16 exact."""
    s = 2 * k + 2
    atol = (k + 2) * 2.0**-24 * s
    if dtype == dtypes.FLOAT16:
        return Tolerance(4e-3, atol + (2.0**-11 * s if ep in ("cuda", "dml") else 0))
    if ep == "cuda":
        atol += 2.0**-10 * s
    return Tolerance(2.0**-22, atol)


def gemm_softmax(dtype: dtypes.DataType, k: int, ep: str) -> Tolerance:
    """GEMM whose FusedActivation is SOFTMAX1 (DirectML takes it in GEMM only), on GEMM's test
    inputs: |y| <= S = 2k + 2 before the softmax. A softmax output errs relatively by at most
    twice the absolute error of the y it reads (d s_i / s_i = dy_i - sum_j s_j dy_j): GEMM's own
    bound at |y| = S, and for FLOAT16 half a FLOAT16 ulp of S, as DirectML rounds y to FLOAT16
    before its softmax (measured through its API); then the output's own rounding."""
    s = 2 * k + 2
    g = gemm(dtype, k, ep)
    dy = g.atol + (2.0**-22 * s if dtype != dtypes.FLOAT16 else 2.0**-11 * s)
    own = 2.0**-10 if dtype == dtypes.FLOAT16 else 2e-6
    return Tolerance(2 * dy + own, own)


# CONVOLUTION's tests (matrix, property, DirectML's API) keep the accumulation length L = C/G *
# kernel volume <= CONVOLUTION_LENGTH and |x|, |w|, |Bias| <= 1; a longer one asks convolution().
CONVOLUTION_LENGTH = 288


def convolution(dtype: dtypes.DataType, length: int, ep: str) -> Tolerance:
    """CONVOLUTION summing `length` products per output element, on the tests' inputs (above):
    |sum + Bias| <= S = L + 1. A sum of L products in FLOAT32 errs by at most (L + 1) u sum|x w|
    however the engine orders or tiles it (Higham's gamma_L, u = 2**-24): atol (L + 1) u S.
    FLOAT16 is accumulated in FLOAT32 too (the CUDA EP sets cuDNN's compute type to FLOAT for
    HALF, cudnn_common.cc; DirectML, measured with and without ALLOW_HALF_PRECISION_COMPUTATION;
    the float32 candidate), then rounded to FLOAT16 (relative, a few ulps with a fused activation applied to
    the rounded result: rtol 4e-3). The CUDA EP's FLOAT32 Conv runs in TF32 by default (its
    use_tf32 option: inputs rounded to 10 mantissa bits, 2**-10 of each product: 2**-10 S more).
    FLOAT32's rtol: the fused activations' math libraries, as the element-wise activations."""
    s = length + 1
    atol = (length + 1) * 2.0**-24 * s
    if dtype == dtypes.FLOAT16:
        return Tolerance(4e-3, atol)
    if ep == "cuda":
        atol += 2.0**-10 * s
    return Tolerance(1e-5, atol)


# The pooling tests (matrix, property, DirectML's API) keep windows of at most POOLING_WINDOW
# elements and |x| <= POOLING_MAGNITUDE for AVERAGE and LP; a larger window asks pooling().
POOLING_WINDOW = 27
POOLING_MAGNITUDE = 32.0


def pooling(operator: str, dtype: dtypes.DataType, window: int) -> Tolerance:
    """AVERAGE_POOLING(1), LP_POOLING(1), MAX_POOLING(1) over windows of `window` elements. MAX
    picks an element: exact. A FLOAT32 sum of n <= window terms errs by at most (n - 1) u sum|x|
    (u = 2**-24) in any order; AVERAGE divides it by the count (one rounding more): atol
    (window + 1) u POOLING_MAGNITUDE, cancellation included. LP sums positive terms |x|^P (each
    within 2 ulps: the EPs' powf) and takes the P-th root (2 ulps more): relative, (window + 8) u.
    FLOAT16 is computed in FLOAT32 and rounded once (a few FLOAT16 ulps: 4e-3)."""
    if operator.startswith("MAX_POOLING"):
        return Tolerance(0, 0)
    u = 2.0**-24
    atol = (window + 1) * u * POOLING_MAGNITUDE if operator.startswith("AVERAGE") else 1e-37
    if dtype == dtypes.FLOAT16:
        return Tolerance(4e-3, atol + 4e-3)
    return Tolerance((window + 8) * u, atol)


# ROI_ALIGN(1)'s tests (matrix, property, DirectML's API) keep |x| and |OutOfBoundsInputValue| <=
# ROI_MAGNITUDE, scaled ROI coordinates within +-ROI_COORDINATE and k_x * k_y <= ROI_SAMPLES.
ROI_MAGNITUDE = 8.0
ROI_COORDINATE = 64.0
ROI_SAMPLES = 64


def roi(operator: str, dtype: dtypes.DataType, samples: int) -> Tolerance:
    """ROI_POOLING picks an element (or 0): exact, FLOAT16 too. ROI_ALIGN(1) with `samples` samples
    per output element, on the tests' inputs (above): a sample's coordinate takes a multiply and
    two adds in FLOAT32 (within 2 u ROI_COORDINATE, u = 2**-24; an engine may fuse them), and the
    bilinear value's slope is at most 2 ROI_MAGNITUDE per unit: 4 u C M; the three lerps of its
    four neighbours add 4 u M; AVERAGE sums the samples ((samples + 1) u M in any order) and
    divides once. MAX and NEAREST_NEIGHBOR pick values but for the interpolation's roundings.
    FLOAT16 is computed in FLOAT32 and rounded once: a few FLOAT16 ulps (DirectML's results match within it)."""
    if operator == "ROI_POOLING":
        return Tolerance(0, 0)
    atol = (samples + 6 + 4 * ROI_COORDINATE) * 2.0**-24 * ROI_MAGNITUDE
    if dtype == dtypes.FLOAT16:
        return Tolerance(4e-3, atol + 2.0**-11 * ROI_MAGNITUDE)
    return Tolerance(2.0**-22, atol)


# ROI_ALIGN_GRAD's tests keep |gradient| <= 1 and NumROIs * OutputHeight * OutputWidth <= ROI_GRAD_OUTPUTS;
# with OutputROIGradientTensor also |InputTensor| <= 1, ChannelCount <= 2, InputWidth and InputHeight <= 8
# and the scaled ROI coordinates within +-ROI_GRAD_COORDINATE.
ROI_GRAD_OUTPUTS, ROI_GRAD_COORDINATE = 64, 8.0


def roi_align_grad(dtype: dtypes.DataType, outputs: int, roi_gradient: bool = False) -> Tolerance:
    """ROI_ALIGN_GRAD. OutputGradientTensor: along an axis an output element's k samples give an input
    position at most weight k, divided by k (MAX: one sample, weight at most 1), so each of the
    `outputs` gradient elements reaches an element with weight at most 1 and |result| <= outputs. The
    weights are sums of at most 2 ROI_SAMPLES FLOAT32 terms, each off by its coordinate's error
    (2 u ROI_COORDINATE per axis, u = 2**-24); the MatMuls and the batch sum add at most `outputs`
    terms: (2 ROI_SAMPLES + 4 ROI_COORDINATE + outputs + 4) u outputs. OutputROIGradientTensor
    (`roi_gradient`): each output element's weights (g / (k_y k_x) per sample; MAX: g on one) sum to
    at most 1 in size over its samples, each times an image gradient of at most 2 (|InputTensor| <= 1)
    and an extent of at most 8: at most 2 * 8 * 2 `outputs` (2 channels) in all. The image gradient is
    off by 8 u from its arithmetic and, 4 per unit of fraction, by 8 u ROI_GRAD_COORDINATE from the
    coordinate's error (a coordinate within that of an integer changes the cell: the tests draw
    none); the sums of at most 2**16 terms, reduced in trees (ONNX Runtime's and DirectML's
    reductions), add 16 u: (8 ROI_GRAD_COORDINATE + 8 + 16 + 1) u 32 outputs. FLOAT16 is computed in
    FLOAT32 and rounded once; DirectML's API within one FLOAT16 ulp of it (2**-10 relative)."""
    u = 2.0**-24
    if roi_gradient:
        atol = (8 * ROI_GRAD_COORDINATE + 25) * u * 32 * outputs
    else:
        atol = (2 * ROI_SAMPLES + 4 * ROI_COORDINATE + outputs + 4) * u * outputs
    if dtype == dtypes.FLOAT16:
        return Tolerance(2.0**-10, atol + 2.0**-24)
    return Tolerance(2.0**-22, atol)


# BATCH_NORMALIZATION_TRAINING's tests (matrix, property, DirectML's API) keep at most BNT_LENGTH
# elements per mean, |x| <= BNT_MAGNITUDE, each group of two or more elements with a standard
# deviation of at least BNT_SPREAD and |x - mean| <= BNT_Z of them, and |Scale|, |Bias|, |FusedAdd| <= 2.
BNT_LENGTH = 256
BNT_MAGNITUDE = 4.0
BNT_SPREAD = 1.0
BNT_Z = 3.0


def batch_normalization_training(dtype: dtypes.DataType, n: int, ep: str) -> Tolerance:
    """BATCH_NORMALIZATION_TRAINING over n elements per mean, on the tests' inputs (above), in FLOAT32 (u =
    2**-24): the mean's sum of n terms errs by at most (n - 1) u sum|x| in any order, the division once
    more: n u M; x - mean adds 2 u M. The variance sums n non-negative squares (relative (n + 1) u; the
    mean's error cancels to first order, sum(x - mean) = 0): relative (n + 4) u, and 1 / sqrt(Variance +
    Epsilon) half that plus 3 u. The output S * (x - mean) / std (S = 2, |x - mean| / std <= Z) errs by
    S ((n + 2) u M / sigma + Z ((n + 4) / 2 + 3) u), and + Bias + FusedAdd and the activation round a
    few times more. FLOAT16 is computed in FLOAT32 and rounded once by the graphs (one FLOAT16 ulp,
    2**-10 relative: the reference rounds too); DirectML (ep dml) sums in FLOAT16 (the mean of 999.5,
    1001, 1000.5, 1000.5 is 1000 there) and takes the variance about that mean: on the tests' inputs its
    mean is within one FLOAT16 ulp of M (measured: half that), so S (2**-10 M / sigma + 6 Z 2**-11) more
    (the ulp, six FLOAT16 roundings of the normalized value), and 4 ulps relative."""
    u, s, m, sigma, z = 2.0**-24, 2.0, BNT_MAGNITUDE, BNT_SPREAD, BNT_Z
    atol = s * ((n + 2) * u * m / sigma + z * ((n + 4) / 2 + 3) * u) + 4 * u * (s * z + 4)
    rtol = (n + 8) * u
    if dtype != dtypes.FLOAT16:
        return Tolerance(rtol, atol)
    h = 2.0**-11
    if ep == "dml":
        return Tolerance(rtol + 4 * h, atol + s * (2 * h * m / sigma + 6 * z * h))
    return Tolerance(rtol + 2 * h, atol)


# MULTIHEAD_ATTENTION(1)'s tests (matrix, property, DirectML's API) keep the head size <=
# ATTENTION_HEAD, the keys (past + new) <= ATTENTION_KEYS, |V + bias| <= ATTENTION_VALUE and the
# scores (Scale * Q.K + RelativePositionBias + the mask) within +-ATTENTION_SCORE, but where a
# MaskFilterValue of -10000 or less filters a key (its weight is 0 either way).
ATTENTION_HEAD = 8
ATTENTION_KEYS = 16
ATTENTION_SCORE = 8.0
ATTENTION_VALUE = 2.0


def attention(dtype: dtypes.DataType, keys: int, head: int, ep: str) -> Tolerance:
    """MULTIHEAD_ATTENTION(1) with `keys` keys and head size `head`, on the tests' inputs (above), S =
    ATTENTION_SCORE, V = ATTENTION_VALUE. A score is a dot of `head` products ((head + 1) u S in any
    order, Higham's gamma), times Scale, plus RelativePositionBias and the mask (3 u S more); a score
    error d moves every softmax weight by a factor within 1 +- 2d, exp and the division add 4 u; the
    weighted sum of `keys` values (keys + 1) u V: atol V (2 (head + 4) u S + (keys + 5) u), u = 2**-24,
    on every EP (runtime.py turns the CUDA EP's TF32 off). The present keys and values are copies
    (exact, within it). FLOAT16: DirectML keeps the scores and the weights in FLOAT16 between its steps
    (measured: within 2 FLOAT16 ulps) and accumulates in FLOAT32; the graphs compute in FLOAT32 and
    round once: a score rounded twice (2 * 2**-11 S), a weight once (2**-11 V), the result (rtol 4e-3):
    atol V 2**-11 (4 S + 3)."""
    s, v, u = ATTENTION_SCORE, ATTENTION_VALUE, 2.0**-24
    if dtype == dtypes.FLOAT16:
        return Tolerance(4e-3, v * 2.0**-11 * (4 * s + 3))
    return Tolerance(2.0**-22, v * (2 * (head + 4) * u * s + (keys + 5) * u))


# CUMULATIVE_SUMMATION's and CUMULATIVE_PRODUCT's tests (matrix, property, DirectML's API) keep
# the axis at most CUMULATIVE_LENGTH long, |x| <= CUMULATIVE_MAGNITUDE for sums and every partial
# product finite and normal; a longer axis asks cumulative(). The space/depth operators and
# REVERSE_SUBSEQUENCES move values: exact for every type.
CUMULATIVE_LENGTH = 64
CUMULATIVE_MAGNITUDE = 4.0
MOVING_OPERATORS = {"SPACE_TO_DEPTH", "SPACE_TO_DEPTH1", "DEPTH_TO_SPACE", "DEPTH_TO_SPACE1", "REVERSE_SUBSEQUENCES", "UNFOLD"}


def cumulative(operator: str, dtype: dtypes.DataType, length: int) -> Tolerance:
    """A running sum or product along an axis of `length` elements, on the tests' inputs (above).
    An output of k <= length terms summed in FLOAT32 (u = 2**-24) in any order errs by at most
    (k - 1) u sum|x| <= length**2 u M: the graphs' Hillis-Steele tree and DirectML's sequential
    order alike; the reference rounds once (u relative). A product of k factors rounds k - 1
    times in any order: relative (length + 1) u. FLOAT16 is accumulated in FLOAT32 by the graphs
    and by DirectML and converted once: to nearest by the graphs, by truncation under lavapipe
    (measured: 2048 + 1 + 1 + 1 is 2050), so one FLOAT16 ulp for the rounding mode and one where
    the FLOAT32 result and the exact one straddle a rounding boundary (2**-9 relative), and the
    FLOAT16 subnormals' spacing (2**-24) absolute."""
    u = 2.0**-24
    rtol, atol = ((length + 1) * u, 1e-37) if operator == "CUMULATIVE_PRODUCT" else (u, length**2 * u * CUMULATIVE_MAGNITUDE)
    if dtype == dtypes.FLOAT16:
        return Tolerance(rtol + 2.0**-9, atol + 2.0**-24)
    return Tolerance(rtol, atol)


# The resampling tests (matrix, property, DirectML's API) keep |x| <= RESAMPLE_MAGNITUDE and every
# coordinate within +-RESAMPLE_COORDINATE; VALUE_SCALE_2D's |Scale|, |Bias| <= RESAMPLE_MAGNITUDE too.
RESAMPLE_MAGNITUDE = 8.0
RESAMPLE_COORDINATE = 16.0
# RESAMPLE3 too: RESAMPLE2's lerps, or where Antialiased acts the iterative downsampling's passes
# (ops/resample.py), which DirectML 1.15 computes as the passes bit for bit with the standard offset
# pairs and FLOAT32 but with offsets the passes do not pin down: measured against DirectML's API on
# |x| <= 8, FLOAT32 with other offsets on axis 0 or on several axes (InputPixelOffsets in [0, 1)) up to
# 2.34e-5 (within the atol below, 4.6e-5); FLOAT16 (FLOAT32 passes rounded once)
# up to 2**-8 = one FLOAT16 ulp at |x| in [4, 8) (within 2**-10 relative + 2**-11 M).
RESAMPLE_OPERATORS = {"UPSAMPLE_2D", "RESAMPLE", "RESAMPLE1", "RESAMPLE2", "RESAMPLE3", "VALUE_SCALE_2D"}


def resample(operator: str, dtype: dtypes.DataType) -> Tolerance:
    """NEAREST_NEIGHBOR picks an element (exact, within any bound). LINEAR lerps the two neighbours
    along each of up to 4 axes (16 taps): a + w (b - a) rounds 3 times on values within M =
    RESAMPLE_MAGNITUDE, 4 u 2M per axis in any order of the axes or form of the lerp (u = 2**-24);
    an engine that fuses the coordinate's multiply-add moves it by u C (C = RESAMPLE_COORDINATE) at a
    slope of at most 2M: atol (16 + 2 C) u 2M. VALUE_SCALE_2D rounds x * Scale and the sum: 2 u (M^2 +
    M). FLOAT16 is computed in FLOAT32 and rounded once (one FLOAT16 ulp, 2**-11 relative), plus where
    an engine keeps an intermediate in FLOAT16, 2**-11 M."""
    u, m = 2.0**-24, RESAMPLE_MAGNITUDE
    atol = 2 * u * (m * m + m) if operator == "VALUE_SCALE_2D" else (16 + 2 * RESAMPLE_COORDINATE) * u * 2 * m
    if dtype == dtypes.FLOAT16:
        return Tolerance(2.0**-10, atol + 2.0**-11 * m)
    return Tolerance(2 * u, atol)


# RESAMPLE_GRAD(1)'s tests keep |gradient| <= RESAMPLE_MAGNITUDE and each output element a sum of at
# most RESAMPLE_GRAD_TERMS products (ops/resample_grad.terms).
RESAMPLE_GRAD_TERMS = 64


def resample_grad(dtype: dtypes.DataType, terms: int) -> Tolerance:
    """k = `terms` products g * w (w in (0, 1], |g| <= M = RESAMPLE_MAGNITUDE, up to 4 axes' weights)
    summed axis by axis in FLOAT32, in any order: each product and each partial sum rounds once,
    at most (k + 4) u k M (u = 2**-24). FLOAT16 is accumulated in FLOAT32 and converted once: to
    nearest by the graphs, truncated by DirectML under lavapipe (measured): one FLOAT16 ulp
    (2**-10 relative) and the FLOAT16 subnormals' spacing."""
    u, m = 2.0**-24, RESAMPLE_MAGNITUDE
    atol = (terms + 4) * u * terms * m
    if dtype == dtypes.FLOAT16:
        return Tolerance(2.0**-10, atol + 2.0**-24)
    return Tolerance(2 * u, atol)


# RNN, LSTM and GRU's tests (matrix, property, DirectML's API) keep seq_length <= RECURRENT_STEPS,
# input_size + hidden_size <= 8 and |W|, |R|, |bias|, |X|, |H_0| <= 1/2 with activations that keep
# the state within a few units.
RECURRENT_STEPS = 4


def recurrent(dtype: dtypes.DataType, steps: int, ep: str) -> Tolerance:
    """RNN, LSTM, GRU over `steps` steps: each step's gates are dots of input + hidden <= 8 products
    and two biases (10 u of their magnitude in any order) and an activation (the EPs' FLOAT32 math,
    1e-5 as the element-wise family); a contractive cell carries each step's error into the next
    at most once, so `steps` times one step's. cuDNN (recurrent.py's cudnn graph on the CUDA EP)
    sums the same dots in its own order (one GEMM of every X_t, then H R^T per step) with its own
    sigmoid and tanh: within these bounds in FMA math; with TF32 tensor cores (10-bit mantissas:
    2**-10 of 8 products of 1/4 per step, about 2e-3) it would not be, and is not allowed for.
    FLOAT16: the graphs compute in FLOAT32 and round
    once (a few FLOAT16 ulps, as the default); DirectML rounds every gate, product and state to
    FLOAT16 (measured on its API: 1.5e-3 after 3 steps of values below 1), six roundings of
    2**-11 per step."""
    if dtype == dtypes.FLOAT16:
        per_step = 6 * 2.0**-11 if ep in _DIRECTML_ENGINES else 0.0
        return Tolerance(4e-3 + steps * per_step, 4e-3 + steps * per_step)
    return Tolerance(steps * 1e-5, steps * 1e-5)


# AVERAGE_POOLING_GRAD's and MAX_POOLING_GRAD's tests keep |gradient| <= POOLING_MAGNITUDE and
# windows of at most POOLING_WINDOW elements (so at most that many windows hold an input element);
# LOCAL_RESPONSE_NORMALIZATION_GRAD's keep |x| <= LRN_GRAD_MAGNITUDE, |gradient| <= 1, windows of at
# most LRN_GRAD_WINDOW elements and its two terms' magnitudes summed within LRN_GRAD_TERMS.
LRN_GRAD_MAGNITUDE = 4.0
LRN_GRAD_WINDOW = 36
LRN_GRAD_TERMS = 16.0
POOLING_GRADS = ("AVERAGE_POOLING_GRAD", "MAX_POOLING_GRAD")


def training_grad(operator: str, dtype: dtypes.DataType, ep: str) -> Tolerance:
    """The pooling gradients: an output element sums at most W = POOLING_WINDOW gradients (AVERAGE:
    each divided by its divisor, one rounding more; MAX: as they are), |g| <= M = POOLING_MAGNITUDE:
    in FLOAT32 (u = 2**-24), in any order, at most (W + 2) u W M. LOCAL_RESPONSE_NORMALIZATION_GRAD:
    g / D^Beta - 2 Alpha Beta / LocalSize * x * R, each window sum of at most W = LRN_GRAD_WINDOW
    terms ((W + 1) u relative in any order) feeding D, Pow (2 ulps), the divisions and products
    (6 roundings more), the two terms within B = LRN_GRAD_TERMS: (W + 12) u B, cancellation
    included. FLOAT16 is computed in FLOAT32 and converted once by the graphs: one FLOAT16 ulp
    (2**-10 relative) and the FLOAT16 subnormals' spacing; DirectML accumulates the pooling
    gradients in FLOAT32 too (within one ulp, measured) but keeps LRN's intermediates in FLOAT16
    (measured: 0.0078 off at terms of 12): its two window sums, D^Beta and the two terms, eight
    roundings of 2**-11 B."""
    u = 2.0**-24
    if operator in POOLING_GRADS:
        atol = (POOLING_WINDOW + 2) * u * POOLING_WINDOW * POOLING_MAGNITUDE
    else:
        atol = (LRN_GRAD_WINDOW + 12) * u * LRN_GRAD_TERMS
    if dtype != dtypes.FLOAT16:
        return Tolerance(2 * u, atol)
    if operator not in POOLING_GRADS and ep in _DIRECTML_ENGINES:
        atol += 8 * 2.0**-11 * LRN_GRAD_TERMS
    return Tolerance(2.0**-10, atol + 2.0**-24)


# BATCH_NORMALIZATION_GRAD's and …_TRAINING_GRAD's tests (matrix, property, DirectML's API) keep at
# most BNG_LENGTH elements per sum, |dy| <= BNG_GRADIENT, |Scale| <= BNG_SCALE, V + Epsilon within
# BNG_VARIANCE and |x - M| <= BNG_Z sqrt(V + Epsilon). ADAM_OPTIMIZER's keep |M|, |G| <= 1, V in
# [1/4, 1], Beta1 <= ADAM_BETA1, 1/2 <= Beta2 <= ADAM_BETA2, |LearningRate| <= ADAM_RATE,
# 0 <= Epsilon, and |X| <= ADAM_MAGNITUDE.
BNG_LENGTH = 64
BNG_GRADIENT = 1.0
BNG_SCALE = 2.0
BNG_VARIANCE = (0.25, 4.0)
BNG_Z = 3.0
ADAM_BETA1 = 0.9
ADAM_BETA2 = 0.999
ADAM_RATE = 0.1
ADAM_MAGNITUDE = 4.0


def batch_normalization_grad(dtype: dtypes.DataType, n: int, ep: str) -> Tolerance:
    """The two BATCH_NORMALIZATION gradients over n elements per sum, on the tests' inputs (above):
    G, S, Z the bounds, s = 1 / sqrt(V + Epsilon) <= 2. In FLOAT32 (u = 2**-24), in any order:
    sum(dy) within (n - 1) u n G; sum(dy (x - M)) s, terms within G Z, (n + 3) u n G Z with the
    products, the subtraction and the division; GRAD's dy S s rounds 4 times (relative);
    TRAINING_GRAD's S s (dy - mean(dy) - (x - M) mean(dy (x - M)) / (V + Epsilon)): the means
    within (n + 1) u G and (n + 6) u G Z^2 (times (x - M) / (V + Epsilon) <= Z s), 4 u of the terms
    (2 + Z^2) G, times S s. FLOAT16 is computed in FLOAT32 and converted once by the graphs; DirectML
    sums in FLOAT32 and converts once too (truncating under lavapipe: one FLOAT16 ulp, 2**-10
    relative), but keeps TRAINING_GRAD's two means in FLOAT16 (measured: a result that cancels to 0
    comes out 2**-7 where mean(dy) is 8.996): 2**-11 G (1 + Z^2) S s more."""
    u, g, s, z = 2.0**-24, BNG_GRADIENT, BNG_SCALE, BNG_Z
    inv_std = 1 / float(np.sqrt(BNG_VARIANCE[0]))
    sums = max((n - 1) * u * n * g, (n + 3) * u * n * g * z)
    training = s * inv_std * ((n + 1) * u * g + (n + 6) * u * g * z * z + 4 * u * (2 + z * z) * g)
    atol = max(sums, training)
    if dtype != dtypes.FLOAT16:
        return Tolerance(8 * u, atol)
    if ep in _DIRECTML_ENGINES:
        atol += 2.0**-11 * g * (1 + z * z) * s * inv_std
    return Tolerance(2.0**-10, atol + 2.0**-24)


def adam(dtype: dtypes.DataType, ep: str) -> Tolerance:
    """ADAM_OPTIMIZER on the tests' inputs (above), u = 2**-24. The moments: two products and a sum
    of terms within 1 (and 1 - Beta rounded): 5 u. Beta^T for T >= 1, as exp(T ln Beta) or any
    powf (DirectML's): the rounded ln Beta, T's conversion and the product move the exponent by
    3 u |T ln Beta|, exp adds 2 u: Beta^T (3 u |T ln Beta| + 2 u) <= (3 / e + 2) u < 3.2 u absolute
    (x^T T |ln x| <= 1/e), so 1 - Beta^T
    by 3.2 u / (1 - Beta) relative (it is at least 1 - Beta) and Alpha = sqrt(1 - Beta2^T) /
    (1 - Beta1^T) (at most 1 / (1 - Beta1)) by 1.6 u / (1 - Beta2) + 3.2 u / (1 - Beta1) + 4 u.
    The update LearningRate Alpha M' / (sqrt(V') + Epsilon), within U = ADAM_RATE / (1 - Beta1) /
    sqrt(1/8) (V' >= 1/8), errs by U (that relative error + 30 u: V''s 5 u over V' >= 1/8 halved by
    the root, and five roundings), and X' = X - update rounds once (u relative). FLOAT16 is computed
    in FLOAT32 and rounded once (one FLOAT16 ulp, 2**-10 relative, and the subnormals' spacing)."""
    u = 2.0**-24
    update = ADAM_RATE / (1 - ADAM_BETA1) / float(np.sqrt(1 / 8))
    alpha = 1.6 * u / (1 - ADAM_BETA2) + 3.2 * u / (1 - ADAM_BETA1) + 4 * u
    atol = update * (alpha + 30 * u) + 5 * u
    if dtype == dtypes.FLOAT16:
        return Tolerance(2.0**-10, atol + 2.0**-24)
    return Tolerance(2 * u, atol)


# MATRIX_MULTIPLY_INTEGER_TO_FLOAT's tests keep K <= INTEGER_TO_FLOAT_LENGTH and every dequantized
# value ((x - zero point) * scale) and Bias in [-1, 1]; a longer K asks integer_to_float().
INTEGER_TO_FLOAT_LENGTH = 64


def integer_to_float(dtype: dtypes.DataType, k: int) -> Tolerance:
    """MATRIX_MULTIPLY_INTEGER_TO_FLOAT: the dequantized values are the same numbers (FLOAT32, or
    rounded to a FLOAT16 output's type) in the graphs, DirectML and the reference
    (ops/matrix_multiply_integer.py); their k products summed in FLOAT32 in any order, and Bias
    added, err by at most (k + 1) u S with |sum + Bias| <= S = k + 1 (u = 2**-24). FLOAT16: that
    FLOAT32 result rounded once (2**-10 relative)."""
    s = k + 1
    atol = (k + 1) * 2.0**-24 * s
    return Tolerance(2.0**-10, atol + 2.0**-24) if dtype == dtypes.FLOAT16 else Tolerance(2.0**-23, atol)


def tolerance(operator: str, dtype: dtypes.DataType, ep: str, field: str = "") -> Tolerance:
    """The tolerance of an operator's output (`field`, where its outputs differ) of `dtype` on `ep`."""
    if operator in EXACT_OPERATORS or operator in MOVING_OPERATORS or not dtype.is_float:
        return Tolerance(0, 0)
    if operator in ("BATCH_NORMALIZATION_GRAD", "BATCH_NORMALIZATION_TRAINING_GRAD"):
        return batch_normalization_grad(dtype, BNG_LENGTH, ep)
    if operator == "ADAM_OPTIMIZER":
        return adam(dtype, ep)
    if operator in (*POOLING_GRADS, "LOCAL_RESPONSE_NORMALIZATION_GRAD"):
        return training_grad(operator, dtype, ep)
    if operator.startswith("CUMULATIVE_"):
        return cumulative(operator, dtype, CUMULATIVE_LENGTH)
    if operator == "ROI_ALIGN_GRAD":
        return roi_align_grad(dtype, ROI_GRAD_OUTPUTS, field == "OutputROIGradientTensor")
    if operator.startswith("ROI_"):
        return roi(operator, dtype, ROI_SAMPLES)
    if "_POOLING" in operator:
        return pooling(operator, dtype, POOLING_WINDOW)
    if operator == "GEMM":
        return gemm(dtype, GEMM_LENGTH, ep)
    if operator.startswith("MULTIHEAD_ATTENTION"):
        return attention(dtype, ATTENTION_KEYS, ATTENTION_HEAD, ep)
    if operator == "CONVOLUTION":
        return convolution(dtype, CONVOLUTION_LENGTH, ep)
    if operator == "BATCH_NORMALIZATION_TRAINING":
        return batch_normalization_training(dtype, BNT_LENGTH, ep)
    if operator in RESAMPLE_OPERATORS:
        return resample(operator, dtype)
    if operator in ("RNN", "LSTM", "GRU"):
        return recurrent(dtype, RECURRENT_STEPS, ep)
    if operator in ("RESAMPLE_GRAD", "RESAMPLE_GRAD1"):
        return resample_grad(dtype, RESAMPLE_GRAD_TERMS)
    if operator == "MATRIX_MULTIPLY_INTEGER_TO_FLOAT":
        return integer_to_float(dtype, INTEGER_TO_FLOAT_LENGTH)
    if dtype == dtypes.FLOAT16:
        return Tolerance(4e-3, 4e-3)  # a few FLOAT16 ulps; the graphs compute in FLOAT32
    if operator.startswith("ACTIVATION_LOG_SOFTMAX") and ep not in ("cpu", "reference"):
        return Tolerance(5e-5, 5e-5)  # the CUDA EP's LogSoftmax: log(1/3) is 2e-5 off on an H200
    if operator.startswith("MEAN_VARIANCE_NORMALIZATION"):
        return Tolerance(5e-5, 5e-5)
    if operator in _NORMALIZATIONS:
        return _NORMALIZATIONS[operator]
    if operator in ("REDUCE", "FOLD"):
        return Tolerance(1e-5, 1e-5)  # FLOAT32 sums (and products) against a FLOAT64 reference
    if operator in _INVERSE_TRIG and ep in _DIRECTML_ENGINES:
        # DirectML over Mesa's lavapipe (the Vulkan driver under Wine here) evaluates asin, acos
        # and atan with that driver's approximations: asin(0) = 6.8e-5, atan(1) 1.1e-5 off
        return Tolerance(1e-4, 1e-4)
    if operator in _ELEMENT_WISE or operator.startswith("ELEMENT_WISE_"):
        return Tolerance(1e-5, 1e-5)  # exp, tanh, erf: the EPs' FLOAT32 math libraries
    return Tolerance(2e-6, 2e-6)


@dataclass(frozen=True)
class Comparison:
    max_abs: float
    max_rel: float
    ok: bool


def compare(got: np.ndarray, want: np.ndarray, tol: Tolerance) -> Comparison:
    """Max absolute and relative error (NaN and infinities must match exactly)."""
    if got.shape != want.shape or got.dtype != want.dtype:
        return Comparison(float("inf"), float("inf"), False)
    if want.dtype.kind != "f":
        diff = np.abs(got.astype(object).ravel() - want.astype(object).ravel())  # Python ints: no overflow
        max_abs = float(max(diff, default=0))
        return Comparison(max_abs, 0.0 if max_abs == 0 else float("inf"), max_abs == 0)
    g, w = got.astype(np.float64), want.astype(np.float64)
    same = (g == w) | (np.isnan(g) & np.isnan(w))
    special = ~np.isfinite(g) | ~np.isfinite(w)
    if np.any(special & ~same):
        return Comparison(float("inf"), float("inf"), False)
    with np.errstate(invalid="ignore"):  # inf - inf where both are the same infinity: masked by `same`
        err = np.where(same, 0.0, np.abs(g - w))
        rel = np.where(same, 0.0, err / np.maximum(np.abs(w), np.finfo(np.float64).tiny))
    max_abs, max_rel = float(err.max(initial=0)), float(rel.max(initial=0))
    ok = bool(np.all(err <= tol.atol + tol.rtol * np.abs(np.where(same, 0, w))))
    return Comparison(max_abs, max_rel, ok)


def compare_outputs(desc: Any, got: Mapping[str, np.ndarray], want: Mapping[str, np.ndarray], ep: str) -> dict[str, Comparison]:
    """Every output the desc sets (`got` and `want` keyed by output field), each within its own
    data type's tolerance (MAX_POOLING2's indices exactly, its values as pooling's floats)."""
    if desc.schema.name == "NONZERO_COORDINATES" and ep in _DIRECTML_ENGINES:
        # DirectML leaves the coordinates past the count unwritten (undefined on the page;
        # dml2onnx writes zeros there): only the rows before the count are compared
        n = desc.tensor("OutputCoordinatesTensor").sizes[-1]
        rows = int(np.asarray(want["OutputCountTensor"]).ravel()[0])
        got = {**got, "OutputCoordinatesTensor": np.asarray(got["OutputCoordinatesTensor"]).reshape(-1, n)[:rows]}
        want = {**want, "OutputCoordinatesTensor": np.asarray(want["OutputCoordinatesTensor"]).reshape(-1, n)[:rows]}
    if (
        desc.schema.name == "ELEMENT_WISE_POW"
        and not desc.tensor("OutputTensor").data_type.is_float
        and desc.tensor("ExponentTensor").data_type.is_float
    ):  # an integer base, a float exponent: DirectML truncates its own float pow, which is not
        # correctly rounded: one less where the exact result is an integer (10**4.0 = 9999), some
        # FLOAT32 ulps beyond 2**24, more as e * log2|x| grows (measured up to 1e-6: 199**3.5 is
        # 111169640, not 111169528; 31**5 is 28629174)
        g, w = (np.asarray(v["OutputTensor"]).astype(np.float64) for v in (got, want))
        return {"OutputTensor": compare(g, w, Tolerance(2.0**-18, 1.0))}
    if (
        desc.schema.name == "GEMM"
        and desc["FusedActivation"] is not None
        and desc["FusedActivation"].schema.name == "ACTIVATION_SOFTMAX1"
    ):
        dtype = desc.tensor("OutputTensor").data_type
        return {"OutputTensor": compare(got["OutputTensor"], want["OutputTensor"], gemm_softmax(dtype, GEMM_LENGTH, ep))}
    return {
        field: compare(got[field], want[field], tolerance(desc.schema.name, desc.tensor(field).data_type, ep, field))
        for field in desc.outputs
    }
