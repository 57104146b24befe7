"""DML_OPERATOR_MEAN_VARIANCE_NORMALIZATION2: MVN1 with NormalizeVariance split in two flags.
The page says "TBD" for both; the semantics are inferred from ONNX Runtime's DirectML EP, which
sets UseMean = !simplified (RMSNorm) and UseVariance = true:
  UseMean, UseVariance: Scale * (x - mean) / sqrt(variance + Epsilon) + Bias
  UseMean only:         Scale * (x - mean) + Bias
  UseVariance only:     Scale * x / sqrt(mean(x^2) + Epsilon) + Bias  (RMSNorm)
  neither:              Scale * x + Bias
then FusedActivation, over the joint Axes. The lowering is shared (mean_variance_normalization.py)."""

from __future__ import annotations

from .mean_variance_normalization import CANDIDATES, DML_PREFERENCE, applies, examples, lower, reference, validate

__all__ = ["CANDIDATES", "DML_PREFERENCE", "applies", "examples", "lower", "reference", "validate"]
