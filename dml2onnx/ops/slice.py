"""DML_OPERATOR_SLICE, DML_OPERATOR_SLICE1 and DML_OPERATOR_SLICE_GRAD.

- SLICE: OutputTensor[c] = InputTensor[Offsets + Strides * c]; Sizes is the output's sizes.
- SLICE1: a window (InputWindowOffsets, InputWindowSizes) read with InputWindowStrides, which may
  be negative: then the copy starts at the window's end (CopyStart = Offset + Size - 1) and goes
  backwards; the output may take fewer elements than the window holds
  (1 <= OutputSizes[i] <= 1 + (Size - 1) / |Stride|).
- SLICE_GRAD: the same window fields; the InputGradientTensor (SLICE1's output sizes) is written
  where SLICE1 would read it, into an OutputGradientTensor (SLICE1's input sizes) of zeros.

Rules, as the pages state them and DirectML's CreateOperator enforces them (E_INVALIDARG,
measured): the same DataType and DimensionCount, DimensionCount elements in each array, a
non-zero stride, a non-empty window inside the input, SLICE's Sizes equal to the output's, no
read beyond the input. SLICE_GRAD's zero fill is +0 of the type (measured).

Lowerings (exact for every type: they move bytes): SLICE and SLICE1 are one ONNX Slice ("slice",
steps negative for reversed windows), which every EP has for every type and which the DirectML EP maps
back onto DML_SLICE1 (DmlOperatorSlice.cpp). SLICE_GRAD, per dimension with a stride of 2 or more,
interleaves zeros (Concat of [outer, n, 1, inner] with zeros [outer, n, |stride| - 1, inner]),
then pads with zeros: "concat" by Concat of zero blocks per dimension (every type on every EP),
"pad" by one ONNX Pad for all dimensions where the target's EPs have it for the type (padding.py).
"""

from __future__ import annotations

import numpy as np

from dml2onnx.core.desc import OperatorDesc
from dml2onnx.core.errors import ModelError
from dml2onnx.core.schema import OperatorSchema
from dml2onnx.graph.builder import GraphBuilder
from dml2onnx.graph.targets import DML_NODE_DOC
from dml2onnx.ops import common
from dml2onnx.ops.family import Family
from dml2onnx.ops.padding import PAD_TYPES, as_three, check_array_length, concat_blocks, onnx_pad, restore

CANDIDATES = ("slice", "concat", "pad")  # choices.py: SLICE and SLICE1 one Slice; SLICE_GRAD's zero fill two ways
DML_PREFERENCE = ("slice", "pad")  # the DirectML EP maps Slice onto DML_SLICE1, Pad onto DML_PADDING1
ROWS = ("SLICE", "SLICE1", "SLICE_GRAD")
INT64_MIN = -(2**63)


def _tensors(desc: OperatorDesc) -> tuple[str, str]:
    """(the tensor read, the tensor written) in SLICE1's terms: the input and the output."""
    if desc.schema.name == "SLICE_GRAD":
        return "OutputGradientTensor", "InputGradientTensor"
    return "InputTensor", "OutputTensor"


def _fields(desc: OperatorDesc) -> tuple[str, str, str]:
    if desc.schema.name == "SLICE":
        return "Offsets", "Sizes", "Strides"
    return "InputWindowOffsets", "InputWindowSizes", "InputWindowStrides"


def windows(desc: OperatorDesc) -> list[tuple[int, int, int]]:
    """Per dimension of the sliced (SLICE1 input) tensor: (first position read, step, count)."""
    _, small = _tensors(desc)
    counts = desc.tensor(small).sizes
    offsets, sizes, strides = (desc[f] for f in _fields(desc))
    if desc.schema.name == "SLICE":
        return [(o, s, n) for o, s, n in zip(offsets, strides, counts, strict=True)]
    return [(o + w - 1 if s < 0 else o, s, n) for o, w, s, n in zip(offsets, sizes, strides, counts, strict=True)]


def validate(desc: OperatorDesc) -> None:
    big, small = _tensors(desc)
    common.check_same_type(desc, small, big)
    common.check_same_rank(desc, small, big)
    offsets_field, sizes_field, strides_field = _fields(desc)
    rank = desc.tensor(big).rank
    if desc["DimensionCount"] != rank:
        raise ModelError(desc.at("DimensionCount"), f"must be {big}'s DimensionCount ({rank}), not {desc['DimensionCount']}")
    check_array_length(desc, sizes_field, "DimensionCount")
    check_array_length(desc, strides_field, "DimensionCount")
    full, part = desc.tensor(big).sizes, desc.tensor(small).sizes
    offsets, sizes, strides = desc[offsets_field], desc[sizes_field], desc[strides_field]
    for i, (n, o, w, s, m) in enumerate(zip(full, offsets, sizes, strides, part, strict=True)):
        if s == 0:
            raise ModelError(desc.at(strides_field, i), "a stride must not be 0")
        if desc.schema.name == "SLICE":
            if w != m:
                raise ModelError(desc.at(sizes_field, i), f"must be OutputTensor.Sizes[{i}] ({m}), not {w}")
            if o + s * (w - 1) >= n:
                raise ModelError(
                    desc.at(offsets_field, i),
                    f"the slice reads position {o} + {s} * ({w} - 1) = {o + s * (w - 1)}, beyond InputTensor.Sizes[{i}] ({n})",
                )
            continue
        if w == 0:
            raise ModelError(desc.at(sizes_field, i), "the window must not be empty")
        if o + w > n:
            raise ModelError(desc.at(sizes_field, i), f"the window [{o}, {o + w}) goes beyond {big}.Sizes[{i}] ({n})")
        most = 1 + (w - 1) // abs(s)
        if m > most:
            raise ModelError(
                desc.at(small, "Sizes", i),
                f"must be at most 1 + (InputWindowSizes[{i}] - 1) / |InputWindowStrides[{i}]| = {most}, not {m}",
            )


# -- lowering -------------------------------------------------------------------------------------


def slice_node(b: GraphBuilder, x: str, full: tuple[int, ...], wins: list[tuple[int, int, int]], step: str, doc: str) -> str:
    """One ONNX Slice reading `wins` ((start, step, count) per dimension) of a tensor of `full` sizes."""
    axes, starts, ends, steps = [], [], [], []
    for axis, (n, (start, stride, count)) in enumerate(zip(full, wins, strict=True)):
        if (start, stride, count) == (0, 1, n):
            continue
        end = start + stride * count
        axes.append(axis)
        starts.append(start)
        ends.append(INT64_MIN if end < 0 else end)  # past position 0, backwards
        steps.append(stride)
    if not axes:
        return x
    bounds = [
        b.i64(starts, f"{step}_starts"),
        b.i64(ends, f"{step}_ends"),
        b.i64(axes, f"{step}_axes"),
        b.i64(steps, f"{step}_steps"),
    ]
    return b.node("Slice", [x, *bounds], step, doc)


def applies(desc: OperatorDesc, candidate: str, opset: int) -> bool:
    return (candidate == "slice") == (desc.schema.name != "SLICE_GRAD")


def choose(desc: OperatorDesc, target: str, options: tuple[str, ...]) -> str:
    """SLICE_GRAD: one Pad for the zero fill where every EP moves the type's bits with it."""
    if "pad" in options and desc.tensor("OutputGradientTensor").data_type in PAD_TYPES:
        return "pad"
    return options[0]


def _interleave(b: GraphBuilder, x: str, shape: list[int], axis: int, stride: int, zero: np.generic) -> str:
    """Dimension `axis` (n elements) spread to n * stride: each element followed by stride - 1 zeros."""
    y, (outer, n, inner) = as_three(b, x, shape, axis, f"axis{axis}_spread_three")
    y = b.reshape(y, [outer, n, 1, inner], f"axis{axis}_spread_four", "a unit dimension after each element")
    gaps = b.filled([outer, n, stride - 1, inner], zero, zero.dtype, f"axis{axis}_gaps", "the zeros between the elements")
    y = b.node("Concat", [y, gaps], f"axis{axis}_spread", f"each element then {stride - 1} zeros", axis=2)
    shape[axis] = n * stride
    return b.reshape(y, shape, f"axis{axis}_spread_shape", f"dimension {axis} spread by the stride {stride}")


def _lower_grad(desc: OperatorDesc, b: GraphBuilder, g: str) -> str:
    out = desc.tensor("OutputGradientTensor")
    dtype, full = out.data_type, out.sizes
    shape = list(desc.tensor("InputGradientTensor").sizes)
    wins = windows(desc)
    zero = dtype.numpy.type(0)
    # negative strides: reverse those dimensions first, then place forward from the last position written
    reversed_wins = [(n - 1, -1, n) if s < 0 else (0, 1, n) for n, (_, s, _) in zip(shape, wins, strict=True)]
    g = slice_node(b, g, tuple(shape), reversed_wins, "reverse", "the dimensions of negative strides reversed")
    firsts = [start if s > 0 else start + s * (n - 1) for n, (start, s, _) in zip(shape, wins, strict=True)]
    for axis, (n, (_, s, _)) in enumerate(zip(list(shape), wins, strict=True)):
        if abs(s) > 1 and n > 1:
            g = _interleave(b, g, shape, axis, abs(s), zero)
    # spread dimensions end with |stride| - 1 zeros: cut those that would pass the output's end
    cut = [(0, 1, min(m, size - first)) for m, size, first in zip(shape, full, firsts, strict=True)]
    g = slice_node(b, g, tuple(shape), cut, "trim", "the trailing zeros past the output's end")
    shape = [c for _, _, c in cut]
    starts = firsts
    ends = [size - first - m for size, first, m in zip(full, firsts, shape, strict=True)]
    if not any(starts) and not any(ends):
        return g
    if b.variant == "pad" and (b.target.dml_nodes or dtype in PAD_TYPES):
        return onnx_pad(b, g, "constant", starts, ends, zero)
    for axis, (s, e) in enumerate(zip(starts, ends, strict=True)):
        if not s and not e:
            continue
        y, three = as_three(b, g, shape, axis, f"axis{axis}_three")
        y = concat_blocks(b, y, three, s, e, zero, f"axis{axis}_zeros")
        shape[axis] += s + e
        g = restore(b, y, (three[0], shape[axis], three[2]), shape, f"axis{axis}_shape", f"dimension {axis} placed")
    return g


def lower(desc: OperatorDesc, b: GraphBuilder, inputs: dict[str, str]) -> str:
    if desc.schema.name == "SLICE_GRAD":
        return _lower_grad(desc, b, inputs["InputGradientTensor"])
    full = desc.tensor("InputTensor").sizes
    doc = f"DML_{desc.schema.name}'s window" + (f": {DML_NODE_DOC}" if b.target.dml_nodes else "")
    return slice_node(b, inputs["InputTensor"], full, windows(desc), "slice", doc)


def reference(desc: OperatorDesc, inputs: dict[str, np.ndarray]) -> np.ndarray:
    """The pages' formula: OutputTensor[c] = InputTensor[CopyStart + Strides * c]."""
    index = np.ix_(*[start + stride * np.arange(count) for start, stride, count in windows(desc)])
    if desc.schema.name != "SLICE_GRAD":
        return inputs["InputTensor"][index]
    out = desc.tensor("OutputGradientTensor")
    y = np.zeros(out.sizes, dtype=out.data_type.numpy)
    y[index] = inputs["InputGradientTensor"]
    return y


def examples(op: OperatorSchema) -> list[common.Example]:
    """onnx_ops: each type with a strided window (SLICE1 and SLICE_GRAD: also reversed)."""
    out: list[common.Example] = []
    for t in common.example_types(op, "InputGradientTensor" if op.name == "SLICE_GRAD" else "InputTensor"):
        big, small = common.example_tensor(t, [4, 4]), common.example_tensor(t, [2, 2])
        if op.name == "SLICE":
            out.append(
                {
                    "InputTensor": big,
                    "OutputTensor": small,
                    "DimensionCount": 2,
                    "Offsets": [0, 1],
                    "Sizes": [2, 2],
                    "Strides": [2, 2],
                }
            )
            continue
        for strides in ([2, 2], [-2, 1]):
            window = {
                "DimensionCount": 2,
                "InputWindowOffsets": [0, 1],
                "InputWindowSizes": [4, 3],
                "InputWindowStrides": strides,
            }
            if op.name == "SLICE1":
                out.append({"InputTensor": big, "OutputTensor": small} | window)
            else:
                out.append({"InputGradientTensor": small, "OutputGradientTensor": big} | window)
    return out


OPERATOR_FAMILY = Family(
    ("SLICE", "SLICE1", "SLICE_GRAD"),
    validate,
    lower,
    reference,
    CANDIDATES,
    applies=applies,
    choose=choose,
    dml_preference=DML_PREFERENCE,
    examples=examples,
)
