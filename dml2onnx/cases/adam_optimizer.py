"""Matrix cases for DML_OPERATOR_ADAM_OPTIMIZER (dml2onnx/ops/adam_optimizer.py): both data types
of the page's table (4 dimensions, the only count it allows), training steps 0 (Alpha 1), 1, 2, 10,
1000, 2**31 + 5 and 2**32 - 1 (UINT32), Beta1 and Beta2 typical, 0 and 1/2, LearningRate of either
sign, Epsilon 0 to 1e-3, a broadcast gradient (Strides 0); and special values: Beta1 = 1
(1 - Beta1^T = 0: infinite Alpha), a negative Beta (NaN Beta^T), NaN and infinite gradients. The
inputs keep to tolerances.adam's bounds (`feeds_for`)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from dml2onnx.cases.common import Case, tensor_of
from dml2onnx.core import dtypes
from dml2onnx.lowering import tolerances
from dml2onnx.ops.adam_optimizer import PARAMETERS, STEP

OP = "ADAM_OPTIMIZER"
STEPS = (0, 1, 2, 10, 1000, 2**31 + 5, 2**32 - 1)


def fields_for(
    dtype: dtypes.DataType,
    shape: tuple[int, ...],
    beta1: float = 0.9,
    beta2: float = 0.999,
    rate: float = 0.01,
    epsilon: float = 1e-8,
) -> dict[str, Any]:
    f: dict[str, Any] = {n: tensor_of(dtype, shape) for n in PARAMETERS} | {STEP: tensor_of(dtypes.UINT32, (1,) * len(shape))}
    return f | {"LearningRate": rate, "Beta1": beta1, "Beta2": beta2, "Epsilon": epsilon}


def feeds_for(rng: np.random.Generator, dtype: dtypes.DataType, shape: tuple[int, ...], step: int) -> dict[str, np.ndarray]:
    """|X| <= ADAM_MAGNITUDE, |M|, |G| <= 1, V in [1/4, 1]."""
    t = dtype.numpy
    feeds = {
        "InputParametersTensor": rng.uniform(-tolerances.ADAM_MAGNITUDE, tolerances.ADAM_MAGNITUDE, shape).astype(t),
        "InputFirstMomentTensor": rng.uniform(-1, 1, shape).astype(t),
        "InputSecondMomentTensor": rng.uniform(0.25, 1, shape).astype(t),
        "GradientTensor": rng.uniform(-1, 1, shape).astype(t),
    }
    return feeds | {STEP: np.full((1,) * len(shape), step, np.uint32)}


def _case(
    rng: np.random.Generator,
    dtype: dtypes.DataType,
    shape: tuple[int, ...],
    step: int,
    data: str = "normal",
    **hyper: float,
) -> Case:
    fields, feeds = fields_for(dtype, shape, **hyper), feeds_for(rng, dtype, shape, step)
    g = feeds["GradientTensor"]
    if data == "broadcast":  # one gradient row read for every row (Strides 0)
        fields["GradientTensor"]["Strides"] = [0, 0, 0, 1]
        feeds["GradientTensor"] = np.ascontiguousarray(np.broadcast_to(g[:1, :1, :1], shape))
    elif data == "special":
        g[(0,) * len(shape)], g[(0, 0, 0, 1)] = np.nan, np.inf
    name = "-".join(f"{k}{v}" for k, v in hyper.items())
    return Case(f"{OP}-{dtype}-{'x'.join(map(str, shape))}-step{step}-{name or 'typical'}-{data}", OP, fields, feeds)


def cases() -> Iterator[Case]:
    rng = np.random.default_rng(29)
    for dtype in dtypes.FLOATS:
        for step in STEPS:
            yield _case(rng, dtype, (2, 3, 4, 5), step)
        for shape in ((1, 1, 1, 1), (1, 1, 2, 3), (3, 1, 4, 1)):
            yield _case(rng, dtype, shape, 3)
        for hyper in (
            {"beta1": 0.0, "beta2": 0.5},
            {"beta1": 0.5, "beta2": 0.75, "rate": -0.1},
            {"rate": 0.1, "epsilon": 0.0},
            {"rate": 0.1, "epsilon": 1e-3},
            {"beta1": 0.0, "beta2": 0.999, "rate": 0.001},
        ):
            for step in (0, 1, 4):
                yield _case(rng, dtype, (2, 3, 4, 5), step, **hyper)
        yield _case(rng, dtype, (2, 3, 4, 5), 5, "broadcast")
        yield _case(rng, dtype, (2, 3, 4, 5), 5, "special")
        for hyper in ({"beta1": 1.0}, {"beta1": -0.5}, {"beta2": -0.25}):
            for step in (0, 2):
                yield _case(rng, dtype, (1, 2, 2, 3), step, **hyper)
