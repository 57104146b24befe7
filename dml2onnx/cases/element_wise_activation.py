"""Matrix cases for the 17 standalone activations: both float types at ranks 1-8, boundary values
(0, -0, +-each parameter, large magnitudes, FLOAT16's range), more parameter sets (a negative
SHRINK Threshold, SOFTPLUS Steepness below 1 and negative, negative slopes), and RELU / SHRINK on
every integer type they take with the types' ends and ties."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from dml2onnx.cases.common import ACTIVATIONS, SIZES, Case, int_values, tensor_of
from dml2onnx.core import dtypes

INT_TYPES = {
    "ACTIVATION_RELU": (dtypes.INT32, dtypes.INT16, dtypes.INT8),
    "ACTIVATION_SHRINK": (dtypes.INT32, dtypes.INT16, dtypes.INT8, dtypes.UINT32, dtypes.UINT16, dtypes.UINT8),
}
MORE_PARAMS: dict[str, list[dict[str, float]]] = {
    "ACTIVATION_SHRINK": [{"Bias": 0.5, "Threshold": -1.0}, {"Bias": -2.5, "Threshold": 1.5}],
    "ACTIVATION_SOFTPLUS": [{"Steepness": 0.5}, {"Steepness": -1.5}, {"Steepness": 1.0}],
    "ACTIVATION_LEAKY_RELU": [{"Alpha": -0.5}],
    "ACTIVATION_THRESHOLDED_RELU": [{"Alpha": -1.0}],
    "ACTIVATION_HARD_SIGMOID": [{"Alpha": -0.3, "Beta": 0.2}],
    "ACTIVATION_ELU": [{"Alpha": 0.0}],
    "ACTIVATION_SCALED_ELU": [{"Alpha": 1.0, "Gamma": -2.0}],
}
INT_PARAMS = [{"Bias": 0.1, "Threshold": 0.4}, {"Bias": -2.5, "Threshold": 1.5}, {"Bias": 3.0, "Threshold": -1.0}]


def _case(op: str, dtype: dtypes.DataType, x: np.ndarray, params: dict[str, float], name: str) -> Case:
    fields = {"InputTensor": tensor_of(dtype, x.shape), "OutputTensor": tensor_of(dtype, x.shape), **params}
    return Case(f"{op}-{dtype}-{name}", op, fields, {"InputTensor": x})


def _edges(dtype: dtypes.DataType, params: dict[str, float]) -> np.ndarray:
    big = [6e4, -6e4] if dtype == dtypes.FLOAT16 else [1e30, -1e30]
    pool = [0.0, -0.0, 1.0, -1.0, 0.5, 1e4, -1e4, *big]
    for v in params.values():
        pool += [v, -v, float(np.nextafter(np.float32(v), np.float32(np.inf)))]
    return np.array(pool, np.float64).astype(dtype.numpy)


def float_cases() -> Iterator[Case]:
    rng = np.random.default_rng(6)
    for op, params in ACTIVATIONS.items():
        for dtype in dtypes.FLOATS:
            for rank in range(1, 9):
                shape = SIZES[:rank]
                x = (rng.standard_normal(shape) * 4).astype(dtype.numpy)
                yield _case(op, dtype, x, params, f"rank{rank}")
            for i, p in enumerate([params, *MORE_PARAMS.get(op, [])]):
                yield _case(op, dtype, _edges(dtype, p), p, f"edges{i}")


def int_cases() -> Iterator[Case]:
    rng = np.random.default_rng(7)
    for op, types in INT_TYPES.items():
        param_sets = INT_PARAMS if op == "ACTIVATION_SHRINK" else [{}]
        for dtype in types:
            for i, params in enumerate(param_sets):
                for rank in range(1, 9):
                    variant = ("extreme", "ties")[rank % 2]
                    yield _case(op, dtype, int_values(rng, SIZES[:rank], dtype, variant), params, f"p{i}-rank{rank}-{variant}")
                info = np.iinfo(dtype.numpy)
                near = [int(info.min), int(info.min) + 1, -3, -2, -1, 0, 1, 2, 3, int(info.max) - 1, int(info.max)]
                x = np.array([v for v in near if info.min <= v <= info.max], dtype=object).astype(dtype.numpy)
                yield _case(op, dtype, x, params, f"p{i}-edges")


def cases() -> Iterator[Case]:
    yield from float_cases()
    yield from int_cases()
