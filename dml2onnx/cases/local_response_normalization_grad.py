"""Matrix cases for DML_OPERATOR_LOCAL_RESPONSE_NORMALIZATION_GRAD (dml2onnx/ops/
local_response_normalization_grad.py): both data types, across and within channels, LocalSize 1
to 6 (odd: the exact derivative; even: DirectML's unmirrored second sum), the page's recommended
constants and others (Beta negative, Bias below 1); |x| <= LRN_GRAD_MAGNITUDE, |gradient| <= 1."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from dml2onnx.cases.common import Case, tensor_of
from dml2onnx.core import operator_table
from dml2onnx.lowering.tolerances import LRN_GRAD_MAGNITUDE, LRN_GRAD_TERMS
from dml2onnx.ops.local_response_normalization_grad import window_sums

SHAPE = (2, 5, 3, 4)
CONSTANTS = ((1e-4, 0.75, 1.0), (0.5, 0.9, 0.5), (2.0, -0.5, 2.0))  # (Alpha, Beta, Bias)


def cases() -> Iterator[Case]:
    rng = np.random.default_rng(144)
    op = "LOCAL_RESPONSE_NORMALIZATION_GRAD"
    for dtype in operator_table.OPERATORS[op].support[0].tensors["InputTensor"].types:
        for cross in (True, False):
            for size in range(1, 7):
                for k, (alpha, beta, bias) in enumerate(CONSTANTS):
                    if size > 3 and k != size % 3:
                        continue  # one set of constants for the larger windows
                    fields = {
                        name: tensor_of(dtype, SHAPE) for name in ("InputTensor", "InputGradientTensor", "OutputGradientTensor")
                    } | {"CrossChannel": cross, "LocalSize": size, "Alpha": alpha, "Beta": beta, "Bias": bias}
                    feeds = {
                        "InputTensor": rng.uniform(-LRN_GRAD_MAGNITUDE, LRN_GRAD_MAGNITUDE, SHAPE).astype(dtype.numpy),
                        "InputGradientTensor": rng.uniform(-1, 1, SHAPE).astype(dtype.numpy),
                    }
                    assert terms(feeds, cross, size, alpha, beta, bias) <= LRN_GRAD_TERMS
                    yield Case(f"{op}-{dtype}-cross{int(cross)}-size{size}-constants{k}", op, fields, feeds)


def terms(feeds: dict[str, np.ndarray], cross: bool, size: int, alpha: float, beta: float, bias: float) -> float:
    """The largest |g / D^Beta| plus the largest |2 Alpha Beta / LocalSize * x * R| (tolerances.py)."""
    x, g = (feeds[k].astype(np.float64) for k in ("InputTensor", "InputGradientTensor"))
    d = bias + alpha / size * window_sums(x * x, cross, size)
    back = 2 * alpha * beta / size * x * window_sums(g * x / d ** (beta + 1), cross, size)
    return float(np.abs(g / d**beta).max() + np.abs(back).max())
