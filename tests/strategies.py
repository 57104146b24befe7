"""Hypothesis strategies: shapes of rank 1-8, axis subsets in any order, data with ties and
extreme values."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from hypothesis import strategies as st

from dml2onnx.cases.common import float_data as float_data  # shared with the matrix cases

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


FLOAT_SPECIALS = (0.0, -0.0, np.inf, -np.inf, np.nan)


def with_specials(
    rng: np.random.Generator, x: np.ndarray, pool: Sequence[float] = FLOAT_SPECIALS, fraction: float = 0.1
) -> np.ndarray:
    """`x` (floats) with about `fraction` of its elements replaced by values drawn from `pool`."""
    special = rng.random(x.shape) < fraction
    x[special] = rng.choice(np.asarray(pool, np.float64), size=int(special.sum()))
    return x


def element_values(
    rng: np.random.Generator, shape: tuple[int, ...], dtype: np.dtype, scale: float, pool: Sequence[float] = FLOAT_SPECIALS
) -> np.ndarray:
    """An element-wise operator's input: normal values times `scale` with a tenth of `pool`'s
    special values for floats, the type's whole range for integers."""
    if dtype.kind == "f":
        return with_specials(rng, rng.standard_normal(shape) * scale, pool).astype(dtype)
    info = np.iinfo(dtype)
    return rng.integers(info.min, int(info.max) + 1, size=shape, dtype=dtype, endpoint=False)
