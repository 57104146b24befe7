"""Matrix cases for DML_OPERATOR_SPACE_TO_DEPTH(1) and DEPTH_TO_SPACE(1) (dml2onnx/ops/space_depth.py):
every data type of the pages' newest tables (FLOAT64 and the 64-bit integers included) at their
one dimension count (4), BlockSize 1, 2 and 3, both DML_DEPTH_SPACE_ORDERs for the `…1`
operators, with the types' extremes (integers beyond 2**53; floats: NaN, infinities, -0.0):
moved bit for bit."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from dml2onnx.cases.common import Case, tensor_of, values
from dml2onnx.core import dtypes

OPS = ("SPACE_TO_DEPTH", "SPACE_TO_DEPTH1", "DEPTH_TO_SPACE", "DEPTH_TO_SPACE1")
TYPES = (dtypes.FLOAT64, *dtypes.FLOATS, *dtypes.INTEGERS)
ORDERS = ("DEPTH_COLUMN_ROW", "COLUMN_ROW_DEPTH")
# (BlockSize, the space tensor's Sizes): [N, C, H * BlockSize, W * BlockSize]
SHAPES = ((2, (2, 3, 4, 6)), (3, (1, 2, 3, 6)), (1, (1, 2, 3, 2)))


def _data(rng: np.random.Generator, dtype: dtypes.DataType, shape: tuple[int, ...]) -> np.ndarray:
    x = rng.standard_normal(shape) * 1e300 if dtype == dtypes.FLOAT64 else values(rng, shape, dtype, "extreme")
    if dtype.is_float:
        flat = x.reshape(-1)
        specials = [np.nan, np.inf, -np.inf, -0.0][: flat.size]
        flat[: len(specials)] = specials
        x = rng.permutation(flat).reshape(shape)
    return x.astype(dtype.numpy)


def cases() -> Iterator[Case]:
    rng = np.random.default_rng(121)
    for op in OPS:
        for dtype in TYPES:
            for order in ORDERS if op.endswith("1") else (None,):
                for bs, space in SHAPES[: 3 if dtype in (dtypes.FLOAT32, dtypes.UINT64) else 2]:
                    n, c, h, w = space
                    depth = (n, c * bs * bs, h // bs, w // bs)
                    src, dst = (depth, space) if op.startswith("DEPTH_TO_SPACE") else (space, depth)
                    fields = {"InputTensor": tensor_of(dtype, src), "OutputTensor": tensor_of(dtype, dst), "BlockSize": bs}
                    if order:
                        fields["Order"] = order
                    name = f"{op}-{dtype}-bs{bs}" + (f"-{order}" if order else "")
                    yield Case(name, op, fields, {"InputTensor": _data(rng, dtype, src)})
