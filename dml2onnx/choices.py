"""Candidate lowerings per operator, and the one rule that picks among them.

Every candidate is exact (or within tolerances.py) on every EP its target names, and the test
suites run each of them; they differ in speed, which depends on the EP and the shape. The rule
below is what benchmarks/ measured fastest on the CUDA EP (docs/benchmarks.md)."""

from __future__ import annotations

import math

from . import dtypes, ops
from .desc import OperatorDesc
from .errors import UsageError
from .ops import argmax, common, hardmax1, log_softmax1
from .schema import OPERATORS
from .targets import TARGETS

VARIANTS: dict[str, tuple[str, ...]] = {
    # merge the reduced axes where they are (Reshape; Transpose only when not contiguous) or
    # always move them last first; axes in several runs: one small one-hot per run, multiplied;
    # inner_first: as ARGMAX's
    "ACTIVATION_HARDMAX1": ("in_place", "last_axis", "two_stage", "one_hot_product", "inner_first"),
    # LogSoftmax over the merged axis after subtracting the max (found by ReduceMax, or by ArgMax +
    # GatherElements), or the same after moving the axes last, or ReduceMax/Sub/Exp/ReduceSum/Log/
    # Sub over the axes as they are (no Transpose), or that chain over trailing axes cut into chunks
    # (each reduction over every chunk, then over the chunks)
    "ACTIVATION_LOG_SOFTMAX1": ("in_place", "argmax_max", "last_axis", "reduce_chain", "chunked_chain"),
    # two_stage: the axes moved last (as last_axis) and cut into chunks, ArgMax per chunk, then over
    # the chunks; inner_first (axes in several runs, the last innermost): ArgMax over that run in
    # place, then over the other axes of the rows' extremes
    "ARGMAX": ("in_place", "last_axis", "two_stage", "inner_first"),
    "ONE_HOT": ("one_hot",),
    # ReduceMean/Sub/Mul/ReduceMean/Add/Sqrt/Div, or LayerNormalization (opset 17) with a ones
    # scale, or (per channel, Scale/Bias per channel) InstanceNormalization taking Scale and Bias
    "MEAN_VARIANCE_NORMALIZATION": ("reduce_chain", "layer_norm", "instance_norm"),
    # The families' other members: the old single-axis forms reduce the last axis (in place);
    # modules may narrow these with variant_applies(desc, variant, opset).
    "ACTIVATION_HARDMAX": ("in_place",),
    "ACTIVATION_LOG_SOFTMAX": ("in_place", "argmax_max", "reduce_chain"),
    "ACTIVATION_SOFTMAX": ("in_place", "reduce_chain"),
    "ACTIVATION_SOFTMAX1": ("in_place", "last_axis", "reduce_chain"),
    "ARGMIN": ("in_place", "last_axis", "two_stage", "inner_first"),
    "REDUCE": ("in_place", "last_axis"),
    "MEAN_VARIANCE_NORMALIZATION1": ("reduce_chain", "layer_norm", "instance_norm"),
    "MEAN_VARIANCE_NORMALIZATION2": ("reduce_chain", "layer_norm", "instance_norm"),
    **{name: ("elementwise",) for name, op in OPERATORS.items() if op.fusable},
}


# The operators benchmarks/ measured; the others take their first candidate.
# ARGMIN builds ARGMAX's graph with ArgMin, and follows its rule.
MEASURED = ("ACTIVATION_HARDMAX1", "ACTIVATION_LOG_SOFTMAX1", "ARGMAX", "ARGMIN", "ONE_HOT", "MEAN_VARIANCE_NORMALIZATION")


# The CUDA EP's ArgMax over rows shorter than this scans each row with one thread (onnxruntime's
# MIN_NUM_COLS_FOR_COOPERATIVE_ARG_REDUCTION), several times slower per element.
_COOPERATIVE_ROW = 128


def _reduced_axes(desc: OperatorDesc) -> tuple[int, ...]:
    if desc.schema.name == "MEAN_VARIANCE_NORMALIZATION":
        return (1, 2, 3) if desc["CrossChannel"] else (2, 3)
    if desc.schema.name == "ONE_HOT":
        return (desc["Axis"],)
    return tuple(sorted(desc["Axes"]))


def _rows_and_length(desc: OperatorDesc) -> tuple[int, int]:
    """(kept elements, reduced elements): the rows that the reduction runs over, and their length."""
    x = desc.tensor("InputTensor")
    length = math.prod(x.sizes[a] for a in _reduced_axes(desc))
    return x.element_count // length, length


def available(desc: OperatorDesc, opset: int) -> tuple[str, ...]:
    """The candidates that apply to this desc (others would build the same graph or none)."""
    op = desc.schema.name
    own_rule = getattr(ops.MODULES[op], "variant_applies", None)
    if own_rule is not None:  # these operators' modules say which of their candidates apply
        return tuple(v for v in VARIANTS[op] if own_rule(desc, v, opset))
    out = []
    for v in VARIANTS[op]:
        if v == "last_axis" and _reduced_axes(desc)[-1] == desc.tensor("InputTensor").rank - 1:
            continue  # already last: the same graph as in_place
        if v == "argmax_max" and len(_reduced_axes(desc)) > 1:
            continue  # one axis only: ArgMax + GatherElements along it
        if v == "two_stage" and not argmax.two_stage_applies(desc):
            continue
        if v == "chunked_chain" and log_softmax1.chain_split(desc) is None:
            continue
        if v == "one_hot_product" and len(common.axis_runs(_reduced_axes(desc))) < 2:
            continue
        if v == "inner_first" and not argmax.inner_first_applies(desc.tensor("InputTensor").sizes, _reduced_axes(desc)):
            continue
        out.append(v)
    return tuple(out)


def choose(desc: OperatorDesc, target: str, opset: int) -> str:
    """The lowering used unless one is asked for: on `portable` and `cuda` (graphs that run on the
    CUDA EP), the candidate measured fastest for this kind of shape on an H200 (docs/benchmarks.md);
    on `cpu` and `dml`, whose EPs were not measured here, the first candidate."""
    options = available(desc, opset)
    if target not in ("portable", "cuda") or desc.schema.name not in MEASURED:
        return options[0]
    op, axes = desc.schema.name, _reduced_axes(desc)
    rank = desc.tensor("IndicesTensor" if op == "ONE_HOT" else "InputTensor").rank
    contiguous = axes[-1] - axes[0] + 1 == len(axes)
    trailing = axes[-1] == rank - 1
    if op == "ACTIVATION_LOG_SOFTMAX1":
        rows, reduced = _rows_and_length(desc)
        # One row: the CUDA EP's LogSoftmax runs it in one block (13 GB/s for a 64M row), while its
        # reductions over everything are fast (but over a few long rows they are not: 2 GB/s for
        # 16 rows of 4M). Where the EP's kernel is exact: that kernel alone (the EP moves an outer
        # axis last itself). Otherwise, the innermost axis: its ArgMax finds the max 4x faster
        # than ReduceMax; scattered or leading axes: the chain avoids any transpose (FLOAT16: the
        # chain's casts cost more than the EP's internal transpose, and moving the axes last with
        # our own costs more still).
        if rows == 1 and reduced > 2**16:
            return "reduce_chain"
        # A few long rows: the EP's LogSoftmax runs a block per row (51 GB/s for 4 rows of 16M),
        # and its one-step reductions are slower still; the chunked chain reaches 790 GB/s there.
        # Each row's block gains about 11-13 GB/s: 705 GB/s at 64 rows (chunked 801), 1754 at 256.
        if rows <= 64 and reduced >= 2**20 and "chunked_chain" in options:
            return "chunked_chain"
        # Where the EP's own LogSoftmax is exact (long rows, targets.cuda_warp_softmax) it needs no
        # max subtracted first, and runs in one kernel.
        if log_softmax1.ep_kernel_exact(desc, TARGETS[target]):
            return "in_place"
        if not contiguous:
            return "reduce_chain"
        if trailing:
            return "argmax_max"
        if axes[0] == 0:
            return "reduce_chain" if desc.tensor("InputTensor").data_type.name == "FLOAT32" else "in_place"
        return "in_place"
    if "inner_first" in options and argmax.inner_run_length(desc.tensor("InputTensor").sizes, axes) >= _COOPERATIVE_ROW:
        # Axes in several runs, the last innermost: ArgMax over that run where it lies, and the
        # rest over a tensor that run's length times smaller, where the other candidates move the
        # whole input with a Transpose first (which costs twice the ArgMax): 1.6x (ARGMAX) and 1.8x
        # (HARDMAX1) on rows of 256. On rows shorter than 128 the EP's ArgMax scans each row with
        # one thread, and inner_first is 1.4x slower than the Transpose (H200).
        return "inner_first"
    # One long row: the EP's ArgMax reaches 45% of copy there (64M), but over its chunks the full
    # innermost-axis speed (4 rows of 16M are already fast in one pass). 64-bit integers ranked
    # digit by digit (argmax.py; targets without DOUBLE ArgMax): shorter rows make each digit's
    # pass 1.3x faster; ranked from a DOUBLE ArgMax (`cuda`), one pass is as fast. The last
    # extreme (DECREASING) over trailing axes, where the target has no select_last_index: only the
    # chosen chunk is reversed, not the whole input (1.36x on rows of 16384; slower on rows of
    # 1024, and after the Transpose of a leading axis, H200).
    if "two_stage" in options:
        rows, reduced = _rows_and_length(desc)
        wide_integers = desc.tensor("InputTensor").data_type in (dtypes.INT64, dtypes.UINT64)
        by_digits = wide_integers and not TARGETS[target].argmax_double
        reversed_search = op != "ACTIVATION_HARDMAX1" and desc["AxisDirection"] == "DECREASING"
        if reversed_search and trailing and contiguous and not TARGETS[target].argmax_select_last and reduced >= 4096:
            return "two_stage"
        if (rows == 1 and reduced >= 2**18) or (by_digits and trailing and contiguous):
            return "two_stage"
    if "one_hot_product" in options and not hardmax1.one_hot_on_last_axis_applies(desc.tensor("InputTensor").sizes, axes):
        # Axes in several runs: the output is written once in place, with no Transpose back. The
        # other candidates do that too where their one-hot runs along the last reduced axis, and
        # they skip the broadcast Mul of the small one-hots (a full pass over the output): 1.25x on
        # rows of 64 (256 x 4096 x 64, axes 0 and 2), 1.29x with a kept axis inside (64 x 1024 x
        # 256 x 4, axes 0 and 2), H200.
        return "one_hot_product"
    if op in ("ARGMAX", "ARGMIN", "ACTIVATION_HARDMAX1") and not trailing and "last_axis" in options:
        # The CUDA EP's ArgMax is 2.5x faster on the innermost axis than on an outer one, more
        # than the Transpose costs (and the reversing Slice of DECREASING is faster there too).
        return "last_axis"
    if op == "MEAN_VARIANCE_NORMALIZATION" and not desc["CrossChannel"]:
        # one fused kernel per channel; with Scale/Bias per channel InstanceNormalization applies
        # them in the same kernel; across channels the chain is faster
        has_affine = desc.optional_tensor("ScaleTensor") is not None or desc.optional_tensor("BiasTensor") is not None
        if has_affine and "instance_norm" in options:
            return "instance_norm"
        if "layer_norm" in options:
            return "layer_norm"
    return options[0]


def resolve(desc: OperatorDesc, target: str, opset: int, variant: str | None) -> str:
    if variant is None:
        return choose(desc, target, opset)
    if variant not in available(desc, opset):
        raise UsageError(
            f"lowering '{variant}' does not apply to this DML_{desc.schema.name} "
            f"(candidates here: {', '.join(available(desc, opset))})"
        )
    return variant
