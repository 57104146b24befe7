"""Matrix cases for DML_OPERATOR_CONVOLUTION_INTEGER and QUANTIZED_LINEAR_CONVOLUTION
(dml2onnx/ops/convolution_integer.py): every pair of INT8/UINT8 input and filter types (and
output types, quantized), 1-D (3-D tensors) and 2-D convolutions with strides, dilations,
asymmetric padding (wider than the filter included), GroupCount 1, 2 and depthwise, a batch of 2,
zero points absent, per tensor and per output channel (of 1 to 4 dimensions), the extremes of each
type (products of 255 * 255), long accumulations (the `split` lowering's chunks) and one that
wraps INT32; quantized: per-tensor and per-channel scales, Bias or none, scales of powers of two
(exact halves: rounding to even) and outputs that saturate."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from dml2onnx.cases.common import Case, tensor_of
from dml2onnx.core import dtypes

OPS = ("CONVOLUTION_INTEGER", "QUANTIZED_LINEAR_CONVOLUTION")
I8, U8 = dtypes.INT8, dtypes.UINT8

# (name, input spatial sizes, kernel, Strides, Dilations, StartPadding, EndPadding)
Geometry = tuple[str, tuple[int, ...], tuple[int, ...], list[int], list[int], list[int], list[int]]
GEOMETRIES: list[Geometry] = [
    ("1d-plain", (7,), (3,), [1], [1], [0], [0]),
    ("1d-strided-padded", (9,), (3,), [2], [2], [1], [2]),
    ("2d-plain", (5, 4), (3, 2), [1, 1], [1, 1], [0, 0], [0, 0]),
    ("2d-strided-padded", (7, 6), (3, 3), [2, 3], [1, 1], [1, 0], [1, 2]),
    ("2d-dilated", (7, 7), (2, 3), [1, 2], [2, 2], [1, 1], [0, 1]),
    ("2d-wide-pad", (2, 3), (2, 2), [1, 1], [1, 1], [3, 0], [1, 2]),
]


def _values(rng: np.random.Generator, t: dtypes.DataType, shape: tuple[int, ...], extreme: bool = False) -> np.ndarray:
    info = np.iinfo(t.numpy)
    if extreme:
        return rng.choice(np.array([info.min, info.max, info.min + 1, info.max - 1]), size=shape).astype(t.numpy)
    return rng.integers(int(info.min), int(info.max) + 1, size=shape).astype(t.numpy)


def _limits(x: np.ndarray) -> tuple[int, int]:
    info = np.iinfo(x.dtype)
    return int(info.min), int(info.max)


def _out(n: int, k: int, s: int, d: int, start: int, end: int) -> int:
    return (n + start + end - ((k - 1) * d + 1)) // s + 1


def case(
    rng: np.random.Generator,
    op: str,
    types: tuple[dtypes.DataType, dtypes.DataType, dtypes.DataType],
    geometry: Geometry,
    channels: tuple[int, int, int] = (2, 3, 1),
    zero_points: str = "tensor",
    batch: int = 1,
    extreme: bool = False,
    bias: bool = True,
    scales: str = "channel",
    tag: str = "",
) -> Case:
    """`channels`: (C, M, GroupCount); `zero_points`: none, tensor, channel, or rank1 (per-tensor
    {1}); FilterScaleTensor has FilterZeroPointTensor's sizes (DirectML refuses others), or without
    zero points per `scales` (each zero point has its scale's sizes): tensor or channel; `scales` halves: powers of two."""
    name, spatial, kernel, strides, dilations, start, end = geometry
    xt, wt, yt = types
    c, m, groups = channels
    rank = len(spatial) + 2
    x_sizes, w_sizes = (batch, c, *spatial), (m, c // groups, *kernel)
    y_sizes = (batch, m, *(_out(*a) for a in zip(spatial, kernel, strides, dilations, start, end, strict=True)))
    quantized = op == OPS[1]
    fields: dict[str, Any] = {
        "InputTensor": tensor_of(xt, x_sizes),
        "FilterTensor": tensor_of(wt, w_sizes),
        "OutputTensor": tensor_of(yt if quantized else dtypes.INT32, y_sizes),
        "DimensionCount": len(spatial),
        "Strides": strides,
        "Dilations": dilations,
        "StartPadding": start,
        "EndPadding": end,
        "GroupCount": groups,
    }
    inputs = {"InputTensor": _values(rng, xt, x_sizes, extreme), "FilterTensor": _values(rng, wt, w_sizes, extreme)}

    def add(field: str, t: dtypes.DataType, sizes: tuple[int, ...], values: np.ndarray | None = None) -> None:
        fields[field] = tensor_of(t, sizes)
        inputs[field] = _values(rng, t, sizes, extreme) if values is None else values.astype(t.numpy).reshape(sizes)

    one = (1,) * rank
    per_m = (1, m) + (1,) * (rank - 2)
    w_params = {"channel": per_m, "rank1": (1,), "tensor": one}.get(zero_points, per_m if scales != "tensor" else one)
    if zero_points != "none":
        add("InputZeroPointTensor", xt, (1,) if zero_points == "rank1" else one)
        add("FilterZeroPointTensor", wt, w_params)
        if quantized:
            add("OutputZeroPointTensor", yt, one)
    if quantized:
        k = c // groups * int(np.prod(kernel))
        if scales == "halves":  # small sums times 1/2 to 1/8: many exact halves, the rounding decides
            for name, zero in (("InputTensor", "InputZeroPointTensor"), ("FilterTensor", "FilterZeroPointTensor")):
                near = inputs[zero].astype(np.int64).reshape(-1)[0] + rng.integers(-3, 4, inputs[name].shape)
                inputs[name] = np.clip(near, *_limits(inputs[name])).astype(inputs[name].dtype)
            add("InputScaleTensor", dtypes.FLOAT32, one, np.array(0.5))
            add("FilterScaleTensor", dtypes.FLOAT32, w_params, 2.0 ** -rng.integers(0, 3, int(np.prod(w_params))))
            add("OutputScaleTensor", dtypes.FLOAT32, one, np.array(1.0))
        else:
            add("InputScaleTensor", dtypes.FLOAT32, (1,) if zero_points == "rank1" else one, rng.uniform(0.005, 0.05, 1))
            add("FilterScaleTensor", dtypes.FLOAT32, w_params, rng.uniform(0.005, 0.05, int(np.prod(w_params))))
            # |acc| ~ 1e4 * sqrt(K): most outputs in range, some saturated
            add("OutputScaleTensor", dtypes.FLOAT32, one, np.array(0.4 * np.sqrt(k)))
        if bias:
            add(
                "BiasTensor",
                dtypes.INT32,
                per_m,
                rng.integers(-20, 20, m) if scales == "halves" else rng.integers(-20000, 20000, m),
            )
    parts = [op, str(xt), str(wt), *([str(yt)] if quantized else []), name, "C{}-M{}-G{}".format(*channels)]
    parts += [f"zp-{zero_points}", f"N{batch}"] + (["extreme"] if extreme else [])
    if quantized:
        parts += [f"scale-{scales}", "bias" if bias else "nobias"]
    return Case("-".join(parts + ([tag] if tag else [])), op, fields, inputs)


def cases() -> Iterator[Case]:
    rng = np.random.default_rng(23)
    pairs = [(xt, wt) for xt in (I8, U8) for wt in (I8, U8)]
    for op in OPS:
        quantized = op == OPS[1]
        for i, (xt, wt) in enumerate(pairs):
            yt = (I8, U8)[i % 2]
            for geometry in GEOMETRIES:
                yield case(rng, op, (xt, wt, yt), geometry)
            plain = GEOMETRIES[3]
            yield case(rng, op, (xt, wt, yt), plain, zero_points="none", bias=False, scales="tensor")
            yield case(rng, op, (xt, wt, yt), plain, channels=(4, 6, 2), zero_points="channel", batch=2)
            yield case(rng, op, (xt, wt, yt), plain, channels=(3, 3, 3), extreme=True)  # depthwise
            yield case(rng, op, (xt, wt, yt), GEOMETRIES[1], channels=(4, 4, 2), zero_points="channel")
            yield case(rng, op, (xt, wt, yt), GEOMETRIES[2], zero_points="rank1", extreme=True)
            if quantized:
                yield case(
                    rng,
                    op,
                    (xt, wt, (U8, I8)[i % 2]),
                    plain,
                    zero_points=("channel", "tensor")[i % 2],
                    scales="halves",
                    bias=i < 2,
                )
        # long accumulations: K = 40 * 9 = 360 (past the single Conv's 258), extremes
        same = ("2d-same", (6, 5), (3, 3), [1, 1], [1, 1], [1, 1], [1, 1])
        yield case(rng, op, (U8, I8, I8), same, channels=(40, 4, 1), extreme=True, tag="long")
        # K = 35 * 1000 = 35000 products of 255 * 255 = 2.3e9: wraps INT32; more than one chunk of the split
        wrap = ("1d-long", (1000,), (1000,), [1], [1], [0], [0])
        fields_case = case(rng, op, (U8, U8, U8), wrap, channels=(35, 1, 1), zero_points="none", bias=False, tag="wrap")
        fields_case.inputs["InputTensor"][...] = 255
        fields_case.inputs["FilterTensor"][...] = 255
        yield fields_case
