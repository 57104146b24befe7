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
Every node runs on the CPU, CUDA and DirectML EPs in those types. ONNX MatMulInteger would take
one node, but the CUDA EP has it for INT8 x INT8 only and the CPU EP only with a per-tensor A zero
point. "native" (DML_ONLY, preferred on the `dml` target): MatMulInteger and QLinearMatMul, which
the DirectML EP turns back into MATRIX_MULTIPLY_INTEGER and QUANTIZED_LINEAR_MATRIX_MULTIPLY
(DmlOperatorMatMulInteger.cpp, DmlOperatorQLinearMatMul.cpp: every tensor passed as it is, right
aligned); QLinearMatMul wants every zero point, an absent one is zeros. TO_FLOAT's node there is
com.microsoft MatMulIntegerToFloat, a domain the graphs do not import: the portable graph.
"""

from __future__ import annotations

import math

import numpy as np

from .. import dml_ep, dtypes
from ..builder import GraphBuilder
from ..desc import OperatorDesc
from ..errors import ModelError
from ..schema import OperatorSchema
from ..targets import DML_NODE_DOC
from . import common

INTEGER, TO_FLOAT, QUANTIZED = "MATRIX_MULTIPLY_INTEGER", "MATRIX_MULTIPLY_INTEGER_TO_FLOAT", "QUANTIZED_LINEAR_MATRIX_MULTIPLY"
CANDIDATES = ("float32_chunks", "native")  # choices.py
DML_ONLY = ("native",)  # MatMulInteger / QLinearMatMul: this operator itself on the DirectML EP
DML_PREFERENCE = ("native",)
NATIVE = {INTEGER: "MatMulInteger", QUANTIZED: "QLinearMatMul"}  # DmlOperatorMatMulInteger.cpp, ...QLinearMatMul.cpp
F32, I32 = dtypes.FLOAT32, dtypes.INT32
CHUNK = 256  # products of |x| <= 255 each: 256 of them sum below 2**24, exact in FLOAT32

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


def applies(desc: OperatorDesc, candidate: str, opset: int) -> bool:
    """ "native" where the DirectML EP registers the ONNX node at this opset (TO_FLOAT's node,
    com.microsoft MatMulIntegerToFloat, is in a domain the graphs do not import)."""
    if candidate != "native":
        return True
    op = NATIVE.get(desc.schema.name)
    types = {f"T{i + 1}": desc.tensor(n).data_type.name for i, n in enumerate(("ATensor", "BTensor", "OutputTensor"))}
    return op is not None and dml_ep.takes(op, opset, **types)


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
    """lowered_ops: each type pairing, 2-D per tensor with K = 3 and a batch of 2 per row and column
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
