"""Matrix cases for DML_OPERATOR_BATCH_NORMALIZATION_GRAD and …_TRAINING_GRAD
(dml2onnx/ops/batch_normalization_grad.py): both data types of the pages' tables at every dimension
count 1 to 8, MeanTensor (and so Variance, Scale and the parameter gradients) per channel [1, C, 1,
...], per activation [1, C, H, W, ...], one for all, one per element (nothing reduced) and mixed;
Epsilon 0, 1e-5 and 0.5 (and omitted: BATCH_NORMALIZATION_GRAD's optional field); 64 elements
per sum; statistics off the batch's own (MeanTensor and VarianceTensor are taken as given); an
offset mean; a broadcast gradient (Strides 0); and special values: NaN and infinities in x and dy,
V + Epsilon of 0 and below. The inputs keep to tolerances.batch_normalization_grad's bounds
(`feeds_for`)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from dml2onnx.cases.batch_normalization_training import SHAPES, scale_sizes
from dml2onnx.cases.common import Case, tensor_of
from dml2onnx.core import dtypes
from dml2onnx.lowering import tolerances

OPS = ("BATCH_NORMALIZATION_GRAD", "BATCH_NORMALIZATION_TRAINING_GRAD")
ELEMENTS = ("InputTensor", "InputGradientTensor", "OutputGradientTensor")
STATISTICS = ("MeanTensor", "VarianceTensor", "ScaleTensor", "OutputScaleGradientTensor", "OutputBiasGradientTensor")


def fields_for(
    dtype: dtypes.DataType, shape: tuple[int, ...], sizes: tuple[int, ...], epsilon: float | None = 1e-5
) -> dict[str, Any]:
    """`sizes`: MeanTensor's (its axes of size 1 are the reduced ones); Epsilon None: omitted."""
    f: dict[str, Any] = {n: tensor_of(dtype, shape) for n in ELEMENTS} | {n: tensor_of(dtype, sizes) for n in STATISTICS}
    return f if epsilon is None else f | {"Epsilon": epsilon}


def feeds_for(
    rng: np.random.Generator,
    dtype: dtypes.DataType,
    shape: tuple[int, ...],
    sizes: tuple[int, ...],
    epsilon: float,
    center: float = 0.0,
    batch_statistics: bool = True,
) -> dict[str, np.ndarray]:
    """Within the tolerance's bounds: |dy| <= BNG_GRADIENT, |Scale| <= BNG_SCALE, V + Epsilon in
    BNG_VARIANCE and |x - M| <= BNG_Z sqrt(V + Epsilon), checked after the rounding to `dtype`.
    With `batch_statistics`, M and V are x's own mean and population variance over the reduced
    axes (as the forward pass gives them) where a group has two or more elements; else M and V
    are drawn and x spread around M by up to sqrt(V + Epsilon)."""
    t = dtype.numpy
    lo, hi = tolerances.BNG_VARIANCE
    eps = float(np.float32(epsilon))
    axes = tuple(i for i, s in enumerate(sizes) if s == 1)
    batch = batch_statistics and int(np.prod([shape[a] for a in axes], dtype=np.int64)) > 1
    for _ in range(100):
        target = rng.uniform(max(lo, eps), hi, sizes)  # V + Epsilon
        mean = center + rng.uniform(-2, 2, sizes)
        z = rng.uniform(-1, 1, shape)
        if batch:  # z of mean 0 and variance 1 over each group (|z| <= sqrt(3) < BNG_Z)
            z = (z - z.mean(axis=axes, keepdims=True)) / z.std(axis=axes, keepdims=True)
        x = (mean + z * np.sqrt(target - eps if batch else target)).astype(t)
        if batch:
            w = x.astype(np.float64)
            mean = w.mean(axis=axes, keepdims=True)
            var = ((w - mean) ** 2).mean(axis=axes, keepdims=True)
        else:
            var = target - eps
        mean, var = mean.astype(t), np.maximum(var, 0).astype(t)
        v_eps = var.astype(np.float64) + eps
        spread = np.abs(x.astype(np.float64) - mean.astype(np.float64)) / np.sqrt(v_eps)
        if lo <= v_eps.min() and v_eps.max() <= hi and spread.max() <= tolerances.BNG_Z:
            break
    else:
        raise AssertionError(f"no input within the bounds for {shape} / {sizes}")
    dy = rng.uniform(-tolerances.BNG_GRADIENT, tolerances.BNG_GRADIENT, shape).astype(t)
    scale = rng.uniform(-tolerances.BNG_SCALE, tolerances.BNG_SCALE, sizes).astype(t)
    return {"InputTensor": x, "InputGradientTensor": dy, "MeanTensor": mean, "VarianceTensor": var, "ScaleTensor": scale}


def _case(
    rng: np.random.Generator,
    op: str,
    dtype: dtypes.DataType,
    shape: tuple[int, ...],
    layout: str,
    epsilon: float | None = 1e-5,
    data: str = "normal",
) -> Case:
    sizes = scale_sizes(shape, layout)
    eps = 0.0 if epsilon is None else epsilon
    feeds = feeds_for(rng, dtype, shape, sizes, eps, 100.0 if data == "offset" else 0.0, data != "given")
    x, dy, var = feeds["InputTensor"], feeds["InputGradientTensor"], feeds["VarianceTensor"]
    first, second = (0,) * len(shape), (1,) + (0,) * (len(shape) - 1)
    if data == "nan":
        x[first] = np.nan
    elif data == "inf":
        dy[first], x[second] = np.inf, -np.inf
    elif data == "zero_variance":  # V + Epsilon = 0 (Epsilon 0) and below 0 in two groups
        var.flat[0] = 0
        var.flat[-1] = -1
    fields = fields_for(dtype, shape, sizes, epsilon)
    if data == "broadcast":  # one batch item's gradient read for every item (Strides 0 on axis 0)
        fields["InputGradientTensor"]["Strides"] = [0, *np.cumprod((1, *shape[:0:-1]))[::-1][1:].tolist()]
        feeds["InputGradientTensor"] = np.ascontiguousarray(np.broadcast_to(dy[:1], shape))
    parts = [op, str(dtype), "x".join(map(str, shape)), layout, "eps-" if epsilon is None else f"eps{epsilon}", data]
    return Case("-".join(parts), op, fields, feeds)


def cases() -> Iterator[Case]:
    rng = np.random.default_rng(23)
    for op in OPS:
        for dtype in dtypes.FLOATS:
            for shape in SHAPES.values():
                seen = set()
                for layout in ("channel", "activation", "all", "none", "mixed"):
                    if scale_sizes(shape, layout) not in seen:
                        seen.add(scale_sizes(shape, layout))
                        yield _case(rng, op, dtype, shape, layout)
            nchw = SHAPES[4]
            for epsilon in (0.0, 0.5, *((None,) if op == "BATCH_NORMALIZATION_GRAD" else ())):
                yield _case(rng, op, dtype, nchw, "channel", epsilon)
            yield _case(rng, op, dtype, (4, 2, 4, 4), "channel")  # 64 elements per sum
            yield _case(rng, op, dtype, nchw, "channel", data="given")  # M, V not the batch's own
            yield _case(rng, op, dtype, nchw, "activation", data="given")
            yield _case(rng, op, dtype, nchw, "channel", data="offset")
            for data in ("nan", "inf", "broadcast"):
                yield _case(rng, op, dtype, nchw, "channel", data=data)
            yield _case(rng, op, dtype, nchw, "channel", 0.0, data="zero_variance")
