"""DML_OPERATOR_CUMULATIVE_SUMMATION and DML_OPERATOR_CUMULATIVE_PRODUCT: the running sum (product)
along Axis, in ascending element order (AxisDirection INCREASING) or descending (DECREASING);
with HasExclusiveSum / HasExclusiveProduct each output leaves its own element out (the first
output is then 0, or 1). OutputTensor has InputTensor's Sizes and DataType.

What the pages leave open, as DirectML's own API computed it (README: CUMULATIVE_*):
- integers wrap modulo 2**bits, sums and products alike, signed and unsigned (INT32 2**31 - 1
  + 1 is -2**31; a product of factors of 2**16 becomes 0), 64-bit ones exactly beyond 2**53;
- FLOAT32 is accumulated in order, one element after the other (2**24 + 0.1 + 0.1 + ... stays
  2**24); FLOAT16 is accumulated in FLOAT32 and converted once (lavapipe truncates there: 2048 +
  3 x 1 is 2050): a sum past 65504 is inf in that output but the next output may be finite again
  (60000, 10000, -20000 gives 6e4, inf, 5e4); IEEE infinities and NaN as usual (inf * 0 is NaN).

The lowering ("scan"): a Hillis-Steele scan of ceil(log2 n) steps, each y = y + shifted(y) (or
*), the shift a Slice of y and a Concat of the identity (0 or 1) at the start (Slice from the
other end for DECREASING); an exclusive scan shifts the input by one first. Exact for integers
(Add and Mul wrap in every EP's INT32, INT64, UINT32, UINT64). Floats are summed in a tree
order rather than DirectML's sequential one: each output of k terms errs by at most (k - 1) u
sum|x| either way (tolerances.cumulative); FLOAT16 runs in FLOAT32 and is rounded once (to
nearest: DirectML truncates). ONNX has no CumProd before opset 26 and the CPU and CUDA EPs'
CumSum lack FLOAT16 or the unsigned types, so `portable` and `cuda` scan (`cuda`'s long float
sums: "blocked", below); on the `dml` target CUMULATIVE_SUMMATION is ONNX CumSum (exclusive,
reverse), which the DirectML EP maps back onto it (DmlOperatorCumSum.cpp; its six types are
CumSum's registration there; FLOAT16 from opset 14).
The "cumsum" candidate is that node on every target, for FLOAT32, INT32 and INT64 (the CPU EP's
CumSum types; the CUDA EP's kernel sums each output's prefix in order, as DirectML does, at a
cost that grows with the axis length: no rule picks it before benchmarks do).

The "blocked" candidate (CUDA_ONLY: the `cuda` target's graphs; FLOAT32, and FLOAT16 in FLOAT32):
the axis cut into blocks of BLOCK elements (one block of n when shorter; a last partial block
padded with zeros, each of which adds exactly), each block's running sums one MatMul by a
BLOCK x BLOCK triangle of ones (strict for exclusive sums; the lower one for DECREASING), the
block totals (the inclusive sums' far end, or the exclusive one plus its own element) run over
the blocks by a second, small MatMul by a strict triangle, and added back. Along the last axis
the rows multiply the triangle; along another the triangle multiplies each (BLOCK, inner) slab
(MatMul broadcasts it). Measured at 8x64x256x512 FLOAT32 along the last axis (H100, ORT 1.31.1,
CUDA EP, benchmarks/patterns.py round7, without the guard): 632 GB/s in blocks of 16, 720 of 32,
711 of 64, against the scan's 97 and CumSum's 136 (torch.cumsum 1836).
Exactness: x * 1 and x * 0 are exact and a zero adds exactly, so each output is an FP32 sum of
its own k terms in some tree order (FLOAT32 MatMul runs without TF32 on the CUDA EP, runtime.py),
and any order errs by at most (k - 1) u sum|x| (to first order): tolerances.cumulative's bound,
as for the scan. But inf * 0 is NaN where DirectML's sums stay finite, and the order decides
where a sum overflows. So an If takes the blocks only where the computed sum of |x| over the whole
tensor (ReduceL1: NaN or inf where x holds one) is below FLT_MAX / (1 + u)**(n + N), N the
element count: computed in any order that sum is at least the exact one / (1 + u)**(N - 1), which
is at least any row's, and every partial sum of either graph at most its row's times
(1 + u)**(n - 1), so none overflows (for N past about 2**31 the bound is 0: the scan).
Elsewhere the If runs the scan. The guard reads the input once more: a ReduceL1 per row first took
818 us of 1530 at 64M on the H100 (cuDNN's row reduction), one over the whole tensor is a single
full reduction. The If also copies the blocks' result to the graph's output (178 us there).
The rule (choose) takes "blocked" on the `cuda` target along the last axis (trailing axes of 1
aside) of BLOCKED_FROM = 64 elements or more: 512 was measured, shorter axes are argued (the scan
takes log2 n passes of Slice, Concat and Add over the tensor; the blocks a fixed few). Other axes
keep the scan until a slab MatMul is measured; integers keep it too (CumSum's 1.4x over the scan
at 512 was measured on FLOAT32 only, and CumSum's cost grows with the axis).
"""

from __future__ import annotations

import math

import numpy as np

from dml2onnx.core import dtypes
from dml2onnx.core.desc import OperatorDesc
from dml2onnx.core.errors import ModelError
from dml2onnx.core.schema import OperatorSchema
from dml2onnx.graph.builder import GraphBuilder
from dml2onnx.graph.targets import DML_NODE_DOC
from dml2onnx.ops import common
from dml2onnx.ops.family import Family

CANDIDATES = ("scan", "cumsum", "blocked")  # choices.py
CUDA_ONLY = ("blocked",)  # an If guards it: the DirectML EP's static check does not follow subgraphs
# ONNX CumSum's types on the CPU EP (the CUDA and DirectML EPs have them too): the "cumsum" candidate's
CUMSUM_TYPES = (dtypes.FLOAT32, dtypes.INT32, dtypes.INT64)
ROWS = ("CUMULATIVE_SUMMATION", "CUMULATIVE_PRODUCT")
# "blocked": the block length (720 GB/s, against 632 for 16 and 711 for 64: H100, round7), and the
# shortest axis the rule takes it for (shorter ones keep the scan's few steps)
BLOCK = 32
BLOCKED_FROM = 64


def _product(desc: OperatorDesc) -> bool:
    return desc.schema.name == "CUMULATIVE_PRODUCT"


def exclusive(desc: OperatorDesc) -> bool:
    return bool(desc["HasExclusiveProduct"] if _product(desc) else desc["HasExclusiveSum"])


def applies(desc: OperatorDesc, candidate: str, opset: int) -> bool:
    """ "cumsum": ONNX CumSum, for CUMULATIVE_SUMMATION in a type every EP's CumSum has (the CUDA
    EP's sums each output's prefix in order, as DirectML does; its cost grows with the axis)."""
    if candidate == "cumsum":
        return desc.schema.name == "CUMULATIVE_SUMMATION" and desc.tensor("InputTensor").data_type in CUMSUM_TYPES
    if candidate == "blocked":
        return desc.schema.name == "CUMULATIVE_SUMMATION" and desc.tensor("InputTensor").data_type in dtypes.FLOATS
    return True


def choose(desc: OperatorDesc, target: str, options: tuple[str, ...]) -> str:
    """ "blocked" along the last axis (inner 1) of BLOCKED_FROM elements or more where it applies
    (the `cuda` target): 7.4x the scan at 512 unguarded (H100, ORT 1.31.1); shorter axes and
    other axes (a MatMul per (BLOCK, inner) slab) are unmeasured and keep the scan. Integers keep
    the scan too: CumSum's 1.4x was measured on FLOAT32 only."""
    _, n, inner = common.around_axis(desc.tensor("InputTensor").sizes, desc["Axis"])
    return "blocked" if "blocked" in options and inner == 1 and n >= BLOCKED_FROM else options[0]


def validate(desc: OperatorDesc) -> None:
    rank = desc.tensor("InputTensor").rank
    if desc["Axis"] >= rank:
        raise ModelError(desc.at("Axis"), f"must be less than InputTensor's DimensionCount ({rank})")
    common.check_same_type(desc, "OutputTensor", "InputTensor")
    common.check_same_sizes(desc, "OutputTensor", "InputTensor")


# -- lowering ---------------------------------------------------------------------------------


def _shift(b: GraphBuilder, y: str, sizes: list[int], axis: int, d: int, identity: str, reverse: bool, n: int) -> str:
    if reverse:
        kept = b.slice(y, [axis], [d], [n], f"after_{d}", f"the elements from {d} on")
        parts = [kept, identity]
    else:
        kept = b.slice(y, [axis], [0], [n - d], f"before_{d}", f"the elements but the last {d}")
        parts = [identity, kept]
    return b.node("Concat", parts, f"shifted_{d}", f"moved {d} along the axis, the identity in the gap", axis=axis)


def scan(
    b: GraphBuilder, x: str, sizes: list[int], axis: int, dtype: dtypes.DataType, product: bool, reverse: bool, excl: bool
) -> str:
    """The inclusive (or exclusive) scan of x along `axis` by Add or Mul, in x's type."""
    n = sizes[axis]
    op, unit = ("Mul", 1) if product else ("Add", 0)
    identities: dict[int, str] = {}

    def identity(d: int) -> str:
        if d not in identities:
            shape = [d if i == axis else s for i, s in enumerate(sizes)]
            identities[d] = b.filled(shape, unit, dtype.numpy, f"identity_{d}", f"{unit}: the {op}'s identity")
        return identities[d]

    y = x
    if excl:
        y = _shift(b, y, sizes, axis, 1, identity(1), reverse, n) if n > 1 else identity(1)
    d = 1
    while d < n:
        moved = _shift(b, y, sizes, axis, d, identity(d), reverse, n)
        y = b.node(op, [y, moved], f"scan_{d}", f"each element {op} the one {d} before it (Hillis-Steele)")
        d *= 2
    return y


def _triangle(size: int, reverse: bool, strict: bool) -> np.ndarray:
    """T[i, j] = 1 where term i counts in output j: i <= j (i < j when strict); i >= j (i > j)
    for DECREASING. FLOAT32, for rows @ T."""
    ones = np.ones((size, size), np.float32)
    return np.tril(ones, -int(strict)) if reverse else np.triu(ones, int(strict))


def _times(b: GraphBuilder, v: str, matrix: np.ndarray, rows: bool, step: str, doc: str) -> str:
    """rows @ matrix along v's last axis, or matrix.T @ each slab (the axis second to last)."""
    m = b.const(matrix if rows else matrix.T.copy(), f"{step}_matrix")
    return b.node("MatMul", [v, m] if rows else [m, v], step, doc)


def _rows(b: GraphBuilder, x: str, sizes: list[int], axis: int) -> str:
    """x as (outer, n) along the last axis (after trailing axes of 1), else as (outer, n, inner)."""
    outer, n, inner = common.around_axis(sizes, axis)
    return b.reshape(x, [outer, n] + ([inner] if inner > 1 else []), "rows", "the axis second, the ones before it first")


def blocked(b: GraphBuilder, v: str, sizes: list[int], axis: int, reverse: bool, excl: bool) -> str:
    """The running sum along `axis` of FLOAT32 x, given as v = _rows(x), by MatMuls in blocks of
    BLOCK (module doc): within tolerances.cumulative only for finite sums (the If in _guarded_blocked)."""
    outer, n, inner = common.around_axis(sizes, axis)
    size = min(BLOCK, n)
    blocks = -(-n // size)
    rows = inner == 1  # along the last axis: rows @ triangle; else triangle @ (size, inner) slabs
    tail = [] if rows else [inner]
    if blocks * size > n:
        zeros = b.filled([outer, blocks * size - n, *tail], 0, np.float32, "padding", "zeros to a whole block: each adds exactly")
        v = b.node("Concat", [v, zeros], "padded", "the axis padded to a whole number of blocks", axis=1)
    v = b.reshape(v, [outer, blocks, size, *tail], "as_blocks", f"the axis as {blocks} blocks of {size}")
    y = _times(b, v, _triangle(size, reverse, excl), rows, "block_sums", "each block's running sums: a triangle of ones")
    if blocks > 1:
        # the block's total: its inclusive running sum at the block's far end, or the exclusive one
        # there plus the element it leaves out
        end = 0 if reverse else size - 1
        total = b.slice(y, [2], [end], [end + 1], "block_end", "each block's running sum at its far end")
        if excl:
            last = b.slice(v, [2], [end], [end + 1], "block_last", "the element the exclusive sum leaves out")
            total = b.node("Add", [total, last], "block_total", "the block's total")
        total = b.reshape(total, [outer, blocks, *tail], "totals", "one total per block")
        before = _times(b, total, _triangle(blocks, reverse, True), rows, "offsets", "the totals of the blocks before each")
        before = b.reshape(before, [outer, blocks, 1, *tail], "offsets_per_block", "one offset per block")
        y = b.node("Add", [y, before], "with_offsets", "each block's running sums after the blocks before it")
    y = b.reshape(y, [outer, blocks * size, *tail], "joined", "the blocks joined")
    if blocks * size > n:
        y = b.slice(y, [1], [0], [n], "unpadded", "the padding dropped")
    return b.reshape(y, sizes, "blocked_sums", "the running sums at the input's sizes")


def _bound(n: int, total: int) -> float:
    """FLT_MAX / (1 + u)**(n + total), rounded down to FLOAT32 (u = 2**-24; 0 where it underflows).
    An FP32 sum of `total` non-negative terms in any order is at least their exact sum /
    (1 + u)**(total - 1), itself at least any row's, and any partial sum of a row of n in either
    graph at most that row's sum|x| times (1 + u)**(n - 1): a tensor whose computed sum of |x| is
    below this bound has no partial sum past FLT_MAX."""
    bound = float(np.finfo(np.float32).max) * math.exp(-(n + total) * math.log1p(2.0**-24))
    rounded = np.float32(bound)
    return float(rounded if float(rounded) <= bound else np.nextafter(rounded, np.float32(0)))


def _guarded_blocked(b: GraphBuilder, x: str, sizes: list[int], axis: int, reverse: bool, excl: bool) -> str:
    """blocked() where the whole tensor has a finite sum of |x| below _bound (no NaN, no inf, no
    overflow in any order), else the scan (DirectML's infinities and NaN, in order)."""
    v = _rows(b, x, sizes, axis)
    rank = 2 if common.around_axis(sizes, axis)[2] == 1 else 3
    l1 = b.reduce("ReduceL1", v, list(range(rank)), "l1", "the sum of |x|: NaN or inf where x holds one", keepdims=False)
    bound = b.scalar(_bound(sizes[axis], int(np.prod(sizes))), dtypes.FLOAT32, "bound")
    cond = b.node("Less", [l1, bound], "blocked_ok", "below the bound (NaN fails): the blocked sums are within tolerance")
    return b.branch(
        cond,
        lambda t: blocked(t, v, sizes, axis, reverse, excl),
        lambda e: scan(e, x, sizes, axis, dtypes.FLOAT32, False, reverse, excl),
        dtypes.FLOAT32,
        "sums",
        "MatMul blocks where every row's sum of |x| is finite and safe, else the Hillis-Steele scan",
    )


def lower(desc: OperatorDesc, b: GraphBuilder, inputs: dict[str, str]) -> str:
    t = desc.tensor("InputTensor")
    x, axis, reverse = inputs["InputTensor"], desc["Axis"], desc["AxisDirection"] == "DECREASING"
    # CumSum takes FLOAT16 from opset 14 (CumSum-14)
    dml_node = b.target.dml_nodes and not _product(desc) and (b.opset >= 14 or t.data_type != dtypes.FLOAT16)
    if dml_node or b.variant == "cumsum":
        doc = DML_NODE_DOC if dml_node else "ONNX CumSum: the running sum, its direction and exclusivity as attributes"
        return b.node("CumSum", [x, b.i64(axis, "axis")], "cumsum", doc, exclusive=int(exclusive(desc)), reverse=int(reverse))
    work = dtypes.FLOAT32 if t.data_type == dtypes.FLOAT16 else t.data_type
    if work != t.data_type:
        x = b.cast(x, work, "in_float32", "FLOAT16 accumulated in FLOAT32, as DirectML does")
    sizes = list(t.sizes)
    if b.variant == "blocked":
        y = _guarded_blocked(b, x, sizes, axis, reverse, exclusive(desc))
    else:
        y = scan(b, x, sizes, axis, work, _product(desc), reverse, exclusive(desc))
    if work != t.data_type:
        y = b.cast(y, t.data_type, "as_float16", "rounded once to FLOAT16")
    return y


# -- reference --------------------------------------------------------------------------------


def reference(desc: OperatorDesc, inputs: dict[str, np.ndarray]) -> np.ndarray:
    """The page: the running sum or product along the axis, in its direction, without the element
    itself when exclusive. Integers in their own type (wrapping); floats in FLOAT64, rounded once."""
    x = np.asarray(inputs["InputTensor"])
    axis, reverse = desc["Axis"], desc["AxisDirection"] == "DECREASING"
    work = np.float64 if x.dtype.kind == "f" else x.dtype
    v = np.flip(x, axis) if reverse else x
    fn = np.cumprod if _product(desc) else np.cumsum
    with np.errstate(over="ignore", invalid="ignore"):
        y = fn(v.astype(work), axis=axis, dtype=work)
        if exclusive(desc):
            unit = np.ones_like(np.take(y, [0], axis)) if _product(desc) else np.zeros_like(np.take(y, [0], axis))
            y = np.concatenate([unit, np.take(y, range(y.shape[axis] - 1), axis)], axis)
        y = y.astype(x.dtype)
    return np.flip(y, axis) if reverse else y


def examples(op: OperatorSchema) -> list[common.Example]:
    """onnx_ops: each type, along the last axis, increasing and decreasing (exclusive)."""
    out: list[common.Example] = []
    flag = "HasExclusiveProduct" if op.name == "CUMULATIVE_PRODUCT" else "HasExclusiveSum"
    for t in common.example_types(op, "InputTensor"):
        x = common.example_tensor(t, [1, 1, 3, 4])
        out.append({"InputTensor": x, "OutputTensor": x, "Axis": 3, "AxisDirection": "INCREASING", flag: False})
        out.append({"InputTensor": x, "OutputTensor": x, "Axis": 2, "AxisDirection": "DECREASING", flag: True})
    return out


OPERATOR_FAMILY = Family(
    ("CUMULATIVE_SUMMATION", "CUMULATIVE_PRODUCT"),
    validate,
    lower,
    reference,
    CANDIDATES,
    applies=applies,
    choose=choose,
    cuda_only=CUDA_ONLY,
    examples=examples,
)
