"""DML_OPERATOR_UPSAMPLE_2D, …_RESAMPLE, …_RESAMPLE1, …_RESAMPLE2, …_RESAMPLE3: each output element of
OutputTensor read from InputTensor at the coordinate that the page's relation gives, axis by axis:

    OutputX = (InputX + InputPixelOffset) * Scale + OutputPixelOffset

so InputX = (OutputX - OutputPixelOffset) / Scale - InputPixelOffset. RESAMPLE's (and
UPSAMPLE_2D's, whose scales are 1 but for ScaleSize's Height and Width on the last two axes)
offsets are RESAMPLE1's 0.5 and -0.5 (pixel centres).

What the pages leave open, as DirectML's own API showed it (1.24.4 under Wine, measured):
- the coordinate is computed in FLOAT32 as (OutputX - OutputPixelOffset) * (1 / Scale) -
  InputPixelOffset (a multiplication by the reciprocal: RESAMPLE LINEAR by 3 gives 0.33333337,
  not 0.3333333);
- NEAREST_NEIGHBOR takes floor(InputX + 0.5) (halves up) for UPSAMPLE_2D, RESAMPLE and RESAMPLE1;
  RESAMPLE2 rounds the coordinate itself: ceil(InputX) with RoundingDirection INCREASING,
  floor(InputX) with DECREASING (0.25 becomes 1 and 0, not the nearest 0);
- LINEAR takes x0 = floor(InputX), w = InputX - x0 and lerps the elements at x0 and x0 + 1 per axis
  (a + w * (b - a)); indices are clamped to the edges ([0, size - 1]), so outside the input the edge
  element repeats; it ignores RoundingDirection;
- INT8 and UINT8 (6_2) are interpolated in FLOAT32 and truncated toward zero (127 * 0.125 = 15.875
  gives 15, -0.625 gives 0); FLOAT16 in FLOAT32 and rounded once;
- Scales must be at least FLT_EPSILON (2**-23 as FLOAT32; smaller ones, 0, negatives and NaN:
  E_INVALIDARG); an infinite scale is accepted (every output reads coordinate -InputPixelOffset).
  The output's Sizes are free (the scaled input is cropped or its edge repeated) but for
  UPSAMPLE_2D, whose output must be the input times ScaleSize (0 refused); InputTensor and
  OutputTensor must have the same DataType.
- RESAMPLE3 (feature level 6_4; ONNX Runtime's DirectML EP writes every Resize as one) is RESAMPLE2
  with `Antialiased`, which acts only in LINEAR mode once some axis's FLOAT32 scale is below 0.5 (the
  page: 1 / scale > 2; at 0.5 and above, and in NEAREST_NEIGHBOR mode, the results were RESAMPLE2's bit
  for bit). There DirectML 1.15 "downsamples iteratively", measured (identity probes and random
  tensors under Wine) and modelled here (antialiased_passes):
  - the Scales play no further part (0.1 to 0.49 give the same bytes), nor does RoundingDirection;
  - every axis, whatever its scale, goes through a chain of sizes from its input size n to its
    output size m (chain_sizes): n, m, m where 2 m >= n, else n, the powers of two strictly between
    (largest first), m; the passes run jointly over all axes (a shorter chain padded at its end with
    passes that keep the size), axis 0 first within a pass;
  - each pass along an axis (a to b elements) is a lerp with the pass's own scale b / a and the
    desc's offsets, in FLOAT32: u = (o - OutputPixelOffset) * (1 / (b / a)), c = floor(u), w = (u -
    c) - InputPixelOffset, and where w < 0, w + 1 and the window [c - 1, c] (pass_taps); with
    InputPixelOffset outside [0, 1) w leaves [0, 1] and the pass extrapolates; a pass that keeps the
    size is the identity only where InputPixelOffset = -OutputPixelOffset (the tf pair (0, -0.5)
    averages neighbours there). With half-pixel offsets a pass of ratio 1/2 is a box of 2: 16 to 5
    at 1/3 weighs inputs 0.35 0.35 0.15 0.15, 12 to 4 0.375 0.25 0.375, 10 to 2 7/32 6/32 6/32 6/32
    7/32. This is neither ONNX's nor PyTorch's antialias filter (it depends on the sizes only).
  - FLOAT16 is computed in FLOAT32 and rounded once (within 2**-8 of DirectML on |x| <= 8; rounding
    after each pass is twice as far), INT8 and UINT8 truncated once (exact, measured).
  Bit for bit in FLOAT32 (random 1-D to 4-D cases) where every axis of more than one element has
  the offset pairs (0.5, -0.5), (0, 0) or (0, -0.5) but one axis other than axis 0, whatever its
  offsets. Other offsets on axis 0, or on several axes, with InputPixelOffsets in [0, 1): within
  2.34e-5 on |x| <= 8 (tolerances.RESAMPLE_OPERATORS), DirectML's taps and weights differing by
  rounding, which is not pinned down; accepted but for INT8 and UINT8 (truncation can make that 1;
  there InputPixelOffsets outside [0, 1), which extrapolate, are refused too: not measured).
  Refused (validate), DirectML taking other taps there: InputPixelOffsets[0] outside [0, 1) where
  axis 0 has more than one element (errors of hundreds), and an InputPixelOffset outside [0, 1) on an
  axis while another axis has other offsets than those three pairs (errors of the values' size).
- One disagreement, kept on the page's side (tests/dml_findings.py): DML_RESAMPLE and
  DML_RESAMPLE1 NEAREST_NEIGHBOR on INT8/UINT8 floor the coordinate (0.75 reads element 0) where
  their floats, RESAMPLE2 and the DirectML EP's Resize on the same types take the nearest element.
- Non-finite pixel offsets are accepted by DirectML and give NaN or an edge element: refused here
  (no defined result). Coordinates beyond about 2**24 in magnitude lose the clamping in DirectML's
  LINEAR (measured: -1e9 for an offset of 1e9), which the graphs do not copy: keep offsets moderate.

The lowerings. "gather": for every axis whose output differs from the input, index (and weight)
tables computed here at lowering time (static shapes) with the FLOAT32 arithmetic above. NEAREST:
one Gather per axis (a byte move, exact for every type). LINEAR: two Gathers per axis and a + w * (b
- a) in FLOAT32 (FLOAT16, INT8 and UINT8 cast to FLOAT32 first, cast back at the end: Cast to INT8 /
UINT8 truncates toward zero), separable, up to 16 taps for 4 axes. "resize": one ONNX Resize with
the desc's scales (applies where resize_attributes finds one; elsewhere "gather"). RESAMPLE3's
iterative downsampling is "gather" alone: each pass's two Gathers and lerp per axis that it changes,
static tables (ONNX Resize of one pass is not bit for bit: 2 of 18 passes checked on the CPU EP, its
coordinate divides and it lerps in another form; and the DirectML EP's Resize is RESAMPLE2's).
"resize":
- on the `dml` target the DirectML EP maps it back onto DML_RESAMPLE with the desc's scales and
  offsets (DmlOperatorResize.cpp), every type;
- on the others (ort_resize_attributes) the CPU and CUDA EPs run it too, with ONNX's arithmetic,
  not DirectML's: x_original = (x + 0.5) / scale - 0.5 (half_pixel; x / scale asymmetric) in
  FLOAT32, a division where DirectML multiplies by the reciprocal, indices clamped to the edges as
  DirectML does (upsamplebase.h, upsample.cc; cuda/tensor/resize_impl.cu). An axis of scale 1
  takes no coordinate there (the identity), and on the CPU EP of ORT 1.31.1 neither does an axis
  that keeps its size (4 to 4 at scale 1.1 reads 0 1 2 3, measured, not floor(x / 1.1) = 0 0 1 2);
  whether the CUDA EP of 1.31.1 does so too is not known here. So the lowering computes, in
  FLOAT32 as those kernels do, the EPs' table of every axis and takes Resize only where it is
  DirectML's (and, on an axis that keeps its size, where DirectML's is the identity): NEAREST the
  same indices (round_prefer_ceil is std::round / roundf, halves away from zero: after the
  clamping DirectML's floor(x + 0.5)), LINEAR the same clamped coordinates, so the same taps and
  weights; ONNX then lerps in another form, dx2 * dy2 * X11 + ... (the CUDA EP with its weights'
  products, 1 - w rounded), within tolerances.resample's "any form of the lerp". LINEAR needs a 2-D
  input or a 4-D one whose first two scales are 1 (the EPs' bilinear kernel). Types
  (RESIZE_TYPES): the three EPs' Resize has FLOAT32 and UINT8 in common (CPU: float, FLOAT16,
  INT8, UINT8, INT32; CUDA: float, double, half, INT32, UINT8; DirectML: _T15): NEAREST moves
  FLOAT32 and UINT8 bit for bit (the CPU EP's FLOAT16 Resize quiets a signaling NaN, measured);
  LINEAR only FLOAT32 (the CUDA EP's FLOAT16 kernel multiplies in FLOAT16; 8-bit results round
  where DirectML truncates). Where the tables differ (scale 1.7 from 6: DirectML's 4.4999995 is
  ONNX's 4.5; LINEAR by 3: 1 / 3 rounds), RESAMPLE2 rounds up (ceil) or the rank does not fit,
  "gather".

The rule (choose, the `portable` and `cuda` targets): "resize" wherever ort_resize_attributes
holds. On the CUDA EP (H100, ORT 1.31.1, FLOAT32 8x64x128x256 -> 8x64x256x512) NEAREST Resize
moves 1303 GB/s, "gather" 861-876 (torch 1635; copy 2706); LINEAR Resize 1046 GB/s, "gather"
176-183 (torch bilinear 1164).
"""

from __future__ import annotations

import math

import numpy as np

from dml2onnx.core import dtypes
from dml2onnx.core.desc import OperatorDesc
from dml2onnx.core.errors import ModelError
from dml2onnx.core.schema import OperatorSchema
from dml2onnx.graph.builder import GraphBuilder
from dml2onnx.graph.targets import DML_NODE_DOC
from dml2onnx.ops import common
from dml2onnx.ops.family import Family
from dml2onnx.ops.resample_antialias import (
    _validate_antialiasing,
    antialiased_passes,
    antialiasing,
)
from dml2onnx.ops.resample_geometry import F32, MIN_SCALE, RESIZE_MODES, _identity, _linear, geometry

CANDIDATES = ("gather", "resize")  # choices.py
DML_PREFERENCE = ("resize",)
# The types whose Resize the CPU, CUDA and DirectML EPs all compute as DirectML does, by mode
RESIZE_TYPES = {"nearest": (dtypes.FLOAT32, dtypes.UINT8), "linear": (dtypes.FLOAT32,)}
ROWS = ("UPSAMPLE_2D", "RESAMPLE", "RESAMPLE1", "RESAMPLE2", "RESAMPLE3")


def rounding(desc: OperatorDesc) -> str:
    """How NEAREST_NEIGHBOR maps a coordinate to an index: "halves_up", "ceil" or "floor"."""
    if desc.schema.name not in ("RESAMPLE2", "RESAMPLE3"):
        return "halves_up"
    return "ceil" if desc["RoundingDirection"] == "INCREASING" else "floor"


def validate(desc: OperatorDesc) -> None:
    common.check_same_type(desc, "OutputTensor", "InputTensor")
    common.check_same_rank(desc, "OutputTensor", "InputTensor")
    x, out = desc.tensor("InputTensor"), desc.tensor("OutputTensor")
    name = desc.schema.name
    if name == "UPSAMPLE_2D":
        for i, n in enumerate(("Width", "Height")):
            if desc["ScaleSize"][i] < 1:
                raise ModelError(desc.at("ScaleSize", n), "must be at least 1")
        scales = geometry(desc)[0]
        for i, (a, s, o) in enumerate(zip(x.sizes, scales, out.sizes, strict=True)):
            if o != a * int(s):
                raise ModelError(
                    desc.at("OutputTensor", "Sizes", i), f"must be InputTensor.Sizes[{i}] * {int(s)} ({a * int(s)}), not {o}"
                )
        return
    count = "ScaleCount" if name == "RESAMPLE" else "DimensionCount"
    if desc[count] != x.rank:
        raise ModelError(desc.at(count), f"must be InputTensor's DimensionCount ({x.rank}), not {desc[count]}")
    for i, s in enumerate(desc["Scales"]):
        # DirectML refuses 0, negatives, NaN and anything below FLT_EPSILON (E_INVALIDARG, measured)
        if not F32(s) >= MIN_SCALE:
            raise ModelError(desc.at("Scales", i), f"a scale must be at least 2**-23 (FLT_EPSILON), not {s}")
    for field in ("Scales",) if name == "RESAMPLE" else ("Scales", "InputPixelOffsets", "OutputPixelOffsets"):
        if len(desc[field]) != x.rank:  # DimensionCount counts Scales only (the schema's COUNT)
            raise ModelError(desc.at(field), f"must have {count} ({x.rank}) elements, not {len(desc[field])}")
    if name != "RESAMPLE":
        for field in ("InputPixelOffsets", "OutputPixelOffsets"):
            for i, v in enumerate(desc[field]):
                if not math.isfinite(v):
                    raise ModelError(desc.at(field, i), f"must be finite, not {v}")
    if antialiasing(desc):
        _validate_antialiasing(desc)


# -- the per-axis tables (shared by the graphs and the reference) ----------------------------


def coordinates(out_size: int, scale: float, input_offset: float, output_offset: float) -> np.ndarray:
    """InputX of every OutputX, in FLOAT32 as DirectML computes it."""
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        reciprocal = F32(1) / F32(scale)
        o = np.arange(out_size, dtype=F32) - F32(output_offset)
        return (o * reciprocal).astype(F32) - F32(input_offset)


def nearest_indices(size: int, out_size: int, geom: tuple[float, float, float], mode: str) -> np.ndarray:
    x = coordinates(out_size, *geom)
    if mode == "halves_up":
        i = np.floor(x + F32(0.5))
    elif mode == "ceil":
        i = np.ceil(x)
    else:
        i = np.floor(x)
    return np.clip(i, 0, size - 1).astype(np.int64)


def linear_taps(size: int, out_size: int, geom: tuple[float, float, float]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(index of a, index of b, w) of a + w * (b - a) for every output position."""
    x = coordinates(out_size, *geom)
    x0 = np.floor(x)
    with np.errstate(invalid="ignore"):  # inf - inf beyond the edges: the weight is dropped below
        w = (x - x0).astype(F32)
    i0 = np.clip(x0, 0, size - 1).astype(np.int64)
    i1 = np.clip(x0 + 1, 0, size - 1).astype(np.int64)
    w = np.where(i0 == i1, F32(0), w).astype(F32)  # the same element either way
    return i0, i1, w


def _axes(desc: OperatorDesc) -> list[tuple[int, int, int, tuple[float, float, float]]]:
    """(axis, input size, output size, (scale, input offset, output offset)) of each axis."""
    scales, ins, outs = geometry(desc)
    x, out = desc.tensor("InputTensor"), desc.tensor("OutputTensor")
    return [(a, x.sizes[a], out.sizes[a], (scales[a], ins[a], outs[a])) for a in range(x.rank)]


# -- ONNX Resize ------------------------------------------------------------------------------


def resize_attributes(desc: OperatorDesc) -> dict[str, str] | None:
    """The attributes of the ONNX Resize (its `scales` input the desc's Scales) that the DirectML EP
    maps back onto this desc exactly, or None. The EP's mode for each axis comes from one
    coordinate_transformation_mode (RESIZE_MODES), its NEAREST rounds halves up (round_prefer_ceil)
    or floors (floor: RESAMPLE2 DECREASING); RESAMPLE2 INCREASING (ceil) has no Resize form.
    Resize's output is floor(size * scale), which must be the desc's (in FLOAT32 as ORT computes
    it, and in FLOAT64 of the FLOAT32 scale as ONNX's shape inference does); axes of one element in
    and out, which the EP squeezes away, take any offsets; DirectML takes at most 4 of the others.
    Measured on the DirectML EP (1.24.4 under Wine): exact for every type and mode but
    round_prefer_floor (halves down), which is not used."""
    if antialiasing(desc):  # the DirectML EP's Resize would be RESAMPLE2's single lerp; ONNX's antialias is another filter
        return None
    geom = geometry(desc)
    x, out = desc.tensor("InputTensor"), desc.tensor("OutputTensor")
    modes = set()
    for n, o, s, ip, op in zip(x.sizes, out.sizes, *geom, strict=True):
        if not n * s < 2**32 or o != int(F32(n) * F32(s)) or o != math.floor(n * s):
            return None
        if o != math.floor(n * float(F32(s))):  # ONNX's shape inference: 10 * 0.9f is 8.99999976, 8
            return None
        if n == 1 and o == 1:
            continue
        modes.add(RESIZE_MODES.get((ip, op)))
    kept = sum(1 for n, o in zip(x.sizes, out.sizes, strict=True) if not (n == 1 and o == 1))
    if len(modes) > 1 or None in modes or kept > 4:
        return None
    attrs = {"coordinate_transformation_mode": modes.pop() if modes else "half_pixel"}
    if _linear(desc):
        return attrs | {"mode": "linear"}
    nearest = {"halves_up": "round_prefer_ceil", "floor": "floor"}.get(rounding(desc))
    return None if nearest is None else attrs | {"mode": "nearest", "nearest_mode": nearest}


def onnx_coordinates(out_size: int, scale: float, mode: str) -> np.ndarray:
    """x_original of every output position as the CPU and CUDA EPs' Resize compute it, in FLOAT32
    with a division by the scale (upsamplebase.h, resize_impl.cu)."""
    o, s = np.arange(out_size, dtype=F32), F32(scale)
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        if mode == "asymmetric":
            return (o / s).astype(F32)
        x = ((o + F32(0.5)) / s).astype(F32)
        return x if mode == "tf_half_pixel_for_nn" else (x - F32(0.5)).astype(F32)


def onnx_nearest_indices(size: int, out_size: int, scale: float, attrs: dict[str, str]) -> np.ndarray | None:
    """The EPs' NEAREST table where they take a coordinate: std::floor, or std::round / roundf
    (halves away from zero), clamped. None where a coordinate leaves the EPs' int range."""
    x = onnx_coordinates(out_size, scale, attrs["coordinate_transformation_mode"]).astype(np.float64)
    if not np.all(np.abs(x) < 2.0**30):
        return None
    i = np.floor(x) if attrs["nearest_mode"] == "floor" else np.sign(x) * np.floor(np.abs(x) + 0.5)
    return np.clip(i, 0, size - 1).astype(np.int64)


def _same_nearest(desc: OperatorDesc, attrs: dict[str, str]) -> bool:
    """Every axis's DirectML table is the EPs' (the identity too where the axis keeps its size)."""
    mode = rounding(desc)
    for _, size, out_size, geom in _axes(desc):
        want = nearest_indices(size, out_size, geom, mode)
        got = onnx_nearest_indices(size, out_size, geom[0], attrs)
        if got is None or not np.array_equal(got, want) or (out_size == size and not _identity(want, size)):
            return False
    return True


def _same_linear(desc: OperatorDesc, attrs: dict[str, str]) -> bool:
    """DirectML's clamped coordinates are the EPs' on every axis (the identity too where the axis
    keeps its size): the same two taps and the same weight. The EPs' bilinear kernel takes a 2-D
    input or a 4-D one whose first two scales are 1."""
    scales = geometry(desc)[0]
    if len(scales) not in (2, 4) or any(F32(s) != 1 for s in scales[:-2]):
        return False
    for _, size, out_size, geom in _axes(desc):
        top = F32(size - 1)
        with np.errstate(invalid="ignore"):
            want = np.clip(coordinates(out_size, *geom), F32(0), top)
        got = np.clip(onnx_coordinates(out_size, geom[0], attrs["coordinate_transformation_mode"]), F32(0), top)
        if not np.array_equal(got, want) or (out_size == size and not np.array_equal(want, np.arange(size, dtype=F32))):
            return False
    return True


def ort_resize_attributes(desc: OperatorDesc) -> dict[str, str] | None:
    """The Resize attributes of resize_attributes where the CPU and CUDA EPs' Resize computes this
    desc too (the module's docstring), or None."""
    attrs = resize_attributes(desc)
    if attrs is None or desc.tensor("InputTensor").data_type not in RESIZE_TYPES[attrs["mode"]]:
        return None
    same = _same_linear(desc, attrs) if _linear(desc) else _same_nearest(desc, attrs)
    return attrs if same else None


def applies(desc: OperatorDesc, candidate: str, opset: int) -> bool:
    return candidate == "gather" or resize_attributes(desc) is not None


def choose(desc: OperatorDesc, target: str, options: tuple[str, ...]) -> str:
    """Resize (NEAREST 1303 GB/s against 861-876, LINEAR 1046 against 176-183 on the CUDA EP)
    wherever the CPU and CUDA EPs' Resize computes DirectML's tables."""
    return "resize" if "resize" in options and ort_resize_attributes(desc) is not None else "gather"


# -- lowering ---------------------------------------------------------------------------------


def lower(desc: OperatorDesc, b: GraphBuilder, inputs: dict[str, str]) -> str:
    y = inputs["InputTensor"]
    dtype = desc.tensor("InputTensor").data_type
    attrs = None
    if b.variant == "resize":
        attrs = resize_attributes(desc) if b.target.dml_nodes else ort_resize_attributes(desc)
    if attrs is not None:
        roi = b.const(np.zeros(0, F32), "roi")
        scales = b.const(np.asarray(geometry(desc)[0], F32), "scales")
        doc = DML_NODE_DOC if b.target.dml_nodes else "ONNX Resize: the EPs' tables are DirectML's (checked at lowering)"
        return b.node("Resize", [y, roi, scales], "resize", doc, **attrs)
    if not _linear(desc):
        mode = rounding(desc)
        for axis, size, out_size, geom in _axes(desc):
            idx = nearest_indices(size, out_size, geom, mode)
            if _identity(idx, size):
                continue
            y = b.node(
                "Gather", [y, b.i64(idx, f"axis{axis}_indices")], f"axis{axis}", f"nearest elements along axis {axis}", axis=axis
            )
        return y
    rank = desc.tensor("InputTensor").rank
    if dtype != dtypes.FLOAT32:
        y = b.cast(y, dtypes.FLOAT32, "float32", "interpolated in FLOAT32")
    if antialiasing(desc):
        for k, steps in enumerate(antialiased_passes(desc)):
            for axis, i0, i1, w in steps:
                y = _lerp(
                    b, y, rank, axis, i0, i1, w, f"pass{k}_axis{axis}", f"pass {k} of the iterative downsampling, axis {axis}"
                )
    else:
        for axis, size, out_size, geom in _axes(desc):
            i0, i1, w = linear_taps(size, out_size, geom)
            if not (_identity(i0, size) and not np.any(w)):
                y = _lerp(b, y, rank, axis, i0, i1, w, f"axis{axis}", f"axis {axis}")
    if dtype != dtypes.FLOAT32:
        doc = "rounded to FLOAT16" if dtype == dtypes.FLOAT16 else "truncated toward zero"
        y = b.cast(y, dtype, "output", doc)
    return y


def _lerp(
    b: GraphBuilder, y: str, rank: int, axis: int, i0: np.ndarray, i1: np.ndarray, w: np.ndarray, step: str, what: str
) -> str:
    """a + w * (b - a) along `axis` in FLOAT32: a and b gathered at i0 and i1, w a constant table."""
    a = b.node("Gather", [y, b.i64(i0, f"{step}_lower")], f"{step}_a", f"the element at the window's start, {what}", axis=axis)
    if not np.any(w):
        return a
    c = b.node("Gather", [y, b.i64(i1, f"{step}_upper")], f"{step}_b", f"the element after it, {what}", axis=axis)
    shape = [1] * rank
    shape[axis] = len(w)
    weights = b.const(w.reshape(shape), f"{step}_weights")
    d = b.node("Sub", [c, a], f"{step}_difference", "b - a")
    d = b.node("Mul", [d, weights], f"{step}_weighted", "w * (b - a)")
    return b.node("Add", [a, d], f"{step}_lerp", "a + w * (b - a)")


# -- reference --------------------------------------------------------------------------------


def reference(desc: OperatorDesc, inputs: dict[str, np.ndarray]) -> np.ndarray:
    """The page's relation element by element: each output position's input coordinate per axis,
    the nearest element (DirectML's rounding) or the lerps of the two neighbours, in FLOAT32; where
    RESAMPLE3's Antialiased acts, the passes of DirectML's iterative downsampling, each such lerps
    (antialiased_passes), in FLOAT32 throughout (FLOAT16 rounded once at the end, INT8 and UINT8
    truncated once: measured, nearer DirectML than rounding after each pass)."""
    x = np.asarray(inputs["InputTensor"])
    out_dtype = x.dtype
    if not _linear(desc):
        mode = rounding(desc)
        index = [nearest_indices(size, n, geom, mode) for _, size, n, geom in _axes(desc)]
        return x[np.ix_(*index)]
    y = x.astype(F32)
    if antialiasing(desc):
        steps = [step for steps in antialiased_passes(desc) for step in steps]
    else:
        steps = [(axis, *linear_taps(size, n, geom)) for axis, size, n, geom in _axes(desc)]
    for axis, i0, i1, w in steps:
        a = np.take(y, i0, axis=axis)
        c = np.take(y, i1, axis=axis)
        shape = [1] * y.ndim
        shape[axis] = len(w)
        with np.errstate(invalid="ignore", over="ignore"):
            y = (a + w.reshape(shape) * (c - a)).astype(F32)
    if out_dtype.kind in "iu":
        info = np.iinfo(out_dtype)
        return np.clip(np.trunc(y), info.min, info.max).astype(out_dtype)
    return y.astype(out_dtype)


def examples(op: OperatorSchema) -> list[common.Example]:
    """onnx_ops: each type, each interpolation mode, doubling the last two dimensions."""
    out: list[common.Example] = []
    for t in common.example_types(op, "InputTensor"):
        for mode in ("NEAREST_NEIGHBOR", "LINEAR"):
            ex: common.Example = {
                "InputTensor": common.example_tensor(t, [1, 1, 2, 3]),
                "OutputTensor": common.example_tensor(t, [1, 1, 4, 6]),
                "InterpolationMode": mode,
            }
            if op.name == "UPSAMPLE_2D":
                ex["ScaleSize"] = {"Width": 2, "Height": 2}
            elif op.name == "RESAMPLE":
                ex |= {"ScaleCount": 4, "Scales": [1, 1, 2, 2]}
            else:
                ex |= doubling_at_pixel_centres(rounding=op.name in ("RESAMPLE2", "RESAMPLE3"))
                if op.name == "RESAMPLE3":
                    ex["Antialiased"] = True  # no effect when upscaling
            out.append(ex)
    return out


def doubling_at_pixel_centres(rounding: bool) -> common.Example:
    """The fields of RESAMPLE1/RESAMPLE2 (and their gradients) that double the last two of four
    dimensions at pixel centres, with a RoundingDirection where the operator has one."""
    fields: common.Example = {
        "DimensionCount": 4,
        "Scales": [1, 1, 2, 2],
        "InputPixelOffsets": [0.5] * 4,
        "OutputPixelOffsets": [-0.5] * 4,
    }
    return fields | ({"RoundingDirection": "INCREASING"} if rounding else {})


OPERATOR_FAMILY = Family(
    ("UPSAMPLE_2D", "RESAMPLE", "RESAMPLE1", "RESAMPLE2", "RESAMPLE3"),
    validate,
    lower,
    reference,
    CANDIDATES,
    applies=applies,
    choose=choose,
    dml_preference=DML_PREFERENCE,
    examples=examples,
)
