"""Matrix cases for DML_OPERATOR_BATCH_NORMALIZATION (dml2onnx/ops/batch_normalization.py): both
data types of the page's newest table at every dimension count 1 to 8, Mean/Variance/Scale/Bias
per channel, per element, all broadcast (sizes of 1: strides of 0) and mixed, Spatial TRUE and
FALSE, Epsilon 0 (over non-zero variances), 1e-5 and 0.5 with zero variances, a large mean, and
every fused activation."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from dml2onnx.cases.common import ACTIVATIONS, SIZES, Case, tensor_of
from dml2onnx.core import dtypes

OP = "BATCH_NORMALIZATION"
PARAMETERS = ("MeanTensor", "VarianceTensor", "ScaleTensor", "BiasTensor")


def _sizes(shape: tuple[int, ...], kind: str) -> tuple[int, ...]:
    rank = len(shape)
    if kind == "channel":  # [1, C, 1, ...] (at rank 1: the one dimension)
        return tuple(s if i == min(1, rank - 1) else 1 for i, s in enumerate(shape))
    if kind == "element":  # [1, C, H, W, ...]
        return tuple(1 if i == 0 and rank > 1 else s for i, s in enumerate(shape))
    if kind == "full":
        return shape
    return (1,) * rank  # "scalar"


PATTERNS = {
    "channel": ("channel",) * 4,
    "element": ("element",) * 4,
    "scalar": ("scalar",) * 4,
    "mixed": ("channel", "element", "scalar", "full"),
}


def _case(
    rng: np.random.Generator,
    dtype: dtypes.DataType,
    shape: tuple[int, ...],
    pattern: str,
    spatial: bool,
    epsilon: float = 1e-5,
    activation: str | None = None,
    data: str = "normal",
) -> Case:
    fields: dict[str, Any] = {"InputTensor": tensor_of(dtype, shape), "OutputTensor": tensor_of(dtype, shape)}
    x = rng.standard_normal(shape) * 3 + (100 if data == "offset" else 0)
    inputs = {"InputTensor": x.astype(dtype.numpy)}
    for name, kind in zip(PARAMETERS, PATTERNS[pattern], strict=True):
        sizes = _sizes(shape, kind)
        fields[name] = tensor_of(dtype, sizes)
        if name == "MeanTensor":
            v = rng.standard_normal(sizes) + (100 if data == "offset" else 0)
        elif name == "VarianceTensor":
            v = np.zeros(sizes) if data == "zero_variance" else rng.uniform(0.1, 4, sizes)
        else:
            v = rng.uniform(-2, 2, sizes)
        inputs[name] = v.astype(dtype.numpy)
    fields |= {"Spatial": spatial, "Epsilon": epsilon}
    if activation:
        fields["FusedActivation"] = {"Type": activation, **ACTIVATIONS[activation]}
    parts = [OP, str(dtype), "x".join(map(str, shape)), pattern, f"spatial{int(spatial)}", f"eps{epsilon}", data]
    return Case("-".join(parts + ([activation] if activation else [])), OP, fields, inputs)


def cases() -> Iterator[Case]:
    rng = np.random.default_rng(20)
    for dtype in dtypes.FLOATS:
        for rank in range(1, 9):
            for i, pattern in enumerate(PATTERNS):
                yield _case(rng, dtype, SIZES[:rank], pattern, spatial=(rank + i) % 2 == 0)
        shape = SIZES[:4]
        for spatial in (True, False):
            yield _case(rng, dtype, shape, "channel", spatial, epsilon=0.0)
            yield _case(rng, dtype, shape, "channel", spatial, data="offset")
            for eps in (1e-5, 0.5):
                yield _case(rng, dtype, shape, "element" if spatial else "channel", spatial, eps, data="zero_variance")
        for activation in ACTIVATIONS:
            yield _case(rng, dtype, shape, "channel", True, activation=activation)
