"""DML_OPERATOR_PADDING and DML_OPERATOR_PADDING1: the input inflated by StartPadding and
EndPadding elements on each dimension (OutputTensor.Sizes = InputTensor.Sizes + StartPadding +
EndPadding), filled by PaddingMode: CONSTANT (PaddingValue), EDGE (the nearest edge value),
REFLECTION (mirrored about the edge element, which is not repeated), SYMMETRIC (mirrored with the
edge repeated, from feature level 3_0), WRAP (the input repeated, DirectML.h's mode of feature
level 6_4). PADDING's PaddingValue is a FLOAT; PADDING1's a scalar union of the output's type.

What the pages leave open, as DirectML's own API computed it (README: PADDING):
- padding wider than the input keeps folding (the page's "periodically"): REFLECTION repeats with
  period 2 * (n - 1) (n = 1: the one element everywhere), SYMMETRIC with period 2 * n, WRAP with
  period n (size 3 padded by 7 and 8: REFLECTION 2 3 2 1 2 3 2 1 ..., SYMMETRIC 1 1 2 3 3 2 1 ...);
- PADDING's FLOAT PaddingValue becomes the output's type as DIAGONAL_MATRIX's Value does
  (diagonal_matrix.converted_value: truncated toward zero, integers of 8/16/32 bits through INT32
  or INT64 and then wrapped, NaN and out of range to the INT extremes, FLOAT16 rounded to nearest:
  10.6 is UINT8 10, -1 is 255, 300 is 44, 1e10 is UINT32 1410065408, NaN is INT64 -2**63);
- PADDING1's value is moved bit for bit; every mode moves the input's bytes (NaN payloads, -0).

The lowerings move bytes only (every type, exactly): "gather" per padded dimension, on the tensor
reshaped to [outer, n, inner]: Concat of PaddingValue blocks (CONSTANT), or Gather with a
constant table of the source position of each output position (the other modes); "pad" one ONNX
Pad (constant, edge, or reflect where no padding reaches past the opposite edge), where the
target's EPs have it for the type: the CUDA EP's Pad takes FLOAT32, FLOAT16 and FLOAT64 only (FLOAT16 not on
the CPU EP, which quiets signaling NaNs there), and
the DirectML EP maps Pad back onto PADDING1 (DmlOperatorPadding.cpp) for every type, which the
`dml` target therefore emits (DML_PREFERENCE).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from dml2onnx.core import dtypes, featurelevels
from dml2onnx.core.desc import OperatorDesc
from dml2onnx.core.errors import ModelError
from dml2onnx.core.schema import OperatorSchema
from dml2onnx.graph.builder import GraphBuilder
from dml2onnx.graph.targets import DML_NODE_DOC
from dml2onnx.ops import common
from dml2onnx.ops.diagonal_matrix import converted_value
from dml2onnx.ops.family import Family

CANDIDATES = ("gather", "pad")  # choices.py
DML_PREFERENCE = ("pad",)  # the DirectML EP maps Pad onto DML_PADDING1
ROWS = ("PADDING", "PADDING1")
# The types ONNX Pad moves bit for bit on the CPU, CUDA and DirectML EPs alike (the CUDA EP has float,
# double and MLFloat16; the CPU EP's FLOAT16 Pad quiets a signaling NaN: 0x7D01 becomes 0x7F01)
PAD_TYPES = (dtypes.FLOAT32, dtypes.FLOAT64)
ONNX_MODES = {"CONSTANT": "constant", "EDGE": "edge", "REFLECTION": "reflect"}
MODE_LEVELS = {"SYMMETRIC": "3_0", "WRAP": "6_4"}


def validate(desc: OperatorDesc) -> None:
    common.check_same_type(desc, "OutputTensor", "InputTensor")
    common.check_same_rank(desc, "OutputTensor", "InputTensor")
    x, out = desc.tensor("InputTensor"), desc.tensor("OutputTensor")
    count = desc["DimensionCount"]
    if count != x.rank:
        raise ModelError(desc.at("DimensionCount"), f"must be InputTensor's DimensionCount ({x.rank}), not {count}")
    check_array_length(desc, "EndPadding", "DimensionCount")
    mode = desc["PaddingMode"]
    if mode in MODE_LEVELS:
        featurelevels.require(desc, MODE_LEVELS[mode], desc.at("PaddingMode"), f"PaddingMode {mode}")
    if desc.schema.name == "PADDING1" and desc["PaddingValueDataType"] != out.data_type.name:
        raise ModelError(
            desc.at("PaddingValueDataType"),
            f"must be OutputTensor's DataType ({out.data_type}), not {desc['PaddingValueDataType']}",
        )
    for i, (n, s, e, o) in enumerate(zip(x.sizes, desc["StartPadding"], desc["EndPadding"], out.sizes, strict=True)):
        if o != n + s + e:
            raise ModelError(
                desc.at("OutputTensor", "Sizes", i),
                f"must be InputTensor.Sizes[{i}] + StartPadding[{i}] + EndPadding[{i}] ({n} + {s} + {e} = {n + s + e}), not {o}",
            )


def check_array_length(desc: OperatorDesc, field: str, count: str) -> None:
    """An array whose length another array's count field gives (the parser checks the first)."""
    if len(desc[field]) != desc[count]:
        raise ModelError(desc.at(field), f"must have {count} ({desc[count]}) elements, not {len(desc[field])}")


def value(desc: OperatorDesc) -> np.generic:
    """PaddingValue in the output's type, as DirectML converts it."""
    dtype = desc.tensor("OutputTensor").data_type
    if desc.schema.name == "PADDING":
        return converted_value(desc["PaddingValue"], dtype)
    return dtype.numpy.type(desc["PaddingValue"])


# -- shared byte-moving steps (slice.py imports these) -------------------------------------------


def as_three(b: GraphBuilder, x: str, shape: Sequence[int], axis: int, step: str) -> tuple[str, tuple[int, int, int]]:
    """x reshaped to [outer, shape[axis], inner] (no node when it already is)."""
    three = (math.prod(shape[:axis]), shape[axis], math.prod(shape[axis + 1 :]))
    if tuple(shape) == three:
        return x, three
    return b.reshape(x, three, step, f"dimension {axis} as the middle of three"), three


def restore(b: GraphBuilder, y: str, three: tuple[int, int, int], shape: Sequence[int], step: str, doc: str) -> str:
    """y of shape `three` ([outer, m, inner]) as `shape` (no node when it is that shape)."""
    return y if tuple(shape) == tuple(three) else b.reshape(y, shape, step, doc)


def concat_blocks(
    b: GraphBuilder, x: str, three: tuple[int, int, int], before: int, after: int, fill: np.generic, step: str
) -> str:
    """[outer, n, inner] -> [outer, before + n + after, inner]: `fill` blocks concatenated on both
    sides (Concat moves bytes on every EP, for every type)."""
    outer, _, inner = three
    parts = []
    if before:
        parts.append(b.filled([outer, before, inner], fill, fill.dtype, f"{step}_before", "the fill before"))
    parts.append(x)
    if after:
        parts.append(b.filled([outer, after, inner], fill, fill.dtype, f"{step}_after", "the fill after"))
    if len(parts) == 1:
        return x
    return b.node("Concat", parts, step, "the input between the fill blocks", axis=1)


def source_positions(mode: str, n: int, start: int, end: int) -> np.ndarray:
    """For each output position along a dimension of n elements padded by start and end, the input
    position it copies (EDGE, REFLECTION, SYMMETRIC, WRAP)."""
    i = np.arange(-start, n + end, dtype=np.int64)
    if mode == "EDGE":
        return np.clip(i, 0, n - 1)
    if mode == "WRAP":
        return i % n
    if mode == "REFLECTION":
        if n == 1:
            return np.zeros_like(i)
        m = i % (2 * (n - 1))
        return np.where(m < n, m, 2 * (n - 1) - m)
    m = i % (2 * n)  # SYMMETRIC
    return np.where(m < n, m, 2 * n - 1 - m)


def gather_positions(b: GraphBuilder, x: str, positions: np.ndarray, step: str, doc: str) -> str:
    """Gather on axis 1 of [outer, n, inner] with a constant index table."""
    index = positions.astype(np.int32 if positions.max(initial=0) < 2**31 else np.int64)
    return b.node("Gather", [x, b.const(index, f"{step}_positions")], step, doc, axis=1)


# -- lowering -------------------------------------------------------------------------------------


def _onnx_pad_applies(desc: OperatorDesc) -> bool:
    mode = desc["PaddingMode"]
    if mode not in ONNX_MODES:
        return False
    if mode == "REFLECTION":  # ONNX's reflect: no padding past the opposite edge
        sizes = desc.tensor("InputTensor").sizes
        return all(s <= n - 1 and e <= n - 1 for n, s, e in zip(sizes, desc["StartPadding"], desc["EndPadding"], strict=True))
    return True


def applies(desc: OperatorDesc, candidate: str, opset: int) -> bool:
    return candidate != "pad" or _onnx_pad_applies(desc)


def choose(desc: OperatorDesc, target: str, options: tuple[str, ...]) -> str:
    """One Pad node (one pass) where the CUDA EP has it for the type, else a pass per dimension."""
    if "pad" in options and desc.tensor("OutputTensor").data_type in PAD_TYPES:
        return "pad"
    return "gather"


def onnx_pad(b: GraphBuilder, x: str, mode: str, starts: Sequence[int], ends: Sequence[int], fill: np.generic | None) -> str:
    """One ONNX Pad (pads as an INT64 initializer, the constant value as a typed scalar)."""
    inputs = [x, b.i64([*starts, *ends], "pads")]
    if fill is not None:
        inputs.append(b.const(np.asarray(fill), "padding_value"))
    doc = f"{mode} padding" + (f": {DML_NODE_DOC}" if b.target.dml_nodes else "")
    return b.node("Pad", inputs, "pad", doc, mode=mode)


def lower(desc: OperatorDesc, b: GraphBuilder, inputs: dict[str, str]) -> str:
    x = inputs["InputTensor"]
    src = desc.tensor("InputTensor")
    dtype, mode = src.data_type, desc["PaddingMode"]
    starts, ends = desc["StartPadding"], desc["EndPadding"]
    if not any(starts) and not any(ends):
        return x
    fill = value(desc) if mode == "CONSTANT" else None
    if b.variant == "pad" and (b.target.dml_nodes or dtype in PAD_TYPES):
        return onnx_pad(b, x, ONNX_MODES[mode], starts, ends, fill)
    shape = list(src.sizes)
    for axis, (n, s, e) in enumerate(zip(src.sizes, starts, ends, strict=True)):
        if not s and not e:
            continue
        y, three = as_three(b, x, shape, axis, f"axis{axis}_three")
        if mode == "CONSTANT":
            assert fill is not None
            y = concat_blocks(b, y, three, s, e, fill, f"axis{axis}_constant")
        else:
            y = gather_positions(
                b, y, source_positions(mode, n, s, e), f"axis{axis}_{mode.lower()}", f"{mode} padding of dimension {axis}"
            )
        shape[axis] = n + s + e
        x = restore(b, y, (three[0], n + s + e, three[2]), shape, f"axis{axis}_shape", f"dimension {axis} padded")
    return x


def reference(desc: OperatorDesc, inputs: dict[str, np.ndarray]) -> np.ndarray:
    """numpy's pad, whose modes fold wide padding the same way: reflect, symmetric, edge, wrap."""
    x = inputs["InputTensor"]
    widths = list(zip(desc["StartPadding"], desc["EndPadding"], strict=True))
    mode = desc["PaddingMode"]
    if mode == "CONSTANT":
        return np.pad(x, widths, mode="constant", constant_values=value(desc))
    return np.pad(x, widths, mode={"EDGE": "edge", "REFLECTION": "reflect", "SYMMETRIC": "symmetric", "WRAP": "wrap"}[mode])


def examples(op: OperatorSchema) -> list[common.Example]:
    """onnx_ops: each type with each mode (REFLECTION also wider than the input)."""
    out: list[common.Example] = []
    for t in common.example_types(op, "InputTensor"):
        for mode, start, end in (
            ("CONSTANT", 1, 2),
            ("EDGE", 1, 2),
            ("REFLECTION", 1, 2),
            ("REFLECTION", 5, 1),
            ("SYMMETRIC", 1, 2),
        ):
            fields = {
                "InputTensor": common.example_tensor(t, [2, 3]),
                "OutputTensor": common.example_tensor(t, [2, 3 + start + end]),
                "PaddingMode": mode,
                "DimensionCount": 2,
                "StartPadding": [0, start],
                "EndPadding": [0, end],
            }
            out.append(
                fields | ({"PaddingValue": 9.0} if op.name == "PADDING" else {"PaddingValueDataType": t, "PaddingValue": 9})
            )
    return out


OPERATOR_FAMILY = Family(
    ("PADDING", "PADDING1"),
    validate,
    lower,
    reference,
    CANDIDATES,
    applies=applies,
    choose=choose,
    dml_preference=DML_PREFERENCE,
    examples=examples,
)
