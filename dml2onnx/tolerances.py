"""How close an execution provider's result must be to the numpy reference, per operator and
data type: indices and 0/1 outputs exactly, floats within measured bounds."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import dtypes
from .schema import OPERATORS

EXACT_OPERATORS = {"ACTIVATION_HARDMAX", "ACTIVATION_HARDMAX1", "ARGMAX", "ARGMIN", "ONE_HOT"}

_ELEMENT_WISE = {name for name, op in OPERATORS.items() if op.fusable}
_INVERSE_TRIG = {"ELEMENT_WISE_ASIN", "ELEMENT_WISE_ACOS", "ELEMENT_WISE_ATAN", "ELEMENT_WISE_ATAN_YX"}


@dataclass(frozen=True)
class Tolerance:
    rtol: float
    atol: float

    @property
    def exact(self) -> bool:
        return self.rtol == 0 and self.atol == 0


def tolerance(operator: str, dtype: dtypes.DataType, ep: str) -> Tolerance:
    if operator in EXACT_OPERATORS or not dtype.is_float:
        return Tolerance(0, 0)
    if dtype == dtypes.FLOAT16:
        return Tolerance(4e-3, 4e-3)  # a few FLOAT16 ulps; the graphs compute in FLOAT32
    if operator.startswith("ACTIVATION_LOG_SOFTMAX") and ep not in ("cpu", "reference"):
        return Tolerance(5e-5, 5e-5)  # the CUDA EP's LogSoftmax: log(1/3) is 2e-5 off on an H200
    if operator.startswith("MEAN_VARIANCE_NORMALIZATION"):
        return Tolerance(5e-5, 5e-5)
    if operator == "REDUCE":
        return Tolerance(1e-5, 1e-5)  # FLOAT32 sums and products against a FLOAT64 reference
    if operator in _INVERSE_TRIG and ep in ("dml", "directml"):
        # DirectML over Mesa's lavapipe (the Vulkan driver under Wine here) evaluates asin, acos
        # and atan with that driver's approximations: asin(0) = 6.8e-5, atan(1) 1.1e-5 off
        return Tolerance(1e-4, 1e-4)
    if operator in _ELEMENT_WISE or operator.startswith("ELEMENT_WISE_"):
        return Tolerance(1e-5, 1e-5)  # exp, tanh, erf: the EPs' FLOAT32 math libraries
    return Tolerance(2e-6, 2e-6)


@dataclass(frozen=True)
class Comparison:
    max_abs: float
    max_rel: float
    ok: bool


def compare(got: np.ndarray, want: np.ndarray, tol: Tolerance) -> Comparison:
    """Max absolute and relative error (NaN and infinities must match exactly)."""
    if got.shape != want.shape or got.dtype != want.dtype:
        return Comparison(float("inf"), float("inf"), False)
    if want.dtype.kind != "f":
        diff = np.abs(got.astype(object).ravel() - want.astype(object).ravel())  # Python ints: no overflow
        max_abs = float(max(diff, default=0))
        return Comparison(max_abs, 0.0 if max_abs == 0 else float("inf"), max_abs == 0)
    g, w = got.astype(np.float64), want.astype(np.float64)
    same = (g == w) | (np.isnan(g) & np.isnan(w))
    special = ~np.isfinite(g) | ~np.isfinite(w)
    if np.any(special & ~same):
        return Comparison(float("inf"), float("inf"), False)
    with np.errstate(invalid="ignore"):  # inf - inf where both are the same infinity: masked by `same`
        err = np.where(same, 0.0, np.abs(g - w))
        rel = np.where(same, 0.0, err / np.maximum(np.abs(w), np.finfo(np.float64).tiny))
    max_abs, max_rel = float(err.max(initial=0)), float(rel.max(initial=0))
    ok = bool(np.all(err <= tol.atol + tol.rtol * np.abs(np.where(same, 0, w))))
    return Comparison(max_abs, max_rel, ok)
