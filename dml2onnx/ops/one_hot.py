"""DML_OPERATOR_ONE_HOT: along Axis, OnValue at the index given by IndicesTensor (which has
size 1 on Axis) and OffValue elsewhere. Negative indices count from the end for signed index
types only; indices out of range give a sequence of OffValue only.

ValuesTensor: DirectML's CreateOperator takes any DimensionCount (1 to 8, whatever IndicesTensor's)
and any Sizes with 2 or more elements (E_INVALIDARG for [1] and [1, 1]); OffValue and OnValue are
its elements 0 and 1 in row-major order of its Sizes (measured through its API,
tests/ops/test_one_hot_values.py: [2], [1, 2], [2, 1], [1, 1, 1, 2], 8 dimensions, [3], [2, 2],
[3, 1, 1] beside IndicesTensor [2, 5, 1]). ONNX Runtime's DirectML EP writes torch's F.one_hot so:
IndicesTensor [2, 5, 1], ValuesTensor [1, 1, 1, 2], OutputTensor [2, 5, 7]."""

from __future__ import annotations

import numpy as np

from dml2onnx.core import dtypes
from dml2onnx.core.desc import OperatorDesc
from dml2onnx.core.errors import ModelError
from dml2onnx.core.operator_table import OPERATORS
from dml2onnx.core.schema import OperatorSchema
from dml2onnx.graph.builder import GraphBuilder
from dml2onnx.ops import common
from dml2onnx.ops.family import Family

INDEX_TYPES = OPERATORS["ONE_HOT"].types("IndicesTensor")
VALUE_TYPES = OPERATORS["ONE_HOT"].types("ValuesTensor")
TENSORS = ("IndicesTensor", "ValuesTensor", "OutputTensor")
CANDIDATES = ("one_hot",)  # one lowering (choices.py); the targets pick its ONNX patterns


def validate(desc: OperatorDesc) -> None:
    common.check_same_rank(desc, "OutputTensor", "IndicesTensor")
    common.check_same_type(desc, "OutputTensor", "ValuesTensor")
    indices, out = desc.tensor("IndicesTensor"), desc.tensor("OutputTensor")
    axis = desc["Axis"]
    if axis >= indices.rank:
        raise ModelError(desc.at("Axis"), f"Axis {axis} must be less than IndicesTensor's DimensionCount ({indices.rank})")
    for i, (s, o) in enumerate(zip(indices.sizes, out.sizes, strict=True)):
        if i == axis and s != 1:
            raise ModelError(desc.at("IndicesTensor", "Sizes", i), f"must be 1 on Axis {axis}, not {s}")
        if i != axis and s != o:
            raise ModelError(desc.at("IndicesTensor", "Sizes", i), f"must equal OutputTensor.Sizes[{i}] ({o}), not {s}")
    if desc.tensor("ValuesTensor").element_count < 2:
        raise ModelError(desc.at("ValuesTensor", "Sizes"), "ValuesTensor needs at least 2 elements (OffValue, OnValue)")


def lower(desc: OperatorDesc, b: GraphBuilder, inputs: dict[str, str]) -> str:
    indices, out = desc.tensor("IndicesTensor"), desc.tensor("OutputTensor")
    axis, depth = desc["Axis"], out.sizes[desc["Axis"]]
    # ONNX OneHot inserts the axis and needs indices of rank >= 1: a rank-1 desc keeps a leading 1.
    squeezed = tuple(s for i, s in enumerate(indices.sizes) if i != axis) or (1,)
    onnx_axis = axis if indices.rank > 1 else 1
    idx = b.reshape(inputs["IndicesTensor"], squeezed, "drop_axis", f"removes the size-1 Axis {axis}: ONNX OneHot inserts it")
    off_on = b.reshape(inputs["ValuesTensor"], [-1], "flat_values", "ValuesTensor as a list: OffValue, OnValue")
    if desc.tensor("ValuesTensor").element_count > 2:
        # Only two elements are read. With exactly two, no Slice: one kernel less before the CUDA
        # EP's OneHot copies them to the host (it reads them there), which waits for the GPU.
        off_on = b.node(
            "Slice",
            [off_on, b.i64([0], "off_on_start"), b.i64([2], "off_on_end")],
            "off_on",
            "element 0 is OffValue, element 1 OnValue",
        )

    def one_hot(index: str, depth_type: dtypes.DataType, value_pair: str, doc: str) -> str:
        depth_value = b.scalar(depth, depth_type, "depth")
        return b.node("OneHot", [index, depth_value, value_pair], "one_hot", doc, axis=onnx_axis)

    if b.target.one_hot_any_type:  # the EP takes the desc's own types: DML_ONE_HOT again
        y = one_hot(idx, dtypes.INT64, off_on, "OnValue at the index, OffValue elsewhere")
    else:
        idx, index_type = _portable_indices(b, idx, indices.data_type, depth, out.data_type)
        if out.data_type in (dtypes.FLOAT32, dtypes.FLOAT16, dtypes.INT64):
            y = one_hot(idx, index_type, off_on, "OnValue at the index, OffValue elsewhere")
        else:
            # Other value types: a 0/1 INT64 one-hot picks OffValue/OnValue with Gather, which
            # copies elements of any type exactly.
            zero_one = b.const(np.array([0, 1], np.int64), "zero_one")
            mask = one_hot(idx, index_type, zero_one, "1 at the index, 0 elsewhere")
            y = b.node("Gather", [off_on, mask], "select", "OffValue where 0, OnValue where 1", axis=0)
    return b.reshape(y, out.sizes, "output_shape", "drops the leading 1") if indices.rank == 1 else y


def _portable_indices(
    b: GraphBuilder, idx: str, t: dtypes.DataType, depth: int, values: dtypes.DataType
) -> tuple[str, dtypes.DataType]:
    """Indices (and depth type) for the OneHot type combinations that every EP registers:
    (INT32, INT32, FLOAT32), and (INT64, INT64, FLOAT16 | INT64) for everything else.

    ONNX OneHot counts every negative index from the end, which DirectML does for signed types
    only: unsigned values must stay non-negative in the index type."""
    if t == dtypes.UINT64:  # values >= 2**63 would read as negative: make them out of range
        signed = b.cast(idx, dtypes.INT64, "as_int64", "UINT64 bits as INT64")
        negative = b.node("Less", [signed, b.scalar(0, dtypes.INT64, "zero")], "too_large", "true for UINT64 values >= 2**63")
        out_of_range = b.scalar(depth, dtypes.INT64, "out_of_range")
        idx, t = b.node("Where", [negative, out_of_range, signed], "index", "out-of-range stays out of range"), dtypes.INT64
    elif t == dtypes.UINT32:
        idx, t = b.cast(idx, dtypes.INT64, "as_int64", "UINT32 fits in INT64"), dtypes.INT64
    if values == dtypes.FLOAT32 and depth < 2**31:
        if t == dtypes.INT64:
            # Out-of-range indices become `depth` (still out of range) so that they fit INT32.
            # Comparisons + Where, not Min/Max: ONNX Runtime 1.31's CPU Min/Max on INT64
            # mis-order values that differ in the high 32 bits.
            depth_i64 = b.scalar(depth, dtypes.INT64, "depth_i64")
            minus_depth = b.scalar(-depth, dtypes.INT64, "minus_depth")
            low_ok = b.node("GreaterOrEqual", [idx, minus_depth], "not_below", "index >= -depth")
            high_ok = b.node("Less", [idx, depth_i64], "below_depth", "index < depth")
            ok = b.node("And", [low_ok, high_ok], "in_range", "-depth <= index < depth")
            idx = b.node("Where", [ok, idx, depth_i64], "clamp", "out-of-range indices -> depth")
            idx = b.cast(idx, dtypes.INT32, "as_int32", "indices in [-depth, depth] fit in INT32")
        return idx, dtypes.INT32
    if t == dtypes.INT32:
        idx = b.cast(idx, dtypes.INT64, "as_int64", "INT32 fits in INT64")
    return idx, dtypes.INT64


def reference(desc: OperatorDesc, inputs: dict[str, np.ndarray]) -> np.ndarray:
    out = desc.tensor("OutputTensor")
    axis, depth = desc["Axis"], out.sizes[desc["Axis"]]
    values = inputs["ValuesTensor"].reshape(-1)
    idx = inputs["IndicesTensor"].astype(object)  # Python ints: no overflow, no wrap
    if desc.tensor("IndicesTensor").data_type.is_signed:
        idx = np.where(idx < 0, idx + depth, idx)
    positions = np.arange(depth).reshape([depth if i == axis else 1 for i in range(out.rank)])
    hit = (idx == positions) & (idx >= 0) & (idx < depth)
    return np.where(hit, values[1], values[0]).astype(out.data_type.numpy)


def examples(op: OperatorSchema) -> list[common.Example]:
    """onnx_ops: each index type with each value type."""
    return [
        {
            "IndicesTensor": common.example_tensor(t, [3, 1]),
            "ValuesTensor": common.example_tensor(values, [1, 2]),
            "OutputTensor": common.example_tensor(values, [3, 4]),
            "Axis": 1,
        }
        for t in common.example_types(op, "IndicesTensor")
        for values in common.example_types(op, "ValuesTensor")
    ]


OPERATOR_FAMILY = Family(("ONE_HOT",), validate, lower, reference, CANDIDATES, examples=examples)
