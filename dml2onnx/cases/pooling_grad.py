"""Matrix cases for DML_OPERATOR_AVERAGE_POOLING_GRAD and MAX_POOLING_GRAD (dml2onnx/ops/
pooling_grad.py): both data types, 2 and 3 spatial dimensions (4-D and 5-D tensors), the forward
pooling tests' window configurations (windows of 1 to 3 elements per dimension, strides 1 and 2,
symmetric, asymmetric and no padding, padding as large as the window: windows entirely in
padding, dilations for MAX), IncludePadding both ways, AVERAGE with fewer and more windows than the
forward's formula (windows past the padded input), MAX with ties, the extremes, infinities and
NaN in InputTensor. Gradients within +-POOLING_MAGNITUDE."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from dml2onnx.cases.common import Case, tensor_of, values
from dml2onnx.cases.pooling import CONFIGS
from dml2onnx.core import dtypes, operator_table
from dml2onnx.lowering.tolerances import POOLING_MAGNITUDE
from dml2onnx.ops.pooling import Window


def _fields(op: str, dtype: dtypes.DataType, config: tuple[Any, ...], k: int, extra: int) -> dict[str, Any]:
    sizes, strides, window, start, end, dilations = config
    is_max = op == "MAX_POOLING_GRAD"
    w = Window("", tuple(strides), tuple(window), tuple(start), tuple(end), tuple(dilations) if is_max else (1,) * len(strides))
    out = [*sizes[:2], *w.output_sizes(sizes[2:])]
    out[-1] += extra  # AVERAGE: windows past the padded input (+1) or fewer windows (-1)
    fields: dict[str, Any] = {
        "InputGradientTensor": tensor_of(dtype, out),
        "OutputGradientTensor": tensor_of(dtype, sizes),
        "DimensionCount": len(strides),
        "Strides": strides,
        "WindowSize": window,
        "StartPadding": start,
        "EndPadding": end,
    }
    if is_max:
        return fields | {"InputTensor": tensor_of(dtype, sizes), "Dilations": dilations}
    return fields | {"IncludePadding": bool(k % 2)}


def _input(rng: np.random.Generator, dtype: dtypes.DataType, sizes: tuple[int, ...], variant: str) -> np.ndarray:
    if variant in ("ties", "extreme"):
        return values(rng, sizes, dtype, variant)
    v = rng.standard_normal(sizes) * 4
    if variant == "non_finite":
        for special, share in ((np.inf, 0.15), (-np.inf, 0.15), (np.nan, 0.15)):
            v = np.where(rng.random(sizes) < share, special, v)
    return v.astype(dtype.numpy)


def cases() -> Iterator[Case]:
    rng = np.random.default_rng(142)
    for op in ("AVERAGE_POOLING_GRAD", "MAX_POOLING_GRAD"):
        for dtype in operator_table.OPERATORS[op].support[0].tensors["InputGradientTensor"].types:
            for k, config in enumerate(CONFIGS):
                if op == "MAX_POOLING_GRAD":
                    runs = [(0, v) for v in ("plain", "ties", "extreme", "non_finite")]
                else:
                    runs = [(0, "plain"), (1, "plain"), (-1, "plain")] if k in (0, 1, 5) else [(0, "plain")]
                for r, (extra, variant) in enumerate(runs):
                    fields = _fields(op, dtype, config, k + r, extra)
                    if min(fields["InputGradientTensor"]["Sizes"]) < 1:
                        continue
                    shape = fields["InputGradientTensor"]["Sizes"]
                    feeds = {"InputGradientTensor": rng.uniform(-POOLING_MAGNITUDE, POOLING_MAGNITUDE, shape).astype(dtype.numpy)}
                    name = f"{op}-{dtype}-config{k}"
                    if op == "MAX_POOLING_GRAD":
                        feeds["InputTensor"] = _input(rng, dtype, config[0], variant)
                        name += f"-{variant}"
                    else:
                        name += f"-include{int(fields['IncludePadding'])}" + {0: "", 1: "-past", -1: "-fewer"}[extra]
                    yield Case(name, op, fields, feeds)
    # AVERAGE's non-finite gradients stay in their windows (the conv_transpose candidate's cuDNN
    # kernels must not spread them): a generator of their own, so the cases above keep their data
    special_rng = np.random.default_rng(143)
    op = "AVERAGE_POOLING_GRAD"
    for dtype in operator_table.OPERATORS[op].support[0].tensors["InputGradientTensor"].types:
        for k in (0, 1, 5):
            fields = _fields(op, dtype, CONFIGS[k], k, 0)
            shape = fields["InputGradientTensor"]["Sizes"]
            gradient = special_rng.uniform(-POOLING_MAGNITUDE, POOLING_MAGNITUDE, shape)
            for special, share in ((np.inf, 0.1), (-np.inf, 0.1), (np.nan, 0.1)):
                gradient = np.where(special_rng.random(shape) < share, special, gradient)
            feeds = {"InputGradientTensor": gradient.astype(dtype.numpy)}
            yield Case(f"{op}-{dtype}-config{k}-include{int(fields['IncludePadding'])}-non_finite", op, fields, feeds)
