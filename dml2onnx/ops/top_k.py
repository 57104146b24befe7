"""DML_OPERATOR_TOP_K and DML_OPERATOR_TOP_K1: the K largest (TOP_K, and TOP_K1 DECREASING) or
smallest (TOP_K1 INCREASING) elements of each sequence along Axis, sorted (largest first, or
smallest first), with their indices in the sequence. Ties: ascending index, in both directions.

What the pages leave open, as DirectML's own API computed it (README: TOP_K):
- K may equal the axis' size (the pages say "less than"; DirectML accepts K == size and refuses
  K > size with E_INVALIDARG);
- -0 and +0 are equal (ties, ascending index); the values are moved bit for bit (NaN payloads
  kept); INT64 and UINT64 ranked exactly beyond 2**53;
- a sequence holding NaN comes out in no meaningful order under DirectML (it drops finite values
  that belong to the top K: 1, NaN, 3, inf, ... DECREASING K=6 leaves out 1). dml2onnx defines NaN
  as larger than +inf (as PyTorch's topk and numpy's sort): first when DECREASING, last when
  INCREASING, several NaNs tied (ascending index).

The lowering ("ranked"): every element gets an order key of a type every EP's TopK has (the
DirectML EP has no DOUBLE TopK): FLOAT32 (FLOAT16 converted exactly) clamped to [-FLT_MAX,
FLT_MAX] with NaN as FLT_MAX; INT32 for INT32 and the integers of up to 16 bits; INT64 for
INT64, UINT32 (minus 2**31) and UINT64 (biased by 2**63 modulo 2**64); 32- and 64-bit keys
raised to the type's minimum + 1. The classes that then share a key are ordered by a small
integer `sub`: largest first NaN > +inf > FLT_MAX, -FLT_MAX > -inf, MIN + 1 > MIN (the reverse
for smallest). ONNX TopK on the keys gives their sorted values; the EPs' TopK need not keep tied
indices in order (the CUDA EP's does not, docs/gpu-report.md), so the indices are rebuilt from
unique integer keys, which any TopK ranks exactly: the c elements strictly better than the K-th
key keep TopK's positions, reordered by (run of equal keys, sub, index) with a TopK over K; the
other K - c positions are the first ties of the K-th key by (sub, index), a TopK over the axis.
OutputValueTensor is GatherElements of the input at those indices (bit for bit). Three TopK in
all. On the `dml` target the node is ONNX TopK itself, which the DirectML EP maps back onto
TOP_K1 (DmlOperatorTopK.cpp), NaN order then DirectML's.

Why the clamping (H100, ORT 1.31.1): the CUDA EP's TopK (core/providers/cuda/math/topk_impl.cuh)
pads a row to a power of two with NumericLimits Lowest() / Max() (-FLT_MAX / FLT_MAX, INT64's
ends) in its bitonic kernel (rows of up to 256) and the radix kernel's final sort, and a real -inf
(+inf when smallest) sorts beyond that sentinel: TOP_K of [3, 3, -inf], K=3, gave the indices
[0, 1, 0]. Its radix kernel also negates the row (sign * x) to find a K-th smallest among
negatives, which wraps an integer minimum. Inside the sentinels every key is a real one's: a
sentinel can only tie the worst key, so it appears (if at all) where the K-th key's value is, and
TopK's own indices are used only for the c keys strictly better than the K-th. DOUBLE keys would
be right as well, but the DOUBLE TopK takes 23 ms where FLOAT32's takes 9.5.

Speed (H100, ORT 1.31.1; TOP_K1 K=8 of each row of 512, 131072 rows, FLOAT32): 43 ms before
(torch.topk: 3.4 ms), most of it the two position TopKs on INT64 keys (a bare INT64 TopK: 20 ms,
INT32: 8 ms, FLOAT32: 9.5 ms) and full-size INT64 arithmetic. The position keys are now INT32
wherever they fit (`position_type`): ties' keys are below (s + 1) * n and the by-run keys below
K * s * n + K (s the number of classes: 4 for floats, 2 for the 32- and 64-bit integers, 1 for
the others), so INT32 up to n = 23170 for every K of floats (4n**2 + n < 2**31) and longer rows
for smaller K; c comes from the K sorted keys instead of a full-size count, and the NaN and
infinity classes are written straight as sub * n. Every EP registers TopK on INT32 (CPU: float,
double, int32, int64; CUDA: every fixed-size type; DirectML: every type but DOUBLE).

"guarded" (the `cuda` target, CUDA_ONLY: an If): where no sequence has more elements of its K-th
key than places left for them (ties + c == K) and every K-th key lies strictly inside the values
the CUDA EP's TopK pads with, TopK's own K indices are exactly the right set, and only their order
needs the by-run TopK over K (all K positions); elsewhere `ranked`'s ties TopK over the axis. On
the suite's case (distinct values) 13.6 ms against `ranked`'s 27.2 (torch.topk 3.4; H100, ORT
1.31.1): the bare FLOAT32 TopK of 8 of 512 takes 10 ms of it, so ONNX Runtime's TopK alone keeps
this below PyTorch.

"selection" (the `cuda` target, CUDA_ONLY; FLOAT32, K up to SELECTION_MAX_K = 8, Axis the last
axis longer than 1): no TopK at all. An If on the sum of |x| being finite (one ReduceL1: no NaN and
no infinity anywhere; a sum that overflows sends finite data to the other branch, which is still
exact) takes K passes of ArgMax (ArgMin when smallest) over the rows: each finds the first best
element of what is left, which is the next one in the page's order (ties by ascending index: the
CUDA EP's ArgMax along the last axis keeps the first of equal values, and -0 equals +0), and a
ScatterElements puts -inf (+inf) in its place, which every finite value beats. Otherwise `guarded`.
Leading axes are left out: there the CUDA EP's ArgMax answered 2**31 - 1 for a column of -inf
(benchmarks/patterns.py's probe). On the suite's case: 2.40 ms against torch.topk's 3.56 ms in the
same run, 1.49x PyTorch (115 GB/s against 78; `guarded` 13.6 ms; H100, ORT 1.31.1,
benchmarks/results/h100-parts-2026-11-23.md). Of its 2.3 ms of kernels, 1.2 ms are the seven
ScatterElements' copies of the input (the CUDA EP does not scatter in place) and 0.86 ms the eight
ArgMax passes. Past K = 8 the passes add up (measured at 8 only), and `guarded` is kept."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dml2onnx.core import dtypes
from dml2onnx.core.desc import OperatorDesc
from dml2onnx.core.errors import ModelError
from dml2onnx.core.schema import OperatorSchema
from dml2onnx.graph.builder import GraphBuilder
from dml2onnx.graph.targets import DML_NODE_DOC
from dml2onnx.ops import common
from dml2onnx.ops.family import Family

CANDIDATES = ("ranked", "guarded", "selection")  # choices.py
CUDA_ONLY = ("guarded", "selection")
# "selection" makes K passes over the input: taken for K up to this (measured at 8)
SELECTION_MAX_K = 8

# The reference's order keys of floats: finite FLOAT32 values are below 3.5e38; the infinities and NaN above.
_INF_KEY = 2e300
_NAN_KEY = 3e300


def decreasing(desc: OperatorDesc) -> bool:
    return desc.schema.name == "TOP_K" or desc["AxisDirection"] == "DECREASING"


def validate(desc: OperatorDesc) -> None:
    x = desc.tensor("InputTensor")
    axis, k = desc["Axis"], desc["K"]
    if axis >= x.rank:
        raise ModelError(desc.at("Axis"), f"must be less than InputTensor's DimensionCount ({x.rank})")
    if k < 1:
        raise ModelError(desc.at("K"), "must be greater than 0")
    if k > x.sizes[axis]:
        raise ModelError(desc.at("K"), f"must be at most InputTensor's size along Axis ({x.sizes[axis]})")
    common.check_same_type(desc, "OutputValueTensor", "InputTensor")
    want = tuple(k if i == axis else s for i, s in enumerate(x.sizes))
    for name in ("OutputValueTensor", "OutputIndexTensor"):
        common.check_same_rank(desc, name, "InputTensor")
        if desc.tensor(name).sizes != want:
            raise ModelError(
                desc.at(name, "Sizes"),
                f"must be InputTensor's Sizes with K ({k}) along Axis: {list(want)}, got {list(desc.tensor(name).sizes)}",
            )


# -- lowering ---------------------------------------------------------------------------------

_FLT_MAX = float(np.finfo(np.float32).max)
# The classes of elements that may share one order key (clamped to the key type's range), best
# first when largest: NaN, above the key (+inf), equal to it, below it (-inf; an integer's minimum).
_CLASSES = ("nan", "above", "equal", "below")


@dataclass(frozen=True)
class OrderKey:
    key: str  # FLOAT32, INT32 or INT64, never beyond the sentinels the CUDA EP's TopK pads rows with
    value: str | None = None  # what `key` was clamped from (None: no clamping), of key's type
    nan: str | None = None  # the NaN flag of floats
    above: bool = False  # whether `value` may lie above `key` (+inf)
    below: bool = False  # whether `value` may lie below `key` (-inf, an integer's minimum)

    def classes(self, largest: int) -> tuple[str, ...]:
        """The classes that share a key here, best first."""
        present = {"nan": self.nan is not None, "above": self.above, "equal": True, "below": self.below}
        ordered = tuple(c for c in _CLASSES if present[c])
        return ordered if largest else ordered[::-1]


def _clamp_low(b: GraphBuilder, value: str, dtype: dtypes.DataType) -> OrderKey:
    """An integer key above the type's minimum, which the CUDA EP's radix TopK negates (sign * x)
    and so loses; the minimum becomes a `below` class of the next key."""
    low = b.scalar(int(np.iinfo(dtype.numpy).min) + 1, dtype, "key_min")
    key = b.node("Max", [value, low], "key", f"at least {dtype}'s minimum + 1: the minimum is never negated")
    return OrderKey(key, value, below=True)


def order_key(b: GraphBuilder, x: str, dtype: dtypes.DataType) -> OrderKey:
    """A key of the same order as the values, up to the classes that share one key (ranked by
    `OrderKey.classes`), in a type every EP's TopK ranks: FLOAT32 within [-FLT_MAX, FLT_MAX]
    (the CUDA EP pads its rows with -FLT_MAX / FLT_MAX, beyond which +-inf would sort), INT32 for
    integers of up to 16 bits and INT32 itself (a bare INT32 TopK: 8 ms, INT64: 20 ms on the
    suite's case), INT64 for the others."""
    if dtype.is_float:
        wide = x if dtype == dtypes.FLOAT32 else b.cast(x, dtypes.FLOAT32, "as_float", f"{dtype} values are exact in FLOAT32")
        top = b.scalar(_FLT_MAX, dtypes.FLOAT32, "flt_max")
        clipped = b.node("Clip", [wide, b.scalar(-_FLT_MAX, dtypes.FLOAT32, "flt_lowest"), top], "clipped", "+-inf as +-FLT_MAX")
        nan = b.node("IsNaN", [wide], "is_nan", "NaN ranks above +inf")
        key = b.node("Where", [nan, top, clipped], "key", "NaN as FLT_MAX; the classes order NaN, +inf and FLT_MAX")
        return OrderKey(key, wide, nan, above=True, below=True)
    if dtype == dtypes.UINT64:
        biased = b.node("Sub", [x, b.scalar(2**63, dtypes.UINT64, "bias")], "biased", "x - 2**63 modulo 2**64")
        signed = b.cast(biased, dtypes.INT64, "signed", "the same bits as INT64: unsigned order becomes signed order")
        return _clamp_low(b, signed, dtypes.INT64)
    if dtype in (dtypes.INT64, dtypes.INT32):
        return _clamp_low(b, x, dtype)
    if dtype == dtypes.UINT32:
        # moved into INT32's range: the DirectML EP ranks INT64 keys of 2**31 and more wrongly
        # (UINT32 4294967295 below 0 on the DirectML EP under Wine), INT64 keys within it rightly
        wide = b.cast(x, dtypes.INT64, "as_int64", "UINT32 values are exact in INT64")
        return OrderKey(b.node("Sub", [wide, b.scalar(2**31, dtypes.INT64, "half")], "key", "x - 2**31: INT32's range"))
    return OrderKey(b.cast(x, dtypes.INT32, "key", f"{dtype} values are exact in INT32, above its minimum"))


def _sub_n(b: GraphBuilder, ok: OrderKey, classes: tuple[str, ...], n: int, dtype: dtypes.DataType) -> str | None:
    """sub * n, sub being the element's class' rank among `classes` (0 the best); None for one class."""
    if len(classes) == 1:
        return None
    rank = {c: i * n for i, c in enumerate(classes)}
    sub = b.scalar(rank["equal"], dtype, "sub_equal")
    assert ok.value is not None
    for cls, op in (("below", "Less"), ("above", "Greater")):
        if cls in rank:
            flag = b.node(op, [ok.value, ok.key], f"is_{cls}", f"{cls} the key (clamped)")
            sub = b.node("Where", [flag, b.scalar(rank[cls], dtype, f"sub_{cls}_n"), sub], f"sub_{cls}", f"{cls}: its rank * n")
    if ok.nan is not None:
        sub = b.node("Where", [ok.nan, b.scalar(rank["nan"], dtype, "sub_nan_n"), sub], "sub_n", "NaN: its rank * n")
    return sub


def position_type(bound: int) -> dtypes.DataType:
    """INT32 for keys made of positions that stay below `bound` where it fits in INT32 (the CUDA
    EP's TopK on INT32 takes 8 ms where INT64 takes 20, H100, ORT 1.31.1), else INT64."""
    return dtypes.INT32 if bound <= 2**31 - 1 else dtypes.INT64


def _top(b: GraphBuilder, x: str, k: int, axis: int, largest: int, step: str, doc: str) -> tuple[str, str]:
    values, index = b.node_outputs(
        "TopK", [x, b.i64([k], f"{step}_k")], step, doc, n_outputs=2, axis=axis, largest=largest, sorted=1
    )
    return values, index


def _along(b: GraphBuilder, size: int, axis: int, rank: int, dtype: dtypes.DataType, step: str, offset: int = 0) -> str:
    """offset, offset + 1, ... offset + size - 1 along `axis` (broadcast over the others)."""
    shape = [size if i == axis else 1 for i in range(rank)]
    return b.const((np.arange(size, dtype=np.int64) + offset).astype(dtype.numpy).reshape(shape), step)


def _as_int64(b: GraphBuilder, x: str, dtype: dtypes.DataType, step: str) -> str:
    return x if dtype == dtypes.INT64 else b.cast(x, dtypes.INT64, step, "as INT64 (K positions)")


@dataclass(frozen=True)
class Ranked:
    """What both ways of rebuilding the indices share: the order keys' TopK and its neighbours."""

    top: str  # the K sorted keys
    first: str  # TopK's indices of them (tied ones in any order)
    kth: str  # the K-th key
    early: str  # BOOL per position: strictly better than the K-th key
    count: str  # c, per sequence (INT64)
    positions: str  # 0 .. K-1 along the axis (INT64)
    sub_n: str | None  # sub * n per element (None: one class)
    classes: int  # s
    tie_type: dtypes.DataType  # of sub_n and the tie keys


def _by_run(b: GraphBuilder, r: Ranked, sizes: tuple[int, ...], axis: int, k: int, every: bool) -> str:
    """The INT64 index of each of the K positions, reordered by (run of equal keys, sub, index): a
    TopK over unique keys ((run * s + sub) * n + index, below K * s * n + K). Only the c strictly
    better positions when `every` is False (the later ones placed after them all); every position
    where each tied element of the K-th key was selected (the guarded fast path)."""
    n, rank, s = sizes[axis], len(sizes), r.classes
    if k == 1:
        return r.first
    run_type = position_type(k * s * n + k)
    nxt = b.slice(r.top, [axis], [1], [k], "next", "keys 1..K-1")
    same = b.node("Equal", [nxt, b.slice(r.top, [axis], [0], [k - 1], "prev", "keys 0..K-2")], "same", "as the key before")
    step = b.cast(b.node("Not", [same], "new_run", "a new run of equal keys"), run_type, "new_run_int", "1 at a run's start")
    zero = b.filled([1 if i == axis else size for i, size in enumerate(sizes)], 0, run_type.numpy, "run0", "the first run")
    starts = b.node("Concat", [zero, step], "starts", "run starts", axis=axis)
    runs = b.node("CumSum", [starts, b.i64(axis, "axis")], "runs", "each position's run")
    run_key = b.node("Mul", [runs, b.scalar(s * n, run_type, "sn")], "run_sn", "run * s * n")
    if r.sub_n is not None:
        picked = b.node("GatherElements", [r.sub_n, r.first], "picked_sub", "sub * n of each selected element", axis=axis)
        if r.tie_type != run_type:
            picked = b.cast(picked, run_type, "picked_sub_wide", "as the run keys' type")
        run_key = b.node("Add", [run_key, picked], "runs_sub", "(run * s + sub) * n")
    first_run = r.first if run_type == dtypes.INT64 else b.cast(r.first, run_type, "first_int", "indices below n")
    run_key = b.node("Add", [run_key, first_run], "run_key", "(run * s + sub) * n + index")
    if not every:
        late = _along(b, k, axis, rank, run_type, "late", k * s * n)
        run_key = b.node("Where", [r.early, run_key, late], "unique_key", "unique: better ones first, by run, sub, index")
    ordered = _top(b, run_key, k, axis, 0, "by_run", "ascending (run, sub, index)")[0]
    head = b.remainder(ordered, b.scalar(n, run_type, "n_mod"), "head", "the index of each position")
    return _as_int64(b, head, run_type, "head_i64")


def _with_ties(b: GraphBuilder, r: Ranked, tied: str, sizes: tuple[int, ...], axis: int, k: int) -> str:
    """The INT64 index of each position: the c better ones by run (_by_run), then the first K - c
    elements of the K-th key by (sub, index): a TopK over the axis on unique keys (sub * n + index
    for the ties, s * n + index elsewhere)."""
    n, rank, s, tie_type = sizes[axis], len(sizes), r.classes, r.tie_type
    head = _by_run(b, r, sizes, axis, k, every=False)
    index = _along(b, n, axis, rank, tie_type, "indices")
    if r.sub_n is None:
        after = _along(b, n, axis, rank, tie_type, "after", n)
        tie_key = b.node("Where", [tied, index, after], "tie_key", "ties first by index, n + index elsewhere")
    else:
        tie_sub = b.node("Where", [tied, r.sub_n, b.scalar(s * n, tie_type, "sn_after")], "tie_sub", "sub * n, s * n elsewhere")
        tie_key = b.node("Add", [tie_sub, index], "tie_key", "ties first, by sub and index")
    ties = _top(b, tie_key, k, axis, 0, "ties", "the first K ties by (sub, index)")[0]
    ties = b.remainder(ties, b.scalar(n, tie_type, "n_ties"), "tie_index", "the ties' indices")
    ties = _as_int64(b, ties, tie_type, "tie_index_i64")
    zero_i = b.scalar(0, dtypes.INT64, "zero")
    at = b.node("Max", [b.node("Sub", [r.positions, r.count], "tie_at", "position - c"), zero_i], "tie_pos", "clamped at 0")
    tail = b.node("GatherElements", [ties, at], "tail", "the (position - c)-th tie", axis=axis)
    return b.node("Where", [r.early, head, tail], "index", "the selected index, ties by ascending index")


def applies(desc: OperatorDesc, candidate: str, opset: int) -> bool:
    """ "selection" where the input is FLOAT32, K is at most SELECTION_MAX_K and Axis is the last
    axis longer than 1 (the CUDA EP's ArgMax along a leading axis gave 2**31 - 1 for a column of
    -inf: benchmarks/patterns.py semantics); the others everywhere."""
    if candidate != "selection":
        return True
    x = desc.tensor("InputTensor")
    axis = desc["Axis"]
    last = all(size == 1 for size in x.sizes[axis + 1 :])
    return x.data_type == dtypes.FLOAT32 and desc["K"] <= SELECTION_MAX_K and last and x.sizes[axis] > 1


def choose(desc: OperatorDesc, target: str, options: tuple[str, ...]) -> str:
    """On the `cuda` target: `selection` where it applies, else `guarded` (one TopK over the axis
    instead of two where no sequence has surplus elements of its K-th key); `ranked` elsewhere."""
    if target != "cuda":
        return "ranked"
    return next(c for c in ("selection", "guarded", "ranked") if c in options)


def key_type(dtype: dtypes.DataType) -> dtypes.DataType:
    """The type of order_key's key for values of `dtype`."""
    if dtype.is_float:
        return dtypes.FLOAT32
    return dtypes.INT64 if dtype in (dtypes.INT64, dtypes.UINT64, dtypes.UINT32) else dtypes.INT32


def _no_excess_ties(
    b: GraphBuilder, r: Ranked, tied: str, keys: dtypes.DataType, largest: int, axis: int, rank: int, k: int
) -> str:
    """BOOL scalar: in every sequence the elements of the K-th key number exactly K - c (all of them
    selected, so TopK's indices are the right set), and the K-th key lies strictly inside the
    sentinels the CUDA EP's TopK pads with (so none of its K indices is a pad's)."""
    i64, every = dtypes.INT64, list(range(rank))
    ties = b.reduce("ReduceSum", b.cast(tied, i64, "tied_i64", "1 where tied"), [axis], "tie_count", "elements of the K-th key")
    excess = b.node("Sub", [b.node("Add", [ties, r.count], "selectable", "c + ties"), b.scalar(k, i64, "k")], "excess", ">= 0")
    most = b.reduce("ReduceMax", excess, every, "most_excess", "the largest excess", keepdims=False)
    none = b.node("Equal", [most, b.scalar(0, i64, "no_excess")], "no_excess_ties", "every K-th key's elements all selected")
    limits = np.finfo(keys.numpy) if keys.is_float else np.iinfo(keys.numpy)
    sentinel = limits.min if largest else limits.max
    inside = b.node(
        "Greater" if largest else "Less", [r.kth, b.scalar(sentinel, keys, "sentinel")], "inside", "not a pad's value"
    )
    least = b.reduce("ReduceMin", b.cast(inside, i64, "inside_i64", "1 inside"), every, "all_inside", "1 if all", keepdims=False)
    inside_all = b.node("Equal", [least, b.scalar(1, i64, "one")], "inside_all", "every K-th key inside the sentinels")
    return b.node("And", [none, inside_all], "fast_ok", "TopK's own indices, reordered by run, are the answer")


def lower(desc: OperatorDesc, b: GraphBuilder, inputs: dict[str, str]) -> dict[str, str]:
    t = desc.tensor("InputTensor")
    x, axis, k, largest = inputs["InputTensor"], desc["Axis"], desc["K"], int(decreasing(desc))
    index_type = desc.tensor("OutputIndexTensor").data_type
    if b.target.dml_nodes:
        values, index = _top(b, x, k, axis, largest, "topk", DML_NODE_DOC)
        return {"OutputValueTensor": values, "OutputIndexTensor": b.cast(index, index_type, "index_type", "the index type")}
    if b.variant == "selection":
        chosen = b.branch(
            _all_finite(b, x, t.rank),
            lambda f: _selected(f, x, t.sizes, axis, k, largest),
            lambda e: _ranked(desc, e, x, guarded=True),
            dtypes.INT64,
            "indices",
            "K passes of ArgMax where every value is finite, else the ranked keys' TopK",
        )
    else:
        chosen = _ranked(desc, b, x, guarded=b.variant == "guarded")
    values = b.node("GatherElements", [x, chosen], "values", "the input's values, bit for bit", axis=axis)
    return {"OutputValueTensor": values, "OutputIndexTensor": b.cast(chosen, index_type, "index_type", "the index type")}


def _ranked(desc: OperatorDesc, b: GraphBuilder, x: str, guarded: bool) -> str:
    """The INT64 indices of "ranked" (or, `guarded`, of "guarded")."""
    t = desc.tensor("InputTensor")
    axis, k, largest = desc["Axis"], desc["K"], int(decreasing(desc))
    n, rank, i64 = t.sizes[axis], t.rank, dtypes.INT64
    ok = order_key(b, x, t.data_type)
    classes = ok.classes(largest)
    s = len(classes)
    # tie keys below (s + 1) * n (sub * n + index, s * n + index elsewhere)
    tie_type = position_type((s + 1) * n)
    sub_n = _sub_n(b, ok, classes, n, tie_type)
    top, first = _top(b, ok.key, k, axis, largest, "topk", "the sorted keys (tied indices in any order)")
    kth = b.slice(top, [axis], [k - 1], [k], "kth", "the K-th key")
    # The c keys strictly better than the K-th are the first c of the sorted `top`: real elements
    # (a padding sentinel of the CUDA EP's TopK ranks last and can only tie the K-th key), so
    # only there are `first`'s indices used.
    early = b.node("Greater" if largest else "Less", [top, kth], "early", "one of the c strictly better elements")
    count = b.reduce("ReduceSum", b.cast(early, i64, "early_i64", "1 where better"), [axis], "better_count", "c")
    positions = _along(b, k, axis, rank, i64, "positions")
    r = Ranked(top, first, kth, early, count, positions, sub_n, s, tie_type)
    tied = b.node("Equal", [ok.key, kth], "tied", "equal to the K-th key")
    if not guarded:
        return _with_ties(b, r, tied, t.sizes, axis, k)
    return b.branch(
        _no_excess_ties(b, r, tied, key_type(t.data_type), largest, axis, rank, k),
        lambda f: _by_run(f, r, t.sizes, axis, k, every=True),
        lambda e: _with_ties(e, r, tied, t.sizes, axis, k),
        i64,
        "ranked_indices",
        "TopK's indices by run where no sequence has more elements of its K-th key than places, else the ties' TopK",
    )


def _all_finite(b: GraphBuilder, x: str, rank: int) -> str:
    """BOOL scalar: no NaN and no +-inf in the input (the sum of |x| is finite; a sum that
    overflows only sends finite data to the slower branch)."""
    total = b.reduce("ReduceL1", x, list(range(rank)), "sum_abs", "the sum of |x|: NaN or inf if any is", keepdims=False)
    return b.node("Less", [total, b.scalar(np.inf, dtypes.FLOAT32, "inf")], "all_finite", "no NaN, no infinity")


def _selected(b: GraphBuilder, x: str, sizes: tuple[int, ...], axis: int, k: int, largest: int) -> str:
    """The INT64 indices of the K best finite values of each sequence (Axis the last one longer
    than 1): K passes of ArgMax (ArgMin) over the rows, each taking the first best element (ties by
    ascending index) and then replacing it by -inf (+inf), which every finite value beats."""
    n = sizes[axis]
    outer = int(np.prod(sizes[:axis], dtype=np.int64))
    rows = b.reshape(x, [outer, n], "rows", "the sequences as rows")
    mark = b.filled([outer, 1], -np.inf if largest else np.inf, np.float32, "taken", "worse than every finite value")
    picked = []
    for i in range(k):
        best = b.node("ArgMax" if largest else "ArgMin", [rows], f"pick{i}", f"the first best of what is left: pick {i}", axis=1)
        picked.append(best)
        if i < k - 1:
            rows = b.node("ScatterElements", [rows, best, mark], f"left{i}", "the picked element taken out", axis=1)
    index = b.node("Concat", picked, "picked", "the K picks in order", axis=1) if k > 1 else picked[0]
    return b.reshape(index, [k if i == axis else size for i, size in enumerate(sizes)], "selected", "at the output's sizes")


# -- reference --------------------------------------------------------------------------------


def reference_key(x: np.ndarray) -> np.ndarray:
    """The order: floats in FLOAT64 with NaN above +inf (the same key as the lowering's); integers as they are."""
    if x.dtype.kind != "f":
        return x
    w = np.clip(x.astype(np.float64), -_INF_KEY, _INF_KEY)
    return np.where(np.isnan(x), _NAN_KEY, w)


def reference(desc: OperatorDesc, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The page: a stable sort along the axis (ascending, or descending with ties by ascending index), its first K."""
    x = np.asarray(inputs["InputTensor"])
    axis, k = desc["Axis"], desc["K"]
    key = np.moveaxis(reference_key(x), axis, -1)
    if decreasing(desc):  # a stable ascending sort of the reversed rows, reversed: ties by ascending index
        n = key.shape[-1]
        order = (n - 1 - np.argsort(key[..., ::-1], axis=-1, kind="stable"))[..., ::-1]
    else:
        order = np.argsort(key, axis=-1, kind="stable")
    order = np.moveaxis(order[..., :k], -1, axis)
    values = np.take_along_axis(x, order, axis)
    index = order.astype(desc.tensor("OutputIndexTensor").data_type.numpy)
    return {"OutputValueTensor": values, "OutputIndexTensor": index}


def examples(op: OperatorSchema) -> list[common.Example]:
    """onnx_ops: each value type with each index type, K=2 of 8 along the last axis."""
    out: list[common.Example] = []
    for t in common.example_types(op, "InputTensor"):
        for index in common.example_types(op, "OutputIndexTensor"):
            fields: common.Example = {
                "InputTensor": common.example_tensor(t, [3, 8]),
                "OutputValueTensor": common.example_tensor(t, [3, 2]),
                "OutputIndexTensor": common.example_tensor(index, [3, 2]),
                "Axis": 1,
                "K": 2,
            }
            if op.name == "TOP_K1":
                fields["AxisDirection"] = "INCREASING"
            out.append(fields)
    return out


OPERATOR_FAMILY = Family(
    ("TOP_K", "TOP_K1"),
    validate,
    lower,
    reference,
    CANDIDATES,
    applies=applies,
    choose=choose,
    cuda_only=CUDA_ONLY,
    examples=examples,
)
