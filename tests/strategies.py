"""Hypothesis strategies: shapes of rank 1-8, axis subsets in any order, data with ties and
extreme values."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

MAX_ELEMENTS = 2048


@st.composite
def shapes(draw: st.DrawFn, min_rank: int = 1, max_rank: int = 8) -> tuple[int, ...]:
    rank = draw(st.integers(min_rank, max_rank))
    sizes, budget = [], MAX_ELEMENTS
    for _ in range(rank):
        s = draw(st.integers(1, max(1, min(6, budget))))
        sizes.append(s)
        budget //= s
    return tuple(sizes)


@st.composite
def axis_subsets(draw: st.DrawFn, rank: int) -> list[int]:
    """Unique axes in random order (not sorted), at least one."""
    perm = draw(st.permutations(range(rank)))
    return list(perm[: draw(st.integers(1, rank))])


def float_data(rng: np.random.Generator, shape: tuple[int, ...], dtype: np.dtype, mode: str) -> np.ndarray:
    if mode == "ties":  # few distinct values: many tied maxima
        return rng.integers(-2, 3, size=shape).astype(dtype)
    if mode == "extreme":
        big = 60000.0 if dtype == np.float16 else 3e38
        pool = np.array([1000, -1000, 0, -50000 if dtype != np.float16 else -60000, big, -big, 1e-3, -1e-3])
        return rng.choice(pool, size=shape).astype(dtype)
    return (rng.standard_normal(shape) * 10).astype(dtype)


def int_data(rng: np.random.Generator, shape: tuple[int, ...], dtype: np.dtype, mode: str) -> np.ndarray:
    info = np.iinfo(dtype)
    if mode == "ties":
        return rng.integers(0, 3, size=shape).astype(dtype)
    if mode == "extreme":  # the type's ends and values that collide as floats (beyond 2**24 / 2**53)
        near_top = [int(info.max) - k for k in range(3)]
        pool = [int(info.min), int(info.min) + 1, 0, *near_top]
        return np.array(rng.choice(np.array(pool, dtype=object), size=shape), dtype=object).astype(dtype)
    lo, hi = int(info.min), int(info.max)
    return rng.integers(lo, hi, size=shape, dtype=dtype, endpoint=True)


DATA_MODES = st.sampled_from(["ties", "extreme", "random"])
SEEDS = st.integers(0, 2**32 - 1)
