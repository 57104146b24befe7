"""Matrix cases for DML_OPERATOR_LOCAL_RESPONSE_NORMALIZATION (dml2onnx/ops/local_response_normalization.py):
both data types at the page's one dimension count (4), across and within channels, LocalSize 1
to 7 (odd and even: the window's floor/ceil halves) and wider than the tensor (every element's
window clipped at both edges), the page's defaults (Alpha 1e-4, Beta 0.75, Bias 1) and larger
parameters (Alpha 2, Beta 0.5 and 1.5, Bias 0.5, Beta 0: no normalization), and zeros."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from dml2onnx.cases.common import Case, tensor_of
from dml2onnx.core import dtypes

OP = "LOCAL_RESPONSE_NORMALIZATION"
SHAPE = (2, 5, 3, 4)
PARAMETERS = ((1e-4, 0.75, 1.0), (2.0, 0.5, 0.5), (1.0, 1.5, 2.0))


def _case(
    rng: np.random.Generator, dtype: dtypes.DataType, cross: bool, size: int, params: tuple[float, float, float], data: str
) -> Case:
    alpha, beta, bias = params
    fields = {
        "InputTensor": tensor_of(dtype, SHAPE),
        "OutputTensor": tensor_of(dtype, SHAPE),
        "CrossChannel": cross,
        "LocalSize": size,
        "Alpha": alpha,
        "Beta": beta,
        "Bias": bias,
    }
    x = np.zeros(SHAPE) if data == "zeros" else rng.standard_normal(SHAPE) * 3
    name = f"{OP}-{dtype}-cross{int(cross)}-size{size}-a{alpha}-b{beta}-k{bias}-{data}"
    return Case(name, OP, fields, {"InputTensor": x.astype(dtype.numpy)})


def cases() -> Iterator[Case]:
    rng = np.random.default_rng(21)
    for dtype in dtypes.FLOATS:
        for cross in (True, False):
            for i, size in enumerate((1, 2, 3, 4, 5, 7, 9)):
                yield _case(rng, dtype, cross, size, PARAMETERS[i % len(PARAMETERS)], "normal")
            yield _case(rng, dtype, cross, 3, (1.0, 0.0, 1.0), "normal")
            yield _case(rng, dtype, cross, 5, PARAMETERS[0], "zeros")
            for params in PARAMETERS[1:]:  # the sizes above took PARAMETERS[1] at 2 and 5
                yield _case(rng, dtype, cross, 6, params, "normal")
