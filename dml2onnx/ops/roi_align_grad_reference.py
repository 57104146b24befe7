"""DML_OPERATOR_ROI_ALIGN_GRAD's meaning, apart from its lowering (roi_align_grad.py): the ROI_ALIGN1
desc it is the adjoint of, its validation, and its numpy reference (each region's samples and their
bilinear or max neighbours' weights, the gradient scattered back)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import NamedTuple

import numpy as np

from dml2onnx.core import operator_table
from dml2onnx.core.desc import OperatorDesc
from dml2onnx.core.errors import ModelError
from dml2onnx.ops import common, roi_reference

IN, OUT, X, ROI_OUT = "InputGradientTensor", "OutputGradientTensor", "InputTensor", "OutputROIGradientTensor"
FORWARD_FIELDS = (
    *("ReductionFunction", "InterpolationMode", "SpatialScaleX", "SpatialScaleY", "InputPixelOffset"),
    *("OutputPixelOffset", "MinimumSamplesPerOutput", "MaximumSamplesPerOutput", "AlignRegionsToCorners"),
)


def forward(desc: OperatorDesc) -> OperatorDesc:
    """The ROI_ALIGN1 desc whose adjoint this is: OutputGradientTensor's sizes in, InputGradientTensor's out."""
    values = {name: desc[name] for name in FORWARD_FIELDS}
    values |= {
        "InputTensor": desc.tensor(OUT) if desc[OUT] is not None else desc.tensor(X),
        "ROITensor": desc.tensor("ROITensor"),
        "BatchIndicesTensor": desc.tensor("BatchIndicesTensor"),
        "OutputTensor": desc.tensor(IN),
        "OutOfBoundsInputValue": 0.0,
    }
    return OperatorDesc(operator_table.OPERATORS["ROI_ALIGN1"], values, desc.path, desc.source, desc.level)


# -- validation -------------------------------------------------------------------------------


def validate(desc: OperatorDesc) -> None:
    if desc[OUT] is None and desc[ROI_OUT] is None:
        raise ModelError(desc.at(OUT), f"must be set, or {ROI_OUT}: no output to compute")
    for name in (X, "ROITensor", OUT, ROI_OUT):
        common.check_same_type(desc, name, IN)
    if desc[ROI_OUT] is not None:
        if desc[X] is None:
            raise ModelError(desc.at(X), f"must be set with {ROI_OUT}: the image gradients read it")
        rois, grads = desc.tensor("ROITensor"), desc.tensor(ROI_OUT)
        if grads.sizes != rois.sizes:
            raise ModelError(desc.at(ROI_OUT, "Sizes"), f"must be ROITensor's sizes {list(rois.sizes)}, not {list(grads.sizes)}")
    if desc["ReductionFunction"] not in ("AVERAGE", "MAX"):
        raise ModelError(desc.at("ReductionFunction"), f"must be AVERAGE or MAX, not {desc['ReductionFunction']}")
    if desc["ReductionFunction"] == "MAX" and desc[X] is None:
        raise ModelError(desc.at(X), "must be set with ReductionFunction MAX: the samples' values choose the gradient's")
    g, rois = desc.tensor(IN), desc.tensor("ROITensor")
    x = desc.optional_tensor(X)
    out = desc.tensor(OUT) if desc[OUT] is not None else x
    assert out is not None
    if x is not None and x.sizes != out.sizes:
        raise ModelError(desc.at(X, "Sizes"), f"must be {OUT}'s sizes {list(out.sizes)}, not {list(x.sizes)}")
    if rois.sizes[-1] != 4 or any(s != 1 for s in rois.sizes[:-2]):
        raise ModelError(desc.at("ROITensor", "Sizes"), f"must be [NumROIs, 4] (leading 1s allowed), not {list(rois.sizes)}")
    count = rois.sizes[-2]
    if g.sizes[0] != count:
        raise ModelError(desc.at(IN, "Sizes", 0), f"must be NumROIs ({count}: ROITensor's rows), not {g.sizes[0]}")
    if g.sizes[1] != out.sizes[1]:
        raise ModelError(desc.at(IN, "Sizes", 1), f"must be {OUT}'s ChannelCount ({out.sizes[1]}), not {g.sizes[1]}")
    indices = desc.tensor("BatchIndicesTensor")
    if indices.sizes[-1] != count or any(s != 1 for s in indices.sizes[:-1]):
        raise ModelError(
            desc.at("BatchIndicesTensor", "Sizes"), f"must be [NumROIs] ({count}), leading 1s allowed, not {list(indices.sizes)}"
        )
    low, high = desc["MinimumSamplesPerOutput"], desc["MaximumSamplesPerOutput"]
    if low < 1:
        raise ModelError(desc.at("MinimumSamplesPerOutput"), "must be 1 or more (DirectML refuses 0)")
    if high < low:
        raise ModelError(desc.at("MaximumSamplesPerOutput"), f"must be at least MinimumSamplesPerOutput ({low}), not {high}")


# -- reference --------------------------------------------------------------------------------


def _matrices(
    desc: OperatorDesc, positions: np.ndarray, k: int, outs: int, size: int, decreasing: bool
) -> tuple[np.ndarray, ...]:
    """[outs, size] each: the samples' weights on the input positions (roi_reference._interpolate's), where a tap
    of weight > 0 lands, and where a tap of weight 0 that DirectML applies lands (_Matrices)."""
    inb = _in_bounds(desc, positions, size)
    p = np.clip(positions, 0, size - 1)
    rows = np.arange(len(positions))
    if desc["InterpolationMode"] == "NEAREST_NEIGHBOR":
        taps = [(np.minimum(np.floor(p + np.float32(0.5)), size - 1).astype(np.int64), np.ones(len(p)))]
    else:
        lo = np.floor(p).astype(np.int64)
        frac = (p - lo).astype(np.float64)
        taps = [(lo, 1 - frac), (np.minimum(lo + 1, size - 1), frac)]
    applied = inb & (positions >= 0) & (positions <= size - 1) & (desc["InterpolationMode"] == "LINEAR")
    if decreasing:  # an inverted region: only the last element's own weight-0 tap
        applied &= positions == size - 1
    out = np.zeros((3, len(positions), size))
    for index, weight in taps:
        np.add.at(out[0], (rows, index), weight * inb)
        np.add.at(out[1], (rows, index), (weight > 0) & inb)
        np.add.at(out[2], (rows, index), (weight == 0) & applied)
    return tuple(m.reshape(outs, k, size).sum(axis=1) for m in out)


def _decreasing(desc: OperatorDesc, lo: np.float32, hi: np.float32, axis: str) -> bool:
    """An inverted region along the axis: its samples' spacing is negative."""
    scale = np.float32(desc[f"SpatialScale{axis}"])
    return bool(np.float32(hi * scale) < np.float32(lo * scale))


def _in_bounds(desc: OperatorDesc, positions: np.ndarray, size: int) -> np.ndarray:
    if roi_reference._field(desc, "AlignRegionsToCorners"):
        return (positions >= 0) & (positions <= size - 1)
    return (positions > -1) & (positions < size)


def _sample_values(desc: OperatorDesc, plane: np.ndarray, ys: np.ndarray, xs: np.ndarray) -> np.ndarray:
    """[C, len(ys), len(xs)] FLOAT32: each sample's value as DirectML's MAX compares them, 0 out of
    bounds; LINEAR by lerps, x first: top = TL + fx (TR - TL), bottom likewise, top + fy (bottom - top)."""
    h, w = plane.shape[1:]
    (y0, y1, fy), (x0, x1, fx) = _neighbours(ys, h), _neighbours(xs, w)
    with np.errstate(invalid="ignore", over="ignore"):
        if desc["InterpolationMode"] == "NEAREST_NEIGHBOR":
            v = plane[:, _nearest(ys, h)][:, :, _nearest(xs, w)]
        else:
            fy, fx = fy.astype(np.float32)[None, :, None], fx.astype(np.float32)[None, None, :]
            top, bottom = plane[:, y0][:, :, x0], plane[:, y1][:, :, x0]
            top = top + fx * (plane[:, y0][:, :, x1] - top)
            bottom = bottom + fx * (plane[:, y1][:, :, x1] - bottom)
            v = top + fy * (bottom - top)
    inside = _in_bounds(desc, ys, h)[:, None] & _in_bounds(desc, xs, w)[None, :]
    return np.where(inside[None], v, np.float32(0)).astype(np.float32)


def _nearest(positions: np.ndarray, size: int) -> np.ndarray:
    """NEAREST_NEIGHBOR's element: floor(x + 0.5) of x clamped to [0, size - 1] (roi.py's)."""
    return np.minimum(np.floor(np.clip(positions, 0, size - 1) + np.float32(0.5)), size - 1).astype(np.int64)


def _max_choice(desc: OperatorDesc, plane: np.ndarray, ys: np.ndarray, xs: np.ndarray, ky: int, kx: int) -> np.ndarray:
    """[C, OH * ky, OW * kx]: True on the sample each output element's gradient goes to (MAX): the
    first (row-major: y samples outer) sample of the largest value above -FLT_MAX, NaN skipped; none
    where that is an out-of-bounds sample (value 0)."""
    c, h, w = plane.shape
    oh, ow = len(ys) // ky, len(xs) // kx
    v = _sample_values(desc, plane, ys, xs).reshape(c, oh, ky, ow, kx).transpose(0, 1, 3, 2, 4).reshape(c, oh, ow, ky * kx)
    v = np.where(np.isnan(v), -np.inf, v)
    first = np.argmax(v, axis=-1)
    taken = np.take_along_axis(v, first[..., None], axis=-1)[..., 0] > np.finfo(np.float32).min
    ty, tx = np.divmod(first, kx)
    rows, cols = np.arange(oh)[None, :, None] * ky + ty, np.arange(ow)[None, None, :] * kx + tx
    taken &= _in_bounds(desc, ys, h)[rows] & _in_bounds(desc, xs, w)[cols]
    out = np.zeros((c, oh * ky, ow * kx), bool)
    ci, oy, ox = np.nonzero(taken)
    out[ci, rows[ci, oy, ox], cols[ci, oy, ox]] = True
    return out


def reference(desc: OperatorDesc, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    out = {}
    if desc[OUT] is not None:
        out[OUT] = _reference_input_gradient(desc, inputs)
    if desc[ROI_OUT] is not None:
        out[ROI_OUT] = _reference_roi_gradient(desc, inputs)
    return out


class _Region(NamedTuple):
    index: int
    batch: int  # clamped to [0, N - 1], as the forward
    corners: np.ndarray  # x1, y1, x2, y2 (FLOAT32)
    ys: np.ndarray  # the samples' coordinates (roi_reference._positions)
    ky: int
    xs: np.ndarray
    kx: int


def _regions(fwd: OperatorDesc, inputs: dict[str, np.ndarray]) -> Iterator[_Region]:
    n = fwd.tensor("InputTensor").sizes[0]
    r, _, oh, ow = fwd.tensor("OutputTensor").sizes
    rois = inputs["ROITensor"].reshape(r, 4).astype(np.float32)
    batches = inputs["BatchIndicesTensor"].reshape(r)
    for i in range(r):
        xs, kx = roi_reference._positions(fwd, rois[i, 0], rois[i, 2], ow, "X")
        ys, ky = roi_reference._positions(fwd, rois[i, 1], rois[i, 3], oh, "Y")
        yield _Region(i, min(int(batches[i]), n - 1), rois[i], ys, ky, xs, kx)


def _reference_roi_gradient(desc: OperatorDesc, inputs: dict[str, np.ndarray]) -> np.ndarray:
    """The page's pseudo-code as DirectML computed it (module doc): every in-bounds sample (MAX: the
    chosen one) adds its image gradients times its weight (g / (k_y k_x); MAX: g), times W (W - 1
    with AlignRegionsToCorners) split by the output index's fraction."""
    fwd = forward(desc)
    g = inputs[IN].astype(np.float64)
    h, w = fwd.tensor("InputTensor").sizes[2:]
    r, _, oh, ow = g.shape
    corners = bool(roi_reference._field(fwd, "AlignRegionsToCorners"))
    out = np.zeros((r, 4))
    for i, batch, _, ys, ky, xs, kx in _regions(fwd, inputs):
        plane = inputs[X][batch].astype(np.float64)
        (t, bottom, fy), (left, right, fx) = _neighbours(ys, h), _neighbours(xs, w)
        # outside [0, size - 1] an axis reads its edge element alone: no second term along it
        inside_y = ((ys >= 0) & (ys <= h - 1))[None, :, None]
        inside_x = ((xs >= 0) & (xs <= w - 1))[None, None, :]
        with np.errstate(invalid="ignore"):
            top_left, top_right = plane[:, t][:, :, left], plane[:, t][:, :, right]
            bottom_left, bottom_right = plane[:, bottom][:, :, left], plane[:, bottom][:, :, right]
            fy, fx = fy[None, :, None], fx[None, None, :]
            grad_x = (1 - fy) * (top_right - top_left) + np.where(inside_y, fy * (bottom_right - bottom_left), 0)
            grad_y = (1 - fx) * (bottom_left - top_left) + np.where(inside_x, fx * (bottom_right - top_right), 0)
        spread = np.repeat(np.repeat(g[i], ky, axis=1), kx, axis=2)
        if desc["ReductionFunction"] == "MAX":
            mask = _max_choice(fwd, inputs[X][batch].astype(np.float32), ys, xs, ky, kx)
            weights = spread
        else:
            mask = np.broadcast_to((_in_bounds(fwd, ys, h)[:, None] & _in_bounds(fwd, xs, w)[None, :])[None], spread.shape)
            weights = spread / (ky * kx)
        for col, grad, k, outs, size, axis in ((0, grad_x, kx, ow, w, 2), (1, grad_y, ky, oh, h, 1)):
            if corners:
                frac = np.full(outs, 0.5) if outs * k == 1 else np.arange(outs) / (outs * k - 1)
            else:
                frac = np.arange(outs) / (outs * k)
            frac = np.repeat(frac, k)
            frac = frac[None, None, :] if axis == 2 else frac[None, :, None]
            with np.errstate(invalid="ignore"):
                terms = np.where(mask, weights * grad, 0.0)
                extent = size - 1 if corners else size
                out[i, col] += extent * (terms * (1 - frac)).sum()
                out[i, col + 2] += extent * (terms * frac).sum()
    dtype = inputs[IN].dtype
    with np.errstate(over="ignore"):
        return out.reshape(desc.tensor("ROITensor").sizes).astype(dtype)


def _neighbours(positions: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """LINEAR's neighbours of each coordinate and its fraction; outside [0, size - 1] both the edge
    element (fraction 0)."""
    clamped = np.clip(positions, 0, size - 1)
    lo = np.floor(clamped).astype(np.int64)
    inside = (positions >= 0) & (positions <= size - 1)
    return lo, np.where(inside, np.minimum(lo + 1, size - 1), lo), (clamped - lo).astype(np.float64)


def _reference_input_gradient(desc: OperatorDesc, inputs: dict[str, np.ndarray]) -> np.ndarray:
    fwd = forward(desc)
    g = inputs[IN].astype(np.float64)
    n, c, h, w = fwd.tensor("InputTensor").sizes
    oh, ow = g.shape[2:]
    out = np.zeros((n, c, h, w))
    hits = np.zeros((3, n, c, h, w), bool)  # reached by +inf, -inf, NaN
    zero = np.zeros((n, c, h, w), bool)  # reached by a non-finite value's tap of weight 0
    maximum = desc["ReductionFunction"] == "MAX"
    for i, batch, (x1, y1, x2, y2), ys, ky, xs, kx in _regions(fwd, inputs):
        down_y, down_x = (_decreasing(fwd, lo, hi, a) for lo, hi, a in ((y1, y2, "Y"), (x1, x2, "X")))
        if maximum:  # each output element's gradient on its chosen sample, the samples' own weights
            (wy, py, zy), (wx, px, zx) = _matrices(fwd, ys, 1, oh * ky, h, down_y), _matrices(fwd, xs, 1, ow * kx, w, down_x)
            chosen = _max_choice(fwd, inputs[X][batch].astype(np.float32), ys, xs, ky, kx)
            spread = np.repeat(np.repeat(g[i], ky, axis=1), kx, axis=2)
            gi, divisor = np.where(chosen, spread, 0.0), 1
        else:
            (wy, py, zy), (wx, px, zx) = _matrices(fwd, ys, ky, oh, h, down_y), _matrices(fwd, xs, kx, ow, w, down_x)
            gi, divisor = g[i], ky * kx
        flags = np.stack([np.isposinf(gi), np.isneginf(gi), np.isnan(gi)])
        finite = np.where(flags.any(axis=0), 0, gi)
        out[batch] += np.einsum("yh,xw,cyx->chw", wy, wx, finite) / divisor
        hits[:, batch] |= np.einsum("yh,xw,kcyx->kchw", py > 0, px > 0, flags) > 0
        bad = flags.any(axis=0)
        ay, ax = (py + zy) > 0, (px + zx) > 0
        zero[batch] |= np.einsum("yh,xw,cyx->chw", zy > 0, ax, bad) + np.einsum("yh,xw,cyx->chw", ay, zx > 0, bad) > 0
    out = np.where(hits[1], -np.inf, out)
    out = np.where(hits[0], np.inf, out)
    out = np.where(hits[2] | (hits[0] & hits[1]) | zero, np.nan, out)
    return out.astype(inputs[IN].dtype)
