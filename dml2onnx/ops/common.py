"""Rules and lowering steps shared by several operators."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from dml2onnx.core import dtypes
from dml2onnx.core.desc import OperatorDesc
from dml2onnx.core.errors import ModelError
from dml2onnx.core.schema import OperatorSchema
from dml2onnx.graph.builder import GraphBuilder

# -- example descs (onnx_ops: the ONNX ops each operator's lowerings use) ------------------

Example = dict[str, Any]


def example_tensor(data_type: str, sizes: list[int]) -> dict[str, Any]:
    return {"DataType": data_type, "Sizes": sizes}


def example_types(op: OperatorSchema, field: str, refused: Sequence[str] = ()) -> list[str]:
    """The data types of `field` in the operator's newest "Tensor support" table, but `refused`."""
    return [d.name for d in op.support[0].tensors[field].types if d.name not in refused]


# -- validation -----------------------------------------------------------------------------


def check_same_type(desc: OperatorDesc, name: str, other: str) -> None:
    a, b = desc.optional_tensor(name), desc.tensor(other)
    if a is not None and a.data_type != b.data_type:
        raise ModelError(
            desc.at(name, "DataType"), f"{name} and {other} must have the same DataType ({a.data_type} vs {b.data_type})"
        )


def check_same_rank(desc: OperatorDesc, name: str, other: str) -> None:
    a, b = desc.optional_tensor(name), desc.tensor(other)
    if a is not None and a.rank != b.rank:
        raise ModelError(desc.at(name, "Sizes"), f"{name} and {other} must have the same DimensionCount ({a.rank} vs {b.rank})")


def check_same_sizes(desc: OperatorDesc, name: str, other: str) -> None:
    check_same_rank(desc, name, other)
    a, b = desc.tensor(name), desc.tensor(other)
    if a.sizes != b.sizes:
        raise ModelError(
            desc.at(name, "Sizes"), f"{name} and {other} must have the same Sizes ({list(a.sizes)} vs {list(b.sizes)})"
        )


def check_axes(desc: OperatorDesc, rank: int, field: str = "Axes", allow_empty: bool = False) -> tuple[int, ...]:
    """Axes must be unique and in [0, rank-1], and non-empty unless `allow_empty` (REDUCE, ARGMAX
    and ARGMIN: DirectML takes AxisCount 0, measured). Returns them in ascending order."""
    axes: tuple[int, ...] = desc[field]
    if not axes and not allow_empty:
        raise ModelError(desc.at(field), "at least one axis is required")
    seen: set[int] = set()
    for i, a in enumerate(axes):
        if a >= rank:
            raise ModelError(desc.at(field, i), f"axis {a} is out of range [0, {rank - 1}]")
        if a in seen:
            raise ModelError(desc.at(field, i), f"axis {a} appears more than once")
        seen.add(a)
    return tuple(sorted(axes))


def check_reduced_sizes(desc: OperatorDesc, axes: Sequence[int], name: str = "OutputTensor", source: str = "InputTensor") -> None:
    """Output sizes equal the input's, except 1 on every reduced axis."""
    check_same_rank(desc, name, source)
    out, src = desc.tensor(name), desc.tensor(source)
    for i, (o, s) in enumerate(zip(out.sizes, src.sizes, strict=True)):
        want = 1 if i in axes else s
        if o != want:
            why = "a reduced axis" if i in axes else f"{source}.Sizes[{i}]"
            raise ModelError(desc.at(name, "Sizes", i), f"must be {want} ({why}), not {o}")


# -- lowering: reductions over a joint set of axes -----------------------------------------


def around_axis(sizes: Sequence[int], axis: int) -> tuple[int, int, int]:
    """(outer, n, inner): the elements before `axis`, along it, and after it."""
    return math.prod(sizes[:axis]), sizes[axis], math.prod(sizes[axis + 1 :])


def axis_runs(axes: tuple[int, ...]) -> list[tuple[int, ...]]:
    """The ascending axes as runs of neighbours: (0, 2, 3) -> [(0,), (2, 3)]."""
    runs: list[list[int]] = []
    for a in axes:
        if runs and runs[-1][-1] == a - 1:
            runs[-1].append(a)
        else:
            runs.append([a])
    return [tuple(r) for r in runs]


@dataclass(frozen=True)
class JointAxes:
    """How to turn a reduction over several axes into one over a single axis.

    Contiguous axes are merged in place by a Reshape; other sets (and every set with `last`) are
    first moved to the end by a Transpose (kept axes in order, then the reduced axes ascending)
    and the result is merged to 2-D: (kept elements, reduced elements). The merged axis
    enumerates the reduced coordinates in row-major order of ascending axes, which is the order
    DirectML's reduced index uses.

    The Transpose is always followed by a Reshape that merges or drops dimensions: ONNX Runtime's
    transpose optimizer pushes a Transpose through ArgMax, LogSoftmax and a Reshape that only
    inserts or splits dimensions, which undoes the move (ArgMax over a leading axis on the CUDA
    EP then stays 2.5x slower, H200); it stops at a merging Reshape. A 2-D input is lifted to
    (1, rows, columns) first so that such a Reshape exists.
    """

    shape: tuple[int, ...]
    axes: tuple[int, ...]  # ascending
    last: bool = False  # always move the axes to the end, even when they are contiguous

    @property
    def contiguous(self) -> bool:
        at_end = self.axes[-1] == len(self.shape) - 1
        return self.axes[-1] - self.axes[0] + 1 == len(self.axes) and (at_end or not self.last)

    @property
    def lifted(self) -> bool:
        """A 1 is put in front before the Transpose (see the class docstring)."""
        return not self.contiguous and len(self.shape) == 2

    @property
    def source_shape(self) -> tuple[int, ...]:
        return (1, *self.shape) if self.lifted else self.shape

    @property
    def perm(self) -> tuple[int, ...] | None:
        if self.contiguous:
            return None
        offset = int(self.lifted)
        kept = tuple(i + offset for i in range(len(self.shape)) if i not in self.axes)
        return tuple(range(offset)) + kept + tuple(a + offset for a in self.axes)

    @property
    def moved_shape(self) -> tuple[int, ...]:
        perm = self.perm
        return self.shape if perm is None else tuple(self.source_shape[i] for i in perm)

    @property
    def reduced_size(self) -> int:
        return math.prod(self.shape[a] for a in self.axes)

    @property
    def merged_shape(self) -> tuple[int, ...]:
        if self.contiguous:
            first, last = self.axes[0], self.axes[-1]
            return self.shape[:first] + (self.reduced_size,) + self.shape[last + 1 :]
        return (self.size // self.reduced_size, self.reduced_size)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def axis(self) -> int:
        """The single axis of `merged_shape` that holds the reduced coordinates."""
        return self.axes[0] if self.contiguous else 1

    @property
    def innermost(self) -> bool:
        """The merged axis is the last axis of `merged_shape`."""
        return self.axis == len(self.merged_shape) - 1

    def merge(self, b: GraphBuilder, x: str, reshaped: bool = False) -> str:
        """`x` of the plan's shape (`reshaped`: of any shape with its elements, reshaped first)."""
        perm = self.perm
        if reshaped:
            x = b.reshape(x, self.source_shape, "as_source", "in the plan's shape")
        elif self.lifted:
            x = b.reshape(x, self.source_shape, "lift", "a leading 1, so that a merging Reshape follows the Transpose")
        if perm is not None:
            x = b.transpose(x, perm, "move_axes_last", f"moves the reduced axes {list(self.axes)} to the end")
        if self.merged_shape != self.moved_shape:
            x = b.reshape(x, self.merged_shape, "merge_axes", f"joins the reduced axes {list(self.axes)} into one axis")
        return x

    def restore(self, b: GraphBuilder, y: str, out_sizes: tuple[int, ...]) -> str:
        """A reduction's result (`merged_shape` with 1 on the merged axis) -> the output's sizes."""
        kept = self.merged_shape[: self.axis] + (1,) + self.merged_shape[self.axis + 1 :]
        return y if kept == out_sizes else b.reshape(y, out_sizes, "output_shape", "restores the output's dimensions")

    def unmerge(self, b: GraphBuilder, y: str) -> str:
        """Inverse of `merge` for a tensor of `merged_shape` (same size on the merged axis)."""
        if self.merged_shape != self.moved_shape:
            y = b.reshape(y, self.moved_shape, "split_axes", "splits the merged axis again")
        perm = self.perm
        if perm is not None:
            inverse = [perm.index(i) for i in range(len(perm))]
            y = b.transpose(y, inverse, "restore_axes", "puts the axes back in their order")
        if self.lifted:
            y = b.reshape(y, self.shape, "unlift", "drops the leading 1")
        return y


def merge_axes_reference(x: np.ndarray, axes: Sequence[int]) -> tuple[np.ndarray, JointAxes]:
    """numpy: the input with its reduced axes moved last and flattened (row-major), 2-D."""
    plan = JointAxes(x.shape, tuple(sorted(axes)))
    kept = [i for i in range(x.ndim) if i not in plan.axes]
    moved = np.transpose(x, kept + list(plan.axes))
    return moved.reshape(-1, plan.reduced_size), plan


def unmerge_reference(y2d: np.ndarray, plan: JointAxes) -> np.ndarray:
    kept = [i for i in range(len(plan.shape)) if i not in plan.axes]
    order = kept + list(plan.axes)
    moved = y2d.reshape([plan.shape[i] for i in order])
    return np.transpose(moved, np.argsort(order))


# -- lowering: FLOAT32 values into integer types ----------------------------------------------


def float32_range(dtype: dtypes.DataType) -> tuple[float, float]:
    """The integer type's range as FLOAT32 values inside it (the minimum, 0 or -2**k, is exact;
    the maximum, 2**k - 1, is not beyond 16 bits: the largest float below it)."""
    lo, top = dtype.range  # a 4-bit type's own range, not its carrier's
    hi = np.float32(top)
    if int(hi) > top:
        hi = np.nextafter(hi, np.float32(0))
    return float(lo), float(hi)


def compute_type(dtype: dtypes.DataType) -> dtypes.DataType:
    """The integer type element-wise arithmetic runs in: INT32 for the 8/16-bit types (the EPs
    lack most ops on them), else the type itself."""
    return dtypes.INT32 if dtype.size < 4 else dtype


def wrap_int(v: int, dtype: np.dtype) -> int:
    """The exact integer v modulo 2**bits, as `dtype` (signed: two's complement) reads it."""
    bits = dtype.itemsize * 8
    v %= 1 << bits
    return v - (1 << bits) if dtype.kind == "i" and v >= 1 << (bits - 1) else v


def flag(b: GraphBuilder, cond: str, dtype: dtypes.DataType, step: str) -> str:
    """A BOOL as 1 or 0 of `dtype`, for select."""
    return b.cast(cond, dtype, step, "1 where it holds, else 0")


def select(b: GraphBuilder, which: str, x: str, y: str, step: str, doc: str) -> str:
    """x where the flag `which` is 1, y where it is 0: y + which * (x - y), exact in wrapping
    integer arithmetic. Where does this too, but the CUDA EP has no Where for 32/64-bit
    unsigned types."""
    diff = b.node("Sub", [x, y], f"{step}_diff", "x - y")
    return b.node("Add", [y, b.node("Mul", [which, diff], f"{step}_pick", "flag * (x - y)")], step, doc)


def saturating_cast(b: GraphBuilder, y: str, dtype: dtypes.DataType) -> str:
    """FLOAT32 `y` as the integer `dtype`, truncated toward zero and saturated to its range, as
    DirectML converts (ONNX's Cast leaves values out of range undefined)."""
    lo, hi = float32_range(dtype)
    f32 = dtypes.FLOAT32
    clipped = b.node("Clip", [y, b.scalar(lo, f32, "type_min"), b.scalar(hi, f32, "type_max")], "saturate", "saturated")
    out = b.cast(clipped, dtype, f"to_{dtype.name.lower()}", f"in {dtype}, truncated toward zero")
    top = int(np.iinfo(dtype.numpy).max)
    if hi == top:
        return out
    # the type's largest value has no FLOAT32 twin (2**31 - 1, 2**32 - 1): past the largest float below it, that value
    over = b.node("Greater", [y, b.scalar(hi, f32, "largest_float_below_max")], "over", f"above {dtype}'s range")
    return select(b, flag(b, over, dtype, "over_flag"), b.scalar(top, dtype, "max"), out, "saturate_max", "saturated")


def saturating_cast_reference(y: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """saturating_cast in numpy: truncated toward zero, saturated."""
    info = np.iinfo(dtype)
    return np.clip(np.trunc(y.astype(np.float64)), info.min, info.max).astype(dtype)


def scatter_with_spare_slot(
    b: GraphBuilder, data: str, indices: str, updates: str, size: int, sizes: Sequence[int], scatter_doc: str, slice_doc: str
) -> str:
    """ScatterElements along axis 0 into `data`, a flat array whose element `size` (and any after
    it) is a spare slot for the writes that must land nowhere, then its first `size` elements at
    `sizes` (SCATTER's out-of-range updates, MAX_UNPOOLING's indices past the output)."""
    scattered = b.node("ScatterElements", [data, indices, updates], "scatter", scatter_doc, axis=0)
    y = b.slice(scattered, [0], [0], [size], "output_flat", slice_doc)
    return b.reshape(y, list(sizes), "output", "at OutputTensor's Sizes")


PADDED_LIMIT = 2**31  # DirectML's padding arithmetic is 32-bit signed


def check_paddings(desc: OperatorDesc, sizes: Sequence[int]) -> None:
    """StartPadding and EndPadding that DirectML reads as written: each, and the padded size
    (`sizes`[i] + StartPadding[i] + EndPadding[i]), below 2**31. DirectML computes them as 32-bit
    signed integers, measured under Wine (DirectML 1.15): a StartPadding of 4294967295 is -1 there,
    a crop (CONVOLUTION, MAX_POOLING and AVERAGE_POOLING read their input from its second element
    on), and AVERAGE_POOLING_GRAD with StartPadding 2**31 - 2 passed gradients to elements no window
    reaches. dml2onnx lowers neither, so such a desc is refused."""
    for i, size in enumerate(sizes):
        start, end = desc["StartPadding"][i], desc["EndPadding"][i]
        for name, value in (("StartPadding", start), ("EndPadding", end)):
            if value >= PADDED_LIMIT:
                raise ModelError(
                    desc.at(name, i),
                    f"must be below 2**31, not {value}: DirectML computes paddings as 32-bit signed integers, where"
                    f" this is {value - 2**32} (a crop), and dml2onnx lowers no negative padding",
                )
        if size + start + end >= PADDED_LIMIT:
            raise ModelError(
                desc.at("StartPadding" if start >= end else "EndPadding", i),
                f"the padded size {size} + {start} + {end} must be below 2**31: DirectML computes it as a 32-bit"
                " signed integer, where it wraps",
            )
