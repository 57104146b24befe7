"""Matrix cases for RELU_GRAD, CLIP_GRAD and CLIP_GRAD1 (dml2onnx/ops/gradients.py): every data type
of each page's newest tensor support table at ranks 1-8, the special values of matrix_element_wise
(NaN and infinities in both InputTensor and InputGradientTensor; the integer types' ends), bounds
that the edges hit exactly (the gradient is 0 at Min and Max), Min > Max, CLIP_GRAD's FLOAT bounds
on integers (truncated, saturated) and CLIP_GRAD1's exact integers past 2**53."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from dml2onnx.cases.common import Case, tensor_of
from dml2onnx.cases.element_wise import _values, layouts
from dml2onnx.core import dtypes, operator_table, schema
from dml2onnx.core.schema import Kind
from dml2onnx.ops import gradients


def _params(op: str, dtype: dtypes.DataType) -> list[dict[str, Any]]:
    if op == "ELEMENT_WISE_CLIP_GRAD":
        return [{"Min": -1.0, "Max": 2.5}, {"Min": 3.0, "Max": -1.0}, {"Min": -2.5, "Max": 1e10}]
    if op == "ELEMENT_WISE_CLIP_GRAD1":
        if dtype.is_float:
            bounds = [(-1.0, 2.5), (3.0, -1.0)]
        elif dtype.size == 8:
            bounds = [(2**53 + 1, 2**62 + 3), (5, 2**53 + 2)] if dtype.numpy.kind == "u" else [(-2, 2**53 + 2), (5, -3)]
        else:
            bounds = [(1, 3), (3, 1)] if dtype.numpy.kind == "u" else [(-2, 3), (3, -2)]
        return [{"MinMaxDataType": dtype.name, "Min": a, "Max": b} for a, b in bounds]
    return [{}]


def _cases(op: schema.OperatorSchema, rng: np.random.Generator) -> Iterator[Case]:
    inputs = [f.name for f in op.fields if f.kind is Kind.INPUT]
    for dtype in op.support[0].tensors["OutputGradientTensor"].types:
        for label, shape, variant in layouts(dtype):
            feeds = {n: _values(rng, dtype, shape, variant) for n in inputs}
            tensors = {n: tensor_of(dtype, feeds[inputs[0]].shape) for n in [*inputs, "OutputGradientTensor"]}
            for i, params in enumerate(_params(op.name, dtype)):
                suffix = f"-p{i}" if params else ""
                yield Case(f"{op.name}-{dtype}-{label}{suffix}", op.name, tensors | params, feeds)


def cases() -> Iterator[Case]:
    rng = np.random.default_rng(29)
    for name in gradients.ROWS:
        yield from _cases(operator_table.OPERATORS[name], rng)
