"""Matrix cases for ELEMENT_WISE_POW and ELEMENT_WISE_CONSTANT_POW (dml2onnx/ops/element_wise_pow.py):
every data type of each page's newest tensor support table at ranks 1-8; the edges as every pair of
a special base and a special exponent (+-0, +-1, halves, integers odd and even, +-inf, NaN, huge,
2**31 and beyond, whose parity DirectML reads saturated; integers: the types' ends, negative and
large exponents); CONSTANT_POW with each special Exponent on the edges; ScaleBias (both of POW's
inputs, integers included) at rank 3 and on the edges."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from dml2onnx.cases.common import SIZES, Case, int_values, tensor_of
from dml2onnx.cases.element_wise import INT_SCALE_BIAS, SCALE_BIAS, _float_edges, _int_edges
from dml2onnx.core import dtypes, operator_table

CONSTANT_EXPONENTS = (2.0, 3.0, 0.5, -1.0, -2.0, 0.0, 1.0 / 3.0, float("inf"), float("-inf"), float("nan"), 2.0**31, 1e10)


def _float_exponents(dtype: dtypes.DataType) -> list[float]:
    big = [6e4, -6e4] if dtype == dtypes.FLOAT16 else [2.0**31, -(2.0**31), 1e10, 3e9]
    return [0.0, -0.0, 1.0, -1.0, 2.0, -2.0, 3.0, -3.0, 0.5, -0.5, 2.5, 1 / 3, 7.0, np.inf, -np.inf, np.nan, *big]


def _int_exponents(dtype: dtypes.DataType) -> list[int]:
    info = np.iinfo(dtype.numpy)
    near = [0, 1, 2, 3, 7, 8, 15, 16, 31, 32, 33, int(info.max), int(info.max) - 1, -1, -2, -3, int(info.min), int(info.min) + 1]
    return list(dict.fromkeys(v for v in near if info.min <= v <= info.max))


def _edge_pairs(dtype: dtypes.DataType) -> tuple[np.ndarray, np.ndarray]:
    """Every special base with every special exponent."""
    if dtype.is_float:
        bases, exps = _float_edges(dtype), np.array(_float_exponents(dtype), np.float64).astype(dtype.numpy)
    else:
        bases, exps = _int_edges(dtype), np.array(_int_exponents(dtype), dtype=object).astype(dtype.numpy)
    x, e = np.meshgrid(bases, exps, indexing="ij")
    return x.ravel(), e.ravel()


def _random(
    rng: np.random.Generator, dtype: dtypes.DataType, shape: tuple[int, ...], variant: str
) -> tuple[np.ndarray, np.ndarray]:
    if dtype.is_float:
        x = (rng.standard_normal(shape) * 3).astype(dtype.numpy)
        pool = np.array([-3, -2, -1, 0, 1, 2, 3, 4, 0.5, -0.5, 1.5, 2.5, 1 / 3], np.float64)
        return x, rng.choice(pool, size=shape).astype(dtype.numpy)
    info = np.iinfo(dtype.numpy)
    x = (
        int_values(rng, shape, dtype, variant)
        if variant == "extreme"
        else rng.integers(max(info.min, -7), 8, size=shape).astype(dtype.numpy)
    )
    return x, rng.integers(max(int(info.min), -3), min(int(info.max), 40) + 1, size=shape).astype(dtype.numpy)


def _pow_cases(rng: np.random.Generator) -> Iterator[Case]:
    op = operator_table.OPERATORS["ELEMENT_WISE_POW"]
    for dtype in op.support[0].tensors["OutputTensor"].types:
        shapes: list[tuple[str, Any]] = [(f"rank{r}", SIZES[:r]) for r in range(1, 9)]
        shapes.append(("edges", None))
        for i, (label, shape) in enumerate(shapes):
            if shape is None:
                x, e = _edge_pairs(dtype)
            else:
                x, e = _random(rng, dtype, shape, ("extreme", "small")[i % 2])
            t = tensor_of(dtype, x.shape)
            fields: dict[str, Any] = {"InputTensor": t, "ExponentTensor": t, "OutputTensor": t}
            feeds = {"InputTensor": x, "ExponentTensor": e}
            yield Case(f"ELEMENT_WISE_POW-{dtype}-{label}", op.name, fields, feeds)
            if label in ("rank3", "edges"):
                sb = SCALE_BIAS if dtype.is_float else INT_SCALE_BIAS
                yield Case(f"ELEMENT_WISE_POW-{dtype}-{label}-scale_bias", op.name, fields | {"ScaleBias": sb}, feeds)


def _constant_pow_cases(rng: np.random.Generator) -> Iterator[Case]:
    op = operator_table.OPERATORS["ELEMENT_WISE_CONSTANT_POW"]
    for dtype in op.support[0].tensors["OutputTensor"].types:
        for r in range(1, 9):
            x = (rng.standard_normal(SIZES[:r]) * 3).astype(dtype.numpy)
            exponent = CONSTANT_EXPONENTS[r % 6]  # the finite ones
            fields = {"InputTensor": tensor_of(dtype, x.shape), "OutputTensor": tensor_of(dtype, x.shape), "Exponent": exponent}
            yield Case(f"ELEMENT_WISE_CONSTANT_POW-{dtype}-rank{r}", op.name, fields, {"InputTensor": x})
            if r == 3:
                yield Case(
                    f"ELEMENT_WISE_CONSTANT_POW-{dtype}-rank3-scale_bias",
                    op.name,
                    fields | {"ScaleBias": SCALE_BIAS},
                    {"InputTensor": x},
                )
        x = _float_edges(dtype)
        for i, exponent in enumerate(CONSTANT_EXPONENTS):
            if dtype == dtypes.FLOAT16 and abs(exponent) > 6e4:
                continue
            fields = {"InputTensor": tensor_of(dtype, x.shape), "OutputTensor": tensor_of(dtype, x.shape), "Exponent": exponent}
            yield Case(f"ELEMENT_WISE_CONSTANT_POW-{dtype}-edges-p{i}", op.name, fields, {"InputTensor": x})
        fields = {"InputTensor": tensor_of(dtype, x.shape), "OutputTensor": tensor_of(dtype, x.shape), "Exponent": -3.0}
        yield Case(
            f"ELEMENT_WISE_CONSTANT_POW-{dtype}-edges-scale_bias", op.name, fields | {"ScaleBias": SCALE_BIAS}, {"InputTensor": x}
        )


def cases() -> Iterator[Case]:
    rng = np.random.default_rng(25)
    yield from _pow_cases(rng)
    yield from _constant_pow_cases(rng)
