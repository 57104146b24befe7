"""The integer matrix multiplies: DML_OPERATOR_MATRIX_MULTIPLY_INTEGER,
MATRIX_MULTIPLY_INTEGER_TO_FLOAT and QUANTIZED_LINEAR_MATRIX_MULTIPLY. Each multiplies A [..., M, K]
by B [..., K, N] into OutputTensor [..., M, N] (2 to 4 dimensions from feature level 4_0, 4
before; the leading ones are a batch), A and B taken less their zero points:

- MATRIX_MULTIPLY_INTEGER (INT8/UINT8 in, INT32 out): sum_k (A - AZeroPoint)(B - BZeroPoint);
- QUANTIZED_LINEAR_MATRIX_MULTIPLY (INT8/UINT8 in and out): that sum requantized,
  clamp(round(sum * AScale * BScale / OutputScale) + OutputZeroPoint, Min, Max);
- MATRIX_MULTIPLY_INTEGER_TO_FLOAT (8 to 32-bit integers in, FLOAT32/FLOAT16 out):
  sum_k ((A - AZeroPoint) * AScale)((B - BZeroPoint) * BScale) + Bias.

Fields and rules (the pages, and where they are silent DirectML's CreateOperator, measured):
A's scale and zero point, and OutputTensor's, are per tensor (every size 1) or per row (M on the
second to last dimension); B's per tensor or per column (N on the last); their other sizes are 1,
any DimensionCount (1 to 4 as the tables allow), aligned from the last dimension: DirectML refuses
[M] for A, takes [N] for B. A zero point has its scale's Sizes (DirectML refuses a per-row zero
point with a per-tensor scale and the reverse). A, B and OutputTensor have one DimensionCount (the
pages; DirectML takes others), the batch sizes are OutputTensor's (DirectML refuses a batch of 1
broadcast: use strides of 0), Bias has OutputTensor's Sizes. Types: each zero point has its
tensor's type (TO_FLOAT: A, B and both zero points one type; both scales, Bias and OutputTensor
one type); the scales of QUANTIZED_LINEAR_MATRIX_MULTIPLY and MATRIX_MULTIPLY_INTEGER_TO_FLOAT, and
the zero points of these two, share one DimensionCount (the pages).

What the pages leave open, as DirectML's own API computed it (README: integer matrix multiplies):
- the integer sum is INT32 and wraps: 33100 products of 255 * 255 give -2142639796;
- QUANTIZED_LINEAR_MATRIX_MULTIPLY takes the sum to FLOAT32 (to nearest) and multiplies it by
  (AScale / OutputScale) * BScale, computed in that order in FLOAT32 (of the orders tried, the only
  one bit-exact on 4096 crafted ties), rounds halves to even, then adds OutputZeroPoint and
  saturates (round(y) + zero point, not round(y + zero point)); a NaN product gives the zero
  point. Scale 0 is undefined on the page; DirectML under lavapipe gives the type's minimum for
  +-inf (its saturating INT32 conversion plus the zero point wraps), dml2onnx saturates infinities
  by their sign;
- MATRIX_MULTIPLY_INTEGER_TO_FLOAT dequantizes first, as DEQUANTIZE_LINEAR does ((x - zero point)
  * scale in FLOAT32, the integers converted to FLOAT32 first: INT32/UINT32 to nearest), holds the
  dequantized values in the output's type (FLOAT16 outputs: each rounded to FLOAT16), then sums
  the products in FLOAT32, adds Bias and rounds once to the output's type (bit-exact for K = 1 on
  4096 elements; the order of longer sums is the engine's: tolerances.integer_to_float). Under
  lavapipe the FLOAT16 conversions go toward zero (tests/dml_findings.py), the graphs round to
  nearest.

Lowerings (choices.py): "float32_chunks", the integer sum as FLOAT32 MatMul over chunks of K short
enough to be exact (every |x - zero point| <= 255, so 256 products stay below 2**24 whatever the
order, TF32 included), the batch merged into one dimension (the DirectML EP's MatMul takes 4 at
most), the chunks' sums cast to INT32 and folded pairwise by Add (which wraps as DirectML does; the
CUDA EP's integer ReduceSum sums in FLOAT32); TO_FLOAT is DequantizeLinear's arithmetic and a
FLOAT32 MatMul; QUANTIZED_LINEAR is the integer sum, then Mul, Round, Add, Clip, Cast in FLOAT32.
Every node runs on the CPU, CUDA and DirectML EPs in those types.

"integer" (MATRIX_MULTIPLY_INTEGER and QUANTIZED_LINEAR_MATRIX_MULTIPLY, K < 2**17): ONNX
MatMulInteger on INT8 x INT8 without zero points, the one pairing the CUDA EP registers
(matmul_integer.cc: T1 = T2 = int8; its zero points are scalars read on the CPU, so none is
passed), the offsets folded in INT32 around it. Each operand is made INT8, X8 = X (INT8) or
X - 128 (UINT8: Cast to FLOAT32, Sub 128, Cast), so X - zero point = X8 - o with the offset o =
zero point - (128 for UINT8), o in [-128, 127] (-128 for UINT8 without a zero point, none for
INT8 without one); then with P = MatMulInteger(A8, B8), r = A8's row sums [..., M, 1] and c =
B8's column sums [..., 1, N]:
  sum_k (A8 - oA)(B8 - oB) = P - r * oB - oA * (c - K * oB)
in INT32 Mul and Sub, which wrap (DirectML's sum is the same modulo 2**32). Below K = 2**17 every
term is exact before that: |P| and its partial sums <= K * 128 * 128 < 2**31 (the engine's INT32
accumulator never wraps), and r and c are FLOAT32 ReduceSums of integers of at most 128 in
magnitude, every partial sum below 2**24 (exact in any order), cast to INT32. cuBLAS's INT8 GEMM
(cublasGemmEx, CUDA_R_8I -> CUDA_R_32I; ONNX Runtime pads the leading dimensions of A and B to 32
itself, not C's) wants its m and k, here N and K, multiples of 4: a K or N that is not is padded
with zeros (Pad of the FLOAT32 operand, before its Cast) and P sliced back to N columns. Nodes:
MatMulInteger alone for INT8 x INT8 without zero points, K and N multiples of 4; at most, per
operand, Cast, Sub, Pad, Cast and ReduceSum, Cast (the sums only where the other operand's offset
is not known to be 0), then Slice, Mul, Sub, Mul, Sub (the offsets' Muls [.., M, 1] or [.., 1,
N] where the other offset is per tensor) and for QUANTIZED_LINEAR the requantization above. The
CPU, CUDA and DirectML EPs register every node in these types (the DirectML EP turns
MatMulInteger into this operator with no zero points); ONNX Runtime's CPU MatMulInteger (MLAS,
AVX512-VNNI here) and the DirectML EP under Wine (27 matrix cases, both operators) were exact on
the matrix. QUANTIZED_LINEAR's graph puts a Reshape between a bare MatMulInteger and the Cast:
ONNX Runtime fuses MatMulInteger -> Cast -> Mul by a Mul's product into com.microsoft
MatMulIntegerToFloat on the CPU and DirectML EPs, whose product of the scales differs from
DirectML's order on ties (12 of the ties case's 4096). ONNX MatMulInteger on the original types
would be one node, but the CUDA EP lacks UINT8 and per-row or per-column zero points. `choose`
takes "integer" where it applies (the H100, 4096^3: 1.13 ms against float32_chunks' 6.09, the
same as torch._int_mm; exact there on the benchmark's cases and every matrix case on the CUDA EP).

"native" (DML_ONLY, preferred on the `dml` target): MatMulInteger and QLinearMatMul, which
the DirectML EP turns back into MATRIX_MULTIPLY_INTEGER and QUANTIZED_LINEAR_MATRIX_MULTIPLY
(DmlOperatorMatMulInteger.cpp, DmlOperatorQLinearMatMul.cpp: every tensor passed as it is, right
aligned); QLinearMatMul wants every zero point, an absent one is zeros. TO_FLOAT's node there is
com.microsoft MatMulIntegerToFloat, a domain the graphs do not import: the portable graph.
"""

from __future__ import annotations

import math

import numpy as np

from dml2onnx.core import dtypes
from dml2onnx.core.desc import OperatorDesc
from dml2onnx.core.errors import ModelError
from dml2onnx.core.schema import OperatorSchema
from dml2onnx.graph import dml_ep
from dml2onnx.graph.builder import GraphBuilder
from dml2onnx.graph.targets import DML_NODE_DOC
from dml2onnx.ops import common
from dml2onnx.ops.family import Family

INTEGER, TO_FLOAT, QUANTIZED = "MATRIX_MULTIPLY_INTEGER", "MATRIX_MULTIPLY_INTEGER_TO_FLOAT", "QUANTIZED_LINEAR_MATRIX_MULTIPLY"
CANDIDATES = ("float32_chunks", "integer", "native")  # choices.py
DML_ONLY = ("native",)  # MatMulInteger / QLinearMatMul: this operator itself on the DirectML EP
DML_PREFERENCE = ("native",)
NATIVE = {INTEGER: "MatMulInteger", QUANTIZED: "QLinearMatMul"}  # DmlOperatorMatMulInteger.cpp, ...QLinearMatMul.cpp
F32, I32 = dtypes.FLOAT32, dtypes.INT32
CHUNK = 256  # products of |x| <= 255 each: 256 of them sum below 2**24, exact in FLOAT32
INT8_K_LIMIT = 1 << 17  # "integer": K * 128 * 128 < 2**31 and K * 128 < 2**24 below it
ALIGN = 4  # "integer": cuBLAS's INT8 GEMM wants K and N multiples of 4
SHIFT = {dtypes.INT8: 0, dtypes.UINT8: 128}  # X8 = X - SHIFT is INT8

# the quantization tensors per row of A (M on the second to last dimension) or per column of B
ROWS = ("AScaleTensor", "AZeroPointTensor", "OutputScaleTensor", "OutputZeroPointTensor")
COLUMNS = ("BScaleTensor", "BZeroPointTensor")
ZERO_POINTS = {"AZeroPointTensor": "ATensor", "BZeroPointTensor": "BTensor", "OutputZeroPointTensor": "OutputTensor"}
SCALE_OF = {"AZeroPointTensor": "AScaleTensor", "BZeroPointTensor": "BScaleTensor", "OutputZeroPointTensor": "OutputScaleTensor"}


def dims(desc: OperatorDesc) -> tuple[int, int, int]:
    """(M, K, N) as A and B give them."""
    a, b = desc.tensor("ATensor").sizes, desc.tensor("BTensor").sizes
    return a[-2], a[-1], b[-1]


# -- validation -------------------------------------------------------------------------------


def validate(desc: OperatorDesc) -> None:
    name = desc.schema.name
    for t in ("ATensor", "BTensor"):
        common.check_same_rank(desc, t, "OutputTensor")
    out = desc.tensor("OutputTensor").sizes
    rank = len(out)
    m, k, n = dims(desc)
    batch = "the batch; broadcast it with a stride of 0"
    wants = [("BTensor", rank - 2, k, "K, ATensor's last size"), ("OutputTensor", rank - 2, m, "M, from ATensor")]
    wants += [("OutputTensor", rank - 1, n, "N, from BTensor")]
    wants += [(f, i, out[i], f"OutputTensor.Sizes[{i}], {batch}") for f in ("ATensor", "BTensor") for i in range(rank - 2)]
    for field, i, want, why in wants:
        got = desc.tensor(field).sizes[i]
        if got != want:
            raise ModelError(desc.at(field, "Sizes", i), f"must be {want} ({why}), not {got}")
    fields = {f.name for f in desc.schema.fields}
    if "BiasTensor" in fields and desc.optional_tensor("BiasTensor") is not None:
        common.check_same_sizes(desc, "BiasTensor", "OutputTensor")
    for field in (f for f in ROWS + COLUMNS if f in fields):
        if desc.optional_tensor(field) is not None:
            _check_quantization(desc, field, m if field in ROWS else n, field in ROWS)
    if name == TO_FLOAT:
        for field in ("BTensor", "BZeroPointTensor"):
            common.check_same_type(desc, field, "ATensor")
        for field in ("AScaleTensor", "BScaleTensor", "BiasTensor"):
            common.check_same_type(desc, field, "OutputTensor")
    for zero, tensor in ZERO_POINTS.items():
        if zero in fields:
            common.check_same_type(desc, zero, tensor)
            if SCALE_OF[zero] in fields and desc.optional_tensor(zero) is not None:
                common.check_same_sizes(desc, zero, SCALE_OF[zero])
    if name != INTEGER:
        scales = [f for f in ROWS + COLUMNS if f in fields]
        for field in scales[1:]:
            common.check_same_rank(desc, field, scales[0])


def _check_quantization(desc: OperatorDesc, field: str, extent: int, per_row: bool) -> None:
    """Sizes of 1 but M (per row: the second to last) or N (per column: the last), or all 1."""
    sizes = desc.tensor(field).sizes
    axis = len(sizes) - (2 if per_row else 1)
    what = "M (per row) on the second to last dimension" if per_row else "N (per column) on the last dimension"
    for i, s in enumerate(sizes):
        allowed = (1, extent) if i == axis else (1,)
        if s not in allowed:
            want = f"1 or {extent}" if i == axis else "1"
            raise ModelError(desc.at(field, "Sizes", i), f"must be {want} ({field} is per tensor, or {what}), not {s}")


# -- lowering ---------------------------------------------------------------------------------


def _matrix_shape(desc: OperatorDesc, field: str) -> list[int]:
    """A quantization tensor as a [rows, 1] or [1, columns] matrix (its other sizes are 1)."""
    sizes = desc.tensor(field).sizes
    return [sizes[-2] if len(sizes) > 1 else 1, 1] if field in ROWS else [1, sizes[-1]]


def _as_matrix(desc: OperatorDesc, b: GraphBuilder, inputs: dict[str, str], field: str) -> str:
    """The quantization tensor in FLOAT32, shaped to broadcast against [..., M, N]."""
    v = b.reshape(inputs[field], _matrix_shape(desc, field), f"{field}_matrix", f"{field} as a row or column vector")
    return v if desc.tensor(field).data_type == F32 else b.cast(v, F32, f"{field}_float32", f"{field} in FLOAT32")


def _centred(desc: OperatorDesc, b: GraphBuilder, inputs: dict[str, str], field: str) -> str:
    """x - zero point in FLOAT32 (both converted first, to nearest: exact for 8 and 16 bits)."""
    x = b.cast(inputs[field], F32, f"{field}_float32", f"{field} in FLOAT32")
    zero = field[0] + "ZeroPointTensor"
    if zero not in inputs:
        return x
    return b.node("Sub", [x, _as_matrix(desc, b, inputs, zero)], f"{field}_centred", f"{field} - {zero}")


def _integer_sum(desc: OperatorDesc, b: GraphBuilder, a: str, bm: str) -> str:
    """sum_k a * b in INT32 (wrapping) for FLOAT32 a and b holding integers of at most 255 in
    magnitude: MatMul over P chunks of at most CHUNK terms (P a power of two, K padded with zeros
    to P chunks of equal length), each chunk's exact sum cast to INT32, the chunks folded by Add."""
    out = desc.tensor("OutputTensor").sizes
    rank = len(out)
    m, k, n = dims(desc)
    if k <= CHUNK:
        return b.cast(b.node("MatMul", [a, bm], "matmul", "the exact sum (below 2**24)"), I32, "sum_int32", "the sum in INT32")
    parts = 1 << math.ceil(math.log2(math.ceil(k / CHUNK)))
    chunk = math.ceil(k / parts)
    if parts * chunk > k:
        extra = parts * chunk - k
        pads = [0] * (2 * rank)
        pads[2 * rank - 1] = extra
        a = b.node("Pad", [a, b.i64(pads, "a_pads")], "a_padded", f"K padded with {extra} zeros")
        pads = [0] * (2 * rank)
        pads[2 * rank - 2] = extra
        bm = b.node("Pad", [bm, b.i64(pads, "b_pads")], "b_padded", f"K padded with {extra} zeros")
    # the batch as one dimension: 4 in all (the DirectML EP's MatMul takes no more)
    batch = math.prod(out[:-2])
    a = b.reshape(a, [batch, m, parts, chunk], "a_chunks", f"A's K as {parts} chunks of {chunk}")
    a = b.transpose(a, [0, 2, 1, 3], "a_chunks_first", "the chunks as a batch")
    bm = b.reshape(bm, [batch, parts, chunk, n], "b_chunks", f"B's K as {parts} chunks of {chunk}")
    sums = b.node("MatMul", [a, bm], "chunk_matmul", f"each chunk's exact sum (at most {chunk} products: below 2**24)")
    y = b.cast(sums, I32, "chunk_sums_int32", "the chunks' sums in INT32")
    while parts > 1:
        half = parts // 2
        first = b.slice(y, [1], [0], [half], f"first{parts}", "the first half of the chunks")
        second = b.slice(y, [1], [half], [parts], f"second{parts}", "the second half of the chunks")
        y = b.node("Add", [first, second], f"fold{parts}", f"{parts} -> {half} chunk sums (INT32: wraps)")
        parts = half
    return b.reshape(y, out, "sum", "the sum at the output's sizes")


def _offset(desc: OperatorDesc, b: GraphBuilder, inputs: dict[str, str], field: str) -> str | None:
    """The INT32 offset o = zero point - SHIFT of `field` ([M, 1] / [1, N] or [1, 1]), None where
    it is 0 (INT8 without a zero point)."""
    shift = SHIFT[desc.tensor(field).data_type]
    zero = field[0] + "ZeroPointTensor"
    if zero not in inputs:
        return None if shift == 0 else b.const(np.full((1, 1), -shift, np.int32), f"{field}_offset")
    z = b.reshape(inputs[zero], _matrix_shape(desc, zero), f"{zero}_matrix", f"{zero} as a row or column vector")
    z = b.cast(z, I32, f"{zero}_int32", f"{zero} in INT32")
    if shift == 0:
        return z
    return b.node("Sub", [z, b.scalar(shift, I32, f"{field}_shift")], f"{field}_offset", f"{zero} - {shift}")


def _int8_operand(
    desc: OperatorDesc, b: GraphBuilder, inputs: dict[str, str], field: str, sum_axis: int | None, pads: list[int]
) -> tuple[str, str | None]:
    """(X8 = X - SHIFT as INT8, padded by `pads` with zeros; X8's INT32 sums over `sum_axis`, or
    None). The sums are FLOAT32 ReduceSums of integers of at most 128 in magnitude (K < 2**17:
    below 2**24 at every step, exact), cast to INT32."""
    x = inputs[field]
    shift = SHIFT[desc.tensor(field).data_type]
    if not shift and sum_axis is None and not any(pads):
        return x, None
    v = b.cast(x, F32, f"{field}_float32", f"{field} in FLOAT32")
    if shift:
        v = b.node("Sub", [v, b.scalar(float(shift), F32, f"{field}_128")], f"{field}_less_128", f"{field} - 128 (INT8's range)")
    sums = None
    if sum_axis is not None:
        total = b.reduce("ReduceSum", v, [sum_axis], f"{field}_sums", "the sums (below 2**24: exact)")
        sums = b.cast(total, I32, f"{field}_sums_int32", "the sums in INT32")
    if not shift and not any(pads):
        return x, sums
    if any(pads):
        v = b.node("Pad", [v, b.i64(pads, f"{field}_pads")], f"{field}_padded", f"K and N padded to multiples of {ALIGN}")
    return b.cast(v, dtypes.INT8, f"{field}_int8", f"{field} - {shift} as INT8"), sums


def fold_offsets(
    b: GraphBuilder, p: str, first: tuple[str | None, str | None], second: tuple[str | None, str | None], k: int
) -> str:
    """sum_k (X8 - oX)(Y8 - oY) from P = sum_k X8 * Y8 in INT32 (wrapping), `first` = (one
    operand's sums s1, the other's offset o1), `second` = (the other's sums s2, the first's
    offset o2), each sum None where its offset is (0): P - s1 * o1 - o2 * (s2 - K * o1)."""
    (s1, o1), (s2, o2) = first, second
    if s1 is not None and o1 is not None:
        p = b.node("Sub", [p, b.node("Mul", [s1, o1], "sums_offset", "s1 * o1")], "less_sums", "P - s1 * o1 (wraps)")
    if s2 is not None and o2 is not None:
        if o1 is not None:
            s2 = b.node("Sub", [s2, b.node("Mul", [b.scalar(k, I32, "k"), o1], "k_offset", "K * o1")], "sums_less", "s2 - K * o1")
        p = b.node("Sub", [p, b.node("Mul", [o2, s2], "offset_sums", "o2 * (s2 - K * o1)")], "less_offset", "... - o2 * (...)")
    return p


def _int8_product(desc: OperatorDesc, b: GraphBuilder, inputs: dict[str, str]) -> str:
    """sum_k (A - AZeroPoint)(B - BZeroPoint) in INT32 (wrapping) as P - r * oB - oA * (c - K *
    oB), P = MatMulInteger(A8, B8) (the docstring)."""
    rank = len(desc.tensor("OutputTensor").sizes)
    _, k, n = dims(desc)
    pad_k, pad_n = -k % ALIGN, -n % ALIGN
    a_offset, b_offset = _offset(desc, b, inputs, "ATensor"), _offset(desc, b, inputs, "BTensor")
    a_pads, b_pads = [0] * (2 * rank), [0] * (2 * rank)
    a_pads[2 * rank - 1], b_pads[2 * rank - 2], b_pads[2 * rank - 1] = pad_k, pad_k, pad_n
    a8, rows = _int8_operand(desc, b, inputs, "ATensor", None if b_offset is None else rank - 1, a_pads)
    b8, columns = _int8_operand(desc, b, inputs, "BTensor", None if a_offset is None else rank - 2, b_pads)
    y = b.node("MatMulInteger", [a8, b8], "matmul_integer", "P = A8 x B8 (INT8 x INT8 -> INT32, exact)")
    if pad_n:
        y = b.slice(y, [rank - 1], [0], [n], "unpadded", f"P's first {n} columns")
    y = fold_offsets(b, y, (rows, b_offset), (columns, a_offset), k)
    if desc.schema.name == QUANTIZED and not pad_n and a_offset is None and b_offset is None:
        # MatMulInteger -> Cast -> Mul by a Mul's product is what ONNX Runtime fuses into
        # com.microsoft MatMulIntegerToFloat on the CPU and DirectML EPs, which multiplies by the
        # scales in another order (other ties): a Reshape in between keeps the graph's order
        y = b.reshape(y, desc.tensor("OutputTensor").sizes, "unfused", "P (no MatMulIntegerToFloat fusion)")
    return y


def applies(desc: OperatorDesc, candidate: str, opset: int) -> bool:
    """ "integer" for MATRIX_MULTIPLY_INTEGER and QUANTIZED_LINEAR_MATRIX_MULTIPLY with K < 2**17
    (every term exact below it); "native" where the DirectML EP registers the ONNX node at this
    opset (TO_FLOAT's node, com.microsoft MatMulIntegerToFloat, is in a domain the graphs do not
    import)."""
    if candidate == "integer":
        return desc.schema.name != TO_FLOAT and dims(desc)[1] < INT8_K_LIMIT
    if candidate != "native":
        return True
    op = NATIVE.get(desc.schema.name)
    types = {f"T{i + 1}": desc.tensor(n).data_type.name for i, n in enumerate(("ATensor", "BTensor", "OutputTensor"))}
    return op is not None and dml_ep.takes(op, opset, **types)


def choose(desc: OperatorDesc, target: str, options: tuple[str, ...]) -> str:
    """integer (cuBLAS's INT8 GEMM through MatMulInteger) wherever it applies: on the H100 at
    4096^3 (benchmarks/results/h100-part4-2026-11-23.md) INT8 1.13 ms against float32_chunks' 6.09
    and torch._int_mm's 1.12; UINT8 x INT8 with zero points per row and column 1.60 ms against 6.17;
    QUANTIZED_LINEAR UINT8 1.98 ms against 6.69 (PyTorch's _int_mm and requantization 1.45)."""
    return "integer" if "integer" in options else options[0]


def _native(desc: OperatorDesc, b: GraphBuilder, inputs: dict[str, str]) -> str:
    """The ONNX node the DirectML EP turns back into this operator, its inputs passed as they are
    (the EP aligns every tensor to the right, as DirectML does). QLinearMatMul wants every zero
    point: an absent one is zeros of its scale's sizes (the same sums)."""
    if desc.schema.name == INTEGER:
        names = [inputs.get(n, "") for n in ("ATensor", "BTensor", "AZeroPointTensor", "BZeroPointTensor")]
        while not names[-1]:  # ONNX's order: A, B, a_zero_point, b_zero_point
            names.pop()
        return b.node("MatMulInteger", names, "matmul_integer", DML_NODE_DOC)
    names = []
    for field in ("ATensor", "AScaleTensor", "AZeroPointTensor", "BTensor", "BScaleTensor", "BZeroPointTensor"):
        names.append(inputs[field] if field in inputs else _zeros(desc, b, field))
    names += [inputs["OutputScaleTensor"], inputs.get("OutputZeroPointTensor") or _zeros(desc, b, "OutputZeroPointTensor")]
    return b.node("QLinearMatMul", names, "qlinear_matmul", DML_NODE_DOC)


def _zeros(desc: OperatorDesc, b: GraphBuilder, zero: str) -> str:
    dtype = desc.tensor(ZERO_POINTS[zero]).data_type.numpy
    return b.const(np.zeros(desc.tensor(SCALE_OF[zero]).sizes, dtype), f"{zero}_zeros")


def lower(desc: OperatorDesc, b: GraphBuilder, inputs: dict[str, str]) -> str:
    name = desc.schema.name
    if b.variant == "native":
        return _native(desc, b, inputs)
    if b.variant == "integer":
        total = _int8_product(desc, b, inputs)
        return total if name == INTEGER else _requantized(desc, b, inputs, total)
    a, bm = _centred(desc, b, inputs, "ATensor"), _centred(desc, b, inputs, "BTensor")
    if name == TO_FLOAT:
        return _to_float(desc, b, inputs, a, bm)
    total = _integer_sum(desc, b, a, bm)
    return total if name == INTEGER else _requantized(desc, b, inputs, total)


def _to_float(desc: OperatorDesc, b: GraphBuilder, inputs: dict[str, str], a: str, bm: str) -> str:
    out = desc.tensor("OutputTensor").data_type
    values = []
    for x, field in ((a, "ATensor"), (bm, "BTensor")):
        scale = field[0] + "ScaleTensor"
        v = b.node("Mul", [x, _as_matrix(desc, b, inputs, scale)], f"{field}_dequantized", f"({field} - zero point) * {scale}")
        if out != F32:  # DirectML holds the dequantized values in FLOAT16
            v = b.cast(b.cast(v, out, f"{field}_float16", "rounded to FLOAT16"), F32, f"{field}_widened", "in FLOAT32")
        values.append(v)
    y = b.node("MatMul", values, "matmul", "the dequantized A x B in FLOAT32")
    if "BiasTensor" in inputs:
        bias = inputs["BiasTensor"]
        if out != F32:
            bias = b.cast(bias, F32, "bias_float32", "Bias in FLOAT32")
        y = b.node("Add", [y, bias], "plus_bias", "... + Bias")
    return y if out == F32 else b.cast(y, out, "to_float16", "the result in FLOAT16")


def _requantized(desc: OperatorDesc, b: GraphBuilder, inputs: dict[str, str], total: str) -> str:
    """clamp(round(sum * ((AScale / OutputScale) * BScale)) + OutputZeroPoint), NaN as 0."""
    ratio = b.node(
        "Div",
        [_as_matrix(desc, b, inputs, "AScaleTensor"), _as_matrix(desc, b, inputs, "OutputScaleTensor")],
        "scale_ratio",
        "AScale / OutputScale",
    )
    scale = b.node("Mul", [ratio, _as_matrix(desc, b, inputs, "BScaleTensor")], "scale", "(AScale / OutputScale) * BScale")
    y = b.node("Mul", [b.cast(total, F32, "sum_float32", "the sum in FLOAT32 (to nearest)"), scale], "scaled", "sum * scale")
    r = b.node("Round", [y], "rounded", "halves to even")
    r = b.node("Where", [b.node("IsNaN", [r], "nan", "NaN"), b.scalar(0.0, F32, "zero"), r], "nan_as_0", "NaN as 0 (DirectML)")
    if "OutputZeroPointTensor" in inputs:
        zero = _as_matrix(desc, b, inputs, "OutputZeroPointTensor")
        r = b.node("Add", [r, zero], "shifted", "round(...) + OutputZeroPoint")
    out = desc.tensor("OutputTensor").data_type
    lo, hi = common.float32_range(out)
    r = b.node("Clip", [r, b.scalar(lo, F32, "type_min"), b.scalar(hi, F32, "type_max")], "saturated", f"saturated to {out}")
    return b.cast(r, out, "as_output", f"as {out} (an integer in range: exact)")


# -- reference --------------------------------------------------------------------------------


def _column(desc: OperatorDesc, inputs: dict[str, np.ndarray], field: str) -> np.ndarray | None:
    if field not in inputs or inputs[field] is None or desc.optional_tensor(field) is None:
        return None
    return np.asarray(inputs[field]).reshape(_matrix_shape(desc, field))


def _less_zero(desc: OperatorDesc, inputs: dict[str, np.ndarray], field: str, dtype: type) -> np.ndarray:
    x = np.asarray(inputs[field]).astype(dtype)
    zero = _column(desc, inputs, field[0] + "ZeroPointTensor")
    return x if zero is None else x - zero.astype(dtype)


def reference(desc: OperatorDesc, inputs: dict[str, np.ndarray]) -> np.ndarray:
    name = desc.schema.name
    out = desc.tensor("OutputTensor").data_type.numpy
    if name == TO_FLOAT:
        with np.errstate(all="ignore"):
            a, bm = (
                (_less_zero(desc, inputs, f, np.float32) * _column(desc, inputs, f[0] + "ScaleTensor").astype(np.float32))
                .astype(out)
                .astype(np.float64)
                for f in ("ATensor", "BTensor")
            )
            y = np.matmul(a, bm)
            if inputs.get("BiasTensor") is not None and desc.optional_tensor("BiasTensor") is not None:
                y = y + inputs["BiasTensor"].astype(np.float64)
            return y.astype(np.float32).astype(out)
    exact = np.matmul(_less_zero(desc, inputs, "ATensor", np.int64), _less_zero(desc, inputs, "BTensor", np.int64))
    total = ((exact + 2**31) % 2**32 - 2**31).astype(np.int32)
    if name == INTEGER:
        return total
    with np.errstate(all="ignore"):
        a_s, b_s, o_s = (
            _column(desc, inputs, f).astype(np.float32) for f in ("AScaleTensor", "BScaleTensor", "OutputScaleTensor")
        )
        r = np.rint(total.astype(np.float32) * ((a_s / o_s) * b_s))
        r = np.where(np.isnan(r), np.float32(0), r)
        zero = _column(desc, inputs, "OutputZeroPointTensor")
        if zero is not None:
            r = r + zero.astype(np.float32)
        info = np.iinfo(out)
        return np.clip(r, info.min, info.max).astype(out)


def examples(op: OperatorSchema) -> list[common.Example]:
    """onnx_ops: each type pairing, 2-D per tensor with K = 3 and a batch of 2 per row and column
    with K = 300 (chunked)."""
    out: list[common.Example] = []
    types = common.example_types(op, "ATensor")
    for t in types:
        for u in types if op.name != TO_FLOAT else [t]:
            for batch, k, per in (([], 3, False), ([2], 300, True)):
                out.append(_example(op, t, u, batch, k, per))
    return out


def _example(op: OperatorSchema, a: str, b: str, batch: list[int], k: int, per: bool) -> common.Example:
    m, n = 2, 3
    rank = len(batch) + 2
    ones = [1] * rank
    row = ones[:-2] + [m if per else 1, 1]
    col = ones[:-1] + [n if per else 1]
    floats = op.support[0].tensors["OutputTensor"].types if op.name == TO_FLOAT else (dtypes.FLOAT32,)
    f = floats[0].name
    out_type = {INTEGER: "INT32", TO_FLOAT: f, QUANTIZED: a}[op.name]
    desc: common.Example = {
        "ATensor": common.example_tensor(a, [*batch, m, k]),
        "AZeroPointTensor": common.example_tensor(a, row),
        "BTensor": common.example_tensor(b, [*batch, k, n]),
        "BZeroPointTensor": common.example_tensor(b, col),
        "OutputTensor": common.example_tensor(out_type, [*batch, m, n]),
    }
    if op.name != INTEGER:
        desc |= {"AScaleTensor": common.example_tensor(f, row), "BScaleTensor": common.example_tensor(f, col)}
    if op.name == QUANTIZED:
        desc |= {"OutputScaleTensor": common.example_tensor(f, row), "OutputZeroPointTensor": common.example_tensor(a, row)}
    if op.name == TO_FLOAT:
        desc["BiasTensor"] = common.example_tensor(f, [*batch, m, n])
    return desc


OPERATOR_FAMILY = Family(
    ("MATRIX_MULTIPLY_INTEGER", "MATRIX_MULTIPLY_INTEGER_TO_FLOAT", "QUANTIZED_LINEAR_MATRIX_MULTIPLY"),
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
