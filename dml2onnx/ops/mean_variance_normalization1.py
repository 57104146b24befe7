"""DML_OPERATOR_MEAN_VARIANCE_NORMALIZATION1: FusedActivation(Scale * (x - mean) /
sqrt(variance + Epsilon) + Bias) over the joint Axes; without NormalizeVariance,
Scale * (x - mean) + Bias. The lowering is the original MVN's (mean_variance_normalization.py),
which this operator generalizes: Axes {2, 3} is CrossChannel FALSE, {1, 2, 3} TRUE."""

from __future__ import annotations

from .mean_variance_normalization import CANDIDATES, DML_PREFERENCE, applies, examples, lower, reference, validate

__all__ = ["CANDIDATES", "DML_PREFERENCE", "applies", "examples", "lower", "reference", "validate"]
