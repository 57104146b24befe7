"""ARGMAX, ARGMIN and ONE_HOT: every index type, both directions, ties at the types' ends, INT64
beyond 2**53; ONE_HOT's negative and out-of-range indices."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from dml2onnx.cases.common import SIZES, Case, axis_patterns, tensor_of, values
from dml2onnx.core import dtypes
from dml2onnx.ops import argmax, one_hot


def arg_case(
    op: str,
    rng: np.random.Generator,
    in_type: dtypes.DataType,
    out_type: dtypes.DataType,
    shape: tuple[int, ...],
    pattern: str,
    axes: list[int],
    direction: str,
    variant: str,
) -> Case:
    """An ARGMAX or ARGMIN case (same fields)."""
    out_shape = [1 if i in axes else s for i, s in enumerate(shape)]
    return Case(
        f"{op}-{in_type}-{out_type}-{'x'.join(map(str, shape))}-{pattern}-{direction}-{variant}",
        op,
        {
            "InputTensor": tensor_of(in_type, shape),
            "OutputTensor": tensor_of(out_type, out_shape),
            "AxisCount": len(axes),
            "Axes": axes,
            "AxisDirection": direction,
        },
        {"InputTensor": values(rng, shape, in_type, variant)},
    )


def argmax_cases() -> Iterator[Case]:
    rng = np.random.default_rng(2)

    def case(*args: Any) -> Case:
        return arg_case("ARGMAX", rng, *args)

    for in_type in argmax.INPUT_TYPES:
        for out_type in argmax.OUTPUT_TYPES:
            for direction in ("INCREASING", "DECREASING"):
                for pattern, axes in axis_patterns(3).items():
                    for variant in ("ties", "extreme"):
                        yield case(in_type, out_type, (4, 3, 5), pattern, axes, direction, variant)
    for in_type in (dtypes.FLOAT32, dtypes.INT64, dtypes.UINT64, dtypes.INT32, dtypes.UINT32):
        for rank in range(1, 9):
            for pattern, axes in axis_patterns(rank).items():
                if pattern in ("trailing", "all"):
                    for direction in ("INCREASING", "DECREASING"):
                        variants = ("ties", "bottom") if in_type != dtypes.FLOAT32 else ("ties",)
                        for variant in variants:
                            yield case(in_type, dtypes.UINT32, SIZES[:rank], pattern, axes, direction, variant)


def one_hot_cases() -> Iterator[Case]:
    rng = np.random.default_rng(3)

    def indices(t: dtypes.DataType, depth: int, shape: list[int]) -> np.ndarray:
        info = np.iinfo(t.numpy)
        pool = [0, depth - 1, depth, depth + 5, int(info.max), int(info.max) - 1]
        if t.is_signed:
            pool += [-1, -depth, -depth - 1, int(info.min)]
        return np.array(rng.choice(np.array(pool, dtype=object), size=shape), dtype=object).astype(t.numpy)

    def case(
        index_type: dtypes.DataType,
        value_type: dtypes.DataType,
        shape: tuple[int, ...],
        axis: int,
        values_sizes: list[int] | None = None,
    ) -> Case:
        index_shape = [1 if i == axis else s for i, s in enumerate(shape)]
        values_shape = values_sizes or [1] * (len(shape) - 1) + [3]
        extra = f"-values{'x'.join(map(str, values_sizes))}" if values_sizes else ""
        return Case(
            f"ONE_HOT-{index_type}-{value_type}-{'x'.join(map(str, shape))}-axis{axis}{extra}",
            "ONE_HOT",
            {
                "IndicesTensor": tensor_of(index_type, index_shape),
                "ValuesTensor": tensor_of(value_type, values_shape),
                "OutputTensor": tensor_of(value_type, shape),
                "Axis": axis,
            },
            {
                "IndicesTensor": indices(index_type, shape[axis], index_shape),
                "ValuesTensor": values(rng, tuple(values_shape), value_type, "extreme"),
            },
        )

    for index_type in one_hot.INDEX_TYPES:
        for value_type in one_hot.VALUE_TYPES:
            for axis in (0, 1, 2):
                yield case(index_type, value_type, (3, 5, 4), axis)
    for rank in range(1, 9):
        yield case(dtypes.INT32, dtypes.FLOAT32, SIZES[:rank], rank - 1)
        yield case(dtypes.UINT64, dtypes.FLOAT16, SIZES[:rank], 0)
    # ValuesTensor of another DimensionCount than IndicesTensor's (DirectML reads its elements 0
    # and 1; the DirectML EP writes torch's F.one_hot with [1, 1, 1, 2] beside 3-D indices)
    yield case(dtypes.INT64, dtypes.FLOAT32, (2, 5, 7), 2, [1, 1, 1, 2])
    yield case(dtypes.UINT32, dtypes.FLOAT16, (3, 5, 4), 0, [2])
    yield case(dtypes.INT32, dtypes.INT8, (3, 5, 4), 1, [2, 2])
    yield case(dtypes.UINT64, dtypes.INT64, (6, 4), 1, [1, 1, 1, 1, 1, 3])


def cases() -> Iterator[Case]:
    yield from argmax_cases()
    yield from one_hot_cases()
