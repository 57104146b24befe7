"""Matrix cases for ROI_POOLING, ROI_ALIGN and ROI_ALIGN1 (dml2onnx/ops/roi.py): both data types of
each page's newest table (FLOAT32, FLOAT16; BatchIndicesTensor UINT32 and UINT64), every
dimension count of ROITensor (2-4) and BatchIndicesTensor (1-4), both ReductionFunctions and
InterpolationModes, fixed, clamped and adaptive sample counts (MinimumSamplesPerOutput 1 with
MaximumSamplesPerOutput UINT32_MAX), the pixel offsets (ROI_ALIGN1: 0.5/-0.5, 0/-0.5, 0/0,
0.25/0.125), AlignRegionsToCorners both ways (a single output element too), OutOfBoundsInputValue,
different SpatialScaleX/SpatialScaleY; regions inside, covering, partly and entirely outside the
input, inverted and empty; ROI_POOLING with square and other PooledSizes, halves to round, fractional
batch ids, and the input's infinities and NaN (ROI_ALIGN1 too, with NEAREST_NEIGHBOR).

Values are multiples of 1/8 within +-8 and ROI coordinates multiples of 1/4 (tolerances.ROI_*),
so every sample's coordinate and weight is exact in FLOAT32."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from dml2onnx.cases.common import Case, tensor_of
from dml2onnx.core import dtypes

UINT32_MAX = 2**32 - 1
INPUT = (2, 2, 5, 6)  # N, C, H, W
# [x1, y1, x2, y2]: inside, the whole input, partly outside, inverted, empty, far outside (many
# samples when adaptive: at most 56 per output element of [2, 3]), near the far corner
REGIONS = np.array(
    [
        [0.5, 0.75, 4.25, 3.5],
        [0, 0, 6, 5],
        [-2, -1.5, 3, 2.5],
        [5, 4, 1.25, 0.5],
        [2.5, 2.5, 2.5, 2.5],
        [-9, -6, 12, 9],
        [5.5, 4.5, 6.25, 5.25],
    ]
)
BATCHES = np.array([0, 1, 1, 0, 1, 0, 1])
SAMPLES = ((1, 1), (2, 2), (1, UINT32_MAX), (2, 3))
OFFSETS = ((0.5, -0.5, False), (0.0, -0.5, False), (0.0, 0.0, False), (0.5, -0.5, True), (0.0, 0.0, True), (0.25, 0.125, True))
SCALES = ((1.0, 1.0), (0.5, 1.0), (1.0, 0.5))
OUT_OF_BOUNDS = (0.0, 2.5, -8.0)


def _values(rng: np.random.Generator, shape: tuple[int, ...], dtype: dtypes.DataType, special: bool = False) -> np.ndarray:
    x = (rng.integers(-64, 65, size=shape) / 8).astype(dtype.numpy)
    if special:
        flat = x.reshape(-1)
        flat[::7], flat[3::11], flat[5::13] = np.nan, np.inf, -np.inf
    return x


def align_case(
    rng: np.random.Generator,
    op: str,
    dtype: dtypes.DataType,
    reduction: str,
    mode: str,
    samples: tuple[int, int],
    i: int,
    out_hw: tuple[int, int] = (2, 3),
    offsets: tuple[float, float, bool] | None = None,
    special: bool = False,
) -> Case:
    r = len(REGIONS)
    roi_rank, index_rank = 2 + i % 3, 1 + i % 4
    index_type = (dtypes.UINT32, dtypes.UINT64)[i % 2]
    sx, sy = SCALES[i % 3]
    oob = OUT_OF_BOUNDS[i % 3]
    fields: dict[str, Any] = {
        "InputTensor": tensor_of(dtype, INPUT),
        "ROITensor": tensor_of(dtype, (1,) * (roi_rank - 2) + (r, 4)),
        "BatchIndicesTensor": tensor_of(index_type, (1,) * (index_rank - 1) + (r,)),
        "OutputTensor": tensor_of(dtype, (r, INPUT[1], *out_hw)),
        "ReductionFunction": reduction,
        "InterpolationMode": mode,
        "SpatialScaleX": sx,
        "SpatialScaleY": sy,
        "OutOfBoundsInputValue": oob,
        "MinimumSamplesPerOutput": samples[0],
        "MaximumSamplesPerOutput": samples[1],
    }
    parts = [op, str(dtype), reduction, mode, f"s{samples[0]}-{'max' if samples[1] == UINT32_MAX else samples[1]}"]
    parts += [f"out{out_hw[0]}x{out_hw[1]}", f"scale{sx}x{sy}", f"oob{oob}", f"roi{roi_rank}d", f"{index_type}x{index_rank}d"]
    if op == "ROI_ALIGN1":
        ipo, opo, corners = offsets if offsets is not None else OFFSETS[i % len(OFFSETS)]
        fields |= {"InputPixelOffset": ipo, "OutputPixelOffset": opo, "AlignRegionsToCorners": corners}
        parts += [f"ipo{ipo}", f"opo{opo}", "corners" if corners else "spread"]
    if special:
        parts.append("special")
    inputs = {
        "InputTensor": _values(rng, INPUT, dtype, special),
        "ROITensor": REGIONS.astype(dtype.numpy).reshape(fields["ROITensor"]["Sizes"]),
        "BatchIndicesTensor": BATCHES.astype(index_type.numpy).reshape(fields["BatchIndicesTensor"]["Sizes"]),
    }
    return Case("-".join(parts), op, fields, inputs)


# ROI_POOLING's [BatchID, x1, y1, x2, y2]: inside, halves (to even), partly outside, inverted,
# entirely outside, a fractional batch id, the whole input
POOL_REGIONS = np.array(
    [
        [0, 1, 1, 4, 3],
        [1, 0.5, 1.5, 2.5, 3.5],
        [1, -3, -2, 2, 1],
        [0, 5, 3, 2, 1],
        [1, 7, 6, 9, 8],
        [1.5, 0, 0, 5, 4],
        [0.75, 0, 0, 6, 5],
    ]
)


def pooling_case(
    rng: np.random.Generator, dtype: dtypes.DataType, pooled: tuple[int, int], scale: float, special: bool = False
) -> Case:
    r = len(POOL_REGIONS)
    fields = {
        "InputTensor": tensor_of(dtype, INPUT),
        "ROITensor": tensor_of(dtype, (1, 1, r, 5)),
        "OutputTensor": tensor_of(dtype, (r, INPUT[1], *pooled)),
        "SpatialScale": scale,
        "PooledSize": {"Width": pooled[1], "Height": pooled[0]},
    }
    inputs = {
        "InputTensor": _values(rng, INPUT, dtype, special),
        "ROITensor": POOL_REGIONS.astype(dtype.numpy).reshape(1, 1, r, 5),
    }
    name = f"ROI_POOLING-{dtype}-pooled{pooled[0]}x{pooled[1]}-scale{scale}" + ("-special" if special else "")
    return Case(name, "ROI_POOLING", fields, inputs)


def cases() -> Iterator[Case]:
    rng = np.random.default_rng(21)
    for dtype in (dtypes.FLOAT32, dtypes.FLOAT16):  # the pages' newest tables
        for pooled in ((1, 1), (2, 2), (2, 3), (3, 2)):
            for scale in (1.0, 0.5):
                yield pooling_case(rng, dtype, pooled, scale)
        yield pooling_case(rng, dtype, (2, 2), 1.0, special=True)
        for op in ("ROI_ALIGN", "ROI_ALIGN1"):
            i = 0
            for reduction in ("AVERAGE", "MAX"):
                for mode in ("LINEAR", "NEAREST_NEIGHBOR"):
                    for samples in SAMPLES:
                        yield align_case(rng, op, dtype, reduction, mode, samples, i)
                        i += 1
            for reduction in ("AVERAGE", "MAX"):
                yield align_case(rng, op, dtype, reduction, "NEAREST_NEIGHBOR", (2, 2), i, special=True)
                i += 1
        for offsets in OFFSETS[3:]:  # one output element: a single sample at the region's centre
            for samples in ((1, 1), (1, UINT32_MAX)):
                yield align_case(rng, "ROI_ALIGN1", dtype, "AVERAGE", "LINEAR", samples, 0, (1, 1), offsets)
