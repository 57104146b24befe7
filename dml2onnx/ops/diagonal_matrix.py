"""DML_OPERATOR_DIAGONAL_MATRIX and DML_OPERATOR_DIAGONAL_MATRIX1: generators (like fill_value.py)
over the last two dimensions of OutputTensor (2 to 4 of them; the leading ones are a batch of
identical matrices). With topX = x - y (column minus row) of each element:

- DIAGONAL_MATRIX: Value where topX == Offset, 0 elsewhere;
- DIAGONAL_MATRIX1: Value where (DiagonalFillEnd >= DiagonalFillBegin) ^ (topX >=
  DiagonalFillBegin) ^ (topX < DiagonalFillEnd) (the page's pseudocode: topX in [Begin, End), or
  outside [End, Begin) when Begin > End; nothing when Begin == End), else the optional
  InputTensor's element (the same DataType and Sizes as OutputTensor), else 0.

What the pages leave open, as DirectML's own API computed it (README: DIAGONAL_MATRIX):
- DIAGONAL_MATRIX's FLOAT Value is converted once on the CPU, as C on x64 converts a float:
  floats round to the nearest (FLOAT16 overflow is infinity, FLOAT64 the FLOAT32 value
  exactly); INT32, INT16, INT8, UINT16 and UINT8 take (INT32)Value, truncated toward zero with
  NaN and out-of-range values giving -2**31, then its low bits (300 is UINT8 44, -1 is 255,
  1e10 is 0); UINT32 and INT64 take (INT64)Value the same way (-1 is UINT32 4294967295, 5e9 is
  705032704); UINT64 takes values in [2**63, 2**64) exactly and otherwise the (INT64)Value's bits
  (-10.6 is 2**64 - 10, NaN and 1e20 are 2**63);
- offsets beyond the matrix, and the INT extremes, fill nothing (no wrap-around);
- DIAGONAL_MATRIX1's Value (ValueDataType, which must be the output's) is moved bit for bit.

The lowering ("elementwise"): per row r, the column bounds r + Begin and r + End as small
constants, compared with the column index (GreaterOrEqual, Less, or Equal for one diagonal),
and Where(mask, Value, InputTensor or 0), expanded over the batch; bounds no column reaches
are decided at lowering time (a fill of Value or none). The DirectML EP's own nodes, for the
`dml` target (DML_PREFERENCE): EyeLike(k=Offset) is its DIAGONAL_MATRIX with Value 1
(DmlOperatorEyeLike.cpp), Trilu its DIAGONAL_MATRIX1 with an InputTensor, Value 0 and Begin
INT_MIN (upper, k = End) or End INT_MAX (lower, k = Begin - 1) (DmlOperatorTrilu.cpp); on the
other targets the types an EP lacks for them go through a wider type and back.
"""

from __future__ import annotations

import math

import numpy as np

from dml2onnx.core import dtypes
from dml2onnx.core.desc import OperatorDesc
from dml2onnx.core.errors import ModelError
from dml2onnx.core.schema import OperatorSchema
from dml2onnx.graph.builder import GraphBuilder
from dml2onnx.ops import common
from dml2onnx.ops.element_wise_if import gathers, select
from dml2onnx.ops.family import Family

CANDIDATES = ("elementwise", "eye_like", "trilu")  # choices.py
DML_PREFERENCE = ("eye_like", "trilu")  # the nodes the DirectML EP maps back onto these operators
ROWS = ("DIAGONAL_MATRIX", "DIAGONAL_MATRIX1")
INT_MIN, INT_MAX = -(2**31), 2**31 - 1

EYE_LIKE_TYPES = (dtypes.FLOAT32, dtypes.FLOAT64, dtypes.INT32, dtypes.INT64, dtypes.UINT64)  # CPU and CUDA EPs
TRILU_TYPES = (dtypes.FLOAT32, dtypes.FLOAT16, dtypes.FLOAT64, dtypes.INT32, dtypes.INT64)  # the CPU EP's Trilu


def validate(desc: OperatorDesc) -> None:
    if desc.schema.name == "DIAGONAL_MATRIX":
        return
    value_type, out = desc["ValueDataType"], desc.tensor("OutputTensor").data_type
    if value_type != out.name:
        raise ModelError(desc.at("ValueDataType"), f"must be OutputTensor's DataType ({out}), not {value_type}")
    if desc.optional_tensor("InputTensor") is not None:  # DirectML refuses others (E_INVALIDARG, measured)
        common.check_same_type(desc, "InputTensor", "OutputTensor")
        common.check_same_sizes(desc, "InputTensor", "OutputTensor")


# -- the desc's values ---------------------------------------------------------------------------


def _truncated(v: float, bits: int) -> int:
    """(INT<bits>)v as x64 converts it (cvttss2si): toward zero; NaN or out of range: -2**(bits-1)."""
    if math.isfinite(v) and -(2 ** (bits - 1)) <= math.trunc(v) < 2 ** (bits - 1):
        return math.trunc(v)
    return -(2 ** (bits - 1))


def converted_value(value: float, dtype: dtypes.DataType) -> np.generic:
    """DIAGONAL_MATRIX's FLOAT Value in the output's type, as DirectML converts it (measured)."""
    v = np.float32(value)
    if dtype.is_float:
        with np.errstate(over="ignore"):  # beyond FLOAT16: infinity
            return dtype.numpy.type(v)
    f = float(v)
    if dtype == dtypes.UINT64 and 2.0**63 <= f < 2.0**64:
        n = int(f)
    else:
        n = _truncated(f, 64 if dtype in (dtypes.UINT32, dtypes.INT64, dtypes.UINT64) else 32)
    return dtype.numpy.type(common.wrap_int(n, dtype.numpy))


def value(desc: OperatorDesc) -> np.generic:
    """The value written on the diagonal, in the output's type."""
    out = desc.tensor("OutputTensor").data_type
    if desc.schema.name == "DIAGONAL_MATRIX":
        return converted_value(desc["Value"], out)
    return out.numpy.type(desc["Value"])


def fill_range(desc: OperatorDesc) -> tuple[int, int]:
    """(Begin, End) in DIAGONAL_MATRIX1's terms (DIAGONAL_MATRIX is Offset, Offset + 1)."""
    if desc.schema.name == "DIAGONAL_MATRIX":
        return desc["Offset"], desc["Offset"] + 1
    return desc["DiagonalFillBegin"], desc["DiagonalFillEnd"]


def _input(desc: OperatorDesc) -> bool:
    return desc.schema.name == "DIAGONAL_MATRIX1" and desc.optional_tensor("InputTensor") is not None


def _is(v: np.generic, n: int) -> bool:
    """Whether v has exactly the bits of n in its type (-0.0 is not 0)."""
    return v.tobytes() == np.asarray(n, dtype=v.dtype).tobytes()


def _trilu(desc: OperatorDesc) -> tuple[int, int] | None:
    """(upper, k) of the Trilu that computes this DIAGONAL_MATRIX1, where one does."""
    if not _input(desc) or not _is(value(desc), 0):
        return None
    begin, end = fill_range(desc)
    if begin == INT_MIN:  # Value (0) where topX < End: keeps topX >= End
        return 1, end
    if end == INT_MAX:  # Value where Begin <= topX (topX never reaches INT_MAX): keeps topX <= Begin - 1
        return 0, begin - 1
    return None


def applies(desc: OperatorDesc, candidate: str, opset: int) -> bool:
    if candidate == "eye_like":  # one diagonal of ones on zeros
        begin, end = fill_range(desc)
        return not _input(desc) and end == begin + 1 and _is(value(desc), 1)
    if candidate == "trilu":
        return _trilu(desc) is not None
    return True


# -- lowering --------------------------------------------------------------------------------------


def _carrier(dtype: dtypes.DataType, takes: tuple[dtypes.DataType, ...]) -> dtypes.DataType:
    """The type an op missing on some EP for `dtype` runs in, exactly: FLOAT16 (1 and 0 only) in
    FLOAT32, 8/16-bit integers in INT32, UINT32 and UINT64 in INT64 (UINT64 modulo 2**64)."""
    if dtype in takes:
        return dtype
    if dtype.is_float:
        return dtypes.FLOAT32
    return dtypes.INT32 if dtype.size < 4 else dtypes.INT64


def _column_bounds(b: GraphBuilder, h: int, shift: int, index: np.dtype, step: str) -> str:
    """The [h, 1] constants r + shift (column bounds per row r)."""
    return b.const((np.arange(h, dtype=np.int64).reshape(h, 1) + shift).astype(index), step)


def _decided(h: int, w: int, begin: int, end: int) -> tuple[bool | None, bool | None, bool | None]:
    """(the whole mask, topX >= Begin, topX < End), each True/False where every element of an
    [h, w] matrix agrees (topX spans [1 - h, w - 1]), else None."""
    lo, hi = -(h - 1), w - 1
    from_begin = True if begin <= lo else False if begin > hi else None
    before_end = True if end > hi else False if end <= lo else None
    decided = (from_begin, before_end)
    whole: bool | None = None
    if end >= begin:  # inside [Begin, End)
        whole = False if False in decided else True if decided == (True, True) else None
    else:  # outside [End, Begin)
        whole = True if True in decided else False if decided == (False, False) else None
    return whole, from_begin, before_end


def _mask(b: GraphBuilder, h: int, w: int, begin: int, end: int) -> str:
    """Where Value goes over one [h, w] matrix, as a BOOL [h, w] (not decided at lowering time)."""
    _, from_begin, before_end = _decided(h, w, begin, end)
    # the bounds needed lie in [2 - h, h + w - 2]: INT32 unless the matrix is huge
    index = np.dtype(np.int32 if h + w <= INT_MAX else np.int64)
    columns = b.const(np.arange(w, dtype=index).reshape(1, w), "columns")
    if end == begin + 1 and (from_begin, before_end) == (None, None):
        bound = _column_bounds(b, h, begin, index, "diagonal_columns")
        return b.node("Equal", [columns, bound], "on_diagonal", "x == y + Offset: topX on the diagonal")
    tests = []
    if from_begin is None:
        bound = _column_bounds(b, h, begin, index, "begin_columns")
        tests.append(b.node("GreaterOrEqual", [columns, bound], "from_begin", "x >= y + Begin: topX >= Begin"))
    if before_end is None:
        bound = _column_bounds(b, h, end, index, "end_columns")
        tests.append(b.node("Less", [columns, bound], "before_end", "x < y + End: topX < End"))
    if len(tests) == 1:
        return tests[0]
    op = "And" if end >= begin else "Or"
    return b.node(op, tests, "fill", "topX in [Begin, End)" if op == "And" else "topX outside [End, Begin)")


def _expanded(b: GraphBuilder, y: str, shape: tuple[int, ...], sizes: tuple[int, ...]) -> str:
    if shape == sizes:
        return y
    return b.node("Expand", [y, b.i64(list(sizes), "batch_sizes")], "batch", "the same matrix for every batch element")


def _lower_eye_like(desc: OperatorDesc, b: GraphBuilder) -> str:
    sizes, dtype = desc.tensor("OutputTensor").sizes, desc.tensor("OutputTensor").data_type
    carrier = dtype if b.target.dml_nodes else _carrier(dtype, EYE_LIKE_TYPES)
    shape = b.filled(sizes[-2:], 0, carrier.numpy, "matrix_shape", "the matrix's shape, for EyeLike")
    k = fill_range(desc)[0]
    y = b.node("EyeLike", [shape], "eye_like", f"ones where x - y == {k}: DIAGONAL_MATRIX on the DirectML EP", k=k)
    if carrier != dtype:
        y = b.cast(y, dtype, f"as_{dtype.name.lower()}", f"1 and 0 as {dtype}")
    return _expanded(b, y, sizes[-2:], sizes)


def _lower_trilu(desc: OperatorDesc, b: GraphBuilder, x: str) -> str:
    dtype = desc.tensor("OutputTensor").data_type
    upper, k = _trilu(desc) or (0, 0)
    carrier = dtype if b.target.dml_nodes else _carrier(dtype, TRILU_TYPES)
    if carrier != dtype:
        x = b.cast(x, carrier, f"in_{carrier.name.lower()}", f"exactly, in {carrier}")
    kept = "x - y >= k" if upper else "x - y <= k"
    y = b.node(
        "Trilu", [x, b.i64(k, "k")], "trilu", f"the input where {kept}, else 0: DIAGONAL_MATRIX1 on the DirectML EP", upper=upper
    )
    return y if carrier == dtype else b.cast(y, dtype, f"as_{dtype.name.lower()}", f"back to {dtype}: the same value")


def lower(desc: OperatorDesc, b: GraphBuilder, inputs: dict[str, str]) -> str:
    out = desc.tensor("OutputTensor")
    sizes, dtype = out.sizes, out.data_type
    if b.variant == "eye_like":
        return _lower_eye_like(desc, b)
    if b.variant == "trilu":
        return _lower_trilu(desc, b, inputs["InputTensor"])
    v, (begin, end), (h, w) = value(desc), fill_range(desc), sizes[-2:]
    other = inputs["InputTensor"] if _input(desc) else None
    whole = _decided(h, w, begin, end)[0]
    if whole is True:
        return b.filled(sizes, v, dtype.numpy, "fill", "Value everywhere")
    if whole is False:
        return other if other is not None else b.filled(sizes, 0, dtype.numpy, "zeros", "no diagonal: 0 everywhere")
    mask = _mask(b, h, w, begin, end)
    if other is None:  # a generator: ONNX Runtime folds the graph into a constant
        other = b.scalar(0, dtype, "zero")
        y = select(b, mask, b.scalar(v, dtype, "value"), other, dtype, sizes, constant=True)
        return y if gathers(b, dtype, True) else _expanded(b, y, (h, w), sizes)
    return select(b, mask, b.scalar(v, dtype, "value"), other, dtype, sizes)


def reference(desc: OperatorDesc, inputs: dict[str, np.ndarray]) -> np.ndarray:
    out = desc.tensor("OutputTensor")
    sizes, t = out.sizes, out.data_type.numpy
    begin, end = fill_range(desc)
    top_x = np.arange(sizes[-1], dtype=np.int64)[None, :] - np.arange(sizes[-2], dtype=np.int64)[:, None]
    fill = (end >= begin) ^ (top_x >= begin) ^ (top_x < end)
    other = inputs["InputTensor"] if _input(desc) else np.zeros(sizes, t)
    y = np.where(fill, np.asarray(value(desc), dtype=t), other)
    return np.broadcast_to(y, sizes).astype(t)


def examples(op: OperatorSchema) -> list[common.Example]:
    """onnx_ops: each output type, with a Value of 1 (EyeLike applies) and of 2; DIAGONAL_MATRIX1
    also with an InputTensor, Value 0 and Begin INT_MIN (Trilu applies)."""
    out: list[common.Example] = []
    for t in common.example_types(op, "OutputTensor"):
        tensor = common.example_tensor(t, [2, 3, 4])
        if op.name == "DIAGONAL_MATRIX":
            out += [{"OutputTensor": tensor, "Offset": 1, "Value": v} for v in (1.0, 2.0)]
            continue
        fill = {"OutputTensor": tensor, "ValueDataType": t, "DiagonalFillBegin": 0, "DiagonalFillEnd": 1}
        out += [fill | {"Value": 1}, fill | {"Value": 2}]
        out.append(fill | {"InputTensor": tensor, "Value": 0, "DiagonalFillBegin": INT_MIN})
    return out


OPERATOR_FAMILY = Family(
    ("DIAGONAL_MATRIX", "DIAGONAL_MATRIX1"),
    validate,
    lower,
    reference,
    CANDIDATES,
    applies=applies,
    dml_preference=DML_PREFERENCE,
    examples=examples,
)
