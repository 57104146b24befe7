"""Matrix cases for HARD_SWISH, SWISH and PARAMETERIZED_RELU (dml2onnx/ops/activation_more.py):
every data type of each page's newest tensor support table at ranks 1-8, the special values
(matrix_element_wise's edges: 0, -0, +-1, halves, large magnitudes, infinities, NaN; the integer
types' ends), more parameter sets (HARD_SWISH's typical 1/6 and 0.5, a negative Alpha, an infinite
one; SWISH's scale 0 and negative), and PARAMETERIZED_RELU's SlopeTensor broadcast through zero
strides."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from dml2onnx.cases.common import Case, tensor_of
from dml2onnx.cases.element_wise import _values, layouts
from dml2onnx.core import operator_table, schema
from dml2onnx.core.schema import Kind
from dml2onnx.ops import activation_more

PARAMS: dict[str, list[dict[str, Any]]] = {
    "ACTIVATION_HARD_SWISH": [
        {"Alpha": 1 / 6, "Beta": 0.5},
        {"Alpha": 0.2, "Beta": 0.5},
        {"Alpha": -0.5, "Beta": 0.25},
        {"Alpha": float("inf"), "Beta": 0.5},
    ],
    "ACTIVATION_SWISH": [
        {"SigmoidInputScale": 1.0},
        {"SigmoidInputScale": 1.702},
        {"SigmoidInputScale": 0.0},
        {"SigmoidInputScale": -2.0},
    ],
    "ACTIVATION_PARAMETERIZED_RELU": [{}],
}


def _cases(op: schema.OperatorSchema, rng: np.random.Generator) -> Iterator[Case]:
    inputs = [f.name for f in op.fields if f.kind is Kind.INPUT]
    for dtype in op.support[0].tensors["OutputTensor"].types:
        for label, shape, variant in layouts(dtype):
            feeds = {n: _values(rng, dtype, shape, variant) for n in inputs}
            tensors = {n: tensor_of(dtype, feeds[inputs[0]].shape) for n in [*inputs, "OutputTensor"]}
            for i, params in enumerate(PARAMS[op.name]):
                yield Case(f"{op.name}-{dtype}-{label}-p{i}", op.name, tensors | params, feeds)
        if "SlopeTensor" in inputs:  # one slope per channel, broadcast through zero strides
            x = _values(rng, dtype, (2, 3, 2, 2), "extreme" if not dtype.is_float else "random")
            slope = np.broadcast_to(_values(rng, dtype, (1, 3, 1, 1), "extreme" if not dtype.is_float else "random"), x.shape)
            fields = {
                "InputTensor": tensor_of(dtype, x.shape),
                "SlopeTensor": tensor_of(dtype, x.shape) | {"Strides": [0, 1, 0, 0]},
                "OutputTensor": tensor_of(dtype, x.shape),
            }
            yield Case(
                f"{op.name}-{dtype}-broadcast", op.name, fields, {"InputTensor": x, "SlopeTensor": np.ascontiguousarray(slope)}
            )


def cases() -> Iterator[Case]:
    rng = np.random.default_rng(23)
    for name in activation_more.ROWS:
        yield from _cases(operator_table.OPERATORS[name], rng)
