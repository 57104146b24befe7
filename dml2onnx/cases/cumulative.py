"""Matrix cases for DML_OPERATOR_CUMULATIVE_SUMMATION and CUMULATIVE_PRODUCT
(dml2onnx/ops/cumulative.py): every data type of the pages' newest tables, both directions,
inclusive and exclusive, along an axis of odd length (37, not a power of 2); 1 to 8 dimensions
with the leading, middle and trailing axis; axes of length 1 and of tolerances.CUMULATIVE_LENGTH.

Integers over their whole range (wrapping sums and products; 64-bit beyond 2**53). Floats within
the tolerances' bounds: sums of |x| <= CUMULATIVE_MAGNITUDE; products of factors whose partial
products stay finite and normal (FLOAT32 in [1/2, 2], FLOAT16 in [0.8, 1.25]); `specials`:
NaN, infinities and signed zeros, whose results no summation order changes (the "blocked"
candidate's guard refuses them: its If's else branch, the scan, runs them)."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from dml2onnx.cases.common import SIZES, Case, tensor_of
from dml2onnx.core import dtypes
from dml2onnx.lowering import tolerances

OPS = {"CUMULATIVE_SUMMATION": "HasExclusiveSum", "CUMULATIVE_PRODUCT": "HasExclusiveProduct"}
TYPES = (dtypes.FLOAT32, dtypes.FLOAT16, dtypes.INT64, dtypes.INT32, dtypes.UINT64, dtypes.UINT32)
DIRECTIONS = ("INCREASING", "DECREASING")


def _data(
    rng: np.random.Generator, op: str, dtype: dtypes.DataType, shape: tuple[int, ...], specials: bool = False
) -> np.ndarray:
    if not dtype.is_float:
        info = np.iinfo(dtype.numpy)
        x = rng.integers(info.min, info.max, size=shape, dtype=dtype.numpy, endpoint=True)
        flat = x.reshape(-1)  # the ends and values past 2**53 among them
        ends = [info.min, info.max, 0, 1, info.max - 1] + ([2**53 + 1, 2**62 + 3] if dtype.size == 8 else [])
        flat[: min(len(ends), flat.size)] = ends[: flat.size]
        return rng.permutation(flat).reshape(shape)
    if op == "CUMULATIVE_SUMMATION":
        m = tolerances.CUMULATIVE_MAGNITUDE
        x = rng.uniform(-m, m, shape)
        pool = [np.nan, np.inf, -np.inf, -0.0, 0.0]
    else:
        lo, hi = (0.5, 2.0) if dtype == dtypes.FLOAT32 else (0.8, 1.25)
        x = np.exp(rng.uniform(np.log(lo), np.log(hi), shape)) * rng.choice([-1, 1], shape)
        pool = [np.nan, np.inf, -np.inf, -0.0, 0.0]
    if specials:
        x = np.where(rng.random(shape) < 0.2, rng.choice(pool, shape), x)
    return x.astype(dtype.numpy)


def _case(
    rng: np.random.Generator,
    op: str,
    dtype: dtypes.DataType,
    shape: tuple[int, ...],
    axis: int,
    direction: str,
    excl: bool,
    tag: str,
    specials: bool = False,
) -> Case:
    fields = {"InputTensor": tensor_of(dtype, shape), "OutputTensor": tensor_of(dtype, shape), "Axis": axis}
    fields |= {"AxisDirection": direction, OPS[op]: excl}
    name = f"{op}-{dtype}-{tag}-axis{axis}-{direction}-{'exclusive' if excl else 'inclusive'}"
    return Case(name, op, fields, {"InputTensor": _data(rng, op, dtype, shape, specials)})


def cases() -> Iterator[Case]:
    rng = np.random.default_rng(122)
    for op in OPS:
        for dtype in TYPES:
            for direction in DIRECTIONS:
                for excl in (False, True):
                    yield _case(rng, op, dtype, (3, 37, 2), 1, direction, excl, "3x37x2")
            if dtype.is_float:
                yield _case(rng, op, dtype, (2, 9), 1, "INCREASING", False, "specials", specials=True)
                yield _case(rng, op, dtype, (2, 9), 1, "DECREASING", True, "specials", specials=True)
                if op == "CUMULATIVE_SUMMATION" or dtype == dtypes.FLOAT32:
                    length = tolerances.CUMULATIVE_LENGTH
                    yield _case(rng, op, dtype, (2, length), 1, "INCREASING", False, f"2x{length}")
        for dtype in (dtypes.FLOAT32, dtypes.INT64, dtypes.UINT32):
            for rank in range(1, 9):
                shape = SIZES[:rank]
                for axis in sorted({0, rank // 2, rank - 1}):
                    direction = DIRECTIONS[(rank + axis) % 2]
                    yield _case(rng, op, dtype, shape, axis, direction, bool(rank % 2), f"rank{rank}")
            yield _case(rng, op, dtype, (4, 1, 3), 1, "INCREASING", True, "length1")
            yield _case(rng, op, dtype, (4, 1, 3), 1, "DECREASING", False, "length1")
