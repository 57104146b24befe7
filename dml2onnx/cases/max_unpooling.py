"""Matrix cases for DML_OPERATOR_MAX_UNPOOLING (dml2onnx/ops/max_unpooling.py): every data type of
the page's newest table with both index types (UINT32, UINT64), at its one dimension count (4):

- `pooled`: a 2x2 max pooling undone, indices over the whole output (every batch and channel),
  with the type's extremes (floats: NaN, infinities, -0.0, the largest finite values);
- `out_of_range`: indices past the output (its element count, a few more, 2**31 - 1,
  2**32 - 1) among in-range ones: they write nothing;
- `reshaped`: an output of other batch and channel sizes than the input, and a smaller one.

No two indices name one position: DirectML's result for duplicates is not defined (its writes
race: README). `wide`: UINT64 indices of 2**32 and more, which DirectML reads by their low 32
bits (tests/dml_findings.py)."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from dml2onnx.cases.common import Case, tensor_of, values
from dml2onnx.core import dtypes

OP = "MAX_UNPOOLING"
TYPES = (*dtypes.FLOATS, *dtypes.INTEGERS)
INDEX_TYPES = (dtypes.UINT32, dtypes.UINT64)


def _data(rng: np.random.Generator, dtype: dtypes.DataType, shape: tuple[int, ...]) -> np.ndarray:
    x = values(rng, shape, dtype, "extreme")
    if dtype.is_float:
        flat = x.reshape(-1)
        flat[:4] = [np.nan, np.inf, -np.inf, -0.0]
        x = rng.permutation(flat).reshape(shape)
    return x


def _pooled_indices(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """The indices a 2x2, stride 2 max pooling of an [N, C, 2H, 2W] input gives for [N, C, H, W]."""
    n, c, h, w = shape
    nc, y, x = np.meshgrid(np.arange(n * c), np.arange(h), np.arange(w), indexing="ij")
    dy, dx = rng.integers(0, 2, (2, n * c, h, w))
    return ((nc * 2 * h + 2 * y + dy) * 2 * w + 2 * x + dx).reshape(shape)


def _case(
    name: str, dtype: dtypes.DataType, index: dtypes.DataType, shape: tuple, out: tuple, x: np.ndarray, idx: np.ndarray
) -> Case:
    fields = {
        "InputTensor": tensor_of(dtype, shape),
        "IndicesTensor": tensor_of(index, shape),
        "OutputTensor": tensor_of(dtype, out),
    }
    inputs = {"InputTensor": x.astype(dtype.numpy), "IndicesTensor": np.asarray(idx).astype(index.numpy).reshape(shape)}
    return Case(f"{OP}-{dtype}-{index}-{name}", OP, fields, inputs)


def _unique_with_outside(rng: np.random.Generator, m: int, p: int, outside: list[int]) -> np.ndarray:
    """m indices: the `outside` values and distinct in-range positions, shuffled."""
    inside = rng.choice(p, m - len(outside), replace=False)
    return rng.permutation(np.array([*inside, *outside], dtype=object))


def cases() -> Iterator[Case]:
    rng = np.random.default_rng(92)
    for dtype in TYPES:
        for index in INDEX_TYPES:
            shape = (2, 3, 2, 3)
            yield _case("pooled", dtype, index, shape, (2, 3, 4, 6), _data(rng, dtype, shape), _pooled_indices(rng, shape))
            shape, out = (1, 2, 3, 2), (1, 2, 3, 3)
            outside = [18, 19, 25, 2**31 - 1, 2**32 - 1]
            idx = _unique_with_outside(rng, 12, 18, outside)
            yield _case("out_of_range", dtype, index, shape, out, _data(rng, dtype, shape), idx)
            shape = (1, 1, 2, 3)  # into [2, 3, 2, 2] (other N and C), or [1, 1, 1, 4] (smaller: some outside)
            yield _case("reshaped", dtype, index, shape, (2, 3, 2, 2), _data(rng, dtype, shape), rng.choice(24, 6, replace=False))
            idx = _unique_with_outside(rng, 6, 4, [4, 5])
            yield _case("smaller", dtype, index, shape, (1, 1, 1, 4), _data(rng, dtype, shape), idx)
    for dtype in (dtypes.FLOAT32, dtypes.INT64):
        shape = (1, 1, 2, 2)  # 2**32 + 1 and 2**40 + 3: out of range, but their low 32 bits are not
        idx = [0, 2**32 + 1, 2**40 + 3, 2]
        yield _case("wide", dtype, dtypes.UINT64, shape, (1, 1, 2, 2), _data(rng, dtype, shape), idx)
