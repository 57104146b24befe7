"""Matrix cases for the linear quantization operators (dml2onnx/ops/element_wise_quantized.py):
every data type combination of each page's newest tensor support table at ranks 1-8, the scale
varying along the last axis and the zero point one value (both broadcast through zero strides),
the zero points left out, and the special values: halves, the types' ends, scales 0, -0, negative,
tiny, infinite and NaN, NaN and infinite inputs. QUANTIZED_LINEAR_ADD: A, B and OutputTensor of
each INT8/UINT8 combination, B broadcast over the first axis, each scale and zero point one value;
its edge cases divide by 0, scale by infinity and NaN."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from dml2onnx.cases.common import SIZES, Case, int_values, tensor_of
from dml2onnx.core import dtypes, operator_table, schema
from dml2onnx.ops.element_wise_quantized import ADD, DEQUANTIZE, QUANTIZE

F16, F32 = dtypes.FLOAT16, dtypes.FLOAT32
SCALES = np.array([0.5, 0.25, 2, 1, -1, 0.1, 3, -0.75, 0.013])
EDGE_SCALES = np.array([1, 0, -0.0, -1, 0.5, 2, 1e-30, 1e30, np.inf, -np.inf, np.nan, 0.3, -0.5, 3, 0.1, 1])


def _broadcast(dtype: dtypes.DataType, shape: tuple[int, ...], axes: tuple[int, ...]) -> dict[str, Any]:
    """A tensor of `shape` whose values vary along `axes` only (zero strides elsewhere)."""
    compact = [s if i in axes else 1 for i, s in enumerate(shape)]
    strides, step = [0] * len(shape), 1
    for i in reversed(range(len(shape))):
        if i in axes:
            strides[i], step = step, step * shape[i]
    return tensor_of(dtype, shape) | ({"Strides": strides} if len(axes) < len(shape) else {}) | {"_compact": compact}


def _fields(tensors: dict[str, dict[str, Any]]) -> dict[str, Any]:
    return {n: {k: v for k, v in t.items() if k != "_compact"} for n, t in tensors.items()}


def _feeds(tensors: dict[str, dict[str, Any]], draw: Any) -> dict[str, np.ndarray]:
    """Each input drawn at its compact sizes by draw(name, sizes), then broadcast to its Sizes."""
    out = {}
    for name, t in tensors.items():
        if name != "OutputTensor":
            compact = tuple(t.get("_compact", t["Sizes"]))
            out[name] = np.ascontiguousarray(np.broadcast_to(draw(name, compact), t["Sizes"]))
    return out


def _float_inputs(rng: np.random.Generator, dtype: dtypes.DataType, shape: tuple[int, ...], edges: bool) -> np.ndarray:
    big = 6e4 if dtype == F16 else 3e38
    pool = [0.0, -0.0, 0.5, -0.5, 1.5, -2.5, 2.5, 127.5, -128.5, 255.5, -1e4, big, -big, np.inf, -np.inf, np.nan]
    if edges:
        return rng.permutation(np.array(pool)).astype(dtype.numpy)
    return (rng.standard_normal(shape) * 60).round(1).astype(dtype.numpy)


def _ints(rng: np.random.Generator, dtype: dtypes.DataType, shape: tuple[int, ...], small: bool = False) -> np.ndarray:
    info = np.iinfo(dtype.numpy)
    if small:  # results a FLOAT16 holds
        return rng.integers(max(int(info.min), -30000), min(int(info.max), 30000) + 1, shape).astype(dtype.numpy)
    return int_values(rng, shape, dtype, "extreme") if rng.integers(2) else rng.integers(-128, 128, shape).astype(dtype.numpy)


def _scales(rng: np.random.Generator, dtype: dtypes.DataType, shape: tuple[int, ...], edges: bool, half: bool) -> np.ndarray:
    if edges:
        pool = (
            EDGE_SCALES
            if dtype != F16
            else np.where(np.abs(EDGE_SCALES) == 1e30, 6e4, np.where(EDGE_SCALES == 1e-30, 1e-4, EDGE_SCALES))
        )
        return pool[: shape[0]].astype(dtype.numpy)
    pool = SCALES / 4 if half else SCALES  # |scale| <= 0.75: (x - zero_point) * scale within FLOAT16's range
    return rng.choice(pool, shape).astype(dtype.numpy)


def _shapes() -> list[tuple[str, tuple[int, ...]]]:
    return [(f"rank{r}", SIZES[:r]) for r in range(1, 9)] + [("edges", (16,))]


def _q_dq_draw(rng: np.random.Generator, tensors: dict[str, dict[str, Any]], edges: bool, half: bool) -> Any:
    def draw(name: str, sizes: tuple[int, ...]) -> np.ndarray:
        dtype = dtypes.BY_NAME[tensors[name]["DataType"]]
        if name == "ScaleTensor":
            return _scales(rng, dtype, sizes, edges, half)
        if dtype.is_float:
            return _float_inputs(rng, dtype, sizes, edges)
        return _ints(rng, dtype, sizes, half)

    return draw


def _add_draw(rng: np.random.Generator, tensors: dict[str, dict[str, Any]]) -> Any:
    def draw(name: str, sizes: tuple[int, ...]) -> np.ndarray:
        if "Scale" in name:
            return rng.choice(SCALES[SCALES > 0], sizes).astype(np.float32)
        return _ints(rng, dtypes.BY_NAME[tensors[name]["DataType"]], sizes)

    return draw


def _q_dq_cases(op: schema.OperatorSchema, rng: np.random.Generator) -> Iterator[Case]:
    table = op.support[0].tensors
    quantize = op.name == QUANTIZE
    for in_type in table["InputTensor"].types:
        for out_type in table["OutputTensor"].types:
            scale_type = (F32 if in_type == dtypes.INT32 else in_type) if quantize else out_type
            zero_type = out_type if quantize else in_type
            for label, shape in _shapes():
                edges = label == "edges"
                varying = tuple(range(len(shape))) if edges else (len(shape) - 1,)
                tensors = {
                    "InputTensor": tensor_of(in_type, shape),
                    "ScaleTensor": _broadcast(scale_type, shape, varying),
                    "ZeroPointTensor": _broadcast(zero_type, shape, tuple(range(len(shape))) if edges else ()),
                    "OutputTensor": tensor_of(out_type, shape),
                }
                feeds = _feeds(tensors, _q_dq_draw(rng, tensors, edges, half=out_type == F16))
                case_id = f"{op.name}-{in_type}-{out_type}-{label}"
                yield Case(case_id, op.name, _fields(tensors), feeds)
                if label in ("rank3", "edges"):  # no zero point (feature level 6_2): 0
                    no_zero = {n: t for n, t in tensors.items() if n != "ZeroPointTensor"}
                    feeds = {n: v for n, v in feeds.items() if n != "ZeroPointTensor"}
                    yield Case(f"{case_id}-no_zero_point", op.name, _fields(no_zero), feeds)


# QUANTIZED_LINEAR_ADD's edge cases: (AScale, BScale, OutputScale)
ADD_SCALES = {
    "divide_by_zero": (1.0, 1.0, 0.0),
    "infinite_scale": (np.inf, 1.0, 1.0),
    "nan_scale": (1.0, 1.0, np.nan),
    "negative_scales": (-0.5, 0.25, -2.0),
    "halves": (1.0, 1.0, 2.0),
}


def _add_cases(op: schema.OperatorSchema, rng: np.random.Generator) -> Iterator[Case]:
    table = op.support[0].tensors
    combos = [(a, b, o) for a in table["ATensor"].types for b in table["BTensor"].types for o in table["OutputTensor"].types]
    for a_type, b_type, out_type in combos:
        for label, shape in _shapes():
            one = (1,) * len(shape)
            tensors = {
                "ATensor": tensor_of(a_type, shape),
                "AScaleTensor": tensor_of(F32, one),
                "AZeroPointTensor": tensor_of(a_type, one),
                "BTensor": _broadcast(b_type, shape, tuple(range(1, len(shape))) if len(shape) > 1 else (0,)),
                "BScaleTensor": tensor_of(F32, one),
                "BZeroPointTensor": tensor_of(b_type, one),
                "OutputScaleTensor": tensor_of(F32, one),
                "OutputZeroPointTensor": tensor_of(out_type, one),
                "OutputTensor": tensor_of(out_type, shape),
            }
            feeds = _feeds(tensors, _add_draw(rng, tensors))
            case_id = f"{op.name}-{a_type}-{b_type}-{out_type}-{label}"
            if label != "edges":
                yield Case(case_id, op.name, _fields(tensors), feeds)
                continue
            feeds["ATensor"] = _int_edges(a_type, shape)
            feeds["BTensor"] = rng.permutation(_int_edges(b_type, shape))
            for name, scales in ADD_SCALES.items():
                special = dict(feeds)
                for p, s in zip(("A", "B", "Output"), scales, strict=True):
                    special[f"{p}ScaleTensor"] = np.full(one, s, np.float32)
                yield Case(f"{case_id}-{name}", op.name, _fields(tensors), special)
            no_zero = {n: t for n, t in tensors.items() if "ZeroPoint" not in n}
            yield Case(
                f"{case_id}-no_zero_points", op.name, _fields(no_zero), {n: v for n, v in feeds.items() if "ZeroPoint" not in n}
            )


def _int_edges(dtype: dtypes.DataType, shape: tuple[int, ...]) -> np.ndarray:
    info = np.iinfo(dtype.numpy)
    pool = [int(info.min), int(info.min) + 1, -3, -2, -1, 0, 1, 2, 3, 5, 7, int(info.max) - 1, int(info.max), 64, 100, 9]
    pool = [v for v in pool if info.min <= v <= info.max]
    return np.resize(np.array(pool, dtype=dtype.numpy), shape)


def cases() -> Iterator[Case]:
    rng = np.random.default_rng(23)
    yield from _q_dq_cases(operator_table.OPERATORS[QUANTIZE], rng)
    yield from _q_dq_cases(operator_table.OPERATORS[DEQUANTIZE], rng)
    yield from _add_cases(operator_table.OPERATORS[ADD], rng)
