"""Matrix cases for ACTIVATION_SOFTMAX1, the single-axis ACTIVATION_SOFTMAX / LOG_SOFTMAX /
HARDMAX, and ARGMIN: every documented data type, ranks 1-8 (the single-axis forms at effective
rank 1 and 2 only), axis patterns, both directions, ties and extreme values."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from dml2onnx.cases.arg_one_hot import arg_case
from dml2onnx.cases.common import SIZES, Case, axis_patterns, tensor_of, values
from dml2onnx.core import dtypes
from dml2onnx.ops import argmax

OLD_FORMS = ("ACTIVATION_SOFTMAX", "ACTIVATION_LOG_SOFTMAX", "ACTIVATION_HARDMAX")


def _float_input(rng: np.random.Generator, op: str, shape: tuple[int, ...], dtype: dtypes.DataType, variant: str) -> np.ndarray:
    x = values(rng, shape, dtype, variant)
    if "LOG_SOFTMAX" in op:  # true results must be representable (FLOAT16 ends at 65504)
        bound = 30000 if dtype == dtypes.FLOAT16 else 50000
        x = np.clip(x, -bound, bound).astype(dtype.numpy)
    return x


def softmax1_cases() -> Iterator[Case]:
    rng = np.random.default_rng(11)
    op = "ACTIVATION_SOFTMAX1"
    for dtype in dtypes.FLOATS:
        for rank in range(1, 9):
            shape = SIZES[:rank]
            for pattern, axes in axis_patterns(rank).items():
                for variant in ("ties", "extreme"):
                    yield Case(
                        f"{op}-{dtype}-rank{rank}-{pattern}-{variant}",
                        op,
                        {
                            "InputTensor": tensor_of(dtype, shape),
                            "OutputTensor": tensor_of(dtype, shape),
                            "AxisCount": len(axes),
                            "Axes": axes,
                        },
                        {"InputTensor": _float_input(rng, op, shape, dtype, variant)},
                    )


def old_form_shapes() -> Iterator[tuple[int, ...]]:
    """Ranks 1-8 with an effective rank of 1 or 2: leading dimensions of size 1."""
    for rank in range(1, 9):
        yield (1,) * (rank - 1) + (7,)
        if rank >= 2:
            yield (1,) * (rank - 2) + (3, 5)


def old_form_cases() -> Iterator[Case]:
    rng = np.random.default_rng(12)
    for op in OLD_FORMS:
        for dtype in dtypes.FLOATS:
            for shape in old_form_shapes():
                for variant in ("ties", "extreme"):
                    yield Case(
                        f"{op}-{dtype}-{'x'.join(map(str, shape))}-{variant}",
                        op,
                        {"InputTensor": tensor_of(dtype, shape), "OutputTensor": tensor_of(dtype, shape)},
                        {"InputTensor": _float_input(rng, op, shape, dtype, variant)},
                    )


def argmin_cases() -> Iterator[Case]:
    rng = np.random.default_rng(13)

    def case(*args: Any) -> Case:
        return arg_case("ARGMIN", rng, *args)

    outputs = argmax.OUTPUT_TYPES
    for in_type in argmax.INPUT_TYPES:
        variants = ("ties", "extreme") if in_type.is_float else ("ties", "extreme", "bottom")
        n = 0
        for direction in ("INCREASING", "DECREASING"):
            for pattern, axes in axis_patterns(3).items():
                for variant in variants:
                    yield case(in_type, outputs[n % len(outputs)], (4, 3, 5), pattern, axes, direction, variant)
                    n += 1
    for in_type in (dtypes.FLOAT16, dtypes.INT64, dtypes.UINT64, dtypes.INT32, dtypes.UINT32, dtypes.INT8):
        for rank in range(1, 9):
            for pattern, axes in axis_patterns(rank).items():
                if pattern in ("trailing", "all", "several"):
                    for direction in ("INCREASING", "DECREASING"):
                        variant = "ties" if in_type.is_float else "bottom"
                        yield case(in_type, dtypes.UINT32, SIZES[:rank], pattern, axes, direction, variant)


def cases() -> Iterator[Case]:
    yield from softmax_like_cases()
    yield from softmax1_cases()
    yield from old_form_cases()
    yield from argmin_cases()


def softmax_like_cases() -> Iterator[Case]:
    rng = np.random.default_rng(1)
    for op in ("ACTIVATION_HARDMAX1", "ACTIVATION_LOG_SOFTMAX1"):
        for dtype in dtypes.FLOATS:
            for rank in range(1, 9):
                shape = SIZES[:rank]
                for pattern, axes in axis_patterns(rank).items():
                    for variant in ("ties", "extreme"):
                        x = values(rng, shape, dtype, variant)
                        if op == "ACTIVATION_LOG_SOFTMAX1":  # true results must be representable
                            bound = 30000 if dtype == dtypes.FLOAT16 else 50000
                            x = np.clip(x, -bound, bound).astype(dtype.numpy)
                        yield Case(
                            f"{op}-{dtype}-rank{rank}-{pattern}-{variant}",
                            op,
                            {
                                "InputTensor": tensor_of(dtype, shape),
                                "OutputTensor": tensor_of(dtype, shape),
                                "AxisCount": len(axes),
                                "Axes": axes,
                            },
                            {"InputTensor": x},
                        )
