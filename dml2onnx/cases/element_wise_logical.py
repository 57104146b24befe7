"""Matrix cases for the comparisons and logical operators (dml2onnx/ops/element_wise_logical.py):
every input data type of each page's newest tensor support table at ranks 1-8 (UINT8 output, and
the page's other output types at rank 3 and on the edges), the special values (the types' ends,
INT64/UINT64 beyond 2**53 one apart, -0 and +0, infinities, NaN), equal pairs as well as unequal
ones, truth values other than 0 and 1 for the logical operators, and every InfinityMode."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from dml2onnx.cases.common import SIZES, Case, int_values, tensor_of
from dml2onnx.cases.element_wise import _float_edges, _int_edges
from dml2onnx.core import dtypes, operator_table, schema
from dml2onnx.core.schema import Kind
from dml2onnx.ops.element_wise_logical import ROWS

MODES = ("EITHER", "POSITIVE", "NEGATIVE")


def _edges(dtype: dtypes.DataType) -> np.ndarray:
    if dtype.is_float:
        return _float_edges(dtype)
    edges = _int_edges(dtype)
    if dtype.size == 8:  # neighbours a float cast would merge
        near = [2**53, 2**53 + 1, 2**62 + 1, 2**62, 2**31, 2**31 - 1, 2**32 + 1, 2**32]
        edges = np.concatenate([edges, np.array(near, dtype=object).astype(dtype.numpy)])
    return edges


def _values(rng: np.random.Generator, dtype: dtypes.DataType, shape: tuple[int, ...], variant: str) -> np.ndarray:
    if variant == "edges":
        return _edges(dtype)
    if dtype.is_float:  # few distinct values: equal pairs occur
        pool = np.array([0.0, -0.0, 1.0, -1.5, np.inf, -np.inf, np.nan], np.float64)
        return rng.choice(pool, size=shape).astype(dtype.numpy)
    return int_values(rng, shape, dtype, variant)


def _other(rng: np.random.Generator, a: np.ndarray) -> np.ndarray:
    """The second input: a shuffle of the first, so that equal and unequal pairs both occur."""
    flat = a.ravel().copy()
    keep = rng.random(flat.size) < 0.3
    flat[~keep] = rng.permutation(flat[~keep])
    return flat.reshape(a.shape)


def _cases(op: schema.OperatorSchema, rng: np.random.Generator) -> Iterator[Case]:
    inputs = [f.name for f in op.fields if f.kind is Kind.INPUT]
    table = op.support[0].tensors
    outs = table["OutputTensor"].types
    logical = op.name.startswith("ELEMENT_WISE_LOGICAL_") and table[inputs[0]].types == outs  # AND/OR/XOR/NOT
    modes = MODES if any(f.name == "InfinityMode" for f in op.fields) else (None,)
    for dtype in table[inputs[0]].types:
        shapes = [(f"rank{r}", SIZES[:r], ("extreme", "ties", "bottom")[r % 3]) for r in range(1, 9)]
        shapes.append(("edges", (len(_edges(dtype)),), "edges"))
        for label, shape, variant in shapes:
            first = _values(rng, dtype, shape, variant)
            if logical:  # truth values: 0, 1 and others (DirectML reads nonzero as true)
                first = rng.choice(np.array([0, 1, 2, int(np.iinfo(dtype.numpy).max)]), size=shape).astype(dtype.numpy)
            feeds = {n: first if i == 0 else _other(rng, first) for i, n in enumerate(inputs)}
            for out in outs if logical or label in ("rank3", "edges") else outs[-1:]:
                if logical and out != dtype:
                    continue
                fields: dict[str, Any] = {n: tensor_of(dtype, first.shape) for n in inputs}
                fields["OutputTensor"] = tensor_of(out, first.shape)
                for mode in modes if label in ("rank2", "edges") else modes[:1]:
                    extra = {} if mode is None else {"InfinityMode": mode}
                    suffix = f"-{out}" + ("" if mode is None else f"-{mode}")
                    yield Case(f"{op.name}-{dtype}-{label}{suffix}", op.name, fields | extra, feeds)


def cases() -> Iterator[Case]:
    rng = np.random.default_rng(19)
    for name in ROWS:
        yield from _cases(operator_table.OPERATORS[name], rng)
