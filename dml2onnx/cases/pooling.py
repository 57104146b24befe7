"""Matrix cases for the pooling operators (dml2onnx/ops/pooling.py): AVERAGE_POOLING(1),
LP_POOLING(1) and MAX_POOLING(1, 2), MAX_POOLING1 and 2 with and without OutputIndicesTensor
(each index type of the newest table), every data type of each page's newest table, 2 and 3 spatial
dimensions (4-D and 5-D tensors), windows of 1 to 3 elements per dimension, strides of 1 and 2,
symmetric, asymmetric and no padding, padding as large as the window (windows entirely in
padding), dilations in the "1" versions (OutputTensor's sizes by the dilated extent, and by the
pages' formula with WindowSize: windows past the padded input), IncludePadding both ways, P of 1, 2 and 3; MAX with the
types' extremes, infinities and NaN. CEIL_CONFIGS: OutputTensor's spatial sizes other than the
formula, as DirectML takes them (pooling.py): ceil_mode as ONNX Runtime's DirectML EP writes it
(one window more, partly past the padded input), a window entirely past it, fewer windows, in
one (a [N, C, 1, W] input), two and three spatial dimensions."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from dml2onnx.cases.common import Case, tensor_of, values
from dml2onnx.core import dtypes, operator_table
from dml2onnx.ops.pooling import Window

# (input sizes, Strides, WindowSize, StartPadding, EndPadding, Dilations of the "1" versions)
CONFIGS: tuple[tuple[tuple[int, ...], list[int], list[int], list[int], list[int], list[int]], ...] = (
    ((2, 3, 5, 6), [1, 1], [2, 2], [0, 0], [0, 0], [2, 1]),
    ((1, 2, 5, 6), [2, 2], [3, 3], [1, 1], [1, 1], [1, 2]),
    ((1, 2, 4, 7), [1, 2], [3, 2], [2, 0], [0, 1], [1, 3]),
    ((1, 2, 3, 4), [1, 1], [1, 1], [0, 0], [0, 0], [1, 1]),
    ((1, 1, 3, 3), [1, 2], [1, 2], [1, 0], [1, 2], [2, 2]),  # padding as large as the window
    ((1, 2, 4, 3, 5), [1, 2, 1], [2, 2, 2], [1, 0, 1], [0, 1, 1], [1, 1, 2]),
    ((2, 1, 3, 4, 4), [2, 1, 3], [3, 1, 2], [1, 0, 0], [1, 0, 2], [1, 1, 1]),
)
P_VALUES = (1, 2, 3)
# CONFIGS' fields, then OutputTensor's spatial sizes
CEIL_CONFIGS: tuple[tuple[tuple[int, ...], list[int], list[int], list[int], list[int], list[int], tuple[int, ...]], ...] = (
    ((1, 2, 8, 8), [2, 2], [3, 3], [0, 0], [0, 0], [1, 1], (4, 4)),  # ceil_mode: the formula gives 3
    ((1, 2, 6, 7), [2, 2], [3, 3], [1, 1], [1, 1], [1, 2], (4, 4)),  # ceil with padding (dilated: 3 + 1)
    ((2, 1, 1, 9), [1, 2], [1, 3], [0, 0], [0, 1], [1, 1], (1, 6)),  # one dimension: 4, ceil 5, and 1 entirely past
    ((1, 2, 5, 4, 5), [2, 2, 2], [2, 2, 2], [0, 1, 0], [0, 0, 0], [1, 1, 1], (3, 3, 3)),
    ((1, 1, 5, 6), [1, 1], [2, 2], [0, 0], [0, 0], [1, 1], (3, 2)),  # fewer windows than fit (4, 5)
)


def _fields(
    op: str, dtype: dtypes.DataType, config: tuple[Any, ...], k: int, spatial: tuple[int, ...] | None = None
) -> dict[str, Any]:
    sizes, strides, window, start, end, dilations = config
    dilated = op in ("AVERAGE_POOLING1", "LP_POOLING1", "MAX_POOLING2")
    # config 2 of the dilated versions: OutputTensor's sizes by the pages' formula with WindowSize
    # (windows past the padded input), the others with the dilated window's extent
    by_extent = dilated and k != 2
    w = Window(
        "", tuple(strides), tuple(window), tuple(start), tuple(end), tuple(dilations) if by_extent else (1,) * len(strides)
    )
    out = (*sizes[:2], *(spatial or w.output_sizes(sizes[2:])))
    fields: dict[str, Any] = {
        "InputTensor": tensor_of(dtype, sizes),
        "OutputTensor": tensor_of(dtype, out),
        "DimensionCount": len(strides),
        "Strides": strides,
        "WindowSize": window,
        "StartPadding": start,
        "EndPadding": end,
    }
    if dilated:
        fields["Dilations"] = dilations
    if op.startswith("AVERAGE"):
        fields["IncludePadding"] = bool(k % 2)
    if op.startswith("LP"):
        fields["P"] = P_VALUES[k % len(P_VALUES)]
    if op in ("MAX_POOLING1", "MAX_POOLING2") and k % 2 == 0:  # the indices on every other config
        index_types = operator_table.OPERATORS[op].support[0].tensors["OutputIndicesTensor"].types
        fields["OutputIndicesTensor"] = tensor_of(index_types[(k // 2) % len(index_types)], out)
    return fields


def _input(rng: np.random.Generator, op: str, dtype: dtypes.DataType, sizes: tuple[int, ...], k: int) -> np.ndarray:
    if op.startswith("MAX") and k % 2:
        return values(rng, sizes, dtype, "extreme")
    if dtype.is_float:
        v = rng.standard_normal(sizes) * 4
        if op.startswith("MAX") and k % 3 == 0:  # infinities
            v = np.where(rng.random(sizes) < 0.15, np.inf, v)
            v = np.where(rng.random(sizes) < 0.15, -np.inf, v)
            v = np.where(rng.random(sizes) < 0.15, np.nan, v)
        return v.astype(dtype.numpy)
    info = np.iinfo(dtype.numpy)
    return rng.integers(max(int(info.min), -100), min(int(info.max), 100), size=sizes, endpoint=True).astype(dtype.numpy)


def cases() -> Iterator[Case]:
    rng = np.random.default_rng(41)
    ceil_rng = np.random.default_rng(43)  # apart: the other cases' inputs stay as they were
    for op in ("AVERAGE_POOLING", "AVERAGE_POOLING1", "LP_POOLING", "LP_POOLING1", "MAX_POOLING", "MAX_POOLING1", "MAX_POOLING2"):
        for dtype in operator_table.OPERATORS[op].support[0].tensors["InputTensor"].types:
            for k, config in enumerate(CONFIGS):
                repeats = 2 if op.startswith("AVERAGE") else 1  # IncludePadding both ways on every config
                for r in range(repeats):
                    fields = _fields(op, dtype, config, k + r)
                    x = _input(rng, op, dtype, config[0], k)
                    extra = f"-include{int(fields['IncludePadding'])}" if "IncludePadding" in fields else ""
                    extra += f"-p{fields['P']}" if "P" in fields else ""
                    extra += f"-indices{fields['OutputIndicesTensor']['DataType']}" if "OutputIndicesTensor" in fields else ""
                    yield Case(f"{op}-{dtype}-config{k}{extra}", op, fields, {"InputTensor": x})
            for k, (*config, spatial) in enumerate(CEIL_CONFIGS):
                for r in range(2 if op.startswith("AVERAGE") else 1):
                    # dilated only in the "1" versions, by the given sizes
                    fields = _fields(op, dtype, config, k + r, spatial)
                    x = _input(ceil_rng, op, dtype, config[0], k)
                    extra = f"-include{int(fields['IncludePadding'])}" if "IncludePadding" in fields else ""
                    extra += f"-indices{fields['OutputIndicesTensor']['DataType']}" if "OutputIndicesTensor" in fields else ""
                    yield Case(f"{op}-{dtype}-ceil{k}{extra}", op, fields, {"InputTensor": x})
