"""Matrix cases for DML_OPERATOR_FOLD and DML_OPERATOR_UNFOLD (dml2onnx/ops/fold.py): every data
type DirectML takes, 1 to 6 spatial dimensions, windows with strides, dilations and asymmetric
padding (blocks that overlap, skip elements, and read only padding). UNFOLD moves values (bit
patterns checked); FOLD sums overlapping windows: floats small enough that any order sums them
exactly, integers at their extremes (8/16-bit sums saturate, 32-bit ones wrap)."""

from __future__ import annotations

import math
from collections.abc import Iterator

import numpy as np

from dml2onnx.cases.common import Case, tensor_of
from dml2onnx.cases.slice import data
from dml2onnx.core import dtypes, operator_table

# (name, spatial sizes, WindowSizes, Strides, Dilations, StartPadding, EndPadding)
GEOMETRIES = (
    ("1d", (7,), (3,), (2,), (1,), (1,), (0,)),
    ("2d-pad", (4, 5), (3, 3), (1, 1), (1, 1), (1, 0), (1, 2)),
    ("2d-dilated", (5, 6), (2, 3), (2, 1), (2, 2), (0, 1), (0, 1)),
    ("3d", (3, 4, 3), (2, 2, 2), (1, 2, 1), (1, 1, 1), (0, 0, 1), (0, 1, 0)),
    ("4d", (2, 3, 2, 3), (2, 1, 2, 2), (1, 1, 1, 2), (1, 1, 1, 1), (0, 0, 0, 1), (0, 1, 0, 0)),
    ("6d", (2, 2, 1, 2, 2, 2), (2, 1, 1, 2, 1, 2), (1, 1, 1, 1, 1, 1), (1, 1, 1, 1, 1, 1), (0,) * 6, (0, 1, 0, 0, 0, 0)),
)


def _blocks(
    spatial: tuple[int, ...], w: tuple[int, ...], s: tuple[int, ...], d: tuple[int, ...], p0: tuple[int, ...], p1: tuple[int, ...]
) -> int:
    return math.prod(
        (n + a + b - dd * (ww - 1) - 1) // ss + 1 for n, ww, ss, dd, a, b in zip(spatial, w, s, d, p0, p1, strict=True)
    )


def _fold_values(rng: np.random.Generator, shape: tuple[int, ...], dtype: dtypes.DataType) -> np.ndarray:
    if dtype.is_float:  # multiples of 1/4 below 64: every sum of a few is exact in FLOAT16 and FLOAT32
        return (rng.integers(-256, 256, shape) / 4).astype(dtype.numpy)
    return data(rng, shape, dtype)  # extremes among them: the sums saturate or wrap


def cases() -> Iterator[Case]:
    rng = np.random.default_rng(1515)
    for op in ("UNFOLD", "FOLD"):
        for k, dtype in enumerate(operator_table.OPERATORS[op].support[0].tensors["InputTensor"].types):
            for j, (name, spatial, w, s, d, p0, p1) in enumerate(GEOMETRIES):
                if (k + j) % 2 and name not in ("2d-pad", "6d"):
                    continue  # every geometry, every type, not every pair
                n, c = 2 if j % 2 else 1, 3 if j % 3 == 0 else 2
                image = (n, c, *spatial)
                columns = (n, c * math.prod(w), _blocks(spatial, w, s, d, p0, p1))
                fields = {
                    "DimensionCount": len(spatial),
                    "WindowSizes": list(w),
                    "Strides": list(s),
                    "Dilations": list(d),
                    "StartPadding": list(p0),
                    "EndPadding": list(p1),
                }
                if op == "UNFOLD":
                    fields |= {"InputTensor": tensor_of(dtype, image), "OutputTensor": tensor_of(dtype, columns)}
                    x = data(rng, image, dtype)
                else:
                    fields |= {"InputTensor": tensor_of(dtype, columns), "OutputTensor": tensor_of(dtype, image)}
                    x = _fold_values(rng, columns, dtype)
                yield Case(f"{op}-{dtype}-{name}", op, fields, {"InputTensor": x})
