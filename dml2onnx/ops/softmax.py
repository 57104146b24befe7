"""DML_OPERATOR_ACTIVATION_SOFTMAX: softmax of each row (the last dimension). SOFTMAX1 with Axes
{DimensionCount - 1}, as its page says."""

from __future__ import annotations

from . import hardmax, softmax1

validate = hardmax.validate  # effective rank at most 2; same DataType and Sizes
lower = softmax1.lower  # over hardmax1.reduced_axes: the last dimension
reference = softmax1.reference
examples = hardmax.examples
CANDIDATES = ("in_place", "reduce_chain")  # one axis, the last: last_axis is in_place
applies = softmax1.applies
