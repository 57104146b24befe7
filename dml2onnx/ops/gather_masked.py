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
"""

from __future__ import annotations

import math

import numpy as np

from dml2onnx.core import dtypes
from dml2onnx.core.desc import OperatorDesc
from dml2onnx.graph.builder import GraphBuilder


def applies(desc: OperatorDesc) -> bool:
    """GATHER whose dimensions before Axis are all 1."""
    return desc.schema.name == "GATHER" and math.prod(desc.tensor("InputTensor").sizes[: desc["Axis"]]) == 1


def lower(desc: OperatorDesc, b: GraphBuilder, inputs: dict[str, str]) -> str:
    x, out = desc.tensor("InputTensor"), desc.tensor("OutputTensor")
    a, dim = desc["Axis"], x.sizes[desc["Axis"]]
    inner = math.prod(x.sizes[a + 1 :])
    index_type = desc.tensor("IndicesTensor").data_type
    k = math.prod(desc.tensor("IndicesTensor").sizes)
    i = b.reshape(inputs["IndicesTensor"], [k], "indices_flat", "the indices as one dimension")
    kind = index_type if index_type in (dtypes.INT32, dtypes.INT64) else dtypes.INT64
    if kind != index_type:  # UINT32 keeps its value; UINT64 of 2**63 and more reads negative: out of range
        i = b.cast(i, kind, "indices_int64", f"{index_type} indices in INT64")
    low = -dim if index_type.is_signed else 0
    above = b.node("Greater", [i, b.scalar(low - 1, kind, "low_bound")], "from_low", f"index >= {low}")
    ok = b.node("And", [above, b.node("Less", [i, b.scalar(dim, kind, "dim")], "below_dim", f"index < {dim}")], "in_range", "")
    rows = b.node("Where", [ok, i, b.scalar(dim - 1, kind, "last_row")], "rows", "out of range: the last row")
    y = b.node("Gather", [inputs["InputTensor"], rows], "gather", "the input's rows at the indices", axis=a)
    if inner > 1:
        y = b.reshape(y, [k, inner], "rows_flat", "one row per index")
        ok_rows = b.reshape(ok, [k, 1], "in_range_rows", "in range, per row")
        own = b.i64(np.arange(inner, dtype=np.int64).reshape(1, inner), "columns")
        cols = b.node("Where", [ok_rows, own, b.scalar(inner - 1, dtypes.INT64, "last_column")], "columns_read", "")
        y = b.node("GatherElements", [y, cols], "elements", "out-of-range rows: the input's last element", axis=1)
    return b.reshape(y, list(out.sizes), "output", "at OutputTensor's Sizes")
