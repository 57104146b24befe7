"""DML_OPERATOR_ARGMAX: index of the maximum over the joint Axes, first (INCREASING) or last
(DECREASING) on ties, counted in row-major order of the reduced axes. ARGMIN (lower_argmin) shares
the lowering and reference with the order reversed."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from dml2onnx.core import dtypes
from dml2onnx.core.desc import OperatorDesc
from dml2onnx.core.operator_table import OPERATORS
from dml2onnx.core.schema import OperatorSchema
from dml2onnx.graph.builder import GraphBuilder
from dml2onnx.graph.targets import TARGETS
from dml2onnx.ops import common
from dml2onnx.ops.family import Family

INPUT_TYPES = OPERATORS["ARGMAX"].types("InputTensor")
OUTPUT_TYPES = OPERATORS["ARGMAX"].types("OutputTensor")

# Integer types whose every value a float32 holds exactly: ArgMax may run on a float32 copy.
_EXACT_IN_FLOAT32 = (dtypes.INT16, dtypes.INT8, dtypes.UINT16, dtypes.UINT8)


# The candidate lowerings (choices.py): in_place merges the reduced axes where they are (Reshape;
# Transpose only when they are not contiguous); last_axis always moves them last first; two_stage
# moves them last and cuts them into chunks, ArgMax per chunk, then over the chunks; inner_first
# (axes in several runs, the last innermost) runs ArgMax over that run in place, then over the
# other axes of the rows' extremes.
CANDIDATES = ("in_place", "last_axis", "two_stage", "inner_first")

# The CUDA EP's ArgMax over rows shorter than this scans each row with one thread (onnxruntime's
# MIN_NUM_COLS_FOR_COOPERATIVE_ARG_REDUCTION), several times slower per element.
_COOPERATIVE_ROW = 128


def applies(desc: OperatorDesc, candidate: str, opset: int) -> bool:
    if not desc["Axes"]:  # AxisCount 0: zeros (lower)
        return candidate == "in_place"
    return search_applies(candidate, desc.tensor("InputTensor").sizes, tuple(sorted(desc["Axes"])))


def search_applies(candidate: str, sizes: tuple[int, ...], axes: tuple[int, ...]) -> bool:
    """Which of the search's candidates apply (ARGMAX, ARGMIN, HARDMAX1): last_axis only where the
    axes do not already end at the last dimension (else in_place's graph), two_stage where their
    length splits into chunks, inner_first where the axes lie in several runs, the last innermost."""
    if candidate == "last_axis":
        return axes[-1] != len(sizes) - 1
    if candidate == "two_stage":
        return split(math.prod(sizes[a] for a in axes)) is not None
    if candidate == "inner_first":
        return inner_first_applies(sizes, axes)
    return True


def choose(desc: OperatorDesc, target: str, options: tuple[str, ...]) -> str:
    """The candidate measured fastest on the CUDA EP (H200, docs/benchmarks.md); ARGMIN too."""
    axes = tuple(sorted(desc["Axes"]))
    if not axes:
        return options[0]
    decreasing = desc["AxisDirection"] == "DECREASING"
    return fast_search(desc, target, options, axes, decreasing) or outer_axes_last(desc, options, axes)


def fast_search(
    desc: OperatorDesc, target: str, options: tuple[str, ...], axes: tuple[int, ...], reversed_search: bool
) -> str | None:
    """inner_first or two_stage where they are measured faster (ARGMAX, ARGMIN, HARDMAX1), else None."""
    x = desc.tensor("InputTensor")
    if "inner_first" in options and inner_run_length(x.sizes, axes) >= _COOPERATIVE_ROW:
        # Axes in several runs, the last innermost: ArgMax over that run where it lies, and the
        # rest over a tensor that run's length times smaller, where the other candidates move the
        # whole input with a Transpose first (which costs twice the ArgMax): 1.6x (ARGMAX) and 1.8x
        # (HARDMAX1) on rows of 256. On rows shorter than 128 the EP's ArgMax scans each row with
        # one thread, and inner_first is 1.4x slower than the Transpose (H200).
        return "inner_first"
    if "two_stage" not in options:
        return None
    # One long row: the EP's ArgMax reaches 45% of copy there (64M), but over its chunks the full
    # innermost-axis speed (4 rows of 16M are already fast in one pass). 64-bit integers ranked
    # digit by digit (targets without DOUBLE ArgMax): shorter rows make each digit's pass 1.3x
    # faster; ranked from a DOUBLE ArgMax (`cuda`), one pass is as fast. The last extreme
    # (DECREASING) over trailing axes, where the target has no select_last_index: only the chosen
    # chunk is reversed, not the whole input (1.36x on rows of 16384; slower on rows of 1024, and
    # after the Transpose of a leading axis, H200).
    reduced = math.prod(x.sizes[a] for a in axes)
    rows = x.element_count // reduced
    trailing, contiguous = axes[-1] == x.rank - 1, axes[-1] - axes[0] + 1 == len(axes)
    by_digits = x.data_type in (dtypes.INT64, dtypes.UINT64) and not TARGETS[target].argmax_double
    if reversed_search and trailing and contiguous and not TARGETS[target].argmax_select_last and reduced >= 4096:
        return "two_stage"
    if (rows == 1 and reduced >= 2**18) or (by_digits and trailing and contiguous):
        return "two_stage"
    return None


def outer_axes_last(desc: OperatorDesc, options: tuple[str, ...], axes: tuple[int, ...]) -> str:
    """The CUDA EP's ArgMax is 2.5x faster on the innermost axis than on an outer one, more than
    the Transpose costs (and the reversing Slice of DECREASING is faster there too)."""
    trailing = axes[-1] == desc.tensor("InputTensor").rank - 1
    return "last_axis" if not trailing and "last_axis" in options else options[0]


def validate(desc: OperatorDesc) -> None:
    """AxisCount 0 is taken: DirectML's CreateOperator accepts it (OutputTensor's Sizes then
    InputTensor's, E_INVALIDARG otherwise) and gives index 0 everywhere (measured through its API,
    tests/ops/test_reduce_no_axes.py)."""
    axes = common.check_axes(desc, desc.tensor("InputTensor").rank, allow_empty=True)
    common.check_reduced_sizes(desc, axes)


def lower(desc: OperatorDesc, b: GraphBuilder, inputs: dict[str, str]) -> str:
    return lower_arg(desc, b, inputs["InputTensor"], minimum=False, last=desc["AxisDirection"] == "DECREASING")


def lower_argmin(desc: OperatorDesc, b: GraphBuilder, inputs: dict[str, str]) -> str:
    """DML_OPERATOR_ARGMIN: ARGMAX's rules and lowering with the order reversed (ONNX ArgMin for
    floats and 8/16-bit integers; 32/64-bit integers ranked exactly by the digits of the reversed
    order key, never through FLOAT32); same candidates and rule, measured alike."""
    return lower_arg(desc, b, inputs["InputTensor"], minimum=True, last=desc["AxisDirection"] == "DECREASING")


def lower_arg(desc: OperatorDesc, b: GraphBuilder, x: str, minimum: bool, last: bool) -> str:
    """The index of the first (`last`: last) maximum, or with `minimum` minimum, over the desc's
    joint Axes, as its OutputTensor: ARGMAX, ARGMIN and REDUCE's ARGMAX/ARGMIN."""
    t = desc.tensor("InputTensor")
    axes = tuple(sorted(desc["Axes"]))
    out = desc.tensor("OutputTensor")
    if not axes:  # AxisCount 0: the index within one element
        return b.filled(list(out.sizes), 0, out.data_type.numpy, "index", "0: the index within a one-element reduction")
    plan = common.JointAxes(t.sizes, axes, last=moves_axes_last(b.variant))
    index = search_index(b, plan, x, t.data_type, last, minimum)
    if out.data_type != dtypes.INT64:
        index = b.cast(index, out.data_type, "output_cast", f"indices as {out.data_type}")
    return plan.restore(b, index, out.sizes)


def moves_axes_last(variant: str) -> bool:
    """`last_axis` and `two_stage` reduce the innermost axis: other axes are moved there first."""
    return variant in ("last_axis", "two_stage")


def search_index(b: GraphBuilder, plan: common.JointAxes, x: str, dtype: dtypes.DataType, last: bool, minimum: bool) -> str:
    """The index over the plan's axes of `x` (of the plan's shape), the reduced axis kept as 1, as
    `plan.restore` takes it: inner_first finds it without moving the input, the other candidates
    after the plan's merge."""
    if b.variant == "inner_first":
        return inner_first_index(b, x, plan.shape, plan.axes, dtype, last, minimum)
    return plan_index(b, plan, plan.merge(b, x), dtype, last, minimum)


def plan_index(b: GraphBuilder, plan: common.JointAxes, merged: str, dtype: dtypes.DataType, last: bool, minimum: bool) -> str:
    """arg_index along the plan's merged axis, in two stages for the `two_stage` candidate."""
    if b.variant == "two_stage":
        return two_stage_index(b, merged, plan.merged_shape, dtype, last, minimum)
    return arg_index(b, merged, dtype, plan.axis, plan.reduced_size, last, minimum, plan.innermost)


def inner_first_applies(sizes: tuple[int, ...], axes: tuple[int, ...]) -> bool:
    """Axes in several runs, the last run ending at the innermost axis."""
    runs = common.axis_runs(axes)
    return len(runs) > 1 and runs[-1][-1] == len(sizes) - 1


def inner_run_length(sizes: tuple[int, ...], axes: tuple[int, ...]) -> int:
    """The elements of the last run of axes: inner_first's rows."""
    return math.prod(sizes[a] for a in common.axis_runs(axes)[-1])


def inner_first_index(
    b: GraphBuilder, x: str, sizes: tuple[int, ...], axes: tuple[int, ...], dtype: dtypes.DataType, last: bool, minimum: bool
) -> str:
    """arg_index over axes in several runs whose last run is innermost, without moving the input:
    the extreme of each row of that run (in place), then the first (`last`: last) row holding the
    overall extreme among the other reduced axes (moved last, in a tensor `inner` times smaller),
    then the position that row's search found. Rows come before positions in the row-major order
    of the reduced axes, so ties resolve as in one pass. Result: (kept elements, 1), as
    JointAxes.merge's plan for these axes (which would Transpose the whole input) gives it."""
    run = common.axis_runs(axes)[-1]
    inner = inner_run_length(sizes, axes)
    prefix = tuple(sizes[: run[0]])
    rows = b.reshape(x, (*prefix, inner), "inner_rows", f"axes {list(run)} as one innermost axis, searched first")
    within = arg_index(b, rows, dtype, len(prefix), inner, last, minimum)
    best = b.node("GatherElements", [rows, within], "row_extremes", "each row's extreme value", axis=-1)
    outer = common.JointAxes(prefix, tuple(a for a in axes if a < run[0]), last=True)
    best = outer.merge(b, best, reshaped=True)
    row = arg_index(b, best, dtype, 1, outer.reduced_size, last, minimum)
    positions = outer.merge(b, within, reshaped=True)
    within = b.node("GatherElements", [positions, row], "position", "the position in the chosen row", axis=1)
    start = b.node("Mul", [row, b.scalar(inner, dtypes.INT64, "row_length")], "row_start", "row * its length")
    return b.node("Add", [start, within], "index", "row * length + position")


# Chunks of about this many elements or more: the CUDA EP's ArgMax over rows of 128 runs at half
# the speed it reaches on rows of 1024 and longer (H200, docs/benchmarks.md).
_CHUNK_LENGTH = 1024


def split(size: int) -> tuple[int, int] | None:
    """(chunks, chunk length) with chunks * length == size and both >= 2: the length is the
    largest divisor up to max(1024, sqrt(size)) that a short search finds (1024 keeps the
    chunks long enough for the EP's ArgMax; sqrt keeps the second stage short for one long row).
    None when there is no such split."""
    target = min(max(_CHUNK_LENGTH, math.isqrt(size)), size // 2)
    for length in range(target, max(1, target // 16), -1):
        if size % length == 0:
            return size // length, length
    return None


def two_stage_index(b: GraphBuilder, x: str, shape: tuple[int, ...], dtype: dtypes.DataType, last: bool, minimum: bool) -> str:
    """arg_index over the innermost axis of `x` (of `shape`) cut into chunks: the extreme of each
    chunk, then the first (`last`: last) chunk holding the overall extreme, then the first (last)
    position of it there. The same index as one pass, ties included. Faster on the CUDA EP for one
    long row (its ArgMax over a single 64M row reaches 45% of copy), and for `last`: only the
    chosen chunk is reversed (the EP has no select_last_index), not the whole input."""
    found = split(shape[-1])
    assert found is not None, "two_stage applies only where the axis splits (search_applies)"
    chunks, length = found
    rows = shape[:-1]
    x = b.reshape(x, (*rows, chunks, length), "chunks", f"the axis as {chunks} chunks of {length}")
    # The first extreme of each chunk, even for `last`: its value is the chunk's extreme all the same.
    first = arg_index(b, x, dtype, len(rows) + 1, length, False, minimum)
    best = b.node("GatherElements", [x, first], "chunk_extremes", "each chunk's extreme value", axis=-1)
    best = b.reshape(best, (*rows, chunks), "extremes_row", "the chunks' extremes as one row")
    chunk = arg_index(b, best, dtype, len(rows), chunks, last, minimum)
    if last:  # the last extreme inside the chosen chunk: that chunk alone, searched from its end
        # Gathered as whole rows of a table of every chunk (contiguous copies), not element by
        # element: GatherElements would need the chunk's number expanded to every position.
        count = math.prod(rows)
        table = b.reshape(x, (count * chunks, length), "chunk_table", "every chunk as one row of a table")
        bounds = [b.scalar(v, dtypes.INT64, n) for v, n in ((0, "zero"), (count * chunks, "chunk_count"), (chunks, "chunks"))]
        firsts = b.node("Range", bounds, "first_chunks", "the table row of each row's first chunk")
        chunk_flat = b.reshape(chunk, (count,), "chunk_flat", "the chosen chunk per row")
        at = b.node("Add", [chunk_flat, firsts], "chunk_at", "its table row")
        part = b.node("Gather", [table, at], "chosen_chunk", "the values of the chosen chunk", axis=0)
        part = b.reshape(part, (*rows, length), "chunk_row", "the chosen chunk as one row")
        within = arg_index(b, part, dtype, len(rows), length, True, minimum)
    else:
        first = b.reshape(first, (*rows, chunks), "positions_row", "each chunk's position of its extreme")
        within = b.node("GatherElements", [first, chunk], "position", "the position in the chosen chunk", axis=-1)
    start = b.node("Mul", [chunk, b.scalar(length, dtypes.INT64, "chunk_length")], "chunk_start", "chunk * length")
    return b.node("Add", [start, within], "index", "chunk * length + position")


def arg_index(
    b: GraphBuilder,
    x: str,
    dtype: dtypes.DataType,
    axis: int,
    size: int,
    last: bool,
    minimum: bool,
    innermost: bool = True,
) -> str:
    """int64 index of the first (`last`: last) maximum, or with `minimum` minimum, along `axis`
    (the innermost axis of `x` when `innermost`), keepdims=1; exact for every input type and
    without ArgMax's select_last_index (which the CUDA EP lacks)."""
    op, step, extreme = ("ArgMin", "argmin", "minimum") if minimum else ("ArgMax", "argmax", "maximum")
    if dtype in b.target.argmax_types and (b.target.argmax_select_last or not last):
        index = b.node(
            op,
            [x],
            step,
            f"index of the {'last' if last else 'first'} {extreme}",
            axis=axis,
            keepdims=1,
            select_last_index=int(last),
        )
        return _outer_axis_guard(b, index, dtype, size, innermost)
    if last:  # reverse, take the first extreme, map the index back: size - 1 - i
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
            f"reverses the axis so that the first {extreme} is the last one",
        )
    if dtype in (dtypes.FLOAT32, dtypes.FLOAT16, *_EXACT_IN_FLOAT32):
        if dtype in _EXACT_IN_FLOAT32:
            x = b.cast(x, dtypes.FLOAT32, "to_float", f"{dtype} values are exact in FLOAT32")
        index = b.node(op, [x], step, f"index of the first {extreme}", axis=axis, keepdims=1, select_last_index=0)
        index = _outer_axis_guard(b, index, dtype, size, innermost)
    elif b.target.argmax_double and dtype.size == 4:  # 32-bit integers are exact in DOUBLE
        x = b.cast(x, dtypes.FLOAT64, "to_double", f"{dtype} values are exact in FLOAT64")
        index = b.node(op, [x], step, f"index of the first {extreme}", axis=axis, keepdims=1, select_last_index=0)
    elif b.target.argmax_double:
        index = _wide_integer_first(b, x, dtype, axis, minimum)
    else:
        index = _integer_first_max(b, x, dtype, axis, minimum)
    if last:
        index = b.node("Sub", [b.scalar(size - 1, dtypes.INT64, "last_index"), index], "unreverse", "index in the original order")
    return index


def _outer_axis_guard(b: GraphBuilder, index: str, dtype: dtypes.DataType, size: int, innermost: bool) -> str:
    """The CUDA EP's ArgMax/ArgMin over an axis that is not the innermost answer 2**31 - 1 when
    every value is -inf (ArgMin: +inf) instead of 0, the first of the tied values (H200,
    benchmarks/patterns.py). Any index out of range is that case: it becomes 0. A reversed
    search (`last`) maps 0 back to size - 1, the last tied value, as it should."""
    if innermost or not dtype.is_float or not b.target.arg_outer_axis_guard:
        return index
    inside = b.node("Less", [index, b.scalar(size, dtypes.INT64, "size")], "in_range", "a valid index (not 2**31 - 1)")
    return b.node("Where", [inside, index, b.scalar(0, dtypes.INT64, "first")], "guarded", "all -inf (ArgMin: +inf): the first")


# DOUBLE rounds a 64-bit integer by at most 2**11 (INT64) or 2**12 (UINT64): two values that round
# alike are at most 2**12 apart.
_ROUNDING_SPAN = 2**12


def _wide_integer_first(b: GraphBuilder, x: str, dtype: dtypes.DataType, axis: int, minimum: bool) -> str:
    """First maximum (or with `minimum`, minimum) of INT64/UINT64 along `axis`, exactly, where the
    target runs ArgMax on DOUBLE (the CUDA EP, which has no integer ArgMax).

    Rounding to DOUBLE keeps the order but may merge neighbours, so ArgMax on a DOUBLE copy finds a
    value, `base`, that rounds like the true extreme and is at most _ROUNDING_SPAN from it. Every
    value is then measured from an edge one step beyond `base` (values beyond the edge, which
    cannot be the extreme, are clamped to it; the edge saturates at the type's limit, so nothing
    overflows): integers in [0, _ROUNDING_SPAN + 1], exact in FLOAT32, larger for larger values
    (for `minimum`, for smaller ones), and `base`'s is above the clamped ones. ArgMax over these
    distances picks the first extreme. Six passes, where the 22-bit digits (_integer_first_max)
    take about twenty."""
    info = np.iinfo(dtype.numpy)
    rounded = b.cast(x, dtypes.FLOAT64, "to_double", "rounded to DOUBLE: the same order, neighbours may tie")
    op = "ArgMin" if minimum else "ArgMax"
    near = b.node(op, [rounded], "near", "a position that rounds like the extreme", axis=axis, keepdims=1, select_last_index=0)
    base = b.node("GatherElements", [x, near], "base", "its exact value", axis=axis)
    one = b.scalar(1, dtype, "one")
    if minimum:  # edge = min(base, max - 1) + 1; distance = edge - min(x, edge)
        limit = b.scalar(int(info.max) - 1, dtype, "edge_limit")
        edge = b.node("Add", [b.node("Min", [base, limit], "edge_low", "base, below the top"), one], "edge", "base + 1")
        clamped = b.node("Min", [x, edge], "clamped", "values above the edge, at the edge")
        distance = b.node("Sub", [edge, clamped], "distance", "how far below the edge: smaller values, larger")
    else:  # edge = max(base, min + 1) - 1; distance = max(x, edge) - edge
        limit = b.scalar(int(info.min) + 1, dtype, "edge_limit")
        edge = b.node("Sub", [b.node("Max", [base, limit], "edge_high", "base, above the bottom"), one], "edge", "base - 1")
        clamped = b.node("Max", [x, edge], "clamped", "values below the edge, at the edge")
        distance = b.node("Sub", [clamped, edge], "distance", "how far above the edge: larger values, larger")
    key = b.cast(distance, dtypes.FLOAT32, "distance_f32", "at most 2**12 + 1: exact in FLOAT32")
    return b.node("ArgMax", [key], "argmax", "the first position of the extreme", axis=axis, keepdims=1, select_last_index=0)


# 32/64-bit integers are ranked exactly in FLOAT32 by 22-bit digits of an unsigned order key.
_DIGIT_BITS = 22


def _integer_first_max(b: GraphBuilder, x: str, dtype: dtypes.DataType, axis: int, minimum: bool) -> str:
    """First maximum (or with `minimum`, minimum) of INT32/INT64/UINT32/UINT64 along `axis`,
    exactly and on every EP.

    These values lose precision as floats, and ArgMax on integers is missing from the CUDA EP. So
    the values are mapped to an unsigned key of the same order, cut into 22-bit digits (exact in
    FLOAT32), and ranked digit by digit: the candidates are narrowed to those with the largest top
    digit, then the next, and ArgMax picks the first of what is left. Integer reductions are
    avoided on purpose: ONNX Runtime 1.31's CPU ReduceMax/Min/Max over INT64 mis-order values in
    [2**31, 2**32), and TopK over INT64 on the CUDA EP did not keep the first of tied maxima (H200,
    docs/gpu-report.md)."""
    bits = 8 * dtype.size
    key = x if dtype == dtypes.UINT64 else b.cast(x, dtypes.UINT64, "as_uint64", f"{dtype} bits as UINT64 (modular)")
    if dtype.is_signed:  # + 2**(bits-1), modulo 2**64: signed order becomes unsigned order
        key = b.node("Add", [key, b.scalar(2 ** (bits - 1), dtypes.UINT64, "bias")], "order_key", "flips the sign bit")
    if minimum:  # (2**bits - 1) - key reverses the order within the same bits: the minimum ranks first
        top_key = b.scalar(2**bits - 1, dtypes.UINT64, "key_max")
        key = b.node("Sub", [top_key, key], "min_key", "the largest key minus the key: minima become maxima")
    shifts = list(range(0, bits, _DIGIT_BITS))[::-1]  # most significant digit first
    candidates: str | None = None
    for n, shift in enumerate(shifts):
        # Shifts as UINT64 Div/Mul by powers of two: the CUDA EP has no BitShift kernel.
        high = (
            key
            if not shift
            else b.node("Div", [key, b.scalar(2**shift, dtypes.UINT64, f"pow{shift}")], f"high{shift}", f"key >> {shift}")
        )
        digit = high
        if n > 0:  # drop the bits above this digit: high - (high >> 22 << 22)
            width = b.scalar(2**_DIGIT_BITS, dtypes.UINT64, f"width{shift}")
            digit = b.remainder(high, width, f"digit{shift}", f"bits {shift}..{shift + _DIGIT_BITS - 1}")
        value = b.cast(digit, dtypes.FLOAT32, f"digit{shift}_f32", "a 22-bit digit is exact in FLOAT32")
        if candidates is not None:  # positions that lost on a higher digit rank below every digit
            value = b.node(
                "Where",
                [candidates, value, b.scalar(-1.0, dtypes.FLOAT32, f"out{shift}")],
                f"ranked{shift}",
                "the digit where still a candidate, else -1",
            )
        if n == len(shifts) - 1:
            return b.node(
                "ArgMax", [value], "argmax", "the first position of the maximum", axis=axis, keepdims=1, select_last_index=0
            )
        top = b.reduce("ReduceMax", value, [axis], f"max{shift}", "the largest digit")
        candidates = b.node("Equal", [value, top], f"candidates{shift}", "still holding the maximum")
    raise AssertionError("unreachable")


def reference(desc: OperatorDesc, inputs: dict[str, np.ndarray]) -> np.ndarray:
    return reference_arg(desc, inputs, np.argmax)


def reference_argmin(desc: OperatorDesc, inputs: dict[str, np.ndarray]) -> np.ndarray:
    return reference_arg(desc, inputs, np.argmin)


def reference_arg(desc: OperatorDesc, inputs: dict[str, np.ndarray], first: Callable[..., np.ndarray]) -> np.ndarray:
    """numpy: `first` (np.argmax or np.argmin, both first on ties) over the merged axes."""
    x = inputs["InputTensor"]
    flat, _ = common.merge_axes_reference(x, desc["Axes"])
    last = desc["AxisDirection"] == "DECREASING"
    index = flat.shape[1] - 1 - first(flat[:, ::-1], axis=1) if last else first(flat, axis=1)
    out = desc.tensor("OutputTensor")
    return index.astype(out.data_type.numpy).reshape(out.sizes)


def examples(op: OperatorSchema) -> list[common.Example]:
    """onnx_ops: each input type with each index type, DECREASING (the longer lowerings)."""
    return [
        {
            "InputTensor": common.example_tensor(t, [3, 8]),
            "OutputTensor": common.example_tensor(index, [3, 1]),
            "AxisCount": 1,
            "Axes": [1],
            "AxisDirection": "DECREASING",
        }
        for t in common.example_types(op, "InputTensor")
        for index in common.example_types(op, "OutputTensor")
    ]


OPERATOR_FAMILY = Family(("ARGMAX",), validate, lower, reference, CANDIDATES, applies=applies, choose=choose, examples=examples)
ARGMIN = Family(
    ("ARGMIN",), validate, lower_argmin, reference_argmin, CANDIDATES, applies=applies, choose=choose, examples=examples
)
