"""GATHER's candidate "masked": the ONNX Gather itself on the indices that are in range, with no If
and no reduction over the indices, where DirectML's out-of-range reads come to one value.

Where every dimension before Axis is 1 (an embedding lookup: [vocabulary, width] on axis 0; the
frame's batch is 1), an index outside [-dim, dim) (signed types; [0, dim) unsigned) makes every
offset of its output row fall outside the input (below 0, or at N and beyond: gather.py's doc), and
such an offset reads the input's last element. So: in_range = index >= -dim and index < dim (on
the indices, a few elements); Gather on Axis of each index in range and of the last row (dim - 1)
for the others; then, where the row has more than one element, GatherElements along it of each
element's own column for the rows in range and of the last column for the others, so that an
out-of-range row is the input's last element throughout. Values are moved, never computed or
selected (the CPU EP's Where gives +0.0 for a selected -0.0: measured, ONNX Runtime 1.31.1), so the
result is DirectML's bit for bit on every EP, as "flat"'s, at about the cost of the bare Gather:
the cuda target's "guarded" reads every index twice in reductions and ONNX Runtime reads its If's
condition on the host, a stall per run (measured on an H200: a captured BERT at batch 8 x 128
tokens ran 0.82x of its original guarded and 0.93x with a bare Gather; benchmarks/results/). Where
a dimension before Axis is larger, an out-of-range index reads on into the next batch's rows:
"guarded" or "flat" there.

Where the input is a constant (its tensor flagged DML_TENSOR_FLAG_OWNED_BY_DML: bound once at
initialization, as ONNX Runtime's DirectML EP binds a model's weights), a padded table takes the
place of the masks: the input as [dim, inner] rows with one more row holding its last element
throughout (Slice, Expand, Concat: ONNX Runtime folds them into one initializer at session
creation), each index clamped to [-dim - 1, dim] (Cast to FLOAT32, Clip, Cast back; dim below
2**24; the `cuda` target's INT64 indices by one Clip in INT64) and mapped by a table of 2 dim + 2
row numbers (Gather; read at negative positions from its end) to its row or, out of range, the
padded row; then one Gather of those rows: four small kernels over the indices and one Gather (two
on `cuda`), where the masks take six and a Gather. The masks stay
where the input may change (the padded table would be built again at every run).
"""

from __future__ import annotations

import math

import numpy as np

from dml2onnx.core import dtypes, schema
from dml2onnx.core.desc import OperatorDesc
from dml2onnx.graph.builder import GraphBuilder


def applies(desc: OperatorDesc) -> bool:
    """GATHER whose dimensions before Axis are all 1."""
    return desc.schema.name == "GATHER" and math.prod(desc.tensor("InputTensor").sizes[: desc["Axis"]]) == 1


OWNED_BY_DML = schema.ENUMS["DML_TENSOR_FLAGS"]["OWNED_BY_DML"]


def lower(desc: OperatorDesc, b: GraphBuilder, inputs: dict[str, str]) -> str:
    x = desc.tensor("InputTensor")
    if x.flags & OWNED_BY_DML and x.sizes[desc["Axis"]] < 2**24:
        return _padded(desc, b, inputs)
    x, out = desc.tensor("InputTensor"), desc.tensor("OutputTensor")
    a, dim = desc["Axis"], x.sizes[desc["Axis"]]
    inner = math.prod(x.sizes[a + 1 :])
    index_type = desc.tensor("IndicesTensor").data_type
    k = math.prod(desc.tensor("IndicesTensor").sizes)
    i, kind = _indices(desc, b, inputs)
    low = -dim if index_type.is_signed else 0
    above = b.node("Greater", [i, b.scalar(low - 1, kind, "low_bound")], "from_low", f"index >= {low}")
    below = b.node("Less", [i, b.scalar(dim, kind, "dim")], "below_dim", f"index < {dim}")
    ok = b.node("And", [above, below], "in_range", "the index is in range")
    rows = b.node("Where", [ok, i, b.scalar(dim - 1, kind, "last_row")], "rows", "out of range: the last row")
    y = b.node("Gather", [inputs["InputTensor"], rows], "gather", "the input's rows at the indices", axis=a)
    if inner > 1:
        y = b.reshape(y, [k, inner], "rows_flat", "one row per index")
        ok_rows = b.reshape(ok, [k, 1], "in_range_rows", "in range, per row")
        own = b.i64(np.arange(inner, dtype=np.int64).reshape(1, inner), "columns")
        last = b.scalar(inner - 1, dtypes.INT64, "last_column")
        cols = b.node("Where", [ok_rows, own, last], "columns_read", "its own column in range, else the last")
        y = b.node("GatherElements", [y, cols], "elements", "out-of-range rows: the input's last element", axis=1)
    return b.reshape(y, list(out.sizes), "output", "at OutputTensor's Sizes")


def _indices(desc: OperatorDesc, b: GraphBuilder, inputs: dict[str, str]) -> tuple[str, dtypes.DataType]:
    """The indices as one dimension, in INT32 or INT64 (the types ONNX's Gather takes)."""
    index_type = desc.tensor("IndicesTensor").data_type
    k = math.prod(desc.tensor("IndicesTensor").sizes)
    i = b.reshape(inputs["IndicesTensor"], [k], "indices_flat", "the indices as one dimension")
    kind = index_type if index_type in (dtypes.INT32, dtypes.INT64) else dtypes.INT64
    if kind != index_type:  # UINT32 keeps its value; UINT64 of 2**63 and more reads negative: out of range
        i = b.cast(i, kind, "indices_int64", f"{index_type} indices in INT64")
    return i, kind


def _padded(desc: OperatorDesc, b: GraphBuilder, inputs: dict[str, str]) -> str:
    """A constant input: one Gather from the input's rows and a row of its last element (module doc)."""
    x, out = desc.tensor("InputTensor"), desc.tensor("OutputTensor")
    dim = x.sizes[desc["Axis"]]
    inner = math.prod(x.sizes[desc["Axis"] + 1 :])
    table = b.reshape(inputs["InputTensor"], [dim, inner], "table", "the input's rows")
    last = b.slice(table, [0, 1], [dim - 1, inner - 1], [dim, inner], "last_element", "the input's last element")
    row = b.node("Expand", [last, b.i64([1, inner], "row_sizes")], "last_row", "a row of the last element")
    padded = b.node("Concat", [table, row], "padded_table", "row dim: what an index out of range reads", axis=0)
    i, kind = _indices(desc, b, inputs)
    # clamped in a float type that holds -dim - 1 .. dim exactly (the Cast rounds larger magnitudes
    # onto those bounds or beyond, never into the range): ONNX Runtime's CPU EP clamps INT64 wrongly
    # past 31 bits (1.31.1: Min(2**31, 5) gives 2**31, Max(-2**31 - 1, -6) gives -2**31 - 1; measured);
    # the CUDA EP's INT64 Clip is exact out to -2**63 and 2**63 - 1 (tools/gpu_probes.py): one kernel there
    if b.target.name == "cuda" and kind == dtypes.INT64:
        bounds = [b.scalar(-dim - 1, kind, "below_range"), b.scalar(dim, kind, "above_range")]
        clamped = b.node("Clip", [i, *bounds], "clamped", f"in [{-dim - 1}, {dim}]")
    else:
        f32 = dtypes.FLOAT32  # dim < 2**24
        f = b.cast(i, f32, "indices_float", "the indices in FLOAT32")
        f = b.node(
            "Clip", [f, b.scalar(-dim - 1, f32, "below_range"), b.scalar(dim, f32, "above_range")], "clip", "held in range"
        )
        clamped = b.cast(f, kind, "clamped", f"in [{-dim - 1}, {dim}]")
    # position p >= 0 holds p's row, position -p (from the end) -p's; dim and -dim - 1 the padded row
    negative = np.arange(dim) if desc.tensor("IndicesTensor").data_type.is_signed else np.full(dim, dim)
    rows_of = np.concatenate([np.arange(dim), [dim, dim], negative]).astype(kind.numpy)
    rows = b.node("Gather", [b.const(rows_of, "row_of_index"), clamped], "rows", "each index's row", axis=0)
    y = b.node("Gather", [padded, rows], "gather", "the rows at the indices", axis=0)
    return b.reshape(y, list(out.sizes), "output", "at OutputTensor's Sizes")
