"""Matrix cases for DML_OPERATOR_REVERSE_SUBSEQUENCES (dml2onnx/ops/reverse_subsequences.py):
every data type of the page's newest table with both length types (UINT32, UINT64), 1 to 8
dimensions with the leading, middle and trailing axis, the types' extremes (integers beyond
2**53; floats: NaN, infinities, -0.0) moved bit for bit; lengths 0, 1, within the axis, the
axis size n, past it (n + 1, 2n - 1, 2n, 2**31, 2**32 - 1: DirectML's clamped source index).
`wide`: UINT64 lengths of 2**32 and more, which DirectML reads by their low 32 bits
(tests/dml_findings.py)."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from dml2onnx.cases.common import SIZES, Case, tensor_of
from dml2onnx.cases.space_depth import _data
from dml2onnx.core import dtypes

OP = "REVERSE_SUBSEQUENCES"
TYPES = (dtypes.FLOAT64, *dtypes.FLOATS, *dtypes.INTEGERS)
LENGTH_TYPES = (dtypes.UINT32, dtypes.UINT64)


def _lengths(rng: np.random.Generator, n: int, shape: tuple[int, ...]) -> np.ndarray:
    pool = [0, 1, n, n + 1, 2 * n - 1, 2 * n, 2**31, 2**32 - 1, *range(2, n)]
    return rng.choice(np.array(pool, dtype=np.int64), size=shape)


def _case(
    rng: np.random.Generator,
    dtype: dtypes.DataType,
    lt: dtypes.DataType,
    shape: tuple[int, ...],
    axis: int,
    tag: str,
    lengths: np.ndarray | None = None,
) -> Case:
    ls = tuple(1 if i == axis else s for i, s in enumerate(shape))
    if lengths is None:
        lengths = _lengths(rng, shape[axis], ls)
    fields = {
        "InputTensor": tensor_of(dtype, shape),
        "SequenceLengthsTensor": tensor_of(lt, ls),
        "OutputTensor": tensor_of(dtype, shape),
    }
    inputs = {"InputTensor": _data(rng, dtype, shape), "SequenceLengthsTensor": np.asarray(lengths).astype(lt.numpy).reshape(ls)}
    return Case(f"{OP}-{dtype}-{lt}-{tag}-axis{axis}", OP, fields | {"Axis": axis}, inputs)


def cases() -> Iterator[Case]:
    rng = np.random.default_rng(123)
    for dtype in TYPES:
        for lt in LENGTH_TYPES:
            yield _case(rng, dtype, lt, (2, 3, 6, 5), 2, "4d")
    for dtype in (dtypes.FLOAT32, dtypes.UINT64, dtypes.INT8):
        for rank in range(1, 9):
            shape = SIZES[:rank]
            for axis in sorted({0, rank // 2, rank - 1}):
                yield _case(rng, dtype, LENGTH_TYPES[(rank + axis) % 2], shape, axis, f"rank{rank}")
    for dtype in (dtypes.FLOAT32, dtypes.INT64):  # 2**32 + 2 and 2**40 + 1: past the axis, their low 32 bits are not
        yield _case(rng, dtype, dtypes.UINT64, (2, 5), 1, "wide", np.array([2**32 + 2, 2**40 + 1], dtype=np.uint64))
