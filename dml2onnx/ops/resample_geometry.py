"""What every resample operator shares: its scales and pixel offsets per axis (UPSAMPLE_2D's and
RESAMPLE's fixed half-pixel ones included), the offset pairs ONNX Resize names, and FLOAT32."""

from __future__ import annotations

import numpy as np

from dml2onnx.core.desc import OperatorDesc

F32 = np.float32
MIN_SCALE = F32(2.0**-23)  # FLT_EPSILON: DirectML's smallest scale
# (InputPixelOffset, OutputPixelOffset) of ONNX Resize's coordinate_transformation_mode, as the
# DirectML EP maps them onto DML_RESAMPLE (DmlOperatorResize.cpp: ComputePixelOffsetsAndScales)
RESIZE_MODES = {(0.5, -0.5): "half_pixel", (0.0, 0.0): "asymmetric", (0.0, -0.5): "tf_half_pixel_for_nn"}


def _scales_field(desc: OperatorDesc) -> str | None:
    return None if desc.schema.name == "UPSAMPLE_2D" else "Scales"


def geometry(desc: OperatorDesc) -> tuple[tuple[float, ...], tuple[float, ...], tuple[float, ...]]:
    """(Scales, InputPixelOffsets, OutputPixelOffsets), one per dimension, for every operator."""
    rank = desc.tensor("InputTensor").rank
    name = desc.schema.name
    if name == "UPSAMPLE_2D":
        width, height = desc["ScaleSize"]
        scales = (1.0,) * (rank - 2) + (float(height), float(width))
    else:
        scales = tuple(desc["Scales"])
    if name in ("UPSAMPLE_2D", "RESAMPLE"):
        return scales, (0.5,) * rank, (-0.5,) * rank
    return scales, tuple(desc["InputPixelOffsets"]), tuple(desc["OutputPixelOffsets"])


def _identity(indices: np.ndarray, size: int) -> bool:
    return len(indices) == size and bool(np.all(indices == np.arange(size)))


def _linear(desc: OperatorDesc) -> bool:
    return desc["InterpolationMode"] == "LINEAR"
