"""DML_OPERATOR_ARGMAX: index of the maximum over the joint Axes, first (INCREASING) or last
(DECREASING) on ties, counted in row-major order of the reduced axes."""

from __future__ import annotations

import numpy as np

from .. import dtypes
from ..builder import GraphBuilder
from ..desc import OperatorDesc
from . import common

INPUT_TYPES = dtypes.FLOATS + dtypes.INTEGERS
OUTPUT_TYPES = dtypes.INTEGERS_32_64

# Integer types whose every value a float32 holds exactly: ArgMax may run on a float32 copy.
_EXACT_IN_FLOAT32 = (dtypes.INT16, dtypes.INT8, dtypes.UINT16, dtypes.UINT8)


def validate(desc: OperatorDesc) -> None:
    common.check_types(desc, "InputTensor", INPUT_TYPES)
    common.check_types(desc, "OutputTensor", OUTPUT_TYPES)
    common.check_rank(desc, "InputTensor", 1, 8)
    axes = common.check_axes(desc, desc.tensor("InputTensor").rank)
    common.check_reduced_sizes(desc, axes)


def lower(desc: OperatorDesc, b: GraphBuilder, inputs: dict[str, str]) -> str:
    x = desc.tensor("InputTensor")
    plan = common.JointAxes(x.sizes, tuple(sorted(desc["Axes"])))
    merged = plan.merge(b, inputs["InputTensor"])
    last = desc["AxisDirection"] == "DECREASING"
    index = argmax_index(b, merged, x.data_type, plan.axis, plan.reduced_size, last)
    out = desc.tensor("OutputTensor")
    if out.data_type != dtypes.INT64:
        index = b.cast(index, out.data_type, "output_cast", f"indices as {out.data_type}")
    if tuple(plan.merged_shape[: plan.axis]) + (1,) + tuple(plan.merged_shape[plan.axis + 1 :]) != out.sizes:
        index = b.reshape(index, out.sizes, "output_shape", "restores the output's dimensions")
    return index


def argmax_index(b: GraphBuilder, x: str, dtype: dtypes.DataType, axis: int, size: int, last: bool) -> str:
    """int64 index of the first (or last) maximum along `axis`, keepdims=1, exact for every
    input type and without ArgMax's select_last_index (which the CUDA EP lacks)."""
    if dtype in b.target.argmax_types and (b.target.argmax_select_last or not last):
        return b.node(
            "ArgMax",
            [x],
            "argmax",
            f"index of the {'last' if last else 'first'} maximum",
            axis=axis,
            keepdims=1,
            select_last_index=int(last),
        )
    if last:  # reverse, take the first maximum, map the index back: size - 1 - i
        x = b.node(
            "Slice",
            [
                x,
                b.i64([-1], "reverse_starts"),
                b.i64([-(2**63)], "reverse_ends"),
                b.i64([axis], "reverse_axes"),
                b.i64([-1], "reverse_steps"),
            ],
            "reverse",
            "reverses the axis so that the first maximum is the last one",
        )
    if dtype in (dtypes.FLOAT32, dtypes.FLOAT16, *_EXACT_IN_FLOAT32):
        if dtype in _EXACT_IN_FLOAT32:
            x = b.cast(x, dtypes.FLOAT32, "to_float", f"{dtype} values are exact in FLOAT32")
        index = b.node("ArgMax", [x], "argmax", "index of the first maximum", axis=axis, keepdims=1, select_last_index=0)
    else:
        # INT32/INT64/UINT32/UINT64 lose precision as floats, and ArgMax on integers is missing
        # from the CUDA EP. TopK(k=1) on an exactly ordered INT32/INT64 key gives the maximum; the
        # first position holding it comes from ArgMax over a 0/1 mask. Not TopK's own index: on
        # the CUDA EP it is not always the first of tied maxima (seen on an H200, 288 elements).
        # Not ReduceMax: ONNX Runtime 1.31's CPU ReduceMax over INT64 mis-orders values in
        # [2**31, 2**32) along the innermost axis.
        ordered = _int_order_key(b, x, dtype)
        top, _ = b.node_outputs(
            "TopK", [ordered, b.i64([1], "k")], "top1", "the maximum along the axis", n_outputs=2, axis=axis, largest=1, sorted=1
        )
        hit = b.node("Equal", [ordered, top], "is_max", "true where the value is the maximum")
        mask = b.cast(hit, dtypes.FLOAT32, "mask", "1.0 at maxima, 0.0 elsewhere")
        index = b.node("ArgMax", [mask], "argmax", "index of the first maximum", axis=axis, keepdims=1, select_last_index=0)
    if last:
        index = b.node("Sub", [b.scalar(size - 1, dtypes.INT64, "last_index"), index], "unreverse", "index in the original order")
    return index


def _int_order_key(b: GraphBuilder, x: str, dtype: dtypes.DataType) -> str:
    """An INT32/INT64 tensor ordered exactly like `x`."""
    if dtype in (dtypes.INT32, dtypes.INT64):
        return x
    if dtype == dtypes.UINT32:
        return b.cast(x, dtypes.INT64, "widen", "UINT32 fits in INT64")
    # UINT64: reinterpret as INT64 (values >= 2**63 turn negative), then flip the sign bit by
    # adding -2**63 modulo 2**64, which maps unsigned order onto signed order.
    signed = b.cast(x, dtypes.INT64, "reinterpret", "UINT64 bits as INT64")
    return b.node(
        "Add",
        [signed, b.scalar(-(2**63), dtypes.INT64, "sign_bit")],
        "order_key",
        "flips the sign bit: unsigned order becomes signed order",
    )


def reference(desc: OperatorDesc, inputs: dict[str, np.ndarray]) -> np.ndarray:
    x = inputs["InputTensor"]
    flat, _ = common.merge_axes_reference(x, desc["Axes"])
    if desc["AxisDirection"] == "DECREASING":
        index = flat.shape[1] - 1 - np.argmax(flat[:, ::-1], axis=1)
    else:
        index = np.argmax(flat, axis=1)
    out = desc.tensor("OutputTensor")
    return index.astype(out.data_type.numpy).reshape(out.sizes)
