"""DML_OPERATOR_MAX_UNPOOLING: OutputTensor, all zeros, then each InputTensor element written at the
position its IndicesTensor element gives, the output taken as one contiguous array (row-major over
OutputTensor's Sizes, the whole tensor: not per batch or channel), as MAX_POOLING1/MAX_POOLING2's
OutputIndicesTensor gives them. InputTensor and IndicesTensor have the same Sizes; OutputTensor
the same DataType as InputTensor and any 4-D Sizes (DirectML takes an output smaller than the
input, or of other batch and channel sizes, measured).

What the page leaves open, as DirectML's own API computed it (README: MAX_UNPOOLING):
- positions no index names are 0 (the whole output is written);
- an index past the output (the output's element count or more, up to 2**32 - 1) writes nothing;
- the index is the logical element's, whatever OutputTensor's Strides (a transposed output gets
  the values in row-major order of its Sizes);
- two indices naming one position: one of the writers' values, which one is not defined
  (DirectML's writes race: 32768 values onto 5 positions gave the last writers on 9 runs of 10
  and the last of the first 16384 on the other; up to 4096 values, the last on every run); the
  reference takes the last, and the tests keep duplicates out;
- UINT64 indices: DirectML here reads their low 32 bits (2**32 + 4 writes at 4), with vkd3d's
  Int64ShaderOps hidden or not; the reference takes the whole index (out of range: nothing),
  as for ONE_HOT's INT64 indices (tests/dml_findings.py).

The lowering ("scatter"): the input and the indices flattened; each index clipped to the output's
element count P (Min in the indices' own UINT32 or UINT64: not INT64, which the DirectML EP
compares by the low 32 bits and whose Min the CPU EP gets wrong in [2**31, 2**32), README; the
CPU EP's UINT32/UINT64 Min is right there, checked), position P being a spare slot that
takes every out-of-range write; ScatterElements into max(P + 1, input elements) zeros (the
DirectML EP refuses more updates than data elements); the first P elements at the output's
Sizes. Exact for every type (values are moved, never computed). ScatterElements is registered by
the DirectML EP up to opset 17 only: at opset 18 and later the `portable` graph is refused (its
check). On the `dml` target, FLOAT32 and FLOAT16 go to ONNX MaxUnpool (output_shape given), which
the DirectML EP maps straight back onto DML_MAX_UNPOOLING (DmlOperatorMaxUnpool.cpp: its INT64
indices read as UINT64).
"""

from __future__ import annotations

import math

import numpy as np

from dml2onnx.core import dtypes
from dml2onnx.core.desc import OperatorDesc
from dml2onnx.core.schema import OperatorSchema
from dml2onnx.graph.builder import GraphBuilder
from dml2onnx.graph.targets import DML_NODE_DOC
from dml2onnx.ops import common
from dml2onnx.ops.family import Family

CANDIDATES = ("scatter",)  # choices.py
# ONNX MaxUnpool's T1 (and the DirectML EP's registration of it): the float types
MAX_UNPOOL_TYPES = (dtypes.FLOAT32, dtypes.FLOAT16)


def validate(desc: OperatorDesc) -> None:
    # DirectML refuses either mismatch with E_INVALIDARG (measured); the page states both
    common.check_same_type(desc, "OutputTensor", "InputTensor")
    common.check_same_sizes(desc, "IndicesTensor", "InputTensor")


# -- lowering ---------------------------------------------------------------------------------


def _max_unpool(desc: OperatorDesc, b: GraphBuilder, inputs: dict[str, str]) -> str:
    """ONNX MaxUnpool with the output's Sizes as output_shape: DML_MAX_UNPOOLING on the DirectML EP
    (on the CPU EP an out-of-range index is an error; the CUDA EP has no MaxUnpool)."""
    indices = b.cast(inputs["IndicesTensor"], dtypes.INT64, "indices_int64", "MaxUnpool's INT64 indices (read as UINT64 there)")
    out = desc.tensor("OutputTensor")
    return b.node(
        "MaxUnpool",
        [inputs["InputTensor"], indices, b.i64(list(out.sizes), "output_shape")],
        "max_unpool",
        DML_NODE_DOC,
        kernel_shape=[1, 1],
    )


def lower(desc: OperatorDesc, b: GraphBuilder, inputs: dict[str, str]) -> str:
    x, out = desc.tensor("InputTensor"), desc.tensor("OutputTensor")
    if b.target.dml_nodes and x.data_type in MAX_UNPOOL_TYPES:
        return _max_unpool(desc, b, inputs)
    index_type = desc.tensor("IndicesTensor").data_type
    m, p = x.element_count, math.prod(out.sizes)
    values = b.reshape(inputs["InputTensor"], [m], "values_flat", "InputTensor as one array")
    indices = b.reshape(inputs["IndicesTensor"], [m], "indices_flat", "IndicesTensor as one array")
    if p <= np.iinfo(index_type.numpy).max:  # else every index names an output element
        indices = b.node(
            "Min",
            [indices, b.const(np.asarray(p, index_type.numpy), "spare_slot")],
            "clipped",
            f"indices past the output ({p} elements) go to the spare slot {p}",
        )
    # the clipped indices are at most p: INT32 for ScatterElements unless the output is huge
    scatter_type = dtypes.INT32 if p < 2**31 else dtypes.INT64
    indices = b.cast(indices, scatter_type, f"indices_{scatter_type.name.lower()}", "ScatterElements' indices, exactly")
    # at least m elements: the DirectML EP refuses ScatterElements with more updates than data
    # elements (session creation fails; the CPU EP takes it)
    zeros = b.filled([max(p + 1, m)], 0, x.data_type.numpy, "zeros", "the output, then the spare slot: zeros")
    scatter_doc = "each input value at its index (duplicates: one of them, as on DirectML)"
    slice_doc = "the output without the spare slot"
    return common.scatter_with_spare_slot(b, zeros, indices, values, p, out.sizes, scatter_doc, slice_doc)


# -- reference --------------------------------------------------------------------------------


def reference(desc: OperatorDesc, inputs: dict[str, np.ndarray]) -> np.ndarray:
    """The page: zeros, each input value at its index over the whole output; indices past the
    output write nothing; of duplicates, the last (DirectML's order is not defined)."""
    out = desc.tensor("OutputTensor")
    x = np.asarray(inputs["InputTensor"]).reshape(-1)
    idx = np.asarray(inputs["IndicesTensor"]).reshape(-1).astype(np.uint64)
    p = math.prod(out.sizes)
    y = np.zeros(p, out.data_type.numpy)
    keep = idx < np.uint64(p)
    pos, vals = idx[keep][::-1].astype(np.int64), x[keep][::-1]
    _, last = np.unique(pos, return_index=True)  # each position's first in reverse: its last writer
    y[pos[last]] = vals[last]
    return y.reshape(out.sizes)


def examples(op: OperatorSchema) -> list[common.Example]:
    """onnx_ops: each type, with each index type, a 2x2 pooling of a 4x4 input undone."""
    out: list[common.Example] = []
    for t in common.example_types(op, "InputTensor"):
        for index in common.example_types(op, "IndicesTensor"):
            x = common.example_tensor(t, [1, 2, 2, 2])
            out.append(
                {"InputTensor": x, "IndicesTensor": {**x, "DataType": index}, "OutputTensor": {**x, "Sizes": [1, 2, 4, 4]}}
            )
    return out


OPERATOR_FAMILY = Family(("MAX_UNPOOLING",), validate, lower, reference, CANDIDATES, examples=examples)
