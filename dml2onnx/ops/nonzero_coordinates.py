"""DML_OPERATOR_NONZERO_COORDINATES: the count of the input's non-zero elements (OutputCountTensor,
UINT32, every size 1) and their coordinates (OutputCoordinatesTensor, UINT32, Sizes {1, ..., 1,
M, N}: M the input's element count, N from the input's effective rank up to its DimensionCount),
one row per non-zero element in ascending element order. -0 is zero; NaN is not.

What the page leaves open, as DirectML's own API computed it (README: NONZERO_COORDINATES):
- N larger than the effective rank writes the last N coordinates (the leading ones 0); N below
  the effective rank, M other than the element count, and sizes other than 1 before M are
  refused (E_INVALIDARG); OutputCoordinatesTensor's DimensionCount need not be the input's;
- the rows past the count are left unwritten (a buffer filled with 0xCD keeps 0xCD there): the
  page calls them undefined. dml2onnx writes zeros there (a graph output has no prior
  contents), and the comparisons with DirectML (tolerances.compare_outputs) look only at the
  rows before the count.

The lowering ("scatter", static shapes): a non-zero flag per element (Equal to 0, small integer
types as INT32 first), its inclusive running count (CumSum), and a permutation of the rows: the
i-th element goes to row count_i - 1 when non-zero, else to row count + (i - count_i) (past the
non-zero ones). ScatterND writes each element's coordinates (index // stride % size, times its
flag: zeros for the zero elements) to its row: no row written twice.
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
from dml2onnx.ops.family import Family

CANDIDATES = ("scatter",)  # choices.py

# Equal's types on the CUDA EP (and the CPU EP's) include INT32 but not the 8 and 16-bit integers.
_EQUAL_TYPES = (dtypes.FLOAT32, dtypes.FLOAT16, dtypes.INT32, dtypes.UINT32)


def effective_rank(sizes: tuple[int, ...]) -> int:
    """The DimensionCount without the leading sizes of 1."""
    lead = next((i for i, s in enumerate(sizes) if s != 1), len(sizes))
    return len(sizes) - lead


def validate(desc: OperatorDesc) -> None:
    x = desc.tensor("InputTensor")
    count = desc.tensor("OutputCountTensor")
    if any(s != 1 for s in count.sizes):
        raise ModelError(desc.at("OutputCountTensor", "Sizes"), f"must all be 1, got {list(count.sizes)}")
    coords = desc.tensor("OutputCoordinatesTensor")
    *lead, m, n = coords.sizes
    if any(s != 1 for s in lead):
        raise ModelError(desc.at("OutputCoordinatesTensor", "Sizes"), f"must be 1 before the last two, got {list(coords.sizes)}")
    if m != x.element_count:
        raise ModelError(
            desc.at("OutputCoordinatesTensor", "Sizes", coords.rank - 2),
            f"must be InputTensor's element count ({x.element_count}), got {m}",
        )
    low = effective_rank(x.sizes)
    if not low <= n <= x.rank:
        raise ModelError(
            desc.at("OutputCoordinatesTensor", "Sizes", coords.rank - 1),
            f"must be from InputTensor's effective rank ({low}) to its DimensionCount ({x.rank}), got {n}",
        )


def lower(desc: OperatorDesc, b: GraphBuilder, inputs: dict[str, str]) -> dict[str, str]:
    t = desc.tensor("InputTensor")
    x = inputs["InputTensor"]
    count_t, coords_t = desc.tensor("OutputCountTensor"), desc.tensor("OutputCoordinatesTensor")
    e, n = t.element_count, coords_t.sizes[-1]
    flat = b.reshape(x, [e], "flat", "the elements in order")
    dtype = t.data_type
    if dtype not in _EQUAL_TYPES:
        flat = b.cast(flat, dtypes.INT32, "as_int32", f"{dtype} values are exact in INT32 (Equal's types)")
        dtype = dtypes.INT32
    zero = b.node("Equal", [flat, b.scalar(0, dtype, "zero")], "is_zero", "0 and -0 (NaN is not)")
    nonzero = b.node("Not", [zero], "nonzero", "non-zero")
    flag = b.cast(nonzero, dtypes.INT64, "flag", "1 where non-zero")
    running = b.node("CumSum", [flag, b.i64(0, "axis")], "running", "non-zero elements up to each one")
    total = b.reduce("ReduceSum", flag, [0], "total", "the count", keepdims=False)
    count = b.reshape(b.cast(total, dtypes.UINT32, "count_u32", "as UINT32"), count_t.sizes, "count", "the count's sizes")
    index = b.i64(np.arange(e), "elements")
    past = b.node(
        "Add",
        [total, b.node("Sub", [index, running], "zeros_before", "zero elements before this one")],
        "past",
        "a row past the count",
    )
    row = b.node(
        "Where",
        [nonzero, b.node("Sub", [running, b.scalar(1, dtypes.INT64, "one")], "own_row", "its row"), past],
        "row",
        "a permutation of the rows",
    )
    sizes = t.sizes[t.rank - n :]
    strides = [math.prod(sizes[d + 1 :]) for d in range(n)]
    stride = b.i64(np.array(strides).reshape(1, n), "strides")
    size = b.i64(np.array(sizes).reshape(1, n), "sizes")
    column = b.reshape(index, [e, 1], "element_column", "one element per row")
    quotient = b.node("Div", [column, stride], "quotient", "index // stride")
    coordinate = b.remainder(quotient, size, "coordinate", "(index // stride) % size: the last N coordinates")
    written = b.node(
        "Mul", [coordinate, b.reshape(flag, [e, 1], "flag_column", "the flag per row")], "written", "zeros for the zero elements"
    )
    table = b.filled([e, n], 0, np.int64, "blank", "the rows before the scatter")
    rows = b.reshape(row, [e, 1], "rows", "ScatterND's indices")
    coords = b.node("ScatterND", [table, rows, written], "scatter", "each element's coordinates to its row")
    coords = b.reshape(
        b.cast(coords, dtypes.UINT32, "coords_u32", "as UINT32"), coords_t.sizes, "coordinates", "the coordinates' sizes"
    )
    return {"OutputCountTensor": count, "OutputCoordinatesTensor": coords}


def reference(desc: OperatorDesc, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The page: the non-zero elements' last N coordinates in ascending element order, then zeros
    (dml2onnx's rows past the count); -0 is zero, NaN is not."""
    x = np.asarray(inputs["InputTensor"])
    count_t, coords_t = desc.tensor("OutputCountTensor"), desc.tensor("OutputCoordinatesTensor")
    n = coords_t.sizes[-1]
    found = np.argwhere(x != 0)[:, x.ndim - n :]
    coords = np.zeros((x.size, n), np.uint32)
    coords[: len(found)] = found
    count = np.full(count_t.sizes, len(found), np.uint32)
    return {"OutputCountTensor": count, "OutputCoordinatesTensor": coords.reshape(coords_t.sizes)}


def written_rows(desc: OperatorDesc, count: np.ndarray, coords: np.ndarray) -> np.ndarray:
    """The rows of `coords` the page defines: those before the count."""
    n = desc.tensor("OutputCoordinatesTensor").sizes[-1]
    return coords.reshape(-1, n)[: int(np.asarray(count).ravel()[0])]


def examples(op: OperatorSchema) -> list[common.Example]:
    """onnx_ops: each input type, a 3 x 4 input, N = 2."""
    return [
        {
            "InputTensor": common.example_tensor(t, [3, 4]),
            "OutputCountTensor": common.example_tensor("UINT32", [1]),
            "OutputCoordinatesTensor": common.example_tensor("UINT32", [12, 2]),
        }
        for t in common.example_types(op, "InputTensor")
    ]


OPERATOR_FAMILY = Family(("NONZERO_COORDINATES",), validate, lower, reference, CANDIDATES, examples=examples)
