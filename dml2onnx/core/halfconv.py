"""FLOAT16 as DxDispatch writes it: double -> float32 (nearest) -> half truncated toward zero
(half.hpp's round_indeterminate); magnitudes of 65536 and more become infinity."""

from __future__ import annotations

import numpy as np


def to_float16(values: np.ndarray | list[float] | float) -> np.ndarray:
    f = np.asarray(values, dtype=np.float64).astype(np.float32)
    with np.errstate(over="ignore", invalid="ignore"):
        h = f.astype(np.float16)
        finite_big = np.isinf(h) & np.isfinite(f) & (np.abs(f) < 65536)
        h = np.where(finite_big, np.copysign(np.float16(65504), f).astype(np.float16), h)
        overshoot = np.isfinite(h) & (np.abs(h.astype(np.float32)) > np.abs(f))
        h = np.where(overshoot, np.nextafter(h, np.float16(0)), h)
        h = np.where(np.isnan(f), np.float16(np.nan), h)
    return h.astype(np.float16)
