"""Matrix cases for DML_OPERATOR_TOP_K and TOP_K1 (dml2onnx/ops/top_k.py): every data type of
the pages' newest tables with each index type, both directions (TOP_K1), 1 to 8 dimensions with
the leading, middle and trailing axis, K of 1, of a few and of the whole axis. Values drawn from
a small pool, so that most are tied (ties go by ascending index), the integers' ends among them
(64-bit ones beyond 2**53); floats with infinities and both zeros (`specials`), and with NaN
(`nan`: DirectML's order is meaningless there, tests/dml_findings.py)."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from dml2onnx.cases.common import SIZES, Case, tensor_of
from dml2onnx.core import dtypes

TYPES = (dtypes.FLOAT32, dtypes.FLOAT16, dtypes.INT64, dtypes.INT32, dtypes.INT16, dtypes.INT8)
TYPES += (dtypes.UINT64, dtypes.UINT32, dtypes.UINT16, dtypes.UINT8)


def _pool(dtype: dtypes.DataType, special: str = "") -> np.ndarray:
    if dtype.is_float:
        pool = [-2.5, -1.0, 0.0, 1.0, 1.0, 3.0, 65504.0 if dtype == dtypes.FLOAT16 else 1e30]
        if special:
            pool += [np.inf, -np.inf, -0.0, 0.0]
        if special == "nan":
            pool += [np.nan]
        return np.array(pool, dtype.numpy)
    info = np.iinfo(dtype.numpy)
    pool = [info.min, info.max, info.max - 1, 0, 1, 1, 7]
    if dtype.size == 8:
        pool += [2**53 + 1, 2**53, (2**62 + 3) * (1 if dtype == dtypes.UINT64 else -1)]
    return np.array(pool, dtype.numpy)


def _top_k(
    rng: np.random.Generator,
    op: str,
    dtype: dtypes.DataType,
    shape: tuple[int, ...],
    axis: int,
    k: int,
    index: str,
    direction: str,
    tag: str,
    special: str = "",
) -> Case:
    out = tuple(k if i == axis else s for i, s in enumerate(shape))
    fields = {"InputTensor": tensor_of(dtype, shape), "OutputValueTensor": tensor_of(dtype, out)}
    fields |= {"OutputIndexTensor": {"DataType": index, "Sizes": list(out)}, "Axis": axis, "K": k}
    if op == "TOP_K1":
        fields["AxisDirection"] = direction
    x = rng.choice(_pool(dtype, special), size=shape)
    name = f"{op}-{dtype}-{tag}-axis{axis}-k{k}-{index}" + (f"-{direction}" if op == "TOP_K1" else "")
    return Case(name, op, fields, {"InputTensor": x})


def cases() -> Iterator[Case]:
    rng = np.random.default_rng(133)
    for dtype in TYPES:
        for index in ("UINT32", "UINT64"):
            yield _top_k(rng, "TOP_K", dtype, (3, 9, 2), 1, 4, index, "DECREASING", "3x9x2")
            for direction in ("DECREASING", "INCREASING"):
                yield _top_k(rng, "TOP_K1", dtype, (3, 9, 2), 1, 4, index, direction, "3x9x2")
        for direction in ("DECREASING", "INCREASING"):
            yield _top_k(rng, "TOP_K1", dtype, (2, 7), 1, 7, "UINT32", direction, "whole")
            yield _top_k(rng, "TOP_K1", dtype, (5, 3), 0, 1, "UINT32", direction, "first")
            if dtype.is_float:
                yield _top_k(rng, "TOP_K1", dtype, (4, 12), 1, 5, "UINT32", direction, "specials", "specials")
                yield _top_k(rng, "TOP_K1", dtype, (4, 12), 1, 5, "UINT32", direction, "nan", "nan")
    for dtype in (dtypes.FLOAT32, dtypes.INT64, dtypes.UINT8):
        for rank in range(1, 9):
            shape = SIZES[:rank]
            for axis in sorted({0, rank // 2, rank - 1}):
                k = max(1, shape[axis] - 1)
                yield _top_k(rng, "TOP_K1", dtype, shape, axis, k, "UINT32", "INCREASING", f"rank{rank}")
                yield _top_k(rng, "TOP_K", dtype, shape, axis, k, "UINT64", "DECREASING", f"rank{rank}")
