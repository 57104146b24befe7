"""Matrix cases for DML_OPERATOR_BATCH_NORMALIZATION_TRAINING
(dml2onnx/ops/batch_normalization_training.py): both data types of the page's table at every
dimension count 1 to 8, Scale (and so the statistics) per channel [1, C, 1, ...], per activation
[1, C, H, W, ...], one for all, one per element (nothing reduced) and mixed; with and without
FusedAddTensor; every fused activation; Epsilon 0, 1e-7 (below cuDNN's minimum) and 0.5; 256
elements per mean; an offset; and special values: constant groups (variance 0, NaN with Epsilon 0),
NaN and infinities in the input, NaN in Bias, infinity in FusedAdd. The inputs keep to
tolerances.batch_normalization_training's bounds (`group_values`)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from dml2onnx.cases.common import ACTIVATIONS, Case, tensor_of
from dml2onnx.core import dtypes
from dml2onnx.lowering import tolerances

OP = "BATCH_NORMALIZATION_TRAINING"
SHAPES = {1: (6,), 2: (4, 3), 3: (3, 2, 4), 4: (2, 3, 4, 5), 5: (2, 3, 2, 2, 3), 6: (2, 3, 2, 2, 2, 2)}
SHAPES |= {7: (2,) * 7, 8: (2,) * 8}


def scale_sizes(shape: tuple[int, ...], layout: str) -> tuple[int, ...]:
    """ScaleTensor's Sizes: the axes of size 1 are the reduced ones."""
    rank = len(shape)
    keep = {
        "channel": {1},  # [1, C, 1, ...]: per channel (at rank 1 everything is reduced)
        "activation": set(range(1, rank)),  # [1, C, H, W, ...]
        "all": set(),
        "none": set(range(rank)),  # nothing reduced: Mean = x, Variance = 0
        "mixed": set(range(0, rank, 2)),  # [N, 1, H, 1, ...]
    }[layout]
    return tuple(s if i in keep else 1 for i, s in enumerate(shape))


def group_values(
    rng: np.random.Generator, shape: tuple[int, ...], sizes: tuple[int, ...], dtype: dtypes.DataType, center: float = 0.0
) -> np.ndarray:
    """An input within the tolerance's bounds: each group of the reduced axes (ScaleTensor's
    `sizes`) of two or more elements has a standard deviation of 1.05 to 1.25 about a mean near
    `center` and |x - mean| <= BNT_Z of them, |x| <= BNT_MAGNITUDE (checked after the rounding to
    `dtype`); a single-element group is any value within the magnitude."""
    axes = tuple(i for i, s in enumerate(sizes) if s == 1)
    n = int(np.prod([shape[a] for a in axes], dtype=np.int64))
    for _ in range(100):
        raw = rng.uniform(-1, 1, shape)
        if n < 2:
            x = (raw * 3 + center).astype(dtype.numpy)
        else:
            z = (raw - raw.mean(axis=axes, keepdims=True)) / raw.std(axis=axes, keepdims=True)
            width = rng.uniform(1.05, 1.25, sizes)
            x = (center + rng.uniform(-0.25, 0.25, sizes) + width * z).astype(dtype.numpy)
            w = x.astype(np.float64)
            std = w.std(axis=axes, keepdims=True)
            ok = (
                std.min() >= tolerances.BNT_SPREAD
                and np.abs(w - w.mean(axis=axes, keepdims=True)).max() <= tolerances.BNT_Z * std.min()
            )
            if not ok:
                continue
        if np.abs(x.astype(np.float64)).max() <= tolerances.BNT_MAGNITUDE:
            return x
    raise AssertionError(f"no input within the bounds for {shape} / {sizes}")


def fields_for(
    dtype: dtypes.DataType,
    shape: tuple[int, ...],
    sizes: tuple[int, ...],
    fused_add: bool,
    epsilon: float = 1e-5,
    activation: str | None = None,
) -> dict[str, Any]:
    f: dict[str, Any] = {"InputTensor": tensor_of(dtype, shape), "ScaleTensor": tensor_of(dtype, sizes)}
    f |= {"BiasTensor": tensor_of(dtype, sizes), "OutputTensor": tensor_of(dtype, shape)}
    f |= {"OutputMeanTensor": tensor_of(dtype, sizes), "OutputVarianceTensor": tensor_of(dtype, sizes), "Epsilon": epsilon}
    if fused_add:
        f["FusedAddTensor"] = tensor_of(dtype, shape)
    if activation:
        f["FusedActivation"] = {"Type": activation, **ACTIVATIONS[activation]}
    return f


def feeds_for(
    rng: np.random.Generator,
    dtype: dtypes.DataType,
    shape: tuple[int, ...],
    sizes: tuple[int, ...],
    fused_add: bool,
    center: float = 0.0,
) -> dict[str, np.ndarray]:
    t = dtype.numpy
    feeds = {"InputTensor": group_values(rng, shape, sizes, dtype, center)}
    feeds |= {"ScaleTensor": rng.uniform(-2, 2, sizes).astype(t), "BiasTensor": rng.uniform(-2, 2, sizes).astype(t)}
    if fused_add:
        feeds["FusedAddTensor"] = rng.uniform(-2, 2, shape).astype(t)
    return feeds


def _case(
    rng: np.random.Generator,
    dtype: dtypes.DataType,
    shape: tuple[int, ...],
    layout: str,
    fused_add: bool,
    epsilon: float = 1e-5,
    activation: str | None = None,
    data: str = "normal",
) -> Case:
    sizes = scale_sizes(shape, layout)
    fields = fields_for(dtype, shape, sizes, fused_add, epsilon, activation)
    feeds = feeds_for(rng, dtype, shape, sizes, fused_add, center=2.0 if data == "offset" else 0.0)
    x = feeds["InputTensor"]
    if data == "constant":  # every group constant (exactly: 1.5 or -0.25 per group): variance 0
        feeds["InputTensor"] = np.broadcast_to(np.where(rng.integers(0, 2, sizes) == 1, 1.5, -0.25), shape).astype(x.dtype)
    elif data == "nan":
        x[(0,) * len(shape)] = np.nan
    elif data == "inf":
        x[(0,) * len(shape)] = np.inf
    elif data == "inf_minus_inf":  # +inf and -inf in one group: the mean is NaN
        x[(0,) * len(shape)], x[(1,) + (0,) * (len(shape) - 1)] = np.inf, -np.inf
    elif data == "nan_bias":
        feeds["BiasTensor"][(0,) * len(shape)] = np.nan
    elif data == "inf_fused_add":
        feeds["FusedAddTensor"][(0,) * len(shape)] = -np.inf
    parts = [OP, str(dtype), "x".join(map(str, shape)), layout, "add" if fused_add else "noadd", f"eps{epsilon}", data]
    return Case("-".join(parts + ([activation] if activation else [])), OP, fields, feeds)


def cases() -> Iterator[Case]:
    rng = np.random.default_rng(21)
    for dtype in dtypes.FLOATS:
        for rank, shape in SHAPES.items():
            seen = set()
            for i, layout in enumerate(("channel", "activation", "all", "none", "mixed")):
                if scale_sizes(shape, layout) in seen:
                    continue
                seen.add(scale_sizes(shape, layout))
                yield _case(rng, dtype, shape, layout, fused_add=(rank + i) % 2 == 0)
        nchw = SHAPES[4]
        for activation in ACTIVATIONS:
            yield _case(rng, dtype, nchw, "channel", True, activation=activation)
        yield _case(rng, dtype, nchw, "activation", True, activation="ACTIVATION_RELU")
        for epsilon in (0.0, 1e-7, 0.5):
            yield _case(rng, dtype, nchw, "channel", False, epsilon)
        yield _case(rng, dtype, (4, 8, 8, 4), "channel", True)  # 128 elements per mean
        yield _case(rng, dtype, (4, 2, 8, 8), "channel", False)  # 256
        yield _case(rng, dtype, nchw, "channel", True, data="offset")
        yield _case(rng, dtype, nchw, "activation", False, data="offset")
        for epsilon in (1e-5, 0.0):  # 32 elements per mean: DirectML's mean (times 1/32) exact too
            yield _case(rng, dtype, (2, 3, 4, 4), "channel", True, epsilon, data="constant")
        yield _case(rng, dtype, SHAPES[2], "none", False, 0.0)  # nothing reduced, Epsilon 0: NaN
        for data in ("nan", "inf", "inf_minus_inf", "nan_bias", "inf_fused_add"):
            yield _case(rng, dtype, nchw, "channel", True, data=data)
