"""DML_OPERATOR_ACTIVATION_LOG_SOFTMAX: log-softmax of each row (the last dimension). LOG_SOFTMAX1
with Axes {DimensionCount - 1}, as its page says."""

from __future__ import annotations

from . import hardmax, log_softmax1

validate = hardmax.validate  # effective rank at most 2; same DataType and Sizes
lower = log_softmax1.lower  # over hardmax1.reduced_axes: the last dimension
reference = log_softmax1.reference
examples = hardmax.examples


# log_softmax1's candidates but last_axis (one axis, the last: in_place's graph); all apply
CANDIDATES = ("in_place", "argmax_max", "reduce_chain")
