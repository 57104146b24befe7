"""`DML_BUFFER_TENSOR_DESC`: data type, sizes and the buffer size they imply."""

from __future__ import annotations

import math
from dataclasses import dataclass

from . import dtypes

MAX_DIMENSIONS = 8  # DML_TENSOR_DIMENSION_COUNT_MAX1


@dataclass(frozen=True)
class TensorDesc:
    data_type: dtypes.DataType
    sizes: tuple[int, ...]
    strides: tuple[int, ...] | None = None
    flags: int = 0
    total_size_in_bytes: int | None = None  # None: DirectML's minimum (see below)
    guaranteed_base_offset_alignment: int = 0

    @property
    def rank(self) -> int:
        return len(self.sizes)

    @property
    def element_count(self) -> int:
        return math.prod(self.sizes)

    @property
    def min_size_in_bytes(self) -> int:
        """What DMLCalcBufferTensorSize gives: the furthest element's end, rounded up to 4."""
        strides = self.strides or dense_strides(self.sizes)
        last = sum((s - 1) * st for s, st in zip(self.sizes, strides, strict=True))
        return ((last + 1) * self.data_type.size + 3) & ~3

    @property
    def size_in_bytes(self) -> int:
        return self.total_size_in_bytes if self.total_size_in_bytes is not None else self.min_size_in_bytes

    def describe(self) -> str:
        return f"{self.data_type.name}{list(self.sizes)}"


def dense_strides(sizes: tuple[int, ...]) -> tuple[int, ...]:
    strides, acc = [], 1
    for s in reversed(sizes):
        strides.append(acc)
        acc *= s
    return tuple(reversed(strides))
