"""Matrix cases for DML_OPERATOR_ROI_ALIGN_GRAD (dml2onnx/ops/roi_align_grad.py): both data types,
both interpolations, four pixel-offset settings (with AlignRegionsToCorners once), four sample
ranges, 3 regions over 2 batches (some partly outside the input), |gradient| <= 1 and
NumROIs * OutputHeight * OutputWidth <= ROI_GRAD_OUTPUTS (tolerances.py). No InputTensor: DirectML's
API, given one, returns garbage and then DXGI_ERROR_DEVICE_REMOVED for every later call of the host
(tests/test_roi_align_grad.py covers it on the graphs)."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from dml2onnx import schema
from dml2onnx.tolerances import ROI_GRAD_OUTPUTS
from matrix import Case, _tensor

OP = "ROI_ALIGN_GRAD"
OFFSETS = ((0.5, -0.5, False), (0.0, 0.0, True), (0.25, 0.5, False), (0.5, 0.0, False))
SAMPLES = ((1, 1), (2, 4), (1, 2**32 - 1), (3, 3))
REGIONS, OUT_SIZES, IN_SIZES = 3, (2, 3), (2, 2, 5, 6)


def cases() -> Iterator[Case]:
    rng = np.random.default_rng(150)
    assert REGIONS * OUT_SIZES[0] * OUT_SIZES[1] <= ROI_GRAD_OUTPUTS
    for dtype in schema.OPERATORS[OP].support[0].tensors["InputGradientTensor"].types:
        for mode in ("LINEAR", "NEAREST_NEIGHBOR"):
            for i, (ipo, opo, corners) in enumerate(OFFSETS):
                for low, high in SAMPLES:
                    grad_sizes = (REGIONS, IN_SIZES[1], *OUT_SIZES)
                    fields = {
                        "InputGradientTensor": _tensor(dtype, grad_sizes),
                        "ROITensor": _tensor(dtype, (REGIONS, 4)),
                        "BatchIndicesTensor": {"DataType": "UINT32", "Sizes": [REGIONS]},
                        "OutputGradientTensor": _tensor(dtype, IN_SIZES),
                        "ReductionFunction": "AVERAGE",
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
                    name = f"{OP}-{dtype}-{mode}-offsets{i}-samples{low}to{min(high, 99)}"
                    yield Case(name, OP, fields, feeds)
