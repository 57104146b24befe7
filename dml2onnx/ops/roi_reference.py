"""ROI_POOLING's, ROI_ALIGN's and ROI_ALIGN1's meaning, apart from their lowering (roi.py): the
fields' defaults, validation, and the numpy reference (each region's bins or samples, bilinear or
nearest, averaged or maximum), which ROI_ALIGN_GRAD's reference reuses."""

from __future__ import annotations

import numpy as np

from dml2onnx.core import dtypes
from dml2onnx.core.desc import OperatorDesc
from dml2onnx.core.errors import ModelError, RuntimeFailure
from dml2onnx.ops import common

ALIGN_DEFAULTS = {"InputPixelOffset": 0.5, "OutputPixelOffset": -0.5, "AlignRegionsToCorners": False}
F32 = dtypes.FLOAT32


def _lowest(dtype: dtypes.DataType) -> float:
    return float(np.finfo(dtype.numpy).min)


def _field(desc: OperatorDesc, name: str) -> object:
    """A ROI_ALIGN1 field, or ROI_ALIGN's fixed value of it."""
    return desc[name] if name in desc.values else ALIGN_DEFAULTS[name]


# -- validation -------------------------------------------------------------------------------


def validate(desc: OperatorDesc) -> None:
    for name in ("ROITensor", "OutputTensor"):
        common.check_same_type(desc, name, "InputTensor")
    x, out, rois = desc.tensor("InputTensor"), desc.tensor("OutputTensor"), desc.tensor("ROITensor")
    width = 5 if desc.schema.name == "ROI_POOLING" else 4
    if desc.schema.name == "ROI_POOLING":
        if rois.rank != 4 or rois.sizes[:2] != (1, 1) or rois.sizes[3] != 5:
            raise ModelError(desc.at("ROITensor", "Sizes"), f"must be [1, 1, NumROIs, 5], not {list(rois.sizes)}")
    elif rois.sizes[-1] != 4 or any(s != 1 for s in rois.sizes[:-2]):
        raise ModelError(
            desc.at("ROITensor", "Sizes"),
            f"must be [NumROIs, 4], [1, NumROIs, 4] or [1, 1, NumROIs, 4], not {list(rois.sizes)}",
        )
    count = rois.sizes[-2]
    if out.sizes[0] != count:
        raise ModelError(
            desc.at("OutputTensor", "Sizes", 0), f"must be NumROIs ({count}: ROITensor's rows of {width}), not {out.sizes[0]}"
        )
    if out.sizes[1] != x.sizes[1]:
        raise ModelError(
            desc.at("OutputTensor", "Sizes", 1), f"must be InputTensor's ChannelCount ({x.sizes[1]}), not {out.sizes[1]}"
        )
    if desc.schema.name == "ROI_POOLING":
        pw, ph = desc["PooledSize"]
        for i, (name, want) in enumerate((("Height", ph), ("Width", pw))):
            if out.sizes[2 + i] != want:
                raise ModelError(
                    desc.at("OutputTensor", "Sizes", 2 + i), f"must be PooledSize.{name} ({want}), not {out.sizes[2 + i]}"
                )
        return
    indices = desc.tensor("BatchIndicesTensor")
    if indices.sizes[-1] != count or any(s != 1 for s in indices.sizes[:-1]):
        raise ModelError(
            desc.at("BatchIndicesTensor", "Sizes"),
            f"must be [NumROIs] ({count}), with leading 1s up to [1, 1, 1, NumROIs], not {list(indices.sizes)}",
        )
    if desc["ReductionFunction"] not in ("AVERAGE", "MAX"):
        raise ModelError(desc.at("ReductionFunction"), f"must be AVERAGE or MAX, not {desc['ReductionFunction']}")
    low, high = desc["MinimumSamplesPerOutput"], desc["MaximumSamplesPerOutput"]
    if low < 1:
        raise ModelError(desc.at("MinimumSamplesPerOutput"), "must be 1 or more (DirectML refuses 0)")
    if high < low:
        raise ModelError(desc.at("MaximumSamplesPerOutput"), f"must be at least MinimumSamplesPerOutput ({low}), not {high}")


# -- reference --------------------------------------------------------------------------------


def reference(desc: OperatorDesc, inputs: dict[str, np.ndarray]) -> np.ndarray:
    if desc.schema.name == "ROI_POOLING":
        return _reference_pooling(desc, inputs)
    return _reference_align(desc, inputs)


def _round_half_even(v: np.ndarray) -> np.ndarray:
    return np.round(v)  # numpy rounds halves to even, as DirectML's round() does


def _reference_pooling(desc: OperatorDesc, inputs: dict[str, np.ndarray]) -> np.ndarray:
    x = inputs["InputTensor"]
    n, c, h, w = x.shape
    out = np.zeros(desc.tensor("OutputTensor").sizes, np.float64)
    pw, ph = desc["PooledSize"]
    scale = np.float32(desc["SpatialScale"])
    lowest = np.finfo(x.dtype).min
    rois = inputs["ROITensor"].reshape(-1, 5).astype(np.float32)
    for i, (bid, *corner) in enumerate(rois):
        batch = min(max(int(np.trunc(bid)), 0), n - 1)
        x1, y1, x2, y2 = (int(_round_half_even(np.float32(v) * scale)) for v in corner)
        region_w, region_h = max(x2 - x1 + 1, 1), max(y2 - y1 + 1, 1)
        for oy in range(ph):
            ys = min(max(oy * region_h // ph + y1, 0), h)
            ye = min(max(((oy + 1) * region_h + ph - 1) // ph + y1, 0), h)
            for ox in range(pw):
                xs = min(max(ox * region_w // pw + x1, 0), w)
                xe = min(max(((ox + 1) * region_w + pw - 1) // pw + x1, 0), w)
                if ys >= ye or xs >= xe:
                    continue  # an empty bin: 0
                window = x[batch, :, ys:ye, xs:xe].astype(np.float64).reshape(c, -1)
                window = np.where(np.isnan(window), lowest, window)
                out[i, :, oy, ox] = np.maximum(window.max(axis=1), lowest)
    return out.astype(x.dtype)


def _positions(desc: OperatorDesc, lo: np.float32, hi: np.float32, outs: int, axis: str) -> tuple[np.ndarray, int]:
    """The samples' coordinates along one axis (FLOAT32, as the page's formulas) and k."""
    scale = np.float32(desc[f"SpatialScale{axis}"])
    first, second = np.float32(lo * scale), np.float32(hi * scale)
    size = np.float32(second - first)
    if np.isnan(size):  # README: DirectML's samples there are not modelled
        raise RuntimeFailure(
            f"DML_{desc.schema.name}'s reference: a NaN region size along {axis} (NaN or infinite ROI coordinates or scale)"
        )
    k = int(
        np.clip(
            np.ceil(np.float32(abs(size) / np.float32(outs))), desc["MinimumSamplesPerOutput"], desc["MaximumSamplesPerOutput"]
        )
    )
    count = np.float32(outs * k)
    if _field(desc, "AlignRegionsToCorners"):
        count = max(np.float32(count - 1), np.float32(1))
    spacing = np.float32(size / count)
    ipo, opo = np.float32(_field(desc, "InputPixelOffset")), np.float32(_field(desc, "OutputPixelOffset"))
    s = np.arange(outs * k, dtype=np.float32)
    if _field(desc, "AlignRegionsToCorners") and outs * k == 1:  # one sample: the region's centre
        return np.array([(size * np.float32(0.5) + first) - ipo], np.float32), k
    return ((s - opo) * spacing + first) - ipo, k


def _interpolate(plane: np.ndarray, ys: np.ndarray, xs: np.ndarray, desc: OperatorDesc) -> np.ndarray:
    """plane [C, H, W] at every (y, x) of ys x xs: [C, len(ys), len(xs)], OutOfBoundsInputValue
    outside (-1, size) on either axis ([0, size - 1] with AlignRegionsToCorners)."""
    _, h, w = plane.shape
    if _field(desc, "AlignRegionsToCorners"):  # in bounds: [0, size - 1]
        out_y, out_x = (ys < 0) | (ys > h - 1), (xs < 0) | (xs > w - 1)
    else:  # in bounds: (-1, size), clamped into the input
        out_y, out_x = (ys <= -1) | (ys >= h), (xs <= -1) | (xs >= w)
    yc, xc = np.clip(ys, 0, h - 1), np.clip(xs, 0, w - 1)
    if desc["InterpolationMode"] == "NEAREST_NEIGHBOR":
        yi = np.minimum(np.floor(yc + np.float32(0.5)), h - 1).astype(np.int64)
        xi = np.minimum(np.floor(xc + np.float32(0.5)), w - 1).astype(np.int64)
        v = plane[:, yi][:, :, xi]
    else:
        y0, x0 = np.floor(yc).astype(np.int64), np.floor(xc).astype(np.int64)
        y1, x1 = np.minimum(y0 + 1, h - 1), np.minimum(x0 + 1, w - 1)
        fy, fx = (yc - y0).astype(np.float64)[None, :, None], (xc - x0).astype(np.float64)[None, None, :]
        with np.errstate(invalid="ignore"):
            v = (1 - fy) * ((1 - fx) * plane[:, y0][:, :, x0] + fx * plane[:, y0][:, :, x1]) + fy * (
                (1 - fx) * plane[:, y1][:, :, x0] + fx * plane[:, y1][:, :, x1]
            )
    outside = out_y[:, None] | out_x[None, :]
    return np.where(outside[None], np.float64(np.float32(desc["OutOfBoundsInputValue"])), v)


def _reference_align(desc: OperatorDesc, inputs: dict[str, np.ndarray]) -> np.ndarray:
    x = inputs["InputTensor"]
    n, c = x.shape[:2]
    r, _, oh, ow = desc.tensor("OutputTensor").sizes
    rois = inputs["ROITensor"].reshape(r, 4).astype(np.float32)
    batches = inputs["BatchIndicesTensor"].reshape(r)
    out = np.zeros((r, c, oh, ow), np.float64)
    lowest = np.finfo(x.dtype).min
    for i in range(r):
        x1, y1, x2, y2 = rois[i]
        xs, kx = _positions(desc, x1, x2, ow, "X")
        ys, ky = _positions(desc, y1, y2, oh, "Y")
        plane = x[min(int(batches[i]), n - 1)].astype(np.float64)
        v = _interpolate(plane, ys, xs, desc).reshape(c, oh, ky, ow, kx)
        if desc["ReductionFunction"] == "AVERAGE":
            with np.errstate(invalid="ignore"):  # inf - inf among the samples: NaN, as DirectML's
                out[i] = v.mean(axis=(2, 4))
        else:
            v = np.where(np.isnan(v), lowest, v)
            out[i] = np.maximum(v.max(axis=(2, 4)), lowest)
    with np.errstate(over="ignore"):
        return out.astype(x.dtype)
