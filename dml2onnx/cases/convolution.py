"""Matrix cases for DML_OPERATOR_CONVOLUTION (dml2onnx/ops/convolution.py): both data types of the
page's newest tensor support table, 1-D (3-D tensors), 2-D and 3-D convolutions, both Modes and
Directions, strides, dilations, asymmetric StartPadding/EndPadding (padding wider than the filter
included), OutputPadding (zeros after the computed elements), GroupCount 1, 2 and depthwise, Bias present or absent, fused
activations, a batch of 2, long accumulations (C/G * kernel volume up to 288), and OutputTensor
spatial sizes larger and smaller than the formula's (DirectML computes them: ops/convolution.py).

Values are multiples of 1/8 in [-1, 1] (FLOAT16 and FLOAT32 hold them exactly, and every product
and partial sum of a FLOAT32 accumulation is exact), so FLOAT32 results are exact on any EP that
accumulates in FLOAT32 in any order; a few cases add an infinity and a NaN to the input."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from dml2onnx.cases.common import ACTIVATIONS, Case, tensor_of
from dml2onnx.core import dtypes

OP = "CONVOLUTION"

# (name, input sizes without N and C, filter sizes, Strides, Dilations, StartPadding, EndPadding, OutputPadding)
Geometry = tuple[str, tuple[int, ...], tuple[int, ...], list[int], list[int], list[int], list[int], list[int]]
GEOMETRIES: dict[int, list[Geometry]] = {
    1: [
        ("plain", (7,), (3,), [1], [1], [0], [0], [0]),
        ("strided-padded", (9,), (3,), [2], [1], [1], [2], [1]),
        ("dilated", (8,), (2,), [1], [3], [0], [1], [0]),
        ("wide-pad", (3,), (2,), [1], [1], [3], [2], [0]),
    ],
    2: [
        ("plain", (5, 4), (3, 2), [1, 1], [1, 1], [0, 0], [0, 0], [0, 0]),
        ("strided-padded", (7, 6), (3, 3), [2, 3], [1, 1], [1, 0], [1, 2], [1, 2]),
        ("dilated", (7, 7), (2, 3), [1, 2], [2, 2], [1, 1], [0, 1], [0, 1]),
        ("same-3x3", (6, 5), (3, 3), [1, 1], [1, 1], [1, 1], [1, 1], [0, 0]),
        ("wide-pad", (2, 3), (2, 2), [1, 1], [1, 1], [3, 0], [1, 2], [0, 0]),
    ],
    3: [
        ("plain", (4, 3, 3), (2, 2, 2), [1, 1, 1], [1, 1, 1], [0, 0, 0], [0, 0, 0], [0, 0, 0]),
        ("strided-padded", (5, 4, 3), (3, 2, 2), [2, 1, 2], [1, 2, 1], [1, 0, 1], [0, 1, 1], [1, 0, 1]),
    ],
}

# added to the formula's OutputTensor spatial sizes: larger on every axis, smaller on one and larger on another
RESIZES = {1: [(1,), (-1,), (4,)], 2: [(1, 1), (-1, 3), (2, -1)], 3: [(1, 1, 1), (-1, 3, 0), (2, 0, -1)]}


def _values(rng: np.random.Generator, shape: tuple[int, ...], dtype: dtypes.DataType) -> np.ndarray:
    return (rng.integers(-8, 9, size=shape) / 8).astype(dtype.numpy)


def _window(n: int, k: int, s: int, d: int, start: int, end: int, extra: int, backward: bool) -> int:
    if backward:
        return (n - 1) * s + (k - 1) * d + 1 - start - end + extra
    return (n + start + end - ((k - 1) * d + 1)) // s + 1 + extra


def case(
    rng: np.random.Generator,
    dtype: dtypes.DataType,
    geometry: Geometry,
    direction: str,
    mode: str,
    channels: tuple[int, int, int],
    bias: bool,
    activation: str | None = None,
    batch: int = 1,
    special: bool = False,
    resize: tuple[int, ...] | None = None,
) -> Case:
    """`channels`: (input channels C, output channels M, GroupCount); `resize`: added to the
    formula's OutputTensor spatial sizes."""
    name, spatial, kernel, strides, dilations, start, end, out_pad = geometry
    backward = direction == "BACKWARD"
    c, m, groups = channels
    filter_sizes = (c, m // groups, *kernel) if backward else (m, c // groups, *kernel)
    out_spatial = tuple(
        _window(*args, backward) for args in zip(spatial, kernel, strides, dilations, start, end, out_pad, strict=True)
    )
    if resize is not None:
        out_spatial = tuple(o + r for o, r in zip(out_spatial, resize, strict=True))
    x_sizes, y_sizes = (batch, c, *spatial), (batch, m, *out_spatial)
    dims = len(spatial)
    fields: dict[str, Any] = {
        "InputTensor": tensor_of(dtype, x_sizes),
        "FilterTensor": tensor_of(dtype, filter_sizes),
        "OutputTensor": tensor_of(dtype, y_sizes),
        "Mode": mode,
        "Direction": direction,
        "DimensionCount": dims,
        "Strides": strides,
        "Dilations": dilations,
        "StartPadding": start,
        "EndPadding": end,
        "OutputPadding": out_pad,
        "GroupCount": groups,
    }
    x = _values(rng, x_sizes, dtype)
    if special:
        x.ravel()[0], x.ravel()[-1] = np.inf, np.nan
    inputs = {"InputTensor": x, "FilterTensor": _values(rng, filter_sizes, dtype)}
    if bias:
        b_sizes = (1, m) + (1,) * dims
        fields["BiasTensor"] = tensor_of(dtype, b_sizes)
        inputs["BiasTensor"] = _values(rng, b_sizes, dtype)
    if activation:
        fields["FusedActivation"] = {"Type": activation, **ACTIVATIONS[activation]}
    parts = [OP, str(dtype), f"{dims}d", name, direction.lower(), mode.lower(), "C{}-M{}-G{}".format(*channels)]
    parts += ["bias" if bias else "nobias", activation or "none", f"N{batch}"] + (["special"] if special else [])
    if resize is not None:
        parts.append("resized" + "".join(f"{r:+d}" for r in resize))
    return Case("-".join(parts), OP, fields, inputs)


def cases() -> Iterator[Case]:
    rng = np.random.default_rng(20)
    for dtype in (dtypes.FLOAT32, dtypes.FLOAT16):  # the page's newest table
        for geometries in GEOMETRIES.values():
            for geometry in geometries:
                for direction in ("FORWARD", "BACKWARD"):
                    if direction == "BACKWARD" and geometry[0] == "wide-pad":
                        continue  # padding wider than the transposed output: no output
                    for mode in ("CROSS_CORRELATION", "CONVOLUTION"):
                        yield case(rng, dtype, geometry, direction, mode, (2, 3, 1), bias=mode == "CONVOLUTION")
                    yield case(rng, dtype, geometry, direction, "CROSS_CORRELATION", (4, 6, 2), bias=True, batch=2)
                    yield case(rng, dtype, geometry, direction, "CONVOLUTION", (3, 3, 3), bias=False)  # depthwise
        same = GEOMETRIES[2][3]
        for activation in ("ACTIVATION_RELU", "ACTIVATION_LEAKY_RELU", "ACTIVATION_SIGMOID", "ACTIVATION_LINEAR"):
            for direction in ("FORWARD", "BACKWARD"):
                yield case(rng, dtype, same, direction, "CROSS_CORRELATION", (2, 2, 1), bias=True, activation=activation)
        # long accumulations: C/G * kernel volume = 32 * 9 = 288 (FLOAT16: tolerances.py)
        for direction in ("FORWARD", "BACKWARD"):
            yield case(rng, dtype, same, direction, "CROSS_CORRELATION", (32, 4, 1), bias=True)
            yield case(rng, dtype, same, direction, "CONVOLUTION", (64, 8, 2), bias=False)
        yield case(rng, dtype, GEOMETRIES[2][0], "FORWARD", "CROSS_CORRELATION", (2, 3, 1), bias=False, special=True)
        # OutputTensor sizes other than the formula's (the DirectML EP's ConvTranspose with
        # output_padding or output_shape): DirectML computes each element by the sums, the Bias
        # alone past the transposed result; smaller sizes are the start (ops/convolution.py)
        for geometries in GEOMETRIES.values():
            for geometry in geometries[:2]:
                dims = len(geometry[1])
                for direction, mode, bias, activation in (
                    ("FORWARD", "CONVOLUTION", True, "ACTIVATION_LINEAR"),
                    ("BACKWARD", "CONVOLUTION", True, "ACTIVATION_LINEAR"),
                    ("BACKWARD", "CROSS_CORRELATION", False, None),
                ):
                    for resize in RESIZES[dims]:
                        yield case(rng, dtype, geometry, direction, mode, (2, 4, 2), bias, activation, resize=resize)
