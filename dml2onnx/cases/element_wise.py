"""Matrix cases for the element-wise math operators (dml2onnx/ops/element_wise.py and
element_wise_arithmetic.py): every data type
of each page's newest tensor support table at ranks 1-8, the special values (0, -0, +-1, halves,
large magnitudes, infinities, NaN for floats; the types' ends for integers), ScaleBias where the
operator has it (integers included, but for 64-bit types, which DirectML refuses), and for two
inputs the other one drawn the same way (zeros and -1 among the integer edges: division by them);
ADD1 with a fused activation."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from dml2onnx.cases.common import SIZES, Case, int_values, tensor_of
from dml2onnx.core import dtypes, operator_table, schema
from dml2onnx.core.schema import Kind
from dml2onnx.ops import element_wise, element_wise_arithmetic

SCALE_BIAS = {"Scale": 0.5, "Bias": -1.25}
INT_SCALE_BIAS = {"Scale": -2.5, "Bias": 0.75}


def _float_edges(dtype: dtypes.DataType) -> np.ndarray:
    big = 6e4 if dtype == dtypes.FLOAT16 else 3e38
    pool = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.5, -2.5, 1e4, -1e4, big, -big, np.inf, -np.inf, np.nan, 1e-7]
    return np.array(pool, np.float64).astype(dtype.numpy)


def _int_edges(dtype: dtypes.DataType) -> np.ndarray:
    info = np.iinfo(dtype.numpy)
    near = [int(info.min), int(info.min) + 1, -3, -2, -1, 0, 1, 2, 3, int(info.max) - 1, int(info.max)]
    return np.array([v for v in near if info.min <= v <= info.max], dtype=object).astype(dtype.numpy)


FloatEdges = Callable[[dtypes.DataType], np.ndarray]


def _values(
    rng: np.random.Generator, dtype: dtypes.DataType, shape: tuple[int, ...], variant: str, float_edges: FloatEdges = _float_edges
) -> np.ndarray:
    if variant == "edges":
        edges = float_edges(dtype) if dtype.is_float else _int_edges(dtype)
        return rng.permutation(edges)
    if dtype.is_float:
        return (rng.standard_normal(shape) * 3).astype(dtype.numpy)
    return int_values(rng, shape, dtype, variant)


def _params(op: str, dtype: dtypes.DataType) -> list[dict[str, Any]]:
    """The bounds of the clamping operators: Min <= Max and Min > Max (DirectML then gives Min);
    CLIP1's exact integers, past 2**53 for 64-bit types."""
    if op == "ELEMENT_WISE_ROUND":
        return [{"RoundingMode": m} for m in ("HALVES_TO_NEAREST_EVEN", "TOWARD_ZERO", "TOWARD_INFINITY")]
    if op == "ELEMENT_WISE_THRESHOLD":
        return [{"Min": 0.5}, {"Min": -2.75}]
    if op == "ELEMENT_WISE_CLIP":
        return [{"Min": -1.5, "Max": 2.25}, {"Min": 3.0, "Max": -1.0}, {"Min": -1e10, "Max": 1e10}]
    if op == "ELEMENT_WISE_CLIP1":
        if dtype.is_float:
            bounds = [(-1.5, 2.25), (3.0, -1.0)]
        elif dtype.size == 8:
            bounds = [(2**53 + 1, 2**62 + 3), (5, 2**53 + 2)]
        else:
            lo = 2 if dtype.numpy.kind == "u" else -3
            bounds = [(lo, 100), (100, lo)]
        return [{"MinMaxDataType": dtype.name, "Min": a, "Max": b} for a, b in bounds]
    return [{}]


def layouts(dtype: dtypes.DataType, float_edges: FloatEdges = _float_edges) -> list[tuple[str, tuple[int, ...], str]]:
    """(label, shape, value variant) of an element-wise family's cases: ranks 1-8 of matrix.SIZES
    (random values but for integers, whose ends matter more), and the type's edge values."""
    edges = len(float_edges(dtype)) if dtype.is_float else len(_int_edges(dtype))
    out = [(f"rank{r}", SIZES[:r], ("random", "extreme", "ties")[r % 3]) for r in range(1, 9)]
    out.append(("edges", (edges,), "edges"))
    return [(label, shape, "extreme" if not dtype.is_float and v == "random" else v) for label, shape, v in out]


def _cases(op: schema.OperatorSchema, rng: np.random.Generator, float_edges: FloatEdges = _float_edges) -> Iterator[Case]:
    """`float_edges`: a family's own special values (dml2onnx/cases/element_wise_trig.py)."""
    inputs = [f.name for f in op.fields if f.kind is Kind.INPUT]
    has_scale_bias = any(f.kind is Kind.SCALE_BIAS for f in op.fields)
    for dtype in op.support[0].tensors["OutputTensor"].types:
        for label, shape, variant in layouts(dtype, float_edges):
            feeds = {n: _values(rng, dtype, shape, variant, float_edges) for n in inputs}
            tensors: dict[str, Any] = {n: tensor_of(dtype, feeds[inputs[0]].shape) for n in [*inputs, "OutputTensor"]}
            fields = tensors | _params(op.name, dtype)[0]
            for i, params in enumerate(_params(op.name, dtype)):
                suffix = f"-p{i}" if params else ""
                yield Case(f"{op.name}-{dtype}-{label}{suffix}", op.name, tensors | params, feeds)
            if any(f.kind is Kind.ACTIVATION for f in op.fields) and label in ("rank3", "edges"):
                fused = {"Type": "ACTIVATION_ELU", "Alpha": 0.5}
                yield Case(f"{op.name}-{dtype}-{label}-fused_elu", op.name, fields | {"FusedActivation": fused}, feeds)
            if has_scale_bias and label in ("rank3", "edges") and dtype.size < 8:
                sb = SCALE_BIAS if dtype.is_float else INT_SCALE_BIAS
                yield Case(f"{op.name}-{dtype}-{label}-scale_bias", op.name, fields | {"ScaleBias": sb}, feeds)


# The families of element_wise.py's Row table that these cases cover (others have their own file).
ROWS = {**element_wise.ROWS, **element_wise_arithmetic.ROWS}


def cases() -> Iterator[Case]:
    rng = np.random.default_rng(19)
    for name in ROWS:
        yield from _cases(operator_table.OPERATORS[name], rng)
