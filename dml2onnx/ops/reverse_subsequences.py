"""DML_OPERATOR_REVERSE_SUBSEQUENCES: along Axis, the first L elements of each line reversed and
the rest copied, L the line's element of SequenceLengthsTensor (InputTensor's Sizes with 1 on
the axis; UINT32, or UINT64 from 5_0). OutputTensor has InputTensor's Sizes and DataType.

The page says a length past the axis size n behaves as if clamped to n; DirectML's own API
computes otherwise (README: REVERSE_SUBSEQUENCES), and the lowering follows it: output i is
input min(L - 1 - i, n - 1) where i < L, else input i (n = 7, L = 8: 6 6 5 4 3 2 1; L >= 2n - 1:
the last element everywhere). Lengths 0 and 1 copy the line. DirectML refuses lengths of other
Sizes (no broadcasting) and a mismatched output (E_INVALIDARG). UINT64 lengths: DirectML here
reads their low 32 bits (2**32 + 2 reverses 2 elements) with vkd3d's Int64ShaderOps hidden; the
reference takes the whole length (tests/dml_findings.py), as for MAX_UNPOOLING's indices.

ONNX ReverseSequence takes one length per batch index of a [batch, time] pair of axes 0 and 1
(and requires lengths <= n): not DirectML's per-line lengths along any axis. The lowering
("gather"): the lengths clipped to 2n - 1 (Min in their own type: the result is unchanged), as
INT32 (INT64 for huge axes); the source index of each element, i + (i < L) * (min(L - 1 - i, n -
1) - i), broadcast over the input's Sizes; GatherElements along the axis. Exact for every type
(values are moved, never computed).
"""

from __future__ import annotations

import numpy as np

from dml2onnx.core import dtypes
from dml2onnx.core.desc import OperatorDesc
from dml2onnx.core.errors import ModelError
from dml2onnx.core.schema import OperatorSchema
from dml2onnx.graph.builder import GraphBuilder
from dml2onnx.ops import common
from dml2onnx.ops.family import Family

CANDIDATES = ("gather",)  # choices.py


def validate(desc: OperatorDesc) -> None:
    x = desc.tensor("InputTensor")
    axis = desc["Axis"]
    if axis >= x.rank:
        raise ModelError(desc.at("Axis"), f"must be less than InputTensor's DimensionCount ({x.rank})")
    common.check_same_type(desc, "OutputTensor", "InputTensor")
    common.check_same_sizes(desc, "OutputTensor", "InputTensor")
    common.check_same_rank(desc, "SequenceLengthsTensor", "InputTensor")
    want = [1 if i == axis else s for i, s in enumerate(x.sizes)]
    got = list(desc.tensor("SequenceLengthsTensor").sizes)
    if got != want:
        raise ModelError(
            desc.at("SequenceLengthsTensor", "Sizes"), f"must be {want} (InputTensor's with 1 on Axis {axis}), not {got}"
        )


def lower(desc: OperatorDesc, b: GraphBuilder, inputs: dict[str, str]) -> str:
    x = desc.tensor("InputTensor")
    axis, n = desc["Axis"], x.sizes[desc["Axis"]]
    lengths_type = desc.tensor("SequenceLengthsTensor").data_type
    bound = 2 * n - 1  # every length from here on gives the same line
    lengths = b.node(
        "Min",
        [inputs["SequenceLengthsTensor"], b.const(np.asarray(bound, lengths_type.numpy), "bound")],
        "lengths",
        f"lengths clipped to {bound}: past 2n - 1 they all give the last element everywhere",
    )
    index = dtypes.INT32 if bound < 2**31 else dtypes.INT64
    lengths = b.cast(lengths, index, f"lengths_{index.name.lower()}", "exactly, as indices")
    positions = b.const(np.arange(n, dtype=index.numpy).reshape([n if i == axis else 1 for i in range(x.rank)]), "positions")
    one = b.scalar(1, index, "one")
    mirrored = b.node(
        "Sub", [b.node("Sub", [lengths, one], "last", "L - 1"), positions], "mirrored", "L - 1 - i: the reversed source"
    )
    mirrored = b.node("Min", [mirrored, b.scalar(n - 1, index, "last_index")], "clamped", "at most n - 1, as DirectML reads")
    inside = common.flag(b, b.node("Less", [positions, lengths], "inside", "i < L: reversed"), index, "inside_flag")
    source = common.select(b, inside, mirrored, positions, "source", "each element's source index along the axis")
    return b.node("GatherElements", [inputs["InputTensor"], source], "reversed", "each element from its source", axis=axis)


def reference(desc: OperatorDesc, inputs: dict[str, np.ndarray]) -> np.ndarray:
    x = np.asarray(inputs["InputTensor"])
    axis = desc["Axis"]
    n = x.shape[axis]
    lengths = np.asarray(inputs["SequenceLengthsTensor"]).astype(np.uint64)
    lengths = np.minimum(lengths, np.uint64(2 * n)).astype(np.int64)
    i = np.arange(n, dtype=np.int64).reshape([n if k == axis else 1 for k in range(x.ndim)])
    source = np.where(i < lengths, np.minimum(lengths - 1 - i, n - 1), i)
    return np.take_along_axis(x, np.broadcast_to(source, x.shape), axis)


def examples(op: OperatorSchema) -> list[common.Example]:
    """onnx_ops: each type with each length type, the page's first example's shapes."""
    out: list[common.Example] = []
    for t in common.example_types(op, "InputTensor"):
        for lt in common.example_types(op, "SequenceLengthsTensor"):
            x = common.example_tensor(t, [1, 1, 3, 4])
            out.append(
                {"InputTensor": x, "SequenceLengthsTensor": common.example_tensor(lt, [1, 1, 3, 1]), "OutputTensor": x, "Axis": 3}
            )
    return out


OPERATOR_FAMILY = Family(("REVERSE_SUBSEQUENCES",), validate, lower, reference, CANDIDATES, examples=examples)
