"""Matrix cases for DML_OPERATOR_LP_NORMALIZATION (dml2onnx/ops/lp_normalization.py): both data
types at every dimension count 1 to 8, Axis first, middle and last, P 1 and 2, Epsilon 1e-5 (the
page's default and the DirectML EP's), 0.5 and 0, with rows of zeros and rows of norm below
Epsilon (where Epsilon decides the result) and large values."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from dml2onnx.cases.common import SIZES, Case, tensor_of
from dml2onnx.core import dtypes

OP = "LP_NORMALIZATION"


def _case(
    rng: np.random.Generator, dtype: dtypes.DataType, shape: tuple[int, ...], axis: int, p: int, eps: float, data: str
) -> Case:
    fields = {
        "InputTensor": tensor_of(dtype, shape),
        "OutputTensor": tensor_of(dtype, shape),
        "Axis": axis,
        "Epsilon": eps,
        "P": p,
    }
    x = rng.standard_normal(shape) * 3
    if data == "small":  # some lines all zero, some with a norm below Epsilon
        x = x * 1e-3
        x[(0,) * axis + (slice(None),) * (len(shape) - axis)] = 0
    elif data == "large":
        x = x * (1e4 if dtype == dtypes.FLOAT16 else 1e18)
        if dtype == dtypes.FLOAT16:
            x = np.clip(x, -60000, 60000)
    name = f"{OP}-{dtype}-{'x'.join(map(str, shape))}-axis{axis}-p{p}-eps{eps}-{data}"
    return Case(name, OP, fields, {"InputTensor": x.astype(dtype.numpy)})


def cases() -> Iterator[Case]:
    rng = np.random.default_rng(22)
    for dtype in dtypes.FLOATS:
        for rank in range(1, 9):
            shape = SIZES[:rank]
            for axis in sorted({0, rank // 2, rank - 1}):
                for p in (1, 2):
                    yield _case(rng, dtype, shape, axis, p, 1e-5, "normal")
        shape = SIZES[:4]
        for p in (1, 2):
            for eps in (1e-5, 0.5, 0.0):
                yield _case(rng, dtype, shape, 3, p, eps, "small")
            yield _case(rng, dtype, shape, 1, p, 1e-5, "large")
