"""Matrix cases for DML_OPERATOR_QUANTIZE, DEQUANTIZE and DYNAMIC_QUANTIZE_LINEAR
(dml2onnx/ops/quantize.py): every type pairing of the 6_3 / 4_0 tables, SCALE and SCALE_ZERO_POINT,
ranks 1 to 8, the scale and zero point per tensor, per axis, blocked along one or two axes, per
element and broadcast through zero strides; a rank-8 case whose blocked view would exceed 8
dimensions (the Gather expansion); the special values (halves, the types' ends, NaN and infinite
inputs, scales 0, -0, negative, tiny, infinite and NaN).
DYNAMIC_QUANTIZE_LINEAR: both input and output types, ranks 1 to 8, inputs of both signs, one sign,
all zeros, one value, with NaN and with infinities. DEQUANTIZE's scales keep every FLOAT16 product
exact (DirectML under Wine truncates inexact FLOAT16 results: tests/dml_findings.py).
INT4/UINT4 (`_four_bit_cases`): every pairing with both quantization types on odd element counts
(a last byte half used), per tensor, per axis, blocked, per element and zero-strided scales and
zero points, the edges, and a strided (transposed) 4-bit tensor."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from dml2onnx.cases.common import SIZES, Case, tensor_of
from dml2onnx.core import dtypes

F16, F32, I8, U8, I4, U4 = dtypes.FLOAT16, dtypes.FLOAT32, dtypes.INT8, dtypes.UINT8, dtypes.INT4, dtypes.UINT4
SCALES = np.array([0.5, 0.25, 2, 1, -1, 0.125, 3, -0.75, 1.5, 0.375])
EDGE_SCALES = np.array([1, 0, -0.0, -1, 0.5, 2, 1e-30, 1e30, np.inf, -np.inf, np.nan, 0.3, -0.5, 3, 0.1, 1])
EDGE_INPUTS = [0.0, -0.0, 0.5, -0.5, 1.5, -2.5, 2.5, 127.5, -128.5, 255.5, -1e4, 3e38, -3e38, np.inf, -np.inf, np.nan]
BLOCKED = (4, 4, 4, 4, 4, 2, 2, 2)  # every axis but the last three blocked by 2: a view of over 8 dimensions


def _layouts(x: list[int]) -> dict[str, tuple[list[int], list[int] | None]]:
    """name: (the scale's sizes, its strides or None) on an input of sizes `x`."""
    rank = len(x)
    out: dict[str, tuple[list[int], list[int] | None]] = {"tensor": ([1] * rank, None), "element": (x, None)}
    out["axis"] = ([n if i == rank - 1 else 1 for i, n in enumerate(x)], None)
    blocked = [n // 2 if n % 2 == 0 and n > 2 else n if i == 0 else 1 for i, n in enumerate(x)]
    if blocked != x and blocked != [1] * rank:
        out["blocked"] = (blocked, None)
    if rank >= 2:  # the element's sizes, values along axis 0 only (zero strides)
        out["strided"] = (x, [1] + [0] * (rank - 1))
    return out


def _scale_values(rng: np.random.Generator, dtype: dtypes.DataType, n: int, edges: bool) -> np.ndarray:
    if edges:
        pool = (
            EDGE_SCALES
            if dtype == F32
            else np.where(np.abs(EDGE_SCALES) == 1e30, 6e4, np.where(EDGE_SCALES == 1e-30, 1e-4, EDGE_SCALES))
        )
        return pool[:n].astype(dtype.numpy)
    return rng.choice(SCALES, n).astype(dtype.numpy)


def _floats(rng: np.random.Generator, dtype: dtypes.DataType, shape: tuple[int, ...], edges: bool, span: int = 150) -> np.ndarray:
    """Halves and normal values over about +-span (past the integer type's ends), or the edges."""
    if edges:
        pool = np.array(EDGE_INPUTS) if dtype == F32 else np.where(np.abs(EDGE_INPUTS) == 3e38, 6e4, EDGE_INPUTS)
        return rng.permutation(pool).astype(dtype.numpy).reshape(shape)
    halves = rng.integers(-2 * span, 2 * span, shape) / 2  # every half, and values past the types' ends
    return np.where(rng.random(shape) < 0.5, halves, rng.standard_normal(shape) * span / 2.5).astype(dtype.numpy)


def _ints(rng: np.random.Generator, dtype: dtypes.DataType, shape: tuple[int, ...]) -> np.ndarray:
    lo, hi = dtype.range  # a 4-bit type's own
    return rng.integers(lo, hi + 1, shape).astype(dtype.numpy)


def _q_dq(
    op: str, floats: dtypes.DataType, ints: dtypes.DataType, qtype: str, name: str, layout: Any, shape: Any, edges: bool, rng: Any
) -> Case:
    s_sizes, strides = layout
    quantize = op == "QUANTIZE"
    scale = tensor_of(floats, s_sizes) | ({"Strides": strides} if strides else {})
    tensors = [scale] + (
        [tensor_of(ints, s_sizes) | ({"Strides": strides} if strides else {})] if qtype == "SCALE_ZERO_POINT" else []
    )
    x_t, out_t = (floats, ints) if quantize else (ints, floats)
    fields = {
        "InputTensor": tensor_of(x_t, shape),
        "QuantizationType": qtype,
        "QuantizationTensorCount": len(tensors),
        "QuantizationTensors": tensors,
        "OutputTensor": tensor_of(out_t, shape),
    }
    n = int(np.prod(s_sizes))
    s = _scale_values(rng, floats, n, edges and quantize).reshape(s_sizes)
    if strides:  # the elements a zero stride repeats
        s = np.broadcast_to(s[(slice(None),) + (slice(0, 1),) * (len(s_sizes) - 1)], s_sizes).copy()
    span = 12 if ints.is_packed else 150
    x = _floats(rng, floats, tuple(shape), edges, span) if quantize else _ints(rng, ints, tuple(shape))
    inputs = {"InputTensor": x}
    inputs["QuantizationTensors[0]"] = s
    if qtype == "SCALE_ZERO_POINT":
        z = _ints(rng, ints, tuple(s_sizes))
        if strides:
            z = np.broadcast_to(z[(slice(None),) + (slice(0, 1),) * (len(s_sizes) - 1)], s_sizes).copy()
        inputs["QuantizationTensors[1]"] = z
    return Case(f"{op}-{floats}-{ints}-{qtype}-{name}", op, fields, inputs)


def _q_dq_cases(rng: np.random.Generator) -> Iterator[Case]:
    for op in ("QUANTIZE", "DEQUANTIZE"):
        for floats in (F32, F16):
            for ints in (I8, U8):
                for qtype in ("SCALE", "SCALE_ZERO_POINT"):
                    for rank in range(1, 9):
                        layouts = _layouts(list(SIZES[:rank]))
                        for k, (name, layout) in enumerate(layouts.items()):
                            if rank != 8 and k != (rank + len(floats.name) + len(qtype)) % len(layouts):
                                continue  # every layout at rank 8, one (in turn) at the others
                            yield _q_dq(op, floats, ints, qtype, f"rank{rank}-{name}", layout, SIZES[:rank], False, rng)
                    yield _q_dq(op, floats, ints, qtype, "edges", ([16], None), (16,), True, rng)
                    wide = [n // 2 if i < 5 else n for i, n in enumerate(BLOCKED)]
                    yield _q_dq(op, floats, ints, qtype, "wide-blocked", (wide, None), BLOCKED, False, rng)


FOUR_BIT_SHAPES = ([7], [3, 5], [2, 3, 4])  # odd element counts: a last byte half used


def _four_bit_cases(rng: np.random.Generator) -> Iterator[Case]:
    for op in ("QUANTIZE", "DEQUANTIZE"):
        for floats in (F32, F16):
            for ints in (I4, U4):
                for qtype in ("SCALE", "SCALE_ZERO_POINT"):
                    turn = 2 * (floats == F16) + (qtype == "SCALE")  # the layouts in turn over the pairings
                    for i, shape in enumerate(FOUR_BIT_SHAPES):
                        layouts = list(_layouts(shape).items())
                        for name, layout in (layouts[(turn + i) % len(layouts)], layouts[(turn + i + 2) % len(layouts)]):
                            yield _q_dq(op, floats, ints, qtype, f"{len(shape)}d-{name}", layout, shape, False, rng)
                    yield _q_dq(op, floats, ints, qtype, "edges", ([16], None), (16,), True, rng)
                    case = _q_dq(op, floats, ints, qtype, "transposed", ([1, 1], None), (3, 3), False, rng)
                    side = "OutputTensor" if op == "QUANTIZE" else "InputTensor"
                    case.fields[side]["Strides"] = [1, 3]  # the 4-bit tensor transposed: nibbles 0, 3, 6, 1, ...
                    yield case


DYNAMIC_INPUTS = {
    "mixed": lambda rng, shape: rng.standard_normal(shape) * 10,
    "positive": lambda rng, shape: rng.random(shape) * 5 + 1,
    "negative": lambda rng, shape: -rng.random(shape) * 5 - 1,
    "zeros": lambda rng, shape: np.zeros(shape),
    "constant": lambda rng, shape: np.full(shape, 2.0),
    "nan": lambda rng, shape: np.where(rng.random(shape) < 0.2, np.nan, rng.standard_normal(shape)),
    "infinity": lambda rng, shape: np.where(rng.random(shape) < 0.2, np.inf, rng.standard_normal(shape)),
    "infinities": lambda rng, shape: np.array([-np.inf, np.inf, 1.0] * (int(np.prod(shape)) // 3 + 1))[
        : int(np.prod(shape))
    ].reshape(shape),
}


def _dynamic_cases(rng: np.random.Generator) -> Iterator[Case]:
    for floats in (F32, F16):
        for ints in (U8, I8):
            for rank in range(1, 9):
                shape = SIZES[:rank]
                for name, draw in DYNAMIC_INPUTS.items():
                    if rank != 3 and name != list(DYNAMIC_INPUTS)[rank % len(DYNAMIC_INPUTS)]:
                        continue  # every input at rank 3, one (in turn) at the others
                    one = [1] * rank
                    fields = {
                        "InputTensor": tensor_of(floats, shape),
                        "OutputTensor": tensor_of(ints, shape),
                        "OutputScaleTensor": tensor_of(F32, one),
                        "OutputZeroPointTensor": tensor_of(ints, one),
                    }
                    x = np.asarray(draw(rng, shape)).astype(floats.numpy)
                    if name == "nan":  # a NaN first and last too (DirectML's min and max skip them anywhere)
                        x.reshape(-1)[[0, -1]] = np.nan
                    yield Case(
                        f"DYNAMIC_QUANTIZE_LINEAR-{floats}-{ints}-rank{rank}-{name}",
                        "DYNAMIC_QUANTIZE_LINEAR",
                        fields,
                        {"InputTensor": x},
                    )


def cases() -> Iterator[Case]:
    rng = np.random.default_rng(173)
    yield from _q_dq_cases(rng)
    yield from _four_bit_cases(np.random.default_rng(174))
    yield from _dynamic_cases(rng)
