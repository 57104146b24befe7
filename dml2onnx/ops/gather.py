"""DML_OPERATOR_GATHER, GATHER_ELEMENTS, GATHER_ND and GATHER_ND1: each output element is the input
element that its index (GATHER: along Axis, the indices' last IndexDimensions dimensions inserted
there; GATHER_ELEMENTS: along Axis, one index per output element; GATHER_ND/ND1: a tuple of
coordinates, the indices' last dimension, per batch of BatchDimensionCount leading dimensions)
names. scatter.py (SCATTER, SCATTER_ND) shares the addressing below.

Indices: negative values count from the end of their dimension for the signed types (INT32,
INT64; the pages, from feature level 3_0); UINT32 and UINT64 are never negative. What the pages
leave open, as DirectML's own API computed it (README: GATHER): the element read is the one at
the row-major offset of the coordinates (the index replaced, or the tuple's coordinates), over the
input's Sizes, whatever each coordinate's range: an index past its dimension reads on into the next
row (GATHER's page: "reads will be clamped safely within the input tensor's memory"), and an
offset outside [0, element count) reads the input's last element (scatters write nothing there).
Components beyond +-N (N the input's element count) count as +-N; DirectML's own 32-bit address
arithmetic reads 64-bit indices of 2**31 and more by their low 32 bits and UINT64 ones of 2**63
and more as negative (a finding: tests/dml_findings.py), and UINT32 ones of 2**31 and more enter
that 32-bit offset too, modulo 2**32 (measured through the `dml` target's "native" below, equal to
DirectML's API); the reference and "flat" keep whole indices (the matrix stays below 2**31).

The lowering ("flat"): each index in INT64, wrapped, its offset computed with the input's
row-major strides (Mul, Add), offsets outside the input set to the last element (Less, Greater,
Or, Where), then one ONNX Gather from the flat input: exact for every type (the CUDA EP's Gather
takes every fixed-size type; values are moved, never computed). It is the `portable`, `cpu` and
`cuda` targets' graph wherever neither "masked" (gather_masked.py: an embedding lookup's Gather,
exact without a branch) nor "guarded" (the `cuda` target) applies, and the `dml` target's wherever
"native" does not.

The candidate "native", on the `dml` target only (DML_ONLY, taken there: DML_PREFERENCE): the ONNX
node that the DirectML EP turns back into the operator itself (DmlOperatorGather.cpp,
DmlOperatorScatter.cpp), so on that EP every index, out of range included, is read by DirectML's
own operator, as DirectML's API reads it. GATHER: Gather on Axis, the indices flattened to one
dimension (IndexDimensions 0: a scalar), then a Reshape to OutputTensor's Sizes (the EP gives
DML_GATHER the indices' rank as IndexDimensions; the offsets are the same). GATHER_ELEMENTS:
GatherElements on Axis. GATHER_ND, GATHER_ND1: GatherND (-> DML_GATHER_ND1) on the input and the
indices at their InputDimensionCount and IndicesDimensionCount (leading 1s dropped),
BatchDimensionCount as batch_dims; one tuple (IndicesDimensionCount 1) keeps a leading 1, as the
EP refuses GatherND's scalar output (80070057, measured). SCATTER: ScatterElements on Axis;
SCATTER_ND: ScatterND at the dimension counts (scatter.py). Index types: INT32 as it is for
Gather, GatherElements and ScatterElements; INT64 as it is; everything else Cast to INT64 (GatherND
and ScatterND take INT64 only): UINT32 keeps its value, UINT64 its bits. It applies where the
DirectML EP registers the node at the opset for the data type (dml_ep.takes): Gather,
GatherElements and GatherND at every opset, ScatterElements and ScatterND up to opset 17 (from 18
SCATTER and SCATTER_ND keep "flat", which the static check refuses there too). Measured on the
DirectML EP under Wine (Mesa lavapipe, vkd3d): every GATHER*/SCATTER* case of the matrix (indices
up to twice past their dimension either way) matches the reference, out-of-range ones included,
but for the 8/16-bit padding finding; and with indices past 32 bits (INT64, UINT64, and UINT32 of
2**31 and more) "native" gave exactly DirectML's API's results in all 24 cases tried (each
operator with each index type), where the reference and "flat" (whole indices) differ: DirectML
enters each index's low 32 bits into a 32-bit offset (UINT32 2**32 - 1 on row 1 of a [3, 4] GATHER
on axis 1 reads offset 4 - 1 = 3; tests/ops/test_gather.py pins them). On the CPU and CUDA EPs these nodes refuse indices out of
range: the `dml` graphs are meant for the DirectML EP.

The candidate "guarded" (GATHER, GATHER_ELEMENTS; SCATTER in scatter.py), on the `cuda` target
only (CUDA_ONLY, choices.py: an If, which the DirectML EP's static check does not follow): an If
whose condition holds when every index is where ONNX's node and DirectML agree, [-dim, dim) for
INT32/INT64 and [0, dim) for UINT32/UINT64 (dim: the input's size on Axis), runs the native ONNX
node (Gather / GatherElements / ScatterElements on Axis, unsigned indices Cast to INT32); any other
index takes the else branch, the flat lowering, which keeps every out-of-range rule above. Measured
on an H100 (ORT 1.31.1, CUDA EP), 8x64x256x512 FLOAT32, INT32 indices: GATHER on the channels (64
indices) flat 318 GB/s, Gather 1939, Gather behind an If 1580 (torch.index_select 2059);
GATHER_ELEMENTS on the last axis (64M indices) flat 224, GatherElements 2638, behind an If on
ReduceMin + ReduceMax of the INT32 indices 618 (torch.gather 1176): the condition is the cost. The
CUDA EP reduces INT32/INT64 by a Cast to FLOAT32, a cuDNN reduction and a Cast back
(reduction_ops.cc), so those two reductions cast the 64M indices twice, and round them: past
2**24 an index of dim could read as dim - 1. Here the indices are Cast once, to the narrowest float
type that holds every integer of [-dim - 1, dim] exactly (GUARD_TYPES: FLOAT32, for dim < 2**24),
then ReduceMax (and ReduceMin, signed types only) of that, compared with dim (and -dim - 1). A
Cast to float rounds monotonically, so an index outside the range never lands inside it, and the
ones inside are exact: the condition is exact both ways. Not FLOAT16, whose Cast writes half the
bytes: the CUDA EP reduces FLOAT16 by converting it to FLOAT32 first, a pass per reduction (H100,
ORT 1.31.1, 64M indices: the FLOAT16 guard took 1.04 ms, 404 us of it in those conversions).
Measured there at 8x64x256x512 FLOAT32 with INT32 indices (benchmarks/results/h100-parts-2026-11-23.md):
GATHER 913 GB/s (flat 300), GATHER_ELEMENTS 932 (224), SCATTER 780 (233) with this FLOAT32 guard
(964, 673 and 610 with the FLOAT16 one). 176 us of GATHER's 463 were a copy: the then branch ended
in a Reshape to OutputTensor's Sizes (a copy wherever it makes a result: output_views.py, which
now lets the Gather make that shape itself); without it GATHER took 1288 GB/s (run 5 of the same
report: 284 us of kernels, 271 of them the Gather; the rest of its 417 us is the If, whose
condition ONNX Runtime reads on the host). GATHER_ELEMENTS and SCATTER stay near 941 and 764: their
guard reads all 64M indices (a Cast and two reductions, 478 us of GATHER_ELEMENTS' 760), and
ScatterElements copies its input first (173 us). The candidate applies where
dim < 2**24 (and the operator has a native node); choose() takes it on the `cuda` target, "flat"
elsewhere (`dml`: "native"). GATHER_ND/GATHER_ND1 keep "flat" on the `cuda` target (not measured;
the CUDA EP's GatherND takes only FLOAT16/32/64 and INT64 data, INT64 indices).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from dml2onnx.core import dtypes
from dml2onnx.core.desc import OperatorDesc
from dml2onnx.core.errors import ModelError
from dml2onnx.core.schema import OperatorSchema
from dml2onnx.graph import dml_ep
from dml2onnx.graph.builder import GraphBuilder, onnx_type_name
from dml2onnx.graph.targets import DML_NODE_DOC
from dml2onnx.ops import common, gather_masked
from dml2onnx.ops.family import Family

CANDIDATES = ("flat", "guarded", "native", "masked")  # choices.py; "masked": gather_masked.py
CUDA_ONLY = ("guarded",)
DML_ONLY = ("native",)
DML_PREFERENCE = ("native",)
CPU_PREFERENCE = ("masked",)
# The ONNX node of each operator "native" emits on the `dml` target, the one the DirectML EP
# turns back into the operator (DmlOperatorGather.cpp: GatherND -> GATHER_ND1; DmlOperatorScatter.cpp)
DML_NATIVE = {
    "GATHER": "Gather",
    "GATHER_ELEMENTS": "GatherElements",
    "GATHER_ND": "GatherND",
    "GATHER_ND1": "GatherND",
    "SCATTER": "ScatterElements",
    "SCATTER_ND": "ScatterND",
}
# The ONNX node of each operator "guarded" lowers (SCATTER's in scatter.py)
NATIVE = {"GATHER": "Gather", "GATHER_ELEMENTS": "GatherElements", "SCATTER": "ScatterElements"}
# The float types the guard compares the indices in, by the dimensions below which every integer
# of [-dim - 1, dim] is exact in them (indices_in_range); past the last, "guarded" does not apply
GUARD_TYPES = ((2**24, dtypes.FLOAT32),)


# -- shapes and validation -------------------------------------------------------------------


def right_aligned(sizes: Sequence[int], rank: int) -> tuple[int, ...] | None:
    """`sizes` with leading 1s dropped or added to `rank` dimensions (None: more than `rank` remain)."""
    s = list(sizes)
    while len(s) > rank and s[0] == 1:
        s.pop(0)
    return None if len(s) > rank else (1,) * (rank - len(s)) + tuple(s)


def check_leading_ones(desc: OperatorDesc, name: str, meaningful: int, field: str) -> None:
    """Dimensions before the last `meaningful` ones are 1 (DirectML refuses others, measured)."""
    sizes = desc.tensor(name).sizes
    for i, s in enumerate(sizes[: len(sizes) - meaningful]):
        if s != 1:
            raise ModelError(
                desc.at(name, "Sizes", i), f"must be 1: only the last {field} ({meaningful}) dimensions count, not {s}"
            )


def check_sizes(desc: OperatorDesc, name: str, want: Sequence[int], why: str) -> None:
    t = desc.tensor(name)
    aligned = right_aligned(want, t.rank)
    if aligned is None:
        raise ModelError(desc.at(name, "Sizes"), f"{why} is {list(want)}: more than {name}'s {t.rank} dimensions")
    if t.sizes != aligned:
        raise ModelError(desc.at(name, "Sizes"), f"must be {list(aligned)} ({why}), not {list(t.sizes)}")


def check_count(desc: OperatorDesc, field: str, low: int, high: int, what: str) -> int:
    value = desc[field]
    if not low <= value <= high:
        raise ModelError(desc.at(field), f"{field} must be in [{low}, {high}] ({what}), not {value}")
    return value


@dataclass(frozen=True)
class Frame:
    """How indices address the input, in a 3-D frame [batch, rows, inner] broadcast from the index
    tensor at `index_shape` (its last axis the tuple's `dims`, one per coordinate): the offset of
    frame element (b, r, i) is b * batch_stride + sum(index[b, r, i, c] * strides[c]) + i.
    `positional` adds the b and i terms (GATHER, GATHER_ND: the index does not vary along them)."""

    shape: tuple[int, int, int]
    index_shape: tuple[int, int, int, int]
    dims: tuple[int, ...]
    strides: tuple[int, ...]
    batch_stride: int
    count: int  # the input's element count, N


def frame(desc: OperatorDesc) -> Frame:
    """The addressing of a validated GATHER*, SCATTER or SCATTER_ND desc."""
    name = desc.schema.name
    x, idx = desc.tensor("InputTensor"), desc.tensor("IndicesTensor")
    n = x.element_count
    if name in ("GATHER", "GATHER_ELEMENTS", "SCATTER"):
        a = desc["Axis"]
        outer, dim, inner = math.prod(x.sizes[:a]), x.sizes[a], math.prod(x.sizes[a + 1 :])
        if name == "GATHER":
            q = math.prod(idx.sizes)
            return Frame((outer, q, inner), (1, q, 1, 1), (dim,), (inner,), dim * inner, n)
        q = idx.sizes[a]
        return Frame((outer, q, inner), (outer, q, inner, 1), (dim,), (inner,), dim * inner, n)
    batch = desc["BatchDimensionCount"] if name == "GATHER_ND1" else 0
    data = x.sizes[x.rank - desc["InputDimensionCount"] :]
    k = idx.sizes[idx.rank - desc["IndicesDimensionCount"] :]
    t = k[-1]
    b, rows, inner = math.prod(k[:batch]), math.prod(k[batch:-1]), math.prod(data[batch + t :])
    dims = tuple(data[batch : batch + t])
    strides = tuple(math.prod(data[batch + c + 1 :]) for c in range(t))
    return Frame((b, rows, inner), (b, rows, 1, t), dims, strides, math.prod(data[batch:]), n)


def nd_sizes(desc: OperatorDesc, batch: int) -> tuple[int, ...]:
    """GATHER_ND's output (SCATTER_ND's updates) Sizes, before right-alignment: batch and rows of
    tuples from the indices, then the input's dimensions past the tuple."""
    x, idx = desc.tensor("InputTensor"), desc.tensor("IndicesTensor")
    data = x.sizes[x.rank - desc["InputDimensionCount"] :]
    k = idx.sizes[idx.rank - desc["IndicesDimensionCount"] :]
    return (*k[:-1], *data[batch + k[-1] :])


def validate_nd(desc: OperatorDesc, batch: int) -> None:
    """GATHER_ND(1)'s and SCATTER_ND's rules for the input and the indices."""
    x, idx = desc.tensor("InputTensor"), desc.tensor("IndicesTensor")
    common.check_same_rank(desc, "IndicesTensor", "InputTensor")
    in_count = check_count(desc, "InputDimensionCount", 1, x.rank, "InputTensor's DimensionCount")
    idx_count = check_count(desc, "IndicesDimensionCount", 1, idx.rank, "IndicesTensor's DimensionCount")
    check_leading_ones(desc, "InputTensor", in_count, "InputDimensionCount")
    check_leading_ones(desc, "IndicesTensor", idx_count, "IndicesDimensionCount")
    if batch >= min(in_count, idx_count):
        raise ModelError(
            desc.at("BatchDimensionCount"),
            f"BatchDimensionCount must be less than InputDimensionCount ({in_count}) "
            f"and IndicesDimensionCount ({idx_count}), not {batch}",
        )
    data, k = x.sizes[x.rank - in_count :], idx.sizes[idx.rank - idx_count :]
    t = k[-1]
    if not 1 <= t <= in_count - batch:
        raise ModelError(
            desc.at("IndicesTensor", "Sizes", idx.rank - 1),
            f"the index tuple's size (the last dimension) must be in [1, {in_count - batch}] "
            f"(InputDimensionCount {in_count} less {batch} batch dimensions), not {t}",
        )
    for i in range(batch):
        if k[i] != data[i]:
            raise ModelError(
                desc.at("IndicesTensor", "Sizes", idx.rank - idx_count + i),
                f"batch dimension {i} must equal InputTensor's ({data[i]}), not {k[i]}",
            )


def validate_axis_elements(desc: OperatorDesc, others: Sequence[str]) -> int:
    """GATHER_ELEMENTS' and SCATTER's rules: Axis in range, IndicesTensor of the input's Sizes
    except on Axis (DirectML refuses others, measured)."""
    x, idx = desc.tensor("InputTensor"), desc.tensor("IndicesTensor")
    for other in ("IndicesTensor", *others):
        common.check_same_rank(desc, other, "InputTensor")
    a = check_count(desc, "Axis", 0, x.rank - 1, "a dimension of InputTensor")
    for i, (s, want) in enumerate(zip(idx.sizes, x.sizes, strict=True)):
        if i != a and s != want:
            raise ModelError(
                desc.at("IndicesTensor", "Sizes", i), f"must equal InputTensor.Sizes[{i}] ({want}) off Axis {a}, not {s}"
            )
    return a


def validate(desc: OperatorDesc) -> None:
    name = desc.schema.name
    common.check_same_type(desc, "OutputTensor", "InputTensor")
    common.check_same_rank(desc, "OutputTensor", "InputTensor")
    x, idx = desc.tensor("InputTensor"), desc.tensor("IndicesTensor")
    if name == "GATHER":
        common.check_same_rank(desc, "IndicesTensor", "InputTensor")
        a = check_count(desc, "Axis", 0, x.rank - 1, "a dimension of InputTensor")
        k = check_count(desc, "IndexDimensions", 0, idx.rank, "IndicesTensor's DimensionCount")
        check_leading_ones(desc, "IndicesTensor", k, "IndexDimensions")
        # DirectML refuses the page's example 3 ({3, 2}, indices {1, 2}, IndexDimensions 2: {3, 1, 2}), measured
        want = (*x.sizes[:a], *idx.sizes[idx.rank - k :], *x.sizes[a + 1 :])
        check_sizes(desc, "OutputTensor", want, "InputTensor's Sizes with the indices' inserted at Axis")
    elif name == "GATHER_ELEMENTS":
        validate_axis_elements(desc, ())
        common.check_same_sizes(desc, "OutputTensor", "IndicesTensor")
    else:
        batch = desc["BatchDimensionCount"] if name == "GATHER_ND1" else 0
        validate_nd(desc, batch)
        check_sizes(desc, "OutputTensor", nd_sizes(desc, batch), "the indices' leading Sizes, then InputTensor's past the tuple")


# -- lowering ---------------------------------------------------------------------------------


def offsets(desc: OperatorDesc, b: GraphBuilder, indices: str) -> str:
    """INT64 offsets into the flat input at the frame's shape (exactly, out-of-range ones
    included: see the module's doc)."""
    f = frame(desc)
    index_type = desc.tensor("IndicesTensor").data_type
    n = f.count
    v = b.reshape(indices, list(f.index_shape), "indices_frame", "the indices in the addressing frame, the tuple last")
    if index_type != dtypes.INT64:
        v = b.cast(v, dtypes.INT64, "indices_int64", f"{index_type} indices in INT64, exactly (UINT64: the same bits)")
    zero = b.scalar(0, dtypes.INT64, "zero")
    count = b.scalar(n, dtypes.INT64, "element_count")
    if index_type == dtypes.UINT64:  # 2**63 and more read as negative in INT64: out of range
        negative = b.node("Less", [v, zero], "huge", "UINT64 indices of 2**63 and more")
        v = b.node("Where", [negative, count, v], "huge_to_n", "past every dimension: N")
    if index_type.is_signed:
        negative = b.node("Less", [v, zero], "negative", "negative indices count from the end")
        dims = b.i64(list(f.dims), "dims")
        wrapped = b.node("Add", [v, dims], "plus_dim", "index + its dimension")
        v = b.node("Where", [negative, wrapped, v], "wrapped", "negative indices wrapped once")
    if index_type.size == 8 or len(f.dims) > 1:
        # components beyond +-N count as +-N: the products below stay far inside INT64
        minus_count = b.scalar(-n, dtypes.INT64, "minus_element_count")
        v = b.node("Where", [b.node("Greater", [v, count], "above_n", "index > N"), count, v], "at_most_n", "at most N")
        v = b.node(
            "Where",
            [b.node("Less", [v, minus_count], "below_minus_n", "index < -N"), minus_count, v],
            "at_least_minus_n",
            "at least -N",
        )
    v = b.node("Mul", [v, b.i64(list(f.strides), "strides")], "scaled", "each coordinate times its row-major stride")
    terms = [b.slice(v, [3], [c], [c + 1], f"coordinate_{c}", f"coordinate {c} of the tuple") for c in range(len(f.dims))]
    total = terms[0]
    for c, term in enumerate(terms[1:], 1):
        total = b.node("Add", [total, term], f"sum_{c}", "the tuple's coordinates summed")
    total = b.reshape(total, list(f.index_shape[:3]), "index_offset", "the index's part of the offset")
    bs, _, inner = f.shape
    if bs > 1:
        batch = b.i64((np.arange(bs) * f.batch_stride).reshape(bs, 1, 1), "batch_offsets")
        total = b.node("Add", [total, batch], "plus_batch", "plus the batch's (or outer dimensions') offset")
    if inner > 1:
        total = b.node(
            "Add",
            [total, b.i64(np.arange(inner).reshape(1, 1, inner), "inner_offsets")],
            "plus_inner",
            "plus the inner dimensions' offset",
        )
    if tuple(f.index_shape[:3]) != f.shape:
        total = b.node("Expand", [total, b.i64(list(f.shape), "frame_shape")], "offsets", "one offset per frame element")
    return total


def outside(b: GraphBuilder, offset: str, n: int) -> str:
    """BOOL: offsets outside [0, n)."""
    below = b.node("Less", [offset, b.scalar(0, dtypes.INT64, "zero_offset")], "before_input", "offset < 0")
    above = b.node("Greater", [offset, b.scalar(n - 1, dtypes.INT64, "last_offset")], "past_input", "offset > N - 1")
    return b.node("Or", [below, above], "outside", "offsets outside the input")


def applies(desc: OperatorDesc, candidate: str, opset: int) -> bool:
    """Every operator takes "flat"; "guarded" those with a native node whose Axis is shorter than
    GUARD_TYPES' last bound; "native" those whose ONNX node the DirectML EP registers at this opset
    for the data type and the index type it is given (native_index_type)."""
    if candidate == "flat":
        return True
    if candidate == "masked":
        return gather_masked.applies(desc)
    if candidate == "native":
        op = DML_NATIVE[desc.schema.name]
        data = onnx_type_name(desc.tensor("InputTensor").data_type.onnx)
        index = onnx_type_name(native_index_type(desc).onnx)
        return dml_ep.takes(op, opset, T=data, Tind=index)
    return desc.schema.name in NATIVE and desc.tensor("InputTensor").sizes[desc["Axis"]] < GUARD_TYPES[-1][0]


def choose(desc: OperatorDesc, target: str, options: tuple[str, ...]) -> str:
    """ "masked" where it applies (every target); else the native node behind its guard on the
    `cuda` target, where it applies; else "flat"."""
    if "masked" in options:
        return "masked"
    return "guarded" if target == "cuda" and "guarded" in options else "flat"


def indices_in_range(desc: OperatorDesc, b: GraphBuilder, indices: str) -> str:
    """BOOL scalar: every index in [-dim, dim) (signed types) or [0, dim) (unsigned), where ONNX's
    node and DirectML agree. In a float type (GUARD_TYPES) that holds -dim - 1 .. dim exactly: the
    Cast rounds larger magnitudes monotonically, onto those bounds or beyond, never into the range."""
    dim = desc.tensor("InputTensor").sizes[desc["Axis"]]
    index_type = desc.tensor("IndicesTensor").data_type
    axes = list(range(desc.tensor("IndicesTensor").rank))
    ftype = next(t for bound, t in GUARD_TYPES if dim < bound)
    # one Cast for both reductions (the CUDA EP would Cast integers to FLOAT32 in each)
    v = b.cast(indices, ftype, "indices_float", f"the indices in {ftype}: order kept, exact up to dim + 1")
    high = b.reduce("ReduceMax", v, axes, "highest_index", "the largest index", keepdims=False)
    ok = b.node("Less", [high, b.scalar(dim, ftype, "dim")], "below_dim", "every index < dim")
    if index_type.is_signed:
        low = b.reduce("ReduceMin", v, axes, "lowest_index", "the smallest index", keepdims=False)
        bound = b.scalar(-dim - 1, ftype, "minus_dim_minus_one")
        above = b.node("Greater", [low, bound], "from_minus_dim", "every index >= -dim")
        ok = b.node("And", [ok, above], "in_range", "every index in [-dim, dim)")
    return ok


def native_indices(desc: OperatorDesc, b: GraphBuilder, indices: str) -> str:
    """The indices as the native node takes them (INT32 or INT64): UINT32/UINT64 Cast to INT32,
    exact under the guard (every index below dim, below 2**24)."""
    if desc.tensor("IndicesTensor").data_type.is_signed:
        return indices
    return b.cast(indices, dtypes.INT32, "indices_int32", "unsigned indices below dim, exactly in INT32")


def guarded(
    desc: OperatorDesc,
    b: GraphBuilder,
    inputs: dict[str, str],
    native: Callable[[GraphBuilder, str], str],
    flat: Callable[[GraphBuilder], str],
) -> str:
    """If every index is in range (indices_in_range), `native(b, indices)` (the ONNX node on the
    native indices), else `flat(b)`, the lowering that keeps DirectML's out-of-range rules."""
    indices = inputs["IndicesTensor"]
    return b.branch(
        indices_in_range(desc, b, indices),
        lambda sub: native(sub, native_indices(desc, sub, indices)),
        flat,
        desc.tensor("OutputTensor").data_type,
        "in_range_or_flat",
        f"{NATIVE[desc.schema.name]} when every index is in range, else the flat lowering",
    )


def _native(desc: OperatorDesc, b: GraphBuilder, inputs: dict[str, str], indices: str, doc: str | None = None) -> str:
    """GATHER: Gather on Axis with the indices' IndexDimensions as one; GATHER_ELEMENTS:
    GatherElements (its indices already at the input's rank). `doc`: the node's doc string
    ("native": DML_NODE_DOC)."""
    out, a = desc.tensor("OutputTensor"), desc["Axis"]
    if desc.schema.name == "GATHER_ELEMENTS":
        doc = doc or "each element from its index"
        return b.node("GatherElements", [inputs["InputTensor"], indices], "gather_elements", doc, axis=a)
    shape = [math.prod(desc.tensor("IndicesTensor").sizes)] if desc["IndexDimensions"] else []
    indices = b.reshape(indices, shape, "indices_flat", "the IndexDimensions as one (none: a scalar)")
    y = b.node("Gather", [inputs["InputTensor"], indices], "gather", doc or "the input's slices at the indices", axis=a)
    return b.reshape(y, list(out.sizes), "output", "at OutputTensor's Sizes")


def native_index_type(desc: OperatorDesc) -> dtypes.DataType:
    """The index type of "native"'s node: INT32 and INT64 as they are (GatherND and ScatterND take
    INT64 only), UINT32 in INT64 (its value) and UINT64 in INT64 (its bits: DirectML reads
    UINT64 indices of 2**63 and more as negative, a finding)."""
    index_type = desc.tensor("IndicesTensor").data_type
    if index_type == dtypes.INT32 and DML_NATIVE[desc.schema.name] not in ("GatherND", "ScatterND"):
        return index_type
    return dtypes.INT64


def dml_indices(desc: OperatorDesc, b: GraphBuilder, indices: str) -> str:
    """The indices in native_index_type."""
    index_type, want = desc.tensor("IndicesTensor").data_type, native_index_type(desc)
    if index_type == want:
        return indices
    return b.cast(indices, want, "indices_native", f"{index_type} indices in {want} (UINT64: the same bits)")


def nd_operands(desc: OperatorDesc, b: GraphBuilder, inputs: dict[str, str]) -> tuple[str, str, tuple[int, ...]]:
    """GATHER_ND(1)'s and SCATTER_ND's input and indices at their InputDimensionCount and
    IndicesDimensionCount (the leading 1s dropped), the indices in INT64, and the indices' shape.
    One tuple (IndicesDimensionCount 1) keeps a leading 1: the DirectML EP refuses the scalar
    output GatherND would give it (80070057 Invalid parameter, measured); the offsets are the same."""
    x, idx = desc.tensor("InputTensor"), desc.tensor("IndicesTensor")
    data = b.reshape(
        inputs["InputTensor"],
        list(x.sizes[x.rank - desc["InputDimensionCount"] :]),
        "input_nd",
        "InputDimensionCount's dimensions",
    )
    k = tuple(idx.sizes[idx.rank - desc["IndicesDimensionCount"] :])
    k = (1, *k) if len(k) == 1 else k
    indices = b.reshape(dml_indices(desc, b, inputs["IndicesTensor"]), list(k), "indices_nd", "the tuples, the tuple last")
    return data, indices, k


def _dml_native(desc: OperatorDesc, b: GraphBuilder, inputs: dict[str, str]) -> str:
    """GATHER, GATHER_ELEMENTS: Gather / GatherElements as "guarded" runs them; GATHER_ND(1):
    GatherND with BatchDimensionCount as batch_dims, at the dimension counts."""
    if DML_NATIVE[desc.schema.name] != "GatherND":
        return _native(desc, b, inputs, dml_indices(desc, b, inputs["IndicesTensor"]), DML_NODE_DOC)
    data, indices, _ = nd_operands(desc, b, inputs)
    batch = desc["BatchDimensionCount"] if desc.schema.name == "GATHER_ND1" else 0
    y = b.node("GatherND", [data, indices], "gather_nd", DML_NODE_DOC, batch_dims=batch)
    return b.reshape(y, list(desc.tensor("OutputTensor").sizes), "output", "at OutputTensor's Sizes")


def lower(desc: OperatorDesc, b: GraphBuilder, inputs: dict[str, str]) -> str:
    if b.variant == "masked":
        return gather_masked.lower(desc, b, inputs)
    if b.variant == "native":
        return _dml_native(desc, b, inputs)
    if b.variant == "guarded":
        return guarded(desc, b, inputs, lambda sub, i: _native(desc, sub, inputs, i), lambda sub: _flat(desc, sub, inputs))
    return _flat(desc, b, inputs)


def _flat(desc: OperatorDesc, b: GraphBuilder, inputs: dict[str, str]) -> str:
    x, out = desc.tensor("InputTensor"), desc.tensor("OutputTensor")
    n = x.element_count
    offset = offsets(desc, b, inputs["IndicesTensor"])
    last = b.scalar(n - 1, dtypes.INT64, "last_element")
    offset = b.node("Where", [outside(b, offset, n), last, offset], "read_offsets", "outside the input: its last element")
    flat = b.reshape(inputs["InputTensor"], [n], "input_flat", "InputTensor as one array")
    y = b.node("Gather", [flat, offset], "gather", "each output element from its offset, bit for bit", axis=0)
    return b.reshape(y, list(out.sizes), "output", "at OutputTensor's Sizes")


# -- reference --------------------------------------------------------------------------------


def reference_offsets(desc: OperatorDesc, indices: np.ndarray) -> np.ndarray:
    """The frame's offsets (int64) from the page's rules, in Python integers."""
    f = frame(desc)
    index_type = desc.tensor("IndicesTensor").data_type
    n = f.count
    v = np.asarray(indices).astype(object).reshape(f.index_shape)
    dims = np.array(f.dims, dtype=object)
    if index_type.is_signed:
        v = np.where(v < 0, v + dims, v)
    v = np.where(v > n, n, np.where(v < -n, -n, v))
    off = (v * np.array(f.strides, dtype=object)).sum(axis=3)
    bs, _, inner = f.shape
    off = (
        off
        + (np.arange(bs, dtype=object) * f.batch_stride).reshape(bs, 1, 1)
        + np.arange(inner, dtype=object).reshape(1, 1, inner)
    )
    return np.broadcast_to(off, f.shape).astype(np.int64)


def reference(desc: OperatorDesc, inputs: dict[str, np.ndarray]) -> np.ndarray:
    """Each output element: the input element at its offset, or the last one where the offset is
    outside the input."""
    out = desc.tensor("OutputTensor")
    x = np.asarray(inputs["InputTensor"]).reshape(-1)
    off = reference_offsets(desc, inputs["IndicesTensor"])
    off = np.where((off < 0) | (off >= x.size), x.size - 1, off)
    return x[off].reshape(out.sizes)


# -- examples ---------------------------------------------------------------------------------


def examples(op: OperatorSchema) -> list[common.Example]:
    """onnx_ops: each data type with each index type."""
    out: list[common.Example] = []
    for t in common.example_types(op, "InputTensor"):
        for index in common.example_types(op, "IndicesTensor"):
            x = common.example_tensor(t, [3, 4])
            if op.name == "GATHER":
                fields = {"IndicesTensor": common.example_tensor(index, [1, 2]), "OutputTensor": common.example_tensor(t, [2, 4])}
                fields |= {"Axis": 0, "IndexDimensions": 1}
            elif op.name == "GATHER_ELEMENTS":
                fields = {"IndicesTensor": common.example_tensor(index, [2, 4]), "OutputTensor": common.example_tensor(t, [2, 4])}
                fields |= {"Axis": 0}
            else:
                fields = {"IndicesTensor": common.example_tensor(index, [2, 1]), "OutputTensor": common.example_tensor(t, [2, 4])}
                fields |= {"InputDimensionCount": 2, "IndicesDimensionCount": 2}
                if op.name == "GATHER_ND1":
                    fields["BatchDimensionCount"] = 0
            out.append({"InputTensor": x, **fields})
    return out


OPERATOR_FAMILY = Family(
    ("GATHER", "GATHER_ELEMENTS", "GATHER_ND", "GATHER_ND1"),
    validate,
    lower,
    reference,
    CANDIDATES,
    applies=applies,
    choose=choose,
    cuda_only=CUDA_ONLY,
    dml_only=DML_ONLY,
    dml_preference=DML_PREFERENCE,
    cpu_preference=CPU_PREFERENCE,
    examples=examples,
)
