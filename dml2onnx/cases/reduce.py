"""DML_OPERATOR_REDUCE cases for the operator matrix: every function with every data type its
newest table allows (ARGMAX/ARGMIN with every output type), the axis patterns of matrix.py, ranks
1-8, ties and extreme values (integer wrap-around, INT64 beyond 2**53 and in [2**31, 2**32));
AxisCount 0 (no Axes: each element its own reduction) for every function and type."""

from __future__ import annotations

import math
from collections.abc import Iterator

import numpy as np

from dml2onnx.cases.common import SIZES, Case, axis_patterns, float_data, tensor_of, values
from dml2onnx.core import dtypes
from dml2onnx.core.operator_table import OPERATORS
from dml2onnx.core.schema import ENUMS
from dml2onnx.ops import reduce

FUNCTIONS = tuple(ENUMS["DML_REDUCE_FUNCTION"])
SCHEMA = OPERATORS["REDUCE"]


def float_input(
    rng: np.random.Generator, shape: tuple[int, ...], dtype: np.dtype, mode: str, function: str, cancel: bool = True
) -> np.ndarray:
    """Float data whose FLOAT32 result does not depend on the reduction order: overflow only where
    every order overflows (products of magnitudes >= 1, no zeros in products), positive sums for
    LOG_SUM. Without `cancel`, SUM and AVERAGE get positive values only (no cancellation, so an
    error relative to the result is meaningful)."""
    if function in ("ARGMAX", "ARGMIN", "MAX", "MIN"):
        return float_data(rng, shape, dtype, mode)
    big = 60000.0 if dtype == np.float16 else 1e15
    if function == "MULTIPLY":
        if mode == "random":  # |x| in [2**-k, 2**k] with k * size <= 100 (FLOAT16: 12): no partial product of any order overflows
            k = min(1.0, (12 if dtype == np.float16 else 100) / max(1, math.prod(shape)))
            return (rng.choice([-1, 1], size=shape) * np.exp2(rng.uniform(-k, k, size=shape))).astype(dtype)
        pool = [-2, -1, 1, 2] if mode == "ties" else [big, -big, 1000, -1000, 7, -1, 1]
        return rng.choice(np.array(pool), size=shape).astype(dtype)
    if mode == "extreme":
        x = rng.choice(np.array([big, -big, 1000, -1000, 0, 7, 1e-3]), size=shape).astype(dtype)
    else:
        x = float_data(rng, shape, dtype, mode)
    return np.abs(x) if function == "LOG_SUM" or (not cancel and function in ("SUM", "AVERAGE")) else x


def _case(
    rng: np.random.Generator,
    function: str,
    in_type: dtypes.DataType,
    shape: tuple[int, ...],
    pattern: str,
    axes: list[int],
    variant: str,
    out_type: dtypes.DataType | None = None,
) -> Case:
    out = out_type or in_type
    out_shape = [1 if i in axes else s for i, s in enumerate(shape)]
    if in_type.is_float:
        x = float_input(rng, shape, in_type.numpy, variant, function, cancel=False)
    else:
        x = values(rng, shape, in_type, variant)
    return Case(
        f"REDUCE-{function}-{in_type}-{out}-{'x'.join(map(str, shape))}-{pattern}-{variant}",
        "REDUCE",
        {
            "Function": function,
            "InputTensor": tensor_of(in_type, shape),
            "OutputTensor": tensor_of(out, out_shape),
            "AxisCount": len(axes),
            "Axes": axes,
        },
        {"InputTensor": x},
    )


def cases() -> Iterator[Case]:
    rng = np.random.default_rng(7)
    for function in FUNCTIONS:
        arg = function in reduce.ARG_FUNCTIONS
        for in_type in SCHEMA.types("InputTensor", function):
            out_types = SCHEMA.types("OutputTensor", function) if arg else (in_type,)
            for pattern, axes in axis_patterns(3).items():
                for variant in ("ties", "extreme"):
                    yield _case(rng, function, in_type, (4, 3, 5), pattern, axes, variant, out_types[-1])
            for out_type in out_types[:-1]:
                yield _case(rng, function, in_type, (4, 3, 5), "several", [2, 0], "extreme", out_type)
    ranked = (
        ("SUM", dtypes.INT64),
        ("SUM", dtypes.FLOAT32),
        ("MULTIPLY", dtypes.UINT32),
        ("MAX", dtypes.UINT64),
        ("MIN", dtypes.INT64),
        ("ARGMIN", dtypes.INT32),
        ("LOG_SUM_EXP", dtypes.FLOAT16),
    )
    for function, in_type in ranked:
        out = dtypes.UINT32 if function in reduce.ARG_FUNCTIONS else None
        for rank in range(1, 9):
            for pattern, axes in axis_patterns(rank).items():
                if pattern in ("trailing", "all", "several"):
                    variant = "bottom" if not in_type.is_float and function in ("MIN", "ARGMIN") else "extreme"
                    yield _case(rng, function, in_type, SIZES[:rank], pattern, axes, variant, out)
    # AxisCount 0, as the DirectML EP writes it for permuting Einsums: every function and type
    none_rng = np.random.default_rng(11)  # apart: the other cases' inputs stay as they were
    for function in FUNCTIONS:
        out_types = SCHEMA.types("OutputTensor", function) if function in reduce.ARG_FUNCTIONS else (None,)
        for in_type in SCHEMA.types("InputTensor", function):
            yield _case(none_rng, function, in_type, (2, 3, 4), "none", [], "extreme", out_types[-1])
