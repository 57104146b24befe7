"""What the operator matrix's case modules share: the Case row, tensor fields, value pools with
the types' extremes and ties, axis patterns and the fused activations' parameters."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from dml2onnx.core import dtypes

SIZES = (3, 2, 4, 2, 3, 2, 2, 2)


@dataclass(frozen=True)
class Case:
    id: str
    op: str
    fields: dict[str, Any]
    inputs: dict[str, np.ndarray]


def tensor_of(dtype: dtypes.DataType, sizes: tuple[int, ...] | list[int]) -> dict[str, Any]:
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


def float_data(rng: np.random.Generator, shape: tuple[int, ...], dtype: np.dtype, mode: str) -> np.ndarray:
    if mode == "ties":  # few distinct values: many tied maxima
        return rng.integers(-2, 3, size=shape).astype(dtype)
    if mode == "extreme":
        big = 60000.0 if dtype == np.float16 else 3e38
        pool = np.array([1000, -1000, 0, -50000 if dtype != np.float16 else -60000, big, -big, 1e-3, -1e-3])
        return rng.choice(pool, size=shape).astype(dtype)
    return (rng.standard_normal(shape) * 10).astype(dtype)
