"""Matrix cases for DML_OPERATOR_ROI_ALIGN_GRAD (dml2onnx/ops/roi_align_grad.py): both reductions,
both data types, both interpolations, four pixel-offset settings (with AlignRegionsToCorners once),
four sample ranges (each pixel-offset setting of a reduction, type and interpolation with one sample
range, rotated from one to the next like a Latin square: each pairing of a setting with a range twice;
40 cases where the full product was 160 graphs of ~300 nodes each), 3 regions over 2 batches (some partly
outside the input, some inverted), |gradient| <= 1 and NumROIs * OutputHeight * OutputWidth <= ROI_GRAD_OUTPUTS (tolerances.py).
AVERAGE without InputTensor: DirectML's API, given one with AVERAGE, returns garbage and then
DXGI_ERROR_DEVICE_REMOVED for every later call of the host (tests/ops/test_roi_align_grad.py covers it on
the graphs). MAX with it: LINEAR on values uniform in [-1, 1] (no ties: values that tie only after
FLOAT32 rounding are not pinned, module doc), NEAREST_NEIGHBOR on integers in [-2, 2] (ties: the first
sample; the out-of-bounds samples' 0), both outputs. OutputROIGradientTensor: every MAX case, and
AVERAGE's with samples 1..1 and 1..UINT32_MAX again with InputTensor (values in [-1, 1]) and both
outputs (DirectML's API computes those right)."""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import numpy as np

from dml2onnx.cases.common import Case, tensor_of
from dml2onnx.core import operator_table
from dml2onnx.lowering.tolerances import ROI_GRAD_OUTPUTS

OP, IN = "ROI_ALIGN_GRAD", "InputGradientTensor"
OFFSETS = ((0.5, -0.5, False), (0.0, 0.0, True), (0.25, 0.5, False), (0.5, 0.0, False))
SAMPLES = ((1, 1), (2, 4), (1, 2**32 - 1), (3, 3))
ROI_SAMPLES = ((1, 1), (1, 2**32 - 1))  # AVERAGE's cases with OutputROIGradientTensor too
REGIONS, OUT_SIZES, IN_SIZES = 3, (2, 3), (2, 2, 5, 6)


def cases() -> Iterator[Case]:
    rng = np.random.default_rng(150)
    assert REGIONS * OUT_SIZES[0] * OUT_SIZES[1] <= ROI_GRAD_OUTPUTS
    types = operator_table.OPERATORS[OP].support[0].tensors[IN].types
    for k, (reduction, dtype, mode) in enumerate(itertools.product(("AVERAGE", "MAX"), types, ("LINEAR", "NEAREST_NEIGHBOR"))):
        for i, (ipo, opo, corners) in enumerate(OFFSETS):
            low, high = SAMPLES[(i + k) % len(SAMPLES)]
            grad_sizes = (REGIONS, IN_SIZES[1], *OUT_SIZES)
            fields = {
                IN: tensor_of(dtype, grad_sizes),
                "ROITensor": tensor_of(dtype, (REGIONS, 4)),
                "BatchIndicesTensor": {"DataType": "UINT32", "Sizes": [REGIONS]},
                "OutputGradientTensor": tensor_of(dtype, IN_SIZES),
                "ReductionFunction": reduction,
                "InterpolationMode": mode,
                "SpatialScaleX": 0.9,
                "SpatialScaleY": 1.1,
                "InputPixelOffset": ipo,
                "OutputPixelOffset": opo,
                "MinimumSamplesPerOutput": low,
                "MaximumSamplesPerOutput": high,
                "AlignRegionsToCorners": corners,
            }
            feeds = {
                "InputGradientTensor": rng.uniform(-1, 1, grad_sizes).astype(dtype.numpy),
                "ROITensor": rng.uniform(-1.5, 6.5, (REGIONS, 4)).astype(dtype.numpy),
                "BatchIndicesTensor": np.array([0, 1, 1], np.uint32),
            }
            if reduction == "MAX":
                fields |= {
                    "InputTensor": tensor_of(dtype, IN_SIZES),
                    "OutputROIGradientTensor": tensor_of(dtype, (REGIONS, 4)),
                }
                x = rng.uniform(-1, 1, IN_SIZES) if mode == "LINEAR" else rng.integers(-2, 3, IN_SIZES)
                feeds["InputTensor"] = x.astype(dtype.numpy)
            kind = "" if reduction == "AVERAGE" else "-MAX"  # the AVERAGE cases keep their names
            name = f"{OP}{kind}-{dtype}-{mode}-offsets{i}-samples{low}to{min(high, 99)}"
            yield Case(name, OP, fields, feeds)
            if reduction == "AVERAGE" and (low, high) in ROI_SAMPLES:  # and OutputROIGradientTensor
                fields = fields | {
                    "InputTensor": tensor_of(dtype, IN_SIZES),
                    "OutputROIGradientTensor": tensor_of(dtype, (REGIONS, 4)),
                }
                feeds = feeds | {"InputTensor": rng.uniform(-1, 1, IN_SIZES).astype(dtype.numpy)}
                yield Case(f"{OP}-ROI-{dtype}-{mode}-offsets{i}-samples{low}to{min(high, 99)}", OP, fields, feeds)
