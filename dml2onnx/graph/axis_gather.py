"""The `cuda` target's whole-model rewrite of a view that only reorders the entries of one axis
(a Reshape that splits the axis, a Transpose within the split, a Reshape back: ShuffleNet's channel
shuffle) into one Gather along that axis with the order as its indices. DirectML writes the shuffle
as a strided view of a copy; lowered, it was three nodes (four with the activation DirectML fuses
into the producer between them), and at batch 1 every node ONNX Runtime dispatches costs about as
much as its kernel. Element-wise operators of one input between the views run before the Gather,
on the tensor as it was: they commute with any reordering. The values are the same bit for bit; a
Gather copies its elements as a Transpose does."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import onnx
from onnx import numpy_helper

from dml2onnx.graph import views


def rewrite(model: onnx.ModelProto) -> onnx.ModelProto:
    """The model with each such view made one Gather; it must carry its shapes
    (onnx.shape_inference.infer_shapes), and is changed in place."""
    g = model.graph
    shapes = views.static_shapes(g)
    consts = {t.name for t in g.initializer}
    made_by = {o: n for n in g.node for o in n.output}
    uses = views.value_uses(g)
    outputs = {o.name for o in g.output}
    gone: set[int] = set()
    at: dict[int, list[onnx.NodeProto]] = {}
    inits: list[onnx.TensorProto] = []

    def private(v: str) -> bool:
        """A value only its one reader sees."""
        return uses[v] == 1 and v not in outputs

    for back in g.node:
        if back.op_type != "Reshape" or back.domain or back.input[1] not in consts:
            continue
        chain = _chain_before(back, made_by, consts, private)
        if chain is None:
            continue
        split, element_wise, transpose = chain
        source, viewed, result = split.input[0], shapes.get(split.output[0]), shapes.get(back.output[0])
        if shapes.get(source) is None or viewed is None or result is None:
            continue
        found = one_axis_order(shapes[source], viewed, views.transpose_perm(transpose, len(viewed)), result)
        if found is None:
            continue
        axis, order = found
        value = source
        for i, n in enumerate(element_wise):  # in their order, on the tensor as it was
            moved = onnx.NodeProto()
            moved.CopyFrom(n)
            moved.input[0] = value
            moved.output[0] = value = f"{back.output[0]} (step {i}, {n.op_type}, before the reorder)"
            at.setdefault(id(split), []).append(moved)
            gone.add(id(n))
        indices = f"{back.output[0]} (order along axis {axis})"
        inits.append(numpy_helper.from_array(order, indices))
        gather = onnx.helper.make_node(
            "Gather",
            [value, indices],
            [back.output[0]],
            name=f"{back.output[0]} (reordered)",
            doc_string=f"{split.name}, {transpose.name} and {back.name}: axis {axis}'s entries reordered",
            axis=axis,
        )
        at.setdefault(id(split), []).append(gather)
        gone.update({id(transpose), id(back)})
    if not at:
        return model
    views.splice(g, gone, at)
    g.initializer.extend(inits)
    views.drop_unread_constants(g)
    return model


def _chain_before(
    back: onnx.NodeProto,
    made_by: dict[str, onnx.NodeProto],
    consts: set[str],
    private: Callable[[str], bool],
) -> tuple[onnx.NodeProto, list[onnx.NodeProto], onnx.NodeProto] | None:
    """(the splitting Reshape, the element-wise nodes in their order, the Transpose) that make the
    Reshape `back`'s input through values nothing else reads, or None: Reshape, element-wise
    operators, Transpose, element-wise operators, `back`."""
    element_wise: list[onnx.NodeProto] = []
    transpose = None
    value = back.input[0]
    while True:
        n = made_by.get(value)
        if not private(value) or n is None or n.domain:
            return None
        if n.op_type == "Transpose" and transpose is None:
            transpose = n
        elif n.op_type in views.ONE_INPUT_ELEMENT_WISE and len(n.input) == 1 and len(n.output) == 1:
            element_wise.append(n)
        elif n.op_type == "Reshape" and transpose is not None and n.input[1] in consts:
            return n, element_wise[::-1], transpose
        else:
            return None
        value = n.input[0]


def one_axis_order(
    source: tuple[int, ...], split: tuple[int, ...], perm: list[int], result: tuple[int, ...]
) -> tuple[int, np.ndarray] | None:
    """(axis, order) where viewing `source` as `split`, transposing by `perm` and viewing the result
    as `result` takes entry order[i] of the axis as its entry i and leaves the rest in place (the
    result is Gather(source, order, axis)); None for any other view, or one that reorders nothing."""
    if tuple(result) != tuple(source) or math.prod(source) == 0:
        return None
    kept = [i for i, d in enumerate(split) if d != 1]  # dimensions of 1 move nothing
    where = {old: new for new, old in enumerate(kept)}
    moved = [where[i] for i in perm if i in where]  # moved[j]: the split dimension at position j after
    dims = [split[i] for i in kept]
    blocks: list[tuple[int, int, int]] = []  # (source axis, first, end) over the split dimensions
    start = 0
    for axis, size in enumerate(source):
        if size == 1:
            continue
        end, product = start, 1
        while end < len(dims) and product < size:
            product *= dims[end]
            end += 1
        if product != size:
            return None  # the split merges axes
        blocks.append((axis, start, end))
        start = end
    if start != len(dims):
        return None
    reordered = [(axis, first, end) for axis, first, end in blocks if moved[first:end] != list(range(first, end))]
    if len(reordered) != 1 or any(sorted(moved[first:end]) != list(range(first, end)) for _, first, end in blocks):
        return None
    axis, first, end = reordered[0]
    local = [m - first for m in moved[first:end]]
    return axis, np.arange(source[axis], dtype=np.int64).reshape(dims[first:end]).transpose(local).reshape(-1)
