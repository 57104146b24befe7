"""DML_OPERATOR_ACTIVATION_LOG_SOFTMAX1: x - log(sum(exp(x))) over the joint Axes. The single-axis
ACTIVATION_LOG_SOFTMAX (log_softmax.py) reuses this lowering and reference; SOFTMAX1 (softmax1.py)
shares the reduction chain."""

from __future__ import annotations

import math

import numpy as np

from dml2onnx.core import dtypes
from dml2onnx.core.desc import OperatorDesc
from dml2onnx.graph.builder import GraphBuilder
from dml2onnx.graph.targets import TARGETS, Target
from dml2onnx.ops import argmax, common, hardmax1
from dml2onnx.ops.family import Family

validate = hardmax1.validate  # same tensor rules, types and axes rules as HARDMAX1

# The candidate lowerings (choices.py): LogSoftmax over the merged axis after subtracting the max
# (found by ReduceMax where the EP's kernel needs it: in_place; by ArgMax + GatherElements:
# argmax_max), or the same after moving the axes last (last_axis), or ReduceMax/Sub/Exp/ReduceSum/
# Log/Sub over the axes where they are, with no Transpose (reduce_chain), or that chain over
# trailing axes cut into chunks, each reduction over every chunk, then over the chunks
# (chunked_chain).
examples = hardmax1.examples  # the same example descs
CANDIDATES = ("in_place", "argmax_max", "last_axis", "reduce_chain", "chunked_chain")


def applies(desc: OperatorDesc, candidate: str, opset: int) -> bool:
    axes = hardmax1.reduced_axes(desc)
    if candidate == "last_axis":  # already last: in_place's graph
        return axes[-1] != desc.tensor("InputTensor").rank - 1
    if candidate == "argmax_max":  # contiguous axes, merged by a Reshape: ArgMax + GatherElements along them
        return axes[-1] - axes[0] + 1 == len(axes)
    if candidate == "chunked_chain":
        return chain_split(desc) is not None
    return True


def choose(desc: OperatorDesc, target: str, options: tuple[str, ...]) -> str:
    """The candidate measured fastest on the CUDA EP (H200, docs/benchmarks.md)."""
    x, axes = desc.tensor("InputTensor"), hardmax1.reduced_axes(desc)
    reduced = math.prod(x.sizes[a] for a in axes)
    rows = x.element_count // reduced
    # One row: the CUDA EP's LogSoftmax runs it in one block (13 GB/s for a 64M row), while its
    # reductions over everything are fast (but over a few long rows they are not: 2 GB/s for 16
    # rows of 4M).
    if rows == 1 and reduced > 2**16:
        return "reduce_chain"
    # A few long rows: the EP's LogSoftmax runs a block per row (51 GB/s for 4 rows of 16M), and
    # its one-step reductions are slower still; the chunked chain reaches 790 GB/s there. Each
    # row's block gains about 11-13 GB/s: 705 GB/s at 64 rows (chunked 801), 1754 at 256.
    if rows <= 64 and reduced >= 2**20 and "chunked_chain" in options:
        return "chunked_chain"
    # Where the EP's own LogSoftmax is exact (long rows, targets.cuda_warp_softmax) it needs no
    # max subtracted first, and runs in one kernel.
    if ep_kernel_exact(desc, TARGETS[target]):
        return "in_place"
    # Otherwise, the innermost axis: its ArgMax finds the max 4x faster than ReduceMax; scattered
    # or leading axes: the chain avoids any transpose (FLOAT16: the chain's casts cost more than
    # the EP's internal transpose, and moving the axes last with our own costs more still).
    if axes[-1] - axes[0] + 1 != len(axes):
        return "reduce_chain"
    if axes[-1] == x.rank - 1:
        return "argmax_max"
    if axes[0] == 0 and x.data_type == dtypes.FLOAT32:
        return "reduce_chain"
    return "in_place"


def lower(desc: OperatorDesc, b: GraphBuilder, inputs: dict[str, str]) -> str:
    x = desc.tensor("InputTensor")
    axes = hardmax1.reduced_axes(desc)
    if b.variant == "reduce_chain":
        return _reduce_chain(b, inputs["InputTensor"], list(axes), x.data_type)
    if b.variant == "chunked_chain":
        return _chunked_chain(desc, b, inputs["InputTensor"])
    # ONNX LogSoftmax (opset 13) reduces one axis and subtracts the maximum first, so it is
    # stable for inputs like 1000 / -50000; several axes are merged into one beforehand.
    plan = common.JointAxes(x.sizes, axes, last=b.variant == "last_axis")
    merged = plan.merge(b, inputs["InputTensor"])
    if b.variant == "argmax_max" or not ep_kernel_exact(desc, b.target):  # the EP's own max is then 0
        if b.variant == "argmax_max":
            where = argmax.arg_index(b, merged, x.data_type, plan.axis, plan.reduced_size, False, False, plan.innermost)
            top = b.node("GatherElements", [merged, where], "max", "the maximum along the axis", axis=plan.axis)
        else:
            top = b.reduce("ReduceMax", merged, [plan.axis], "max", "the maximum along the merged axis")
        merged = b.node("Sub", [merged, top], "centered", "x - max, exact for nearby values")
    y = b.node("LogSoftmax", [merged], "log_softmax", "log-softmax over the merged axis", axis=plan.axis)
    return plan.unmerge(b, y)


def ep_kernel_exact(desc: OperatorDesc, target: Target) -> bool:
    """Whether the target's LogSoftmax over this desc's rows (its merged axes) is exact alone."""
    x = desc.tensor("InputTensor")
    plan = common.JointAxes(x.sizes, hardmax1.reduced_axes(desc))
    return target.log_softmax_exact_for(plan.reduced_size, plan.size // plan.reduced_size, x.data_type.size)


def exp_sum_chain(
    b: GraphBuilder, x: str, axes: list[int], dtype: dtypes.DataType, chunk_length: int = 0
) -> tuple[str, str, str]:
    """x - max, exp(x - max) and its sum over the axes, reduced where they are: no Transpose for
    axes that are not contiguous. FLOAT16 is computed in FLOAT32 (sums may exceed 65504); pass
    the result through `back_to_float16`.

    With `chunk_length`, `axes` are (chunks, chunk) of a row cut into chunks (the last axis), and
    each reduction runs over every chunk first, then over the chunks' results: the CUDA EP
    reduces a few long rows very slowly in one step (2 GB/s for 16 rows of 4M, H200). The chunk's
    maximum comes from ArgMax + GatherElements, faster there than ReduceMax."""
    if dtype == dtypes.FLOAT16:
        x = b.cast(x, dtypes.FLOAT32, "to_float32", "sums of many exponentials need FLOAT32")
    if chunk_length:
        where = argmax.arg_index(b, x, dtypes.FLOAT32, axes[1], chunk_length, False, False)
        chunk_max = b.node("GatherElements", [x, where], "chunk_max", "each chunk's maximum", axis=axes[1])
        top = b.reduce("ReduceMax", chunk_max, axes[:1], "max", "the maximum over the chunks")
    else:
        top = b.reduce("ReduceMax", x, axes, "max", f"the maximum over axes {axes}")
    centered = b.node("Sub", [x, top], "centered", "x - max")
    exp = b.node("Exp", [centered], "exp", "exp(x - max)")
    if chunk_length:
        partial = b.reduce("ReduceSum", exp, axes[1:], "chunk_sum", "each chunk's sum of exp(x - max)")
        total = b.reduce("ReduceSum", partial, axes[:1], "sum", "sum of exp(x - max) over the chunks")
    else:
        total = b.reduce("ReduceSum", exp, axes, "sum", "sum of exp(x - max)")
    return centered, exp, total


def back_to_float16(b: GraphBuilder, y: str, dtype: dtypes.DataType) -> str:
    return b.cast(y, dtypes.FLOAT16, "to_float16", "the result in FLOAT16") if dtype == dtypes.FLOAT16 else y


def _reduce_chain(b: GraphBuilder, x: str, axes: list[int], dtype: dtypes.DataType) -> str:
    """(x - max) - log(sum(exp(x - max)))."""
    centered, _, total = exp_sum_chain(b, x, axes, dtype)
    return _minus_log_sum(b, centered, b.node("Log", [total], "log_sum", "log(sum)"), dtype)


def _minus_log_sum(b: GraphBuilder, centered: str, log_sum: str, dtype: dtypes.DataType) -> str:
    return back_to_float16(b, b.node("Sub", [centered, log_sum], "log_softmax", "(x - max) - log(sum)"), dtype)


# The chunked chain cuts rows into chunks of up to this many elements, and of at least
# _CHAIN_CHUNK_MIN: the fastest of 4096 and 65536 on an H200 (benchmarks/patterns.py, round 3).
_CHAIN_CHUNK = 65536
_CHAIN_CHUNK_MIN = 1024


def chain_split(desc: OperatorDesc) -> tuple[int, int] | None:
    """(chunks, chunk length) for `chunked_chain`: the axes must end at the last dimension and be
    contiguous (merged by a Reshape alone), and their length must split into at least 2 chunks of
    _CHAIN_CHUNK_MIN.._CHAIN_CHUNK elements (the fewest chunks a short search finds)."""
    x = desc.tensor("InputTensor")
    plan = common.JointAxes(x.sizes, hardmax1.reduced_axes(desc))
    if not plan.innermost or plan.perm is not None:
        return None
    size = plan.reduced_size
    least = max(2, -(-size // _CHAIN_CHUNK))
    for chunks in range(least, min(size // _CHAIN_CHUNK_MIN, least + 4096) + 1):
        if size % chunks == 0:
            return chunks, size // chunks
    return None


def _chunked_chain(desc: OperatorDesc, b: GraphBuilder, x_in: str) -> str:
    """The reduction chain over the merged trailing axes cut into chunks (chain_split)."""
    x = desc.tensor("InputTensor")
    found = chain_split(desc)
    assert found is not None, "chunked_chain applies only where the row splits (applies)"
    chunks, length = found
    # The axes are trailing and contiguous: one Reshape merges and cuts them. The last Sub runs in
    # the input's shape: a Reshape that ends the graph copies the whole output when the caller
    # binds its own output buffer (ONNX Runtime io binding); one inside the graph is free.
    rows = common.JointAxes(x.sizes, hardmax1.reduced_axes(desc)).merged_shape[:-1]
    v = b.reshape(x_in, (*rows, chunks, length), "chunks", f"each row as {chunks} chunks of {length}")
    centered, _, total = exp_sum_chain(b, v, [len(rows), len(rows) + 1], x.data_type, length)
    centered = b.reshape(centered, x.sizes, "unchunk", "x - max in the input's shape")
    ones = (1,) * (len(x.sizes) - len(rows))
    log_sum = b.reshape(b.node("Log", [total], "log_sum", "log(sum)"), (*rows, *ones), "log_sum_rows", "one per row")
    return _minus_log_sum(b, centered, log_sum, x.data_type)


def centered_reference(desc: OperatorDesc, x: np.ndarray) -> tuple[np.ndarray, common.JointAxes]:
    """numpy: the input in float64 as rows over the joint axes, minus each row's maximum."""
    flat, plan = common.merge_axes_reference(x.astype(np.float64), hardmax1.reduced_axes(desc))
    with np.errstate(invalid="ignore"):  # a row of -inf only: -inf - -inf is NaN, as on the EPs
        return flat - flat.max(axis=1, keepdims=True), plan


def reference(desc: OperatorDesc, inputs: dict[str, np.ndarray]) -> np.ndarray:
    x = inputs["InputTensor"]
    shifted, plan = centered_reference(desc, x)
    out = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    return common.unmerge_reference(out, plan).astype(x.dtype)


OPERATOR_FAMILY = Family(
    ("ACTIVATION_LOG_SOFTMAX1",), validate, lower, reference, CANDIDATES, applies=applies, choose=choose, examples=examples
)
