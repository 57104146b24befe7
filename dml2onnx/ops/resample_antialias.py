"""RESAMPLE3's Antialiased LINEAR downscaling (a scale below 0.5), as DirectML 1.15 computes it: per axis a chain
of sizes (halvings through the powers of two between, or one step and a size-keeping pass), the passes
run jointly over all axes, each a FLOAT32 lerp with the pass's own scale and the desc's pixel offsets;
which offsets DirectML follows that rule for (validation), and the passes' tap tables (resample.py builds
the graph and the reference from them)."""

from __future__ import annotations

import numpy as np

from dml2onnx.core.desc import OperatorDesc
from dml2onnx.core.errors import ModelError
from dml2onnx.ops.resample_geometry import F32, RESIZE_MODES, _identity, _linear, geometry


def _validate_antialiasing(desc: OperatorDesc) -> None:
    """Refuse what DirectML's iterative downsampling does but the passes here do not model
    (measured, module docstring): InputPixelOffsets outside [0, 1) on axis 0, or on any axis
    together with another axis's non-standard offsets; on 8-bit types, any outside [0, 1) and
    offsets where FLOAT32 is not exact."""
    x = desc.tensor("InputTensor")
    _, ins, outs = geometry(desc)
    below = next(i for i, s in enumerate(desc["Scales"]) if F32(s) < F32(0.5))
    why = f"Antialiased LINEAR downscaling acts (Scales[{below}] = {desc['Scales'][below]}, below 0.5)"
    moving = [a for a in range(x.rank) if x.sizes[a] > 1]  # an axis of one element reads it whatever the offsets
    outside = [a for a in moving if not F32(0) <= F32(ins[a]) < F32(1)]
    odd = [a for a in moving if not _standard(ins[a], outs[a])]
    if 0 in outside:
        raise ModelError(
            desc.at("InputPixelOffsets", 0),
            f"must be in [0, 1) on axis 0 (the outermost, InputTensor.Sizes[0] = {x.sizes[0]} > 1) where {why}, not "
            f"{ins[0]}: DirectML's iterative downsampling takes other taps on that axis there (measured: errors of "
            "hundreds), which dml2onnx does not model",
        )
    if outside and len(odd) > 1:
        other = next(a for a in odd if a != outside[0])
        raise ModelError(
            desc.at("InputPixelOffsets", outside[0]),
            f"must be in [0, 1) where {why} and axis {other} has offsets other than (0.5, -0.5), (0, 0), (0, -0.5) "
            f"too, not {ins[outside[0]]}: DirectML's iterative downsampling takes other taps there (measured: errors "
            "of the values' size), which dml2onnx does not model; one such axis (not axis 0) alone is modelled",
        )
    if not x.data_type.is_float and outside:
        raise ModelError(
            desc.at("InputPixelOffsets", outside[0]),
            f"must be in [0, 1) on {x.data_type.name} where {why}, not {ins[outside[0]]}: the passes then extrapolate, "
            "possibly beyond the type's range, which was not measured",
        )
    if not x.data_type.is_float and not antialiasing_exact(desc):
        raise ModelError(
            desc.at("InputPixelOffsets", odd[0]),
            f"must be one of (0.5, -0.5), (0, 0), (0, -0.5) with OutputPixelOffsets[{odd[0]}] on {x.data_type.name} "
            f"where {why} and {'axis 0' if 0 in odd else 'another axis'} has other offsets too, not "
            f"({ins[odd[0]]}, {outs[odd[0]]}): DirectML's FLOAT32 then differs from the passes' by a few ulps, "
            "which its truncation to an integer can make 1",
        )


def antialiasing(desc: OperatorDesc) -> bool:
    """RESAMPLE3 with Antialiased in LINEAR mode and a FLOAT32 scale below 0.5: DirectML's iterative
    downsampling (antialiased_plans) instead of RESAMPLE2's one lerp per axis."""
    return (
        desc.schema.name == "RESAMPLE3"
        and bool(desc["Antialiased"])
        and _linear(desc)
        and any(F32(s) < F32(0.5) for s in desc["Scales"])
    )


def antialiasing_exact(desc: OperatorDesc) -> bool:
    """Where the passes are DirectML's bit for bit (FLOAT32, measured): axis 0 of one element or with
    standard offsets (RESIZE_MODES), and at most one other axis with other offsets."""
    x = desc.tensor("InputTensor")
    _, ins, outs = geometry(desc)
    odd = [a for a in range(x.rank) if x.sizes[a] > 1 and not _standard(ins[a], outs[a])]
    return 0 not in odd and len(odd) <= 1


def _standard(input_offset: float, output_offset: float) -> bool:
    """One of the offset pairs of RESIZE_MODES (as FLOAT32, as DirectML reads them)."""
    return (float(F32(input_offset)), float(F32(output_offset))) in RESIZE_MODES


def chain_sizes(size: int, out_size: int) -> list[int]:
    """The sizes one axis goes through in DirectML's iterative downsampling, from its input size n
    to its output size m (measured): n, m, m where 2 m >= n (the second pass keeps the size), else n
    and the powers of two strictly between m and n, largest first, then m (16 to 5: 16 8 5; 9 to
    3: 9 8 4 3; 33 to 2: 33 32 16 8 4 2). The Scales play no part."""
    if 2 * out_size >= size:
        return [size, out_size, out_size]
    p = 1 << ((size - 1).bit_length() - 1)  # the largest power of two below n
    mids = []
    while p > out_size:
        mids.append(p)
        p //= 2
    return [size, *mids, out_size]


def antialiased_plans(sizes: tuple[int, ...] | list[int], out_sizes: tuple[int, ...] | list[int]) -> list[list[int]]:
    """Per axis, its output size after each joint pass: every axis's chain_sizes (whatever its own
    scale), the shorter ones padded at the end with passes that keep the size (measured: (16, 10)
    to (5, 2) takes 16 8 5 5 next to 10 8 4 2)."""
    chains = [chain_sizes(n, m) for n, m in zip(sizes, out_sizes, strict=True)]
    count = max(len(c) - 1 for c in chains)
    return [c[1:] + [c[-1]] * (count - len(c) + 1) for c in chains]


def pass_taps(size: int, out_size: int, input_offset: float, output_offset: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(index of a, index of b, w) of a + w * (b - a) of one pass of the iterative downsampling along
    one axis, from `size` to `out_size` elements with the pass's own scale out_size / size and the
    desc's offsets, in FLOAT32 as DirectML computes it (measured): u = (o - OutputPixelOffset) * (1 /
    scale), c = floor(u), w = (u - c) - InputPixelOffset; where w < 0, w + 1 and the window starts
    at c - 1. With an InputPixelOffset outside [0, 1), w leaves [0, 1] (the pass extrapolates)."""
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        reciprocal = F32(1) / (F32(out_size) / F32(size))
        u = ((np.arange(out_size, dtype=F32) - F32(output_offset)) * reciprocal).astype(F32)
        c = np.floor(u)
        w = ((u - c).astype(F32) - F32(input_offset)).astype(F32)
    below = w < 0
    w = np.where(below, (w + F32(1)).astype(F32), w).astype(F32)
    x0 = c - below
    i0 = np.clip(x0, 0, size - 1).astype(np.int64)
    i1 = np.clip(x0 + 1, 0, size - 1).astype(np.int64)
    w = np.where(i0 == i1, F32(0), w).astype(F32)  # the same element either way
    return i0, i1, w


def antialiased_passes(desc: OperatorDesc) -> list[list[tuple[int, np.ndarray, np.ndarray, np.ndarray]]]:
    """The joint passes of the iterative downsampling: for each, (axis, i0, i1, w) of every axis in
    order, but those the pass leaves as they are (i0 the identity, w 0)."""
    _, ins, outs = geometry(desc)
    sizes = list(desc.tensor("InputTensor").sizes)
    plans = antialiased_plans(sizes, desc.tensor("OutputTensor").sizes)
    passes = []
    for k in range(len(plans[0])):
        steps = []
        for axis, plan in enumerate(plans):
            i0, i1, w = pass_taps(sizes[axis], plan[k], ins[axis], outs[axis])
            if not (_identity(i0, sizes[axis]) and not np.any(w)):
                steps.append((axis, i0, i1, w))
            sizes[axis] = plan[k]
        passes.append(steps)
    return passes
