"""One module per DirectML operator, each with validate(desc), lower(desc, builder, inputs)
and reference(desc, inputs)."""

from __future__ import annotations

from types import ModuleType

from . import argmax, hardmax1, log_softmax1, mean_variance_normalization, one_hot

MODULES: dict[str, ModuleType] = {
    "ACTIVATION_HARDMAX1": hardmax1,
    "ACTIVATION_LOG_SOFTMAX1": log_softmax1,
    "MEAN_VARIANCE_NORMALIZATION": mean_variance_normalization,
    "ARGMAX": argmax,
    "ONE_HOT": one_hot,
}
