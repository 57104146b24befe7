"""Matrix cases for DML_OPERATOR_ELEMENT_WISE_IF (dml2onnx/ops/element_wise_if.py): every data type
of the page's newest tensor support table (FLOAT64 and the 64-bit integers included) at ranks
1-8, the special values (the types' ends, INT64/UINT64 beyond 2**53, -0, infinities, NaN with a
payload), conditions other than 0 and 1 (2, 7, 128, 255: nonzero is true), and a condition
broadcast through a zero stride."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from dml2onnx.cases.common import SIZES, Case, int_values, tensor_of
from dml2onnx.cases.element_wise import _float_edges, _int_edges
from dml2onnx.core import dtypes, operator_table

OP = "ELEMENT_WISE_IF"
CONDITIONS = np.array([0, 1, 0, 2, 7, 0, 128, 255], np.uint8)


def _edges(dtype: dtypes.DataType) -> np.ndarray:
    if dtype.is_float:
        edges = _float_edges(dtype)
        payload = np.array([0x7FC12345], np.uint32).view(np.float32) if dtype == dtypes.FLOAT32 else None
        if payload is not None:  # a NaN payload moves bit for bit
            edges = np.concatenate([edges, payload])
        return edges
    edges = _int_edges(dtype)
    if dtype.size == 8:  # neighbours a float cast would merge
        near = [2**53, 2**53 + 1, 2**62 + 1, 2**63 - 1]
        edges = np.concatenate([edges, np.array(near, dtype=object).astype(dtype.numpy)])
    return edges


def _values(rng: np.random.Generator, dtype: dtypes.DataType, shape: tuple[int, ...], variant: str) -> np.ndarray:
    if variant == "edges":
        return rng.permutation(_edges(dtype)).reshape(shape)
    if dtype.is_float:
        return (rng.standard_normal(shape) * 3).astype(dtype.numpy)
    return int_values(rng, shape, dtype, variant)


def _case(name: str, dtype: dtypes.DataType, feeds: dict[str, np.ndarray], strides: dict[str, list[int]]) -> Case:
    shape = feeds["ATensor"].shape
    fields: dict[str, Any] = {"ConditionTensor": tensor_of(dtypes.UINT8, shape)}
    fields |= {n: tensor_of(dtype, shape) for n in ("ATensor", "BTensor", "OutputTensor")}
    for n, s in strides.items():
        fields[n] = fields[n] | {"Strides": s}
    return Case(f"{OP}-{dtype}-{name}", OP, fields, feeds)


def cases() -> Iterator[Case]:
    rng = np.random.default_rng(23)
    for dtype in operator_table.OPERATORS[OP].support[0].tensors["OutputTensor"].types:
        shapes = [(f"rank{r}", SIZES[:r], ("extreme", "ties", "bottom")[r % 3]) for r in range(1, 9)]
        shapes.append(("edges", (len(_edges(dtype)),), "edges"))
        for label, shape, variant in shapes:
            a, b = _values(rng, dtype, shape, variant), _values(rng, dtype, shape, variant)
            cond = rng.choice(CONDITIONS, size=shape)
            yield _case(label, dtype, {"ConditionTensor": cond, "ATensor": a, "BTensor": b}, {})
        # the condition read through a zero stride: one row for every row
        shape = (4, 8)
        row = np.broadcast_to(CONDITIONS, shape).copy()
        a, b = _values(rng, dtype, shape, "extreme"), _values(rng, dtype, shape, "extreme")
        yield _case("broadcast", dtype, {"ConditionTensor": row, "ATensor": a, "BTensor": b}, {"ConditionTensor": [0, 1]})
