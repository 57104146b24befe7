"""DML_OPERATOR_ACTIVATION_HARDMAX1: 1 at the first maximum over the joint Axes, 0 elsewhere.
The single-axis ACTIVATION_HARDMAX (hardmax.py) reuses this lowering and reference."""

from __future__ import annotations

import math

import numpy as np

from dml2onnx.core import dtypes
from dml2onnx.core.desc import OperatorDesc
from dml2onnx.core.schema import OperatorSchema
from dml2onnx.graph.builder import GraphBuilder
from dml2onnx.ops import argmax, common
from dml2onnx.ops.family import Family

# The candidate lowerings (choices.py): ARGMAX's searches for the maximum (argmax.CANDIDATES),
# then its one-hot; one_hot_product (axes in several runs): one small one-hot per run, multiplied.
CANDIDATES = ("in_place", "last_axis", "two_stage", "one_hot_product", "inner_first")


def applies(desc: OperatorDesc, candidate: str, opset: int) -> bool:
    sizes, axes = desc.tensor("InputTensor").sizes, reduced_axes(desc)
    if candidate == "one_hot_product":
        return len(common.axis_runs(axes)) > 1
    return argmax.search_applies(candidate, sizes, axes)


def choose(desc: OperatorDesc, target: str, options: tuple[str, ...]) -> str:
    """The candidate measured fastest on the CUDA EP (H200, docs/benchmarks.md)."""
    axes = reduced_axes(desc)
    fast = argmax.fast_search(desc, target, options, axes, reversed_search=False)
    if fast is not None:
        return fast
    if "one_hot_product" in options and not one_hot_on_last_axis_applies(desc.tensor("InputTensor").sizes, axes):
        # Axes in several runs: the output is written once in place, with no Transpose back. The
        # other candidates do that too where their one-hot runs along the last reduced axis, and
        # they skip the broadcast Mul of the small one-hots (a full pass over the output): 1.25x on
        # rows of 64 (256 x 4096 x 64, axes 0 and 2), 1.29x with a kept axis inside (64 x 1024 x
        # 256 x 4, axes 0 and 2), H200.
        return "one_hot_product"
    return argmax.outer_axes_last(desc, options, axes)


def validate(desc: OperatorDesc) -> None:
    common.check_same_type(desc, "OutputTensor", "InputTensor")
    common.check_same_sizes(desc, "OutputTensor", "InputTensor")
    common.check_axes(desc, desc.tensor("InputTensor").rank)


def reduced_axes(desc: OperatorDesc) -> tuple[int, ...]:
    """The axes, ascending. The single-axis forms (no Axes field) reduce the last dimension: the
    *1 pages call them equivalent to AxisCount 1, Axes {DimensionCount - 1}."""
    if "Axes" in desc.values:
        return tuple(sorted(desc["Axes"]))
    return (desc.tensor("InputTensor").rank - 1,)


def lower(desc: OperatorDesc, b: GraphBuilder, inputs: dict[str, str]) -> str:
    # ArgMax (first maximum) + OneHot: exact on ties, runs on every EP. ONNX Hardmax is absent
    # from the CUDA EP, and ReduceMax + Equal marks every tied maximum.
    x = desc.tensor("InputTensor")
    axes = reduced_axes(desc)
    if b.variant == "one_hot_product" and not b.target.native_hardmax:
        return _one_hot_product(desc, b, inputs["InputTensor"])
    plan = common.JointAxes(x.sizes, axes, last=argmax.moves_axes_last(b.variant))
    if b.target.native_hardmax:  # ONNX Hardmax-13 (first maximum): DML_ACTIVATION_HARDMAX again
        merged = plan.merge(b, inputs["InputTensor"])
        y = b.node("Hardmax", [merged], "hardmax", "1 at the first maximum of the merged axis", axis=plan.axis)
        return plan.unmerge(b, y)
    index = argmax.search_index(b, plan, inputs["InputTensor"], x.data_type, False, False)
    if one_hot_on_last_axis_applies(x.sizes, axes):
        return _one_hot_on_last_axis(b, index, x.sizes, axes, x.data_type)
    # The one-hot is written with the in-place plan (which moves only axes that are not
    # contiguous), even when the index was found with the axes moved last: no Transpose back.
    # The kept elements are in the same row-major order either way.
    out = common.JointAxes(x.sizes, axes)
    kept = out.merged_shape[: out.axis] + out.merged_shape[out.axis + 1 :]
    axis = out.axis if kept else 1  # every axis reduced: OneHot needs indices of rank >= 1
    index = b.reshape(index, kept or (1,), "index_shape", "the index per kept element, without the reduced axis")
    y = one_hot_01(b, index, plan.reduced_size, axis, x.data_type)
    if not kept:
        y = b.reshape(y, out.merged_shape, "from_row", "back from one row")
    return out.unmerge(b, y)


# The one-hot along the last reduced axis needs an index per row of it: at this length or more,
# those rows' indices (about 13 bytes written per row) cost at most a tenth of a FLOAT16 output's
# bytes, where every alternative moves the whole output once more (a Reshape or Transpose back, or
# one_hot_product's broadcast Mul). Only the maximum's row is in range, so OneHot writes one value
# per kept element after its memset. The rows are told apart by a constant that numbers them over
# the other reduced axes: at most this many (512 KiB) in the model.
_ROW_ONE_HOT_MIN = 64
_ROW_NUMBERS_MAX = 2**16


def one_hot_on_last_axis_applies(sizes: tuple[int, ...], axes: tuple[int, ...]) -> bool:
    """Several axes whose last one is long. Contiguous, the merged one-hot would need a Reshape
    back to the output's shape, and a Reshape that ends a graph copies the whole output when the
    caller binds its own output buffer (ONNX Runtime io binding); apart, a Transpose back (a
    full pass over the output) or one_hot_product's broadcast Mul (as slow)."""
    rows = math.prod(sizes[a] for a in axes[:-1])
    return len(axes) > 1 and sizes[axes[-1]] >= _ROW_ONE_HOT_MIN and rows <= _ROW_NUMBERS_MAX


def _one_hot_on_last_axis(
    b: GraphBuilder, index: str, sizes: tuple[int, ...], axes: tuple[int, ...], dtype: dtypes.DataType
) -> str:
    """The one-hot written straight in the output's shape: OneHot along the last reduced axis, of
    an index per row of that axis (the other reduced axes are the rows' coordinates). The row
    holding the maximum gets its position in the row; every other row gets `depth`, which is out
    of range: a row of zeros."""
    last, depth = axes[-1], sizes[axes[-1]]
    # the index per kept element, 1 on the reduced axes but the last, which OneHot inserts
    kept = [1 if a in axes else s for a, s in enumerate(sizes) if a != last]
    index = b.reshape(index, kept, "index_rows", "the index per kept element, 1 on the other reduced axes")
    depth_value = b.scalar(depth, dtypes.INT64, "row_length")
    row, column = b.divmod(index, depth_value, "column", "the maximum's place in its row", "the maximum's row: index // depth")
    positions_shape = [sizes[a] if a in axes[:-1] else 1 for a in range(len(sizes)) if a != last]
    positions = b.const(np.arange(math.prod(positions_shape), dtype=np.int64).reshape(positions_shape), "row_numbers")
    hit = b.node("Equal", [positions, row], "is_row", "the row holding the maximum")
    per_row = b.node("Where", [hit, column, depth_value], "row_index", "its place there; elsewhere out of range")
    return one_hot_01(b, per_row, depth, last, dtype)


def _one_hot_product(desc: OperatorDesc, b: GraphBuilder, x_in: str) -> str:
    """Axes in several runs (common.axis_runs): the index over the merged axes is cut into one index per
    run, each run gets its own small one-hot in the input's layout (1 on the other runs' axes), and
    their broadcast product is the output. It is written once in place, where the one-hot over
    the merged axes would need a Transpose back (two passes over the output)."""
    x = desc.tensor("InputTensor")
    axes = reduced_axes(desc)
    plan = common.JointAxes(x.sizes, axes)  # the runs are apart: Transpose, then (kept, reduced)
    index = argmax.plan_index(b, plan, plan.merge(b, x_in), x.data_type, False, False)
    runs = common.axis_runs(axes)
    assert len(runs) > 1, "one_hot_product applies only to axes in several runs (applies)"
    stride = plan.reduced_size
    y = ""
    for n, run in enumerate(runs):
        size = math.prod(x.sizes[a] for a in run)
        stride //= size
        part = index
        if stride > 1:  # drop the later runs' coordinates
            part = b.node("Div", [part, b.scalar(stride, dtypes.INT64, f"stride{n}")], f"run{n}_high", f"index // {stride}")
        if n > 0:  # drop the earlier runs' coordinates
            size_value = b.scalar(size, dtypes.INT64, f"size{n}")
            part = b.remainder(part, size_value, f"run{n}_index", f"the index within axes {list(run)}")
        before = math.prod(s for a, s in enumerate(x.sizes) if a < run[0] and a not in axes)
        after = math.prod(s for a, s in enumerate(x.sizes) if a > run[-1] and a not in axes)
        part = b.reshape(part, (before, after), f"run{n}_rows", "the kept elements before and after the run")
        hot = one_hot_01(b, part, size, 1, x.data_type)
        sizes = [s if a not in axes or a in run else 1 for a, s in enumerate(x.sizes)]
        hot = b.reshape(hot, sizes, f"run{n}_layout", f"the one-hot of axes {list(run)} in the input's layout")
        y = b.node("Mul", [y, hot], f"product{n}", "1 only where every run's one-hot is 1") if y else hot
    return y


def one_hot_01(b: GraphBuilder, index: str, depth: int, axis: int, dtype: dtypes.DataType) -> str:
    """OneHot of int64 `index` with 0/1 values of a float type, in a type combination that the
    CPU, CUDA and DirectML EPs all register: (int32, int32, float) and (int64, int64, float16)."""
    index_type = dtypes.INT32 if dtype == dtypes.FLOAT32 else dtypes.INT64
    if index_type != dtypes.INT64:
        index = b.cast(index, index_type, "index_cast", f"indices as {index_type} for OneHot")
    depth_value = b.scalar(depth, index_type, "depth")
    values = b.const(np.array([0, 1], dtype=dtype.numpy), "off_on")
    return b.node("OneHot", [index, depth_value, values], "one_hot", "1 at the maximum's index, 0 elsewhere", axis=axis)


def reference(desc: OperatorDesc, inputs: dict[str, np.ndarray]) -> np.ndarray:
    x = inputs["InputTensor"]
    flat, plan = common.merge_axes_reference(x, reduced_axes(desc))
    out = np.zeros(flat.shape, dtype=x.dtype)
    out[np.arange(flat.shape[0]), np.argmax(flat, axis=1)] = 1  # np.argmax: first maximum
    return common.unmerge_reference(out, plan)


def examples(op: OperatorSchema) -> list[common.Example]:
    """onnx_ops: each type over the last axis and over two axes, of a rank-4 tensor."""
    out = []
    for t in common.example_types(op, "InputTensor"):
        io = {"InputTensor": common.example_tensor(t, [2, 3, 4, 5]), "OutputTensor": common.example_tensor(t, [2, 3, 4, 5])}
        out += [{**io, "AxisCount": len(a), "Axes": a} for a in ([3], [1, 3])]
    return out


OPERATOR_FAMILY = Family(
    ("ACTIVATION_HARDMAX1",), validate, lower, reference, CANDIDATES, applies=applies, choose=choose, examples=examples
)
