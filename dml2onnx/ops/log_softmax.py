"""DML_OPERATOR_ACTIVATION_LOG_SOFTMAX: log-softmax of each row (the last dimension). LOG_SOFTMAX1
with Axes {DimensionCount - 1}, as its page says."""

from __future__ import annotations

from ..desc import OperatorDesc
from . import hardmax, log_softmax1

validate = hardmax.validate  # effective rank at most 2; same DataType and Sizes
lower = log_softmax1.lower  # over hardmax1.reduced_axes: the last dimension
reference = log_softmax1.reference


def variant_applies(desc: OperatorDesc, variant: str, opset: int) -> bool:
    """Every candidate: one axis, so ArgMax + GatherElements finds the maximum too."""
    return True
