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
DirectML EP has no DOUBLE TopK): FLOAT32 (FLOAT16 converted exactly) with NaN as +inf, or INT64
(UINT64 biased by 2**63 modulo 2**64); for floats a NaN flag orders NaN and +inf where their
keys tie. ONNX TopK on the keys gives their sorted values; the EPs' TopK need not keep tied
indices in order (the CUDA EP's does not, docs/gpu-report.md), so the indices are rebuilt from
unique INT64 keys, which any TopK ranks exactly: the c elements strictly better than the K-th key
keep TopK's positions, reordered by (run of equal keys, NaN flag, index) with a TopK over K; the
other K - c positions are the first ties of the K-th key by (NaN flag, index), a TopK over the
axis. OutputValueTensor is GatherElements of the input at those indices (bit for bit). Three
TopK in all. On the `dml` target the node is ONNX TopK itself, which the DirectML EP maps back
onto TOP_K1 (DmlOperatorTopK.cpp), NaN order then DirectML's.
"""

from __future__ import annotations

import numpy as np

from .. import dtypes
from ..builder import GraphBuilder
from ..desc import OperatorDesc
from ..errors import ModelError
from ..schema import OperatorSchema
from ..targets import DML_NODE_DOC
from . import common

CANDIDATES = ("ranked",)  # choices.py

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


def order_key(b: GraphBuilder, x: str, dtype: dtypes.DataType) -> tuple[str, str | None]:
    """A key of the same order as the values, in a type every EP's TopK ranks (FLOAT32 or INT64),
    and for floats the NaN flag: NaN's key is +inf's, the flag orders the two."""
    if dtype.is_float:
        wide = x if dtype == dtypes.FLOAT32 else b.cast(x, dtypes.FLOAT32, "as_float", f"{dtype} values are exact in FLOAT32")
        nan = b.node("IsNaN", [wide], "is_nan", "NaN ranks above +inf")
        inf = b.scalar(np.inf, dtypes.FLOAT32, "inf")
        return b.node("Where", [nan, inf, wide], "key", "NaN as +inf; the NaN flag orders the two"), nan
    if dtype == dtypes.UINT64:
        biased = b.node("Sub", [x, b.scalar(2**63, dtypes.UINT64, "bias")], "biased", "x - 2**63 modulo 2**64")
        return b.cast(biased, dtypes.INT64, "key", "the same bits as INT64: unsigned order becomes signed order"), None
    if dtype == dtypes.INT64:
        return x, None
    wide = b.cast(x, dtypes.INT64, "key" if dtype != dtypes.UINT32 else "as_int64", f"{dtype} values are exact in INT64")
    if dtype == dtypes.UINT32:
        # moved into INT32's range: the DirectML EP ranks INT64 keys of 2**31 and more wrongly
        # (UINT32 4294967295 below 0 on the DirectML EP under Wine), INT64 keys within it rightly
        return b.node(
            "Sub", [wide, b.scalar(2**31, dtypes.INT64, "half")], "key", "x - 2**31: the same order in INT32's range"
        ), None
    return wide, None


def _top(b: GraphBuilder, x: str, k: int, axis: int, largest: int, step: str, doc: str) -> tuple[str, str]:
    values, index = b.node_outputs(
        "TopK", [x, b.i64([k], f"{step}_k")], step, doc, n_outputs=2, axis=axis, largest=largest, sorted=1
    )
    return values, index


def lower(desc: OperatorDesc, b: GraphBuilder, inputs: dict[str, str]) -> dict[str, str]:
    t = desc.tensor("InputTensor")
    x, axis, k, largest = inputs["InputTensor"], desc["Axis"], desc["K"], int(decreasing(desc))
    index_type = desc.tensor("OutputIndexTensor").data_type
    if b.target.dml_nodes:
        values, index = _top(b, x, k, axis, largest, "topk", DML_NODE_DOC)
        return {"OutputValueTensor": values, "OutputIndexTensor": b.cast(index, index_type, "index_type", "the index type")}
    n = t.sizes[axis]
    i64 = dtypes.INT64
    key, nan = order_key(b, x, t.data_type)
    # sub: 0 or 1, orders +inf and NaN (equal keys): NaN first when largest, last when smallest
    sub = None
    if nan is not None:
        sub = b.cast(nan if not largest else b.node("Not", [nan], "not_nan", "not NaN"), i64, "sub", "+inf against NaN")
    top, first = _top(b, key, k, axis, largest, "topk", "the sorted keys (tied indices in any order)")
    kth = b.slice(top, [axis], [k - 1], [k], "kth", "the K-th key")
    better = b.node("Greater" if largest else "Less", [key, kth], "better", "strictly better than the K-th key")
    count = b.reduce("ReduceSum", b.cast(better, i64, "better_i64", "1 where better"), [axis], "better_count", "c")
    positions = b.i64(np.arange(k).reshape([k if i == axis else 1 for i in range(t.rank)]), "positions")
    early = b.node("Less", [positions, count], "early", "one of the c strictly better elements")
    # The first c positions: TopK's, reordered by (run of equal keys, sub, index): TopK over
    # unique keys ((run * 2 + sub) * n + index), the later positions after them all.
    head = first
    if k > 1:
        nxt = b.slice(top, [axis], [1], [k], "next", "keys 1..K-1")
        same = b.node("Equal", [nxt, b.slice(top, [axis], [0], [k - 1], "prev", "keys 0..K-2")], "same", "as the key before")
        step = b.cast(b.node("Not", [same], "new_run", "a new run of equal keys"), i64, "new_run_i64", "1 at a run's start")
        zero = b.filled([1 if i == axis else s for i, s in enumerate(t.sizes)], 0, np.int64, "run0", "the first run")
        starts = b.node("Concat", [zero, step], "starts", "run starts", axis=axis)
        runs = b.node("CumSum", [starts, b.i64(axis, "axis")], "runs", "each position's run")
        runs = b.node("Mul", [runs, b.scalar(2, i64, "two")], "runs2", "run * 2")
        if sub is not None:
            picked = b.node("GatherElements", [sub, first], "picked_sub", "sub of each selected element", axis=axis)
            runs = b.node("Add", [runs, picked], "runs_sub", "run * 2 + sub")
        run_key = b.node("Mul", [runs, b.scalar(n, i64, "n")], "run_n", "(run * 2 + sub) * n")
        run_key = b.node("Add", [run_key, first], "run_key", "(run * 2 + sub) * n + index")
        late = b.node("Add", [positions, b.scalar((2 * k + 2) * n, i64, "after")], "late", "after every run key")
        run_key = b.node("Where", [early, run_key, late], "unique_key", "unique: better ones first, by run, sub, index")
        ordered = _top(b, run_key, k, axis, 0, "by_run", "ascending (run, sub, index)")[0]
        head = b.remainder(ordered, b.scalar(n, i64, "n_mod"), "head", "the index of each better element")
    # The later positions: the first occurrences of the K-th key, by (sub, index): TopK over
    # unique keys (sub * n + index for the ties, 2n + index elsewhere).
    index = b.i64(np.arange(n).reshape([n if i == axis else 1 for i in range(t.rank)]), "indices")
    tied = b.node("Equal", [key, kth], "tied", "equal to the K-th key")
    tie_key = (
        index
        if sub is None
        else b.node(
            "Add", [b.node("Mul", [sub, b.scalar(n, i64, "n_sub")], "sub_n", "sub * n"), index], "sub_key", "sub * n + index"
        )
    )
    elsewhere = b.node("Add", [index, b.scalar(2 * n, i64, "n_after")], "elsewhere", "2n + index")
    tie_key = b.node("Where", [tied, tie_key, elsewhere], "tie_key", "ties first, by sub and index")
    ties = _top(b, tie_key, k, axis, 0, "ties", "the first K ties by (sub, index)")[0]
    ties = b.remainder(ties, b.scalar(n, i64, "n_ties"), "tie_index", "the ties' indices")
    zero_i = b.scalar(0, i64, "zero")
    at = b.node("Max", [b.node("Sub", [positions, count], "tie_at", "position - c"), zero_i], "tie_pos", "clamped at 0")
    tail = b.node("GatherElements", [ties, at], "tail", "the (position - c)-th tie", axis=axis)
    chosen = b.node("Where", [early, head, tail], "index", "the selected index, ties by ascending index")
    values = b.node("GatherElements", [x, chosen], "values", "the input's values, bit for bit", axis=axis)
    return {"OutputValueTensor": values, "OutputIndexTensor": b.cast(chosen, index_type, "index_type", "the index type")}


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
    """lowered_ops: each value type with each index type, K=2 of 8 along the last axis."""
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
