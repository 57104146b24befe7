"""DML_OPERATOR_SCATTER (DML_OPERATOR_SCATTER_ELEMENTS) and SCATTER_ND: the input copied to the
output, then each UpdatesTensor element written at the position its index names (SCATTER: along
Axis, IndicesTensor of UpdatesTensor's Sizes; SCATTER_ND: a tuple of coordinates per row of
updates). Indices are addressed as in gather.py (negative values count from the end for INT32 and
INT64; the row-major offset of the coordinates over the input's Sizes): as DirectML's own API
computed it, an offset outside [0, element count) writes nothing. Two indices naming one
position: the pages say the last write wins (SCATTER) or that no order is guaranteed
(SCATTER_ND); DirectML's writes race (SCATTER_ND: 4096 duplicates once left not the last), so
the reference takes the last and no test has duplicates.

The lowering ("flat"): gather.py's offsets, those outside the input sent to a spare slot past it;
ONNX ScatterElements (axis 0) into the flat input with the spare slot (and zeros so that the data
has at least as many elements as the updates: the DirectML EP refuses fewer), then the input's
elements (Slice) at OutputTensor's Sizes. Exact for every type (the CUDA EP's ScatterElements and
Concat take every fixed-size type). The DirectML EP registers ScatterElements only up to opset
17 (dml_ep_registry): at 18 and later the `portable` graph is refused by the static check.

The candidate "native" (gather.py tells it whole), on the `dml` target only: ScatterElements on
Axis (SCATTER) or ScatterND at the dimension counts (SCATTER_ND), the indices in INT32 or INT64
as gather.py's native_index_type says, which the DirectML EP runs as DML_SCATTER and
DML_SCATTER_ND, out-of-range positions as DirectML's API writes them (the matrix's cases matched,
and so did indices past 32 bits). Up to opset 17 only (the registrations above); from 18 the
`dml` target keeps "flat".

The candidate "guarded" (SCATTER; SCATTER_ND keeps "flat"), on the `cuda` target only (gather.py
tells the guard and when choose() takes it): If every index is in [-dim, dim) (signed) or [0, dim)
(unsigned), ScatterElements on Axis straight into the input, else the flat lowering. Duplicates
change nothing: both branches are one ScatterElements without reduction, which keeps one of the
updates to a position (the CPU EP the last, the CUDA EP whichever write lands last), as the flat
lowering and DirectML do. Measured on an H100 (ORT 1.31.1, CUDA EP), 8x64x256x512 FLOAT32, 64M
INT32 indices on the last axis: flat 243 GB/s, ScatterElements 1231, behind an If on ReduceMin +
ReduceMax of the INT32 indices 573 (torch.scatter 872).
"""

from __future__ import annotations

import numpy as np

from dml2onnx.core import dtypes
from dml2onnx.core.desc import OperatorDesc
from dml2onnx.core.schema import OperatorSchema
from dml2onnx.graph.builder import GraphBuilder
from dml2onnx.graph.targets import DML_NODE_DOC
from dml2onnx.ops import common, gather
from dml2onnx.ops.family import Family

CANDIDATES = gather.CANDIDATES  # choices.py
CUDA_ONLY = gather.CUDA_ONLY
DML_ONLY = gather.DML_ONLY
DML_PREFERENCE = gather.DML_PREFERENCE
applies = gather.applies
choose = gather.choose


def validate(desc: OperatorDesc) -> None:
    common.check_same_type(desc, "UpdatesTensor", "InputTensor")
    common.check_same_type(desc, "OutputTensor", "InputTensor")
    common.check_same_sizes(desc, "OutputTensor", "InputTensor")
    if desc.schema.name == "SCATTER":
        gather.validate_axis_elements(desc, ("UpdatesTensor",))
        common.check_same_sizes(desc, "UpdatesTensor", "IndicesTensor")
    else:
        common.check_same_rank(desc, "UpdatesTensor", "InputTensor")
        gather.validate_nd(desc, 0)
        gather.check_sizes(
            desc, "UpdatesTensor", gather.nd_sizes(desc, 0), "the indices' leading Sizes, then InputTensor's past the tuple"
        )


def _dml_native(desc: OperatorDesc, b: GraphBuilder, inputs: dict[str, str]) -> str:
    """SCATTER: ScatterElements on Axis; SCATTER_ND: ScatterND at the dimension counts."""
    if desc.schema.name == "SCATTER":
        return _native(desc, b, inputs, gather.dml_indices(desc, b, inputs["IndicesTensor"]), DML_NODE_DOC)
    data, indices, k = gather.nd_operands(desc, b, inputs)
    t = k[-1]
    x = desc.tensor("InputTensor")
    rows = (*k[:-1], *x.sizes[x.rank - desc["InputDimensionCount"] + t :])
    updates = b.reshape(inputs["UpdatesTensor"], list(rows), "updates_nd", "the indices' rows, then the slices past the tuple")
    y = b.node("ScatterND", [data, indices, updates], "scatter_nd", DML_NODE_DOC)
    return b.reshape(y, list(desc.tensor("OutputTensor").sizes), "output", "at OutputTensor's Sizes")


def lower(desc: OperatorDesc, b: GraphBuilder, inputs: dict[str, str]) -> str:
    if b.variant == "native":
        return _dml_native(desc, b, inputs)
    if b.variant == "guarded":
        return gather.guarded(desc, b, inputs, lambda sub, i: _native(desc, sub, inputs, i), lambda sub: _flat(desc, sub, inputs))
    return _flat(desc, b, inputs)


def _native(desc: OperatorDesc, b: GraphBuilder, inputs: dict[str, str], indices: str, doc: str | None = None) -> str:
    """ScatterElements on Axis: the indices and updates already at the input's rank. `doc`: the
    node's doc string ("native": DML_NODE_DOC)."""
    return b.node(
        "ScatterElements",
        [inputs["InputTensor"], indices, inputs["UpdatesTensor"]],
        "scatter_elements",
        doc or "each update at its index (duplicates: one of them)",
        axis=desc["Axis"],
    )


def _flat(desc: OperatorDesc, b: GraphBuilder, inputs: dict[str, str]) -> str:
    x, out, upd = desc.tensor("InputTensor"), desc.tensor("OutputTensor"), desc.tensor("UpdatesTensor")
    n, m = x.element_count, upd.element_count
    offset = gather.offsets(desc, b, inputs["IndicesTensor"])
    spare = b.scalar(n, dtypes.INT64, "spare_slot")
    offset = b.node(
        "Where", [gather.outside(b, offset, n), spare, offset], "write_offsets", "outside the input: the spare slot N"
    )
    offset = b.reshape(offset, [m], "offsets_flat", "one offset per update")
    flat = b.reshape(inputs["InputTensor"], [n], "input_flat", "InputTensor as one array")
    pad = b.filled([max(1, m - n)], 0, x.data_type.numpy, "spare", "the spare slot (and room for every update)")
    data = b.node("Concat", [flat, pad], "with_spare", "the input, then the spare slot", axis=0)
    updates = b.reshape(inputs["UpdatesTensor"], [m], "updates_flat", "UpdatesTensor as one array")
    scatter_doc = "each update at its offset, bit for bit (duplicates: one of them)"
    slice_doc = "the input's elements, without the spare slot"
    return common.scatter_with_spare_slot(b, data, offset, updates, n, out.sizes, scatter_doc, slice_doc)


def reference(desc: OperatorDesc, inputs: dict[str, np.ndarray]) -> np.ndarray:
    """The input, then each update at its offset in order (the last of duplicates); offsets
    outside the input write nothing."""
    out = desc.tensor("OutputTensor")
    y = np.array(inputs["InputTensor"]).reshape(-1).copy()
    off = gather.reference_offsets(desc, inputs["IndicesTensor"]).reshape(-1)
    updates = np.asarray(inputs["UpdatesTensor"]).reshape(-1)
    for o, u in zip(off, updates, strict=True):
        if 0 <= o < y.size:
            y[o] = u
    return y.reshape(out.sizes)


def examples(op: OperatorSchema) -> list[common.Example]:
    """onnx_ops: each data type with each index type."""
    out: list[common.Example] = []
    for t in common.example_types(op, "InputTensor"):
        for index in common.example_types(op, "IndicesTensor"):
            x = common.example_tensor(t, [3, 4])
            if op.name == "SCATTER":
                fields = {
                    "IndicesTensor": common.example_tensor(index, [2, 4]),
                    "UpdatesTensor": common.example_tensor(t, [2, 4]),
                    "Axis": 0,
                }
            else:
                fields = {
                    "IndicesTensor": common.example_tensor(index, [2, 1]),
                    "UpdatesTensor": common.example_tensor(t, [2, 4]),
                }
                fields |= {"InputDimensionCount": 2, "IndicesDimensionCount": 2}
            out.append({"InputTensor": x, **fields, "OutputTensor": x})
    return out


OPERATOR_FAMILY = Family(
    ("SCATTER", "SCATTER_ND"),
    validate,
    lower,
    reference,
    CANDIDATES,
    applies=applies,
    choose=choose,
    cuda_only=CUDA_ONLY,
    dml_only=DML_ONLY,
    dml_preference=DML_PREFERENCE,
    examples=examples,
)
