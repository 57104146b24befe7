"""Matrix cases for GATHER, GATHER_ELEMENTS, GATHER_ND and GATHER_ND1 (dml2onnx/ops/gather.py):
every data type of the pages' newest tables with every index type (INT64, INT32, UINT64, UINT32),
dimension counts 1-8 in turn, random bit patterns as values (NaN payloads, -0, 64-bit integers
past 2**53: the operators move them bit for bit):

- `in_range`: indices within their dimensions (signed types: negative ones too, from the end);
- `out_of_range`: indices up to twice past their dimension either way, which DirectML reads at
  the row-major offset of the coordinates, or at the input's last element outside the input
  (README: GATHER);
- `owned-out_of_range` (GATHER, one per data type and index type): an embedding lookup (nothing
  before Axis) from an input flagged OWNED_BY_DML, a constant, out of range.

64-bit indices of 2**31 and more stay out: DirectML's 32-bit address arithmetic reads their low
32 bits (tests/dml_findings.py)."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from dml2onnx.cases.common import Case, tensor_of
from dml2onnx.core import dtypes
from dml2onnx.core.operator_table import OPERATORS
from dml2onnx.ops import gather

OPS = ("GATHER", "GATHER_ELEMENTS", "GATHER_ND", "GATHER_ND1")
SHAPE = (3, 2, 4, 2, 3, 2, 2, 2)


def bits(rng: np.random.Generator, dtype: dtypes.DataType, shape: tuple[int, ...]) -> np.ndarray:
    """Random bit patterns of the type (floats: NaN payloads, infinities, -0 among them)."""
    n = int(np.prod(shape))
    x = rng.integers(0, 256, n * dtype.size, dtype=np.uint8).view(dtype.numpy).reshape(shape).copy()
    if dtype.is_float and n >= 2:
        flat = x.reshape(-1)
        flat[:2] = [-0.0, np.inf]
    return x


def index_values(rng: np.random.Generator, index: dtypes.DataType, dims: np.ndarray, outside: bool) -> np.ndarray:
    """Indices for dimensions `dims` (broadcast): in range, from the end for signed types, or
    up to twice past either end."""
    dims = np.asarray(dims, dtype=np.int64)
    if outside:
        low = -2 * dims - 1 if index.is_signed else np.zeros_like(dims)
        v = rng.integers(low, 2 * dims + 2)
    else:
        v = rng.integers(0, dims)
        if index.is_signed:
            v = np.where(rng.random(v.shape) < 0.5, v - dims, v)
    return v.astype(index.numpy)


def _fields(op: str, dtype: dtypes.DataType, index: dtypes.DataType, rank: int) -> dict | None:
    s = SHAPE[:rank]
    x = tensor_of(dtype, s)
    if op == "GATHER":
        a = rank // 2
        q = (3,) if rank < 3 else (2, 2)
        xs = s if rank < 3 else (1, *s[1:])  # a leading 1 leaves room for two index dimensions
        idx = (1,) * (rank - len(q)) + q
        out = gather.right_aligned((*xs[:a], *q, *xs[a + 1 :]), rank)
        if out is None:
            return None
        return {
            "InputTensor": tensor_of(dtype, xs),
            "IndicesTensor": tensor_of(index, idx),
            "OutputTensor": tensor_of(dtype, out),
            "Axis": a,
            "IndexDimensions": len(q),
        }
    if op == "GATHER_ELEMENTS":
        a = (rank - 1) // 2
        idx = tuple(3 if i == a else d for i, d in enumerate(s))
        return {"InputTensor": x, "IndicesTensor": tensor_of(index, idx), "OutputTensor": tensor_of(dtype, idx), "Axis": a}
    batch = 1 if op == "GATHER_ND1" and rank >= 3 else 0
    idc = min(rank, batch + 2)
    t = min(2, rank - batch)
    k = (*s[:batch], *((3,) if idc - batch == 2 else ()), t)
    idx = (1,) * (rank - len(k)) + k
    out = gather.right_aligned((*k[:-1], *s[batch + t :]), rank)
    if out is None:
        return None
    fields = {"InputTensor": x, "IndicesTensor": tensor_of(index, idx), "OutputTensor": tensor_of(dtype, out)}
    fields |= {"InputDimensionCount": rank, "IndicesDimensionCount": idc}
    if op == "GATHER_ND1":
        fields["BatchDimensionCount"] = batch
    return fields


def _dims(op: str, fields: dict) -> np.ndarray:
    """Each index's dimension, at the indices' Sizes."""
    xs, idx = fields["InputTensor"]["Sizes"], fields["IndicesTensor"]["Sizes"]
    if op in ("GATHER", "GATHER_ELEMENTS", "SCATTER"):
        return np.full(idx, xs[fields["Axis"]])
    batch = fields.get("BatchDimensionCount", 0)
    data = xs[len(xs) - fields["InputDimensionCount"] :]
    return np.broadcast_to(np.array(data[batch : batch + idx[-1]]), idx)


def cases() -> Iterator[Case]:
    rng = np.random.default_rng(2121)
    for op in OPS:
        table = OPERATORS[op].support[0].tensors
        i = 0
        for dtype in table["InputTensor"].types:
            for index in table["IndicesTensor"].types:
                for outside in (False, True):
                    i += 1
                    rank = 1 + i % 8
                    fields = _fields(op, dtype, index, rank)
                    if fields is None:
                        continue
                    x = bits(rng, dtype, tuple(fields["InputTensor"]["Sizes"]))
                    idx = index_values(rng, index, _dims(op, fields), outside)
                    name = "out_of_range" if outside else "in_range"
                    yield Case(f"{op}-{dtype}-{index}-rank{rank}-{name}", op, fields, {"InputTensor": x, "IndicesTensor": idx})
                if op == "GATHER":  # an embedding lookup from a constant (gather_masked.py's padded table)
                    fields = _fields(op, dtype, index, 3)
                    assert fields is not None
                    fields["InputTensor"]["Flags"] = "DML_TENSOR_FLAG_OWNED_BY_DML"
                    x = bits(rng, dtype, tuple(fields["InputTensor"]["Sizes"]))
                    idx = index_values(rng, index, _dims(op, fields), True)
                    name = f"{op}-{dtype}-{index}-rank3-owned-out_of_range"
                    yield Case(name, op, fields, {"InputTensor": x, "IndicesTensor": idx})
