"""DML_OPERATOR_RESAMPLE_GRAD and DML_OPERATOR_RESAMPLE_GRAD1: the backpropagation of RESAMPLE1 and
RESAMPLE2 (resample.py). InputGradientTensor has the forward's output sizes, OutputGradientTensor
its input sizes; each element of InputGradientTensor is added, with the weights by which the forward
read it, into the elements of OutputGradientTensor that it was read from.

What the pages leave open, as DirectML's own API showed it (1.24.4 under Wine, measured: 264
one-hot cases of RESAMPLE_GRAD and 528 of RESAMPLE_GRAD1, 1-D, both modes, both rounding directions,
scales 0.25 to 4, twelve offset pairs; 500 random 1-D to 4-D cases within rounding):
- the forward whose adjoint DirectML computes is RESAMPLE1 (RESAMPLE_GRAD) or RESAMPLE2 with the
  same RoundingDirection (RESAMPLE_GRAD1), from OutputGradientTensor's sizes to InputGradientTensor's,
  with the same Scales but InputPixelOffsets and OutputPixelOffsets SWAPPED: InputGradientTensor's
  element o along an axis reads coordinate x = (o - InputPixelOffset) / Scale - OutputPixelOffset
  (in FLOAT32, resample.coordinates), not the forward's (o - OutputPixelOffset) / Scale -
  InputPixelOffset. The two agree where the offsets are equal (0 and 0: aligned corners) or the
  scale is 1; with pixel centres (0.5, -0.5) the gradient is shifted (scale 2, LINEAR: the first
  element's weights are 0.75 and 0.25, not 1 and 0), which is why it is not the adjoint of RESAMPLE1
  with the same fields. The pages' example (scales 0.5 and 1.5) does not say which offsets;
- NEAREST_NEIGHBOR rounds as the forward does (halves up; RESAMPLE_GRAD1 ceil for INCREASING,
  floor for DECREASING), LINEAR gives 1 - w to floor(x) and w to floor(x) + 1, the indices clamped
  to the edges (outside the output, the whole weight lands on the edge element);
- a tap of weight 0 contributes nothing: a NaN or an infinity reaches only the elements it has
  weight in (LINEAR at an integer coordinate: one element, not its neighbour as 0 * inf). One
  finding, kept on the page's side ("the weighted contributions"): with 4-D tensors scaled along
  the last axis, DirectML's LINEAR sends a non-finite gradient also into the elements around its
  taps that it has weight 0 in (scale 0.25, corners: a NaN at coordinate 0 makes elements 0 to 4
  NaN); 1-D to 3-D tensors and the other axes keep it in its taps (tests/ops/test_resample_grad.py);
- FLOAT16 is accumulated in FLOAT32 and converted once, truncated toward zero under lavapipe (one
  FLOAT16 ulp at most; tolerances.resample_grad);
- Scales must be at least FLT_EPSILON (2**-23; smaller, 0, negative, NaN: E_INVALIDARG), an
  infinite one is accepted (every element reads coordinate -OutputPixelOffset); the tensors must
  have one DataType and DimensionCount; their Sizes are free (an element nothing reads stays 0).
  DirectML accepts non-finite pixel offsets (giving NaN or 0): refused here, as in resample.py.

The lowering ("gather"), axis by axis (separable, static shapes): at lowering time, for each
element j of OutputGradientTensor along the axis, the list of InputGradientTensor elements that
reach it with their weights (K at most), as an index table [n, K] and a weight table; ONNX Pad
appends one zero element along the axis (the index of an empty slot), Gather with the [n, K] table,
Mul by the weights (not for NEAREST's ones), ReduceSum over K (Gather alone where K is 1; an axis
where every element reaches itself is skipped). FLOAT32 throughout (FLOAT16 cast there and back).
A MatMul by a weight matrix would compute the same on finite gradients, but 0 * inf would put NaN
where DirectML has none. Gather, Pad, Mul and ReduceSum run on FLOAT32 on the CPU, CUDA and DirectML
EPs, so every target takes this graph (the DirectML EP has no node that maps onto RESAMPLE_GRAD:
ResizeGrad is a training operator outside its registrations).
"""

from __future__ import annotations

import math

import numpy as np

from dml2onnx.core import dtypes
from dml2onnx.core.desc import OperatorDesc
from dml2onnx.core.errors import ModelError
from dml2onnx.core.schema import OperatorSchema
from dml2onnx.graph.builder import GraphBuilder
from dml2onnx.ops import common, resample
from dml2onnx.ops.family import Family
from dml2onnx.ops.resample import F32, MIN_SCALE, linear_taps, nearest_indices

CANDIDATES = ("gather",)  # choices.py
ROWS = ("RESAMPLE_GRAD", "RESAMPLE_GRAD1")
IN, OUT = "InputGradientTensor", "OutputGradientTensor"


def rounding(desc: OperatorDesc) -> str:
    """NEAREST_NEIGHBOR's rounding, as resample.rounding: RESAMPLE_GRAD is RESAMPLE1's (halves up),
    RESAMPLE_GRAD1 RESAMPLE2's (RoundingDirection)."""
    if desc.schema.name == "RESAMPLE_GRAD":
        return "halves_up"
    return "ceil" if desc["RoundingDirection"] == "INCREASING" else "floor"


def validate(desc: OperatorDesc) -> None:
    common.check_same_type(desc, OUT, IN)
    common.check_same_rank(desc, OUT, IN)
    rank = desc.tensor(IN).rank
    if desc["DimensionCount"] != rank:
        raise ModelError(desc.at("DimensionCount"), f"must be {IN}'s DimensionCount ({rank}), not {desc['DimensionCount']}")
    for field in ("Scales", "InputPixelOffsets", "OutputPixelOffsets"):
        if len(desc[field]) != rank:  # DimensionCount counts Scales only (the schema's COUNT)
            raise ModelError(desc.at(field), f"must have DimensionCount ({rank}) elements, not {len(desc[field])}")
    for i, s in enumerate(desc["Scales"]):
        # DirectML refuses 0, negatives, NaN and anything below FLT_EPSILON (E_INVALIDARG, measured)
        if not F32(s) >= MIN_SCALE:
            raise ModelError(desc.at("Scales", i), f"a scale must be at least 2**-23 (FLT_EPSILON), not {s}")
    for field in ("InputPixelOffsets", "OutputPixelOffsets"):
        for i, v in enumerate(desc[field]):
            if not math.isfinite(v):
                raise ModelError(desc.at(field, i), f"must be finite, not {v}")


# -- the per-axis contributions (shared by the graph and the reference) ------------------------


def contributions(
    m: int, n: int, geometry: tuple[float, float, float], linear: bool, mode: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(source o, target j, weight) of every non-zero tap: InputGradientTensor's element o (of m)
    adds weight * g[o] into OutputGradientTensor's element j (of n). `geometry` is the desc's
    (Scale, InputPixelOffset, OutputPixelOffset) of the axis; the forward read is RESAMPLE1's /
    RESAMPLE2's from n elements to m with the two offsets swapped (the module's docstring)."""
    scale, input_offset, output_offset = geometry
    forward = (scale, output_offset, input_offset)  # resample's (scale, input offset, output offset)
    o = np.arange(m, dtype=np.int64)
    if not linear:
        return o, nearest_indices(n, m, forward, mode), np.ones(m, F32)
    i0, i1, w = linear_taps(n, m, forward)
    keep = w != 0  # a tap of weight 0 is no tap (measured: NaN stays out of the neighbour)
    return (
        np.concatenate([o, o[keep]]),
        np.concatenate([i0, i1[keep]]),
        np.concatenate([(F32(1) - w).astype(F32), w[keep]]),
    )


def tables(m: int, n: int, geometry: tuple[float, float, float], linear: bool, mode: str) -> tuple[np.ndarray, np.ndarray]:
    """(index [n, K], weight [n, K]): OutputGradientTensor's element j is the sum over k of
    weight[j, k] * g[index[j, k]], sources in increasing order; empty slots read index m (the zero
    that the graph appends) with weight 1."""
    src, dst, wt = contributions(m, n, geometry, linear, mode)
    order = np.lexsort((src, dst))
    src, dst, wt = src[order], dst[order], wt[order]
    counts = np.bincount(dst, minlength=n)
    k = max(1, int(counts.max(initial=0)))
    index = np.full((n, k), m, np.int64)
    weight = np.ones((n, k), F32)
    slot = np.arange(len(dst)) - np.repeat(np.cumsum(counts) - counts, counts)
    index[dst, slot] = src
    weight[dst, slot] = wt
    return index, weight


def _axes(desc: OperatorDesc) -> list[tuple[int, int, int, tuple[float, float, float]]]:
    """(axis, InputGradientTensor's size, OutputGradientTensor's size, the desc's geometry)."""
    g, out = desc.tensor(IN), desc.tensor(OUT)
    geom = zip(desc["Scales"], desc["InputPixelOffsets"], desc["OutputPixelOffsets"], strict=True)
    return [(a, g.sizes[a], out.sizes[a], (float(s), float(i), float(o))) for a, (s, i, o) in enumerate(geom)]


def _linear(desc: OperatorDesc) -> bool:
    return desc["InterpolationMode"] == "LINEAR"


def terms(desc: OperatorDesc) -> int:
    """The most terms summed into one element of OutputGradientTensor (the product over the axes
    of each axis' most contributions): tolerances.resample_grad's bound."""
    total = 1
    for _, m, n, geom in _axes(desc):
        _, dst, _ = contributions(m, n, geom, _linear(desc), rounding(desc))
        total *= max(1, int(np.bincount(dst, minlength=n).max(initial=0)))
    return total


# -- lowering ---------------------------------------------------------------------------------


def lower(desc: OperatorDesc, b: GraphBuilder, inputs: dict[str, str]) -> str:
    y = inputs[IN]
    dtype = desc.tensor(IN).data_type
    rank = desc.tensor(IN).rank
    if dtype != dtypes.FLOAT32:
        y = b.cast(y, dtypes.FLOAT32, "float32", "accumulated in FLOAT32")
    for axis, m, n, geom in _axes(desc):
        index, weight = tables(m, n, geom, _linear(desc), rounding(desc))
        if m == n and index.shape[1] == 1 and np.array_equal(index[:, 0], np.arange(n)) and np.all(weight == 1):
            continue  # every element reaches itself
        if np.any(index == m):
            pads = [0] * (2 * rank)
            pads[rank + axis] = 1
            y_p = b.node("Pad", [y, b.i64(pads, f"axis{axis}_pads")], f"axis{axis}_padded", "a zero for the empty slots")
        else:
            y_p = y
        k = index.shape[1]
        table = index[:, 0] if k == 1 else index
        y = b.node(
            "Gather",
            [y_p, b.i64(table, f"axis{axis}_sources")],
            f"axis{axis}_taps",
            f"the gradients that reach each element along axis {axis}",
            axis=axis,
        )
        if not np.all(weight == 1):
            shape = [1] * (rank + (k > 1))
            shape[axis] = n
            if k > 1:
                shape[axis + 1] = k
            w = b.const((weight[:, 0] if k == 1 else weight).reshape(shape), f"axis{axis}_weights")
            y = b.node("Mul", [y, w], f"axis{axis}_weighted", "each gradient times the weight the forward read it with")
        if k > 1:
            y = b.reduce("ReduceSum", y, [axis + 1], f"axis{axis}_sum", "the sum of the taps", keepdims=False)
    if dtype != dtypes.FLOAT32:
        y = b.cast(y, dtype, "output", "rounded once")
    return y


# -- reference --------------------------------------------------------------------------------


def reference(desc: OperatorDesc, inputs: dict[str, np.ndarray]) -> np.ndarray:
    """Each gradient times its weights (FLOAT32) added into its targets, axis by axis, in FLOAT64
    (np.add.at over the taps, not the graph's tables), rounded once to the type."""
    g = np.asarray(inputs[IN])
    y = g.astype(np.float64)
    for axis, _, n, geom in _axes(desc):
        src, dst, wt = contributions(g.shape[axis], n, geom, _linear(desc), rounding(desc))
        moved = np.moveaxis(y, axis, 0)
        acc = np.zeros((n, *moved.shape[1:]), np.float64)
        with np.errstate(invalid="ignore", over="ignore"):
            np.add.at(acc, dst, moved[src] * wt.astype(np.float64).reshape((-1,) + (1,) * (moved.ndim - 1)))
        y = np.moveaxis(acc, 0, axis)
    with np.errstate(over="ignore"):
        return y.astype(g.dtype)


def examples(op: OperatorSchema) -> list[common.Example]:
    """onnx_ops: each type, each interpolation mode, the gradient of doubling the last two
    dimensions at pixel centres."""
    out: list[common.Example] = []
    for t in common.example_types(op, IN):
        for mode in ("NEAREST_NEIGHBOR", "LINEAR"):
            ex: common.Example = {
                IN: common.example_tensor(t, [1, 1, 4, 6]),
                OUT: common.example_tensor(t, [1, 1, 2, 3]),
                "InterpolationMode": mode,
            }
            out.append(ex | resample.doubling_at_pixel_centres(rounding=op.name == "RESAMPLE_GRAD1"))
    return out


OPERATOR_FAMILY = Family(("RESAMPLE_GRAD", "RESAMPLE_GRAD1"), validate, lower, reference, CANDIDATES, examples=examples)
