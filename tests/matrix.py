"""The operator matrix: explicit cases covering every documented data type, ranks 1-8, axis
patterns (trailing, leading, middle, several, all), both ArgMax directions, ties, extreme values,
INT64 beyond 2**53, OneHot negative and out-of-range indices, every MVN option and fused
activation. Used by tests/test_matrix.py (every EP present) and tools/gpu_report.py."""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from dml2onnx import dtypes
from dml2onnx.ops import argmax, one_hot

SIZES = (3, 2, 4, 2, 3, 2, 2, 2)


@dataclass(frozen=True)
class Case:
    id: str
    op: str
    fields: dict[str, Any]
    inputs: dict[str, np.ndarray]


def _tensor(dtype: dtypes.DataType, sizes: tuple[int, ...] | list[int]) -> dict[str, Any]:
    return {"DataType": dtype.name, "Sizes": list(sizes)}


def axis_patterns(rank: int) -> dict[str, list[int]]:
    """Named axis sets for a rank, without repeats (at rank 1 they are all {0})."""
    candidates = {"trailing": [rank - 1], "leading": [0], "all": list(range(rank))[::-1]}
    if rank >= 3:
        candidates["middle"] = [rank // 2]
        candidates["several"] = [rank - 1, 0]  # not contiguous, not sorted
    patterns: dict[str, list[int]] = {}
    for name, axes in candidates.items():
        if sorted(axes) not in [sorted(a) for a in patterns.values()]:
            patterns[name] = axes
    return patterns


def float_values(rng: np.random.Generator, shape: tuple[int, ...], dtype: dtypes.DataType, variant: str) -> np.ndarray:
    if variant == "ties":
        return rng.integers(-1, 2, size=shape).astype(dtype.numpy)
    big = 60000.0 if dtype == dtypes.FLOAT16 else 3e38
    return rng.choice(
        np.array([1000, -1000, 0, -50000 if dtype != dtypes.FLOAT16 else -30000, big, -big, 0.5]), size=shape
    ).astype(dtype.numpy)


def int_values(rng: np.random.Generator, shape: tuple[int, ...], dtype: dtypes.DataType, variant: str) -> np.ndarray:
    info = np.iinfo(dtype.numpy)
    if variant == "ties":
        return rng.integers(0, 2, size=shape).astype(dtype.numpy)
    if variant == "bottom":  # ties at the type's lowest values
        return (int(info.min) + rng.integers(0, 2, size=shape)).astype(dtype.numpy)
    top = int(info.max)
    pool = [int(info.min), int(info.min) + 1, 0, top, top - 1, top - 2]
    if dtype.size >= 8:  # values a float cast would merge: beyond 2**53
        pool += [2**53 + 1, 2**53 + 2, 2**62 + 1, 2**62 + 3]
    if dtype.size >= 4:
        pool += [2**31, 2**31 + 1, 2**32 - 3] if info.max >= 2**32 else [2**30 + 1]
    pool = [v for v in pool if info.min <= v <= info.max]
    return np.array(rng.choice(np.array(pool, dtype=object), size=shape), dtype=object).astype(dtype.numpy)


def values(rng: np.random.Generator, shape: tuple[int, ...], dtype: dtypes.DataType, variant: str) -> np.ndarray:
    return (float_values if dtype.is_float else int_values)(rng, shape, dtype, variant)


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
                                "InputTensor": _tensor(dtype, shape),
                                "OutputTensor": _tensor(dtype, shape),
                                "AxisCount": len(axes),
                                "Axes": axes,
                            },
                            {"InputTensor": x},
                        )


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
            "InputTensor": _tensor(in_type, shape),
            "OutputTensor": _tensor(out_type, out_shape),
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

    def case(index_type: dtypes.DataType, value_type: dtypes.DataType, shape: tuple[int, ...], axis: int) -> Case:
        index_shape = [1 if i == axis else s for i, s in enumerate(shape)]
        values_shape = [1] * (len(shape) - 1) + [3]
        return Case(
            f"ONE_HOT-{index_type}-{value_type}-{'x'.join(map(str, shape))}-axis{axis}",
            "ONE_HOT",
            {
                "IndicesTensor": _tensor(index_type, index_shape),
                "ValuesTensor": _tensor(value_type, values_shape),
                "OutputTensor": _tensor(value_type, shape),
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


ACTIVATIONS: dict[str, dict[str, float]] = {
    "ACTIVATION_LINEAR": {"Alpha": 1.5, "Beta": -0.25},
    "ACTIVATION_SIGMOID": {},
    "ACTIVATION_HARD_SIGMOID": {"Alpha": 0.2, "Beta": 0.5},
    "ACTIVATION_TANH": {},
    "ACTIVATION_SCALED_TANH": {"Alpha": 1.7, "Beta": 0.6},
    "ACTIVATION_RELU": {},
    "ACTIVATION_LEAKY_RELU": {"Alpha": 0.1},
    "ACTIVATION_THRESHOLDED_RELU": {"Alpha": 0.5},
    "ACTIVATION_ELU": {"Alpha": 0.8},
    "ACTIVATION_CELU": {"Alpha": 1.3},
    "ACTIVATION_SCALED_ELU": {"Alpha": 1.6732632, "Gamma": 1.0507009},
    "ACTIVATION_SOFTPLUS": {"Steepness": 2.0},
    "ACTIVATION_PARAMETRIC_SOFTPLUS": {"Alpha": 0.7, "Beta": 1.4},
    "ACTIVATION_SOFTSIGN": {},
    "ACTIVATION_IDENTITY": {},
    "ACTIVATION_SHRINK": {"Bias": 0.1, "Threshold": 0.4},
    "ACTIVATION_GELU": {},
}


def mvn_cases() -> Iterator[Case]:
    rng = np.random.default_rng(4)
    shape = (2, 3, 4, 5)
    for dtype in dtypes.FLOATS:
        for activation in (None, *ACTIVATIONS):
            for cross in (False, True):
                for normalize in (False, True):
                    for extras in ((), ("ScaleTensor",), ("BiasTensor",), ("ScaleTensor", "BiasTensor")):
                        if activation is not None and extras != ("ScaleTensor", "BiasTensor"):
                            continue
                        fields: dict[str, Any] = {
                            "InputTensor": _tensor(dtype, shape),
                            "OutputTensor": _tensor(dtype, shape),
                            "CrossChannel": cross,
                            "NormalizeVariance": normalize,
                            "Epsilon": 1e-5,
                        }
                        inputs = {"InputTensor": (rng.standard_normal(shape) * 3 + 2).astype(dtype.numpy)}
                        for i, name in enumerate(extras):
                            sizes = (1, 3, 1, 1) if i == 0 else (1, 1, 4, 5)
                            fields[name] = _tensor(dtype, sizes)
                            inputs[name] = rng.uniform(-2, 2, sizes).astype(dtype.numpy)
                        if activation:
                            fields["FusedActivation"] = {"Type": activation, **ACTIVATIONS[activation]}
                        name = activation or "none"
                        yield Case(
                            f"MVN-{dtype}-{name}-cross{int(cross)}-norm{int(normalize)}-{'+'.join(extras) or 'plain'}",
                            "MEAN_VARIANCE_NORMALIZATION",
                            fields,
                            inputs,
                        )


# The families' other operators: tests/matrix_<family>.py, each with cases().
FAMILIES = (
    "matrix_softmax_family",
    "matrix_reduce",
    "matrix_mvn_family",
    "matrix_element_wise_activation",
    "matrix_element_wise",
    "matrix_element_wise_logical",
    "matrix_cast",
    "matrix_element_wise_bits",
    "matrix_element_wise_trig",
    "matrix_element_wise_if",
    "matrix_diagonal_matrix",
    "matrix_activation_more",
    "matrix_gradients",
    "matrix_element_wise_pow",
    "matrix_element_wise_quantized",
    "matrix_batch_normalization",
    "matrix_batch_normalization_training",
    "matrix_local_response_normalization",
    "matrix_lp_normalization",
    "matrix_convolution",
    "matrix_gemm",
    "matrix_pooling",
    "matrix_roi",
    "matrix_max_unpooling",
    "matrix_gather",
    "matrix_scatter",
    "matrix_join_split",
    "matrix_multihead_attention",
    "matrix_slice",
    "matrix_padding",
    "matrix_tile",
    "matrix_space_depth",
    "matrix_cumulative",
    "matrix_reverse_subsequences",
    "matrix_top_k",
    "matrix_nonzero_coordinates",
    "matrix_resample",
    "matrix_resample_grad",
    "matrix_pooling_grad",
    "matrix_local_response_normalization_grad",
    "matrix_recurrent",
    "matrix_random_generator",
    "matrix_batch_normalization_grad",
    "matrix_adam_optimizer",
    "matrix_matrix_multiply_integer",
    "matrix_quantize",
    "matrix_convolution_integer",
    "matrix_quantized_pooling",
    "matrix_roi_align_grad",
    "matrix_fold",
)


def all_cases() -> list[Case]:
    family_cases = [c for name in FAMILIES for c in importlib.import_module(name).cases()]  # they import this module
    return [*softmax_like_cases(), *argmax_cases(), *one_hot_cases(), *mvn_cases(), *family_cases]
