"""Matrix cases for SCATTER (SCATTER_ELEMENTS) and SCATTER_ND (dml2onnx/ops/scatter.py): every
data type of the pages' newest tables with every index type, dimension counts 1-8 in turn, random
bit patterns as values (moved bit for bit):

- `in_range`: distinct positions (signed types: some counted from the end);
- `out_of_range`: some indices so far past their dimension that their offset leaves the input
  (they write nothing, as DirectML computed).

No two updates name one position: DirectML's order for duplicates is not defined (README)."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from dml2onnx.cases.common import Case, tensor_of
from dml2onnx.cases.gather import SHAPE, bits
from dml2onnx.core import dtypes
from dml2onnx.core.operator_table import OPERATORS
from dml2onnx.ops import gather

OPS = ("SCATTER", "SCATTER_ND")


def _signed(rng: np.random.Generator, index: dtypes.DataType, v: np.ndarray, dims: np.ndarray) -> np.ndarray:
    return np.where(rng.random(v.shape) < 0.5, v - dims, v) if index.is_signed else v


def _outside(rng: np.random.Generator, index: dtypes.DataType, v: np.ndarray, n: int) -> np.ndarray:
    """A third of the indices past the input whatever the other coordinates (n: its element count)."""
    far = np.where(rng.random(v.shape) < 0.5, -2 * n - 1, 2 * n) if index.is_signed else np.full(v.shape, 2 * n)
    return np.where(rng.random(v.shape) < 0.34, far, v)


def _case(rng: np.random.Generator, op: str, dtype: dtypes.DataType, index: dtypes.DataType, rank: int, outside: bool) -> Case:
    s = SHAPE[:rank]
    n = int(np.prod(s))
    if op == "SCATTER":
        a = (rank - 1) // 2
        q = min(2, s[a])
        shape = tuple(q if i == a else d for i, d in enumerate(s))
        # distinct positions along the axis for every other coordinate
        v = np.argsort(rng.random((*s[:a], s[a], *s[a + 1 :])), axis=a).take(range(q), axis=a)
        v = _signed(rng, index, v, s[a])
        fields = {"Axis": a}
        idx_shape, upd_shape = shape, shape
    else:
        t = min(2, rank)
        p = int(np.prod(s[:t]))
        m = min(3, p) if rank >= 2 else 1
        flat = rng.choice(p, m, replace=False)
        v = np.stack(np.unravel_index(flat, s[:t]), axis=-1)
        v = _signed(rng, index, v, np.array(s[:t]))
        k = (m, t) if rank >= 2 else (t,)
        v = v.reshape(k)
        idx_shape = (1,) * (rank - len(k)) + k
        upd_shape = gather.right_aligned((*k[:-1], *s[t:]), rank)
        fields = {"InputDimensionCount": rank, "IndicesDimensionCount": len(k)}
    if outside:
        v = _outside(rng, index, v, n)
    fields |= {
        "InputTensor": tensor_of(dtype, s),
        "IndicesTensor": tensor_of(index, idx_shape),
        "UpdatesTensor": tensor_of(dtype, upd_shape),
        "OutputTensor": tensor_of(dtype, s),
    }
    inputs = {
        "InputTensor": bits(rng, dtype, s),
        "IndicesTensor": np.asarray(v).reshape(idx_shape).astype(index.numpy),
        "UpdatesTensor": bits(rng, dtype, upd_shape),
    }
    name = "out_of_range" if outside else "in_range"
    return Case(f"{op}-{dtype}-{index}-rank{rank}-{name}", op, fields, inputs)


def cases() -> Iterator[Case]:
    rng = np.random.default_rng(2122)
    for op in OPS:
        table = OPERATORS[op].support[0].tensors
        i = 0
        for dtype in table["InputTensor"].types:
            for index in table["IndicesTensor"].types:
                for outside in (False, True):
                    i += 1
                    yield _case(rng, op, dtype, index, 1 + i % 8, outside)
