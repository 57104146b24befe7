"""Matrix cases for DML_OPERATOR_NONZERO_COORDINATES (dml2onnx/ops/nonzero_coordinates.py): every
data type of the page's newest table, 1 to 8 dimensions, about half zeros (-0 among them for
floats; NaN, infinities and subnormals are non-zero), all zeros, none, and every N from the
effective rank to the DimensionCount."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from dml2onnx.cases.common import SIZES, Case, tensor_of
from dml2onnx.core import dtypes

TYPES = (dtypes.FLOAT32, dtypes.FLOAT16, dtypes.INT32, dtypes.INT16, dtypes.INT8, dtypes.UINT32, dtypes.UINT16, dtypes.UINT8)


def _case(rng: np.random.Generator, dtype: dtypes.DataType, shape: tuple[int, ...], n: int, tag: str, fill: str = "half") -> Case:
    count = int(np.prod(shape))
    fields = {
        "InputTensor": tensor_of(dtype, shape),
        "OutputCountTensor": tensor_of(dtypes.UINT32, (1,)),
        "OutputCoordinatesTensor": tensor_of(dtypes.UINT32, (count, n)),
    }
    if dtype.is_float:
        pool = np.array([1.0, -2.0, np.nan, np.inf, 2.0**-24 if dtype == dtypes.FLOAT16 else 1e-45], dtype.numpy)
        zeros = np.array([0.0, -0.0], dtype.numpy)
    else:
        info = np.iinfo(dtype.numpy)
        pool, zeros = np.array([1, info.max, info.min or 2], dtype.numpy), np.zeros(1, dtype.numpy)
    x = rng.choice(pool, size=shape)
    if fill != "none":
        where = rng.random(shape) < 0.5 if fill == "half" else np.ones(shape, bool)
        x = np.where(where, rng.choice(zeros, size=shape), x)
    return Case(f"NONZERO_COORDINATES-{dtype}-{tag}-N{n}-{fill}", "NONZERO_COORDINATES", fields, {"InputTensor": x})


def cases() -> Iterator[Case]:
    rng = np.random.default_rng(134)
    for dtype in TYPES:
        for fill in ("half", "none", "all"):
            yield _case(rng, dtype, (2, 3, 4), 3, "2x3x4", fill)
        if dtype.is_float:
            yield _case(rng, dtype, (1, 1, 5, 4), 2, "1x1x5x4")
    for n in (2, 3, 4):
        yield _case(rng, dtypes.FLOAT32, (1, 1, 5, 4), n, "1x1x5x4")
    for rank in range(1, 9):
        yield _case(rng, dtypes.FLOAT32, SIZES[:rank], rank, f"rank{rank}")
        yield _case(rng, dtypes.UINT8, SIZES[:rank], rank, f"rank{rank}")
