"""Matrix cases for DML_OPERATOR_QUANTIZED_LINEAR_AVERAGE_POOLING (dml2onnx/ops/quantized_pooling.py):
both data types, 2-D (4-D tensors) and 3-D (5-D) windows with strides, dilations, asymmetric
padding (windows entirely in padding: 0 / 0), IncludePadding both ways, scales and zero points per tensor, per channel and absent,
scales of powers of two (exact halves: the rounding decides), the extremes of each type and
outputs that saturate."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from dml2onnx.cases.common import Case, tensor_of
from dml2onnx.core import dtypes
from dml2onnx.ops import pooling

OP = "QUANTIZED_LINEAR_AVERAGE_POOLING"

# (name, spatial sizes, WindowSize, Strides, Dilations, StartPadding, EndPadding)
GEOMETRIES = [
    ("2d-plain", (5, 4), (2, 2), [1, 1], [1, 1], [0, 0], [0, 0]),
    ("2d-strided-padded", (7, 6), (3, 3), [2, 2], [1, 1], [1, 0], [1, 2]),
    ("2d-dilated", (7, 7), (2, 3), [1, 2], [2, 2], [1, 1], [0, 1]),
    ("2d-wide-pad", (3, 3), (2, 2), [1, 1], [1, 1], [3, 0], [0, 2]),  # windows entirely in padding
    ("3d-strided-padded", (4, 5, 3), (2, 3, 2), [2, 1, 1], [1, 1, 2], [1, 1, 0], [0, 1, 1]),
]


def case(rng: np.random.Generator, t: dtypes.DataType, g: tuple[Any, ...], include: bool, params: str, values: str) -> Case:
    """`params`: tensor, channel or none (no zero points, per-tensor scales), halves; `values`: random or extreme."""
    name, spatial, window, strides, dilations, start, end = g
    c = 3
    rank = len(spatial) + 2
    w = pooling.Window("AVERAGE", tuple(strides), tuple(window), tuple(start), tuple(end), tuple(dilations), include)
    x_sizes, y_sizes = (2, c, *spatial), (2, c, *w.output_sizes(tuple(spatial)))
    fields: dict[str, Any] = {
        "InputTensor": tensor_of(t, x_sizes),
        "OutputTensor": tensor_of(t, y_sizes),
        "DimensionCount": len(spatial),
        "Strides": strides,
        "WindowSize": list(window),
        "StartPadding": start,
        "EndPadding": end,
        "Dilations": dilations,
        "IncludePadding": include,
    }
    info = np.iinfo(t.numpy)
    pool = [info.min, info.max, info.min + 1, info.max - 1]
    x = rng.choice(pool, x_sizes) if values == "extreme" else rng.integers(int(info.min), int(info.max) + 1, x_sizes)
    inputs = {"InputTensor": x.astype(t.numpy)}
    sizes = (1, c) + (1,) * (rank - 2) if params == "channel" else (1,) * rank
    n = int(np.prod(sizes))
    if params == "halves":
        scales = {"InputScaleTensor": 2.0 ** -rng.integers(0, 3, n), "OutputScaleTensor": 2.0 ** rng.integers(-2, 2, n)}
    else:
        x_scale = rng.uniform(0.01, 0.1, n)
        scales = {"InputScaleTensor": x_scale, "OutputScaleTensor": x_scale * rng.uniform(0.3, 1.5, n)}
    for field, v in scales.items():
        fields[field] = tensor_of(dtypes.FLOAT32, sizes)
        inputs[field] = v.astype(np.float32).reshape(sizes)
    if params != "none":
        for field in ("InputZeroPointTensor", "OutputZeroPointTensor"):
            fields[field] = tensor_of(t, sizes)
            inputs[field] = rng.integers(int(info.min), int(info.max) + 1, sizes).astype(t.numpy)
    parts = [OP, str(t), name, "include" if include else "exclude", params, values]
    return Case("-".join(parts), OP, fields, inputs)


def cases() -> Iterator[Case]:
    rng = np.random.default_rng(24)
    for t in (dtypes.INT8, dtypes.UINT8):
        for geometry in GEOMETRIES:
            for include in (False, True):
                for params in ("tensor", "channel", "none", "halves"):
                    yield case(rng, t, geometry, include, params, "random")
            yield case(rng, t, geometry, False, "tensor", "extreme")
