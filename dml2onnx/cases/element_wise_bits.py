"""Matrix cases for the bitwise operators (dml2onnx/ops/element_wise_bits.py): every data type of
each page's newest tensor support table but FLOAT64 (refused) at ranks 1-8, the integer types'
ends and values beyond 2**53, the floats' encodings (random bit patterns, +-0, subnormals, the
largest finite values, infinities, the canonical NaN), both BIT_COUNT output types, and for the
shifts amounts at and past the width, past 32, and with high bits set."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from dml2onnx.cases.common import SIZES, Case, int_values, tensor_of
from dml2onnx.core import dtypes, operator_table, schema
from dml2onnx.core.schema import Kind
from dml2onnx.ops.element_wise_bits import ROWS


def _edges(dtype: dtypes.DataType) -> np.ndarray:
    info = np.iinfo(dtype.numpy)
    pool = [int(info.min), int(info.min) + 1, -2, -1, 0, 1, 2, 0x55, 0xAA, int(info.max) - 1, int(info.max)]
    if dtype.size == 8:
        pool += [2**53 + 1, 2**62 + 3, -(2**53) - 1]
    return np.array([v for v in pool if info.min <= v <= info.max], dtype=object).astype(dtype.numpy)


def _float_edges(dtype: dtypes.DataType) -> np.ndarray:
    fi = np.finfo(dtype.numpy)
    tiny, sub, top = float(fi.tiny), float(fi.smallest_subnormal), float(fi.max)
    pool = [0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 1e-7, tiny, -tiny, sub, -sub, tiny * 0.75, top, -top, np.inf, -np.inf, np.nan]
    return np.array(pool, np.float64).astype(dtype.numpy)


def _encodings(rng: np.random.Generator, dtype: dtypes.DataType, shape: tuple[int, ...]) -> np.ndarray:
    """Random bit patterns of a float type (NaNs made the canonical NaN: ONNX cannot see payloads)."""
    raw = rng.integers(0, 2 ** (8 * dtype.size), size=shape, dtype=np.uint64).astype(f"u{dtype.size}")
    x = raw.view(dtype.numpy)
    return np.where(np.isnan(x), np.nan, x).astype(dtype.numpy)


def _amounts(rng: np.random.Generator, dtype: dtypes.DataType, shape: tuple[int, ...]) -> np.ndarray:
    bits = dtype.size * 8
    pool = [0, 1, 3, bits - 1, bits, bits + 1, 31, 32, 33, 63, 64, 65, 100, 255, 2**32 + 5, 2**63 + 40, 2**64 - 1]
    pool = [v for v in pool if v <= np.iinfo(dtype.numpy).max]
    return np.array(rng.choice(np.array(pool, dtype=object), size=shape), dtype=object).astype(dtype.numpy)


def _cases(op: schema.OperatorSchema, rng: np.random.Generator) -> Iterator[Case]:
    inputs = [f.name for f in op.fields if f.kind is Kind.INPUT]
    table = op.support[0].tensors
    outputs = [t for t in table["OutputTensor"].types] if op.name.endswith("COUNT") else [None]
    for dtype in table[inputs[0]].types:
        if dtype == dtypes.FLOAT64:
            continue
        edges = _float_edges(dtype) if dtype.is_float else _edges(dtype)
        for label, shape in [*[(f"rank{r}", SIZES[:r]) for r in range(1, 9)], ("edges", (len(edges),))]:
            variant = ("extreme", "ties", "bottom")[len(shape) % 3]
            if label == "edges":
                a = rng.permutation(edges)
            else:
                a = _encodings(rng, dtype, shape) if dtype.is_float else int_values(rng, shape, dtype, variant)
            feeds = {inputs[0]: a}
            if len(inputs) == 2:
                if "SHIFT" in op.name:
                    other = _amounts(rng, dtype, a.shape)
                elif dtype.is_float:
                    other = rng.permutation(edges) if label == "edges" else _encodings(rng, dtype, a.shape)
                else:
                    other = int_values(rng, a.shape, dtype, "extreme")
                feeds[inputs[1]] = other
            for out in outputs:
                out = out or dtype
                fields: dict[str, Any] = {n: tensor_of(dtype, a.shape) for n in inputs} | {
                    "OutputTensor": tensor_of(out, a.shape)
                }
                suffix = f"-{out}" if op.name.endswith("COUNT") else ""
                yield Case(f"{op.name}-{dtype}{suffix}-{label}", op.name, fields, feeds)


def cases() -> Iterator[Case]:
    rng = np.random.default_rng(19)
    for name in ROWS:
        yield from _cases(operator_table.OPERATORS[name], rng)
