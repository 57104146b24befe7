"""Matrix cases for DML_OPERATOR_DIAGONAL_MATRIX and DIAGONAL_MATRIX1 (dml2onnx/ops/diagonal_matrix.py):
every output type of each page's newest tensor support table at 2 to 4 dimensions (a batch of
matrices, not square), offsets on and beyond the matrix and the INT extremes, DIAGONAL_MATRIX's
FLOAT Value as each type converts it (fractions, negatives into unsigned types, out of range,
NaN), DIAGONAL_MATRIX1 with and without an InputTensor, fill ranges forward, inverted (Begin >
End), empty (Begin == End) and unbounded (INT_MIN, INT_MAX: Trilu's forms), and typed Values
(the type's ends, beyond 2**53, -0, NaN)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from dml2onnx.cases.common import SIZES, Case, tensor_of, values
from dml2onnx.core import dtypes, operator_table

INT_MIN, INT_MAX = -(2**31), 2**31 - 1
FLOAT_VALUES = (1.0, -0.0, 2.5, float("nan"), 1e10)
INT_VALUES = (1.0, -10.6, 300.0, 1e10, float("nan"), -1.0, 2.0**63)
OFFSETS = (0, 1, -1)
EDGE_OFFSETS = (5, -5, INT_MAX, INT_MIN)
RANGES = ((0, 1), (0, 3), (1, 0), (3, -1), (2, 2), (INT_MIN, INT_MAX), (-1, INT_MAX), (INT_MIN, 1), (INT_MAX, INT_MIN))


def _typed_values(dtype: dtypes.DataType) -> list[Any]:
    """DIAGONAL_MATRIX1's Values: JSON numbers of the type (or "nan"), and 0 (Trilu's form)."""
    if dtype.is_float:
        return [7.5, -0.0, "nan", 0]
    info = np.iinfo(dtype.numpy)
    typed = [int(info.max), int(info.min), 0]
    if dtype.size == 8:
        typed.append(2**53 + 1)
    return typed


def _shape(rank: int) -> tuple[int, ...]:
    return SIZES[:rank] if rank > 2 else (3, 4)


def _diagonal_matrix(dtype: dtypes.DataType) -> Iterator[Case]:
    pool = FLOAT_VALUES if dtype.is_float else INT_VALUES
    op = "DIAGONAL_MATRIX"
    for i, rank in enumerate((2, 3, 4)):
        for j, offset in enumerate(OFFSETS):
            v = pool[(i * len(OFFSETS) + j) % len(pool)]
            shape = _shape(rank)
            fields = {"OutputTensor": tensor_of(dtype, shape), "Offset": offset, "Value": v}
            yield Case(f"{op}-{dtype}-rank{rank}-offset{offset}-value{v}", op, fields, {})
    for offset in EDGE_OFFSETS:  # beyond the matrix (taller than wide), and the INT extremes
        fields = {"OutputTensor": tensor_of(dtype, (4, 3)), "Offset": offset, "Value": 1.0}
        yield Case(f"{op}-{dtype}-edges-offset{offset}", op, fields, {})


def _diagonal_matrix1(rng: np.random.Generator, dtype: dtypes.DataType) -> Iterator[Case]:
    op = "DIAGONAL_MATRIX1"
    typed = _typed_values(dtype)
    for k, (begin, end) in enumerate(RANGES):
        rank = (2, 3, 4)[k % 3]
        shape = _shape(rank)
        for with_input in (True, False):
            v = 0 if begin == INT_MIN or end == INT_MAX else typed[(k + with_input) % len(typed)]
            fields: dict[str, Any] = {
                "OutputTensor": tensor_of(dtype, shape),
                "ValueDataType": dtype.name,
                "Value": v,
                "DiagonalFillBegin": begin,
                "DiagonalFillEnd": end,
            }
            feeds = {}
            if with_input:
                fields["InputTensor"] = tensor_of(dtype, shape)
                feeds["InputTensor"] = values(rng, shape, dtype, "extreme")
            name = f"{op}-{dtype}-rank{rank}-{begin}-{end}-value{v}-{'input' if with_input else 'none'}"
            yield Case(name, op, fields, feeds)


def cases() -> Iterator[Case]:
    rng = np.random.default_rng(29)
    for dtype in operator_table.OPERATORS["DIAGONAL_MATRIX"].support[0].tensors["OutputTensor"].types:
        yield from _diagonal_matrix(dtype)
    for dtype in operator_table.OPERATORS["DIAGONAL_MATRIX1"].support[0].tensors["OutputTensor"].types:
        yield from _diagonal_matrix1(rng, dtype)
