"""The `cuda` target's whole-model rewrite of a Reshape after a Concat whose every input is itself a
Reshape: the inputs are reshaped straight to the result's layout and the Concat joins them along
the axis that layout gives the joined one, so the Reshape after it goes. A detection head's boxes,
DirectML's [1, 1, anchors, 8] views of each scale joined and viewed as the [1, anchors, 8] output,
are the case: a Reshape into a graph output is a copy of the whole tensor on the CUDA EP. The values
are the same; only views move."""

from __future__ import annotations

import math

import numpy as np
import onnx
from onnx import numpy_helper

from dml2onnx.graph import views


def push(model: onnx.ModelProto) -> onnx.ModelProto:
    """The model with each such Reshape moved before its Concat; it must carry its shapes
    (onnx.shape_inference.infer_shapes), and is changed in place."""
    g = model.graph
    shapes = views.static_shapes(g)
    consts = {t.name: t for t in g.initializer}
    made_by = {o: n for n in g.node for o in n.output}
    uses = views.value_uses(g)
    outputs = {o.name for o in g.output}
    gone: set[int] = set()
    reshaped: set[str] = set()  # values whose recorded shapes no longer hold
    at: dict[int, list[onnx.NodeProto]] = {}
    inits: list[onnx.TensorProto] = []
    for after in g.node:
        if after.op_type != "Reshape" or after.domain or after.input[1] not in consts:
            continue
        concat = made_by.get(after.input[0])
        if concat is None or concat.op_type != "Concat" or concat.domain or uses[after.input[0]] != 1:
            continue
        if after.input[0] in outputs or shapes.get(after.input[0]) is None or shapes.get(after.output[0]) is None:
            continue
        joined, target = shapes[after.input[0]], shapes[after.output[0]]
        if 0 in target:  # an empty result: a 0 in a Reshape's shape would copy the input's size instead
            continue
        axis = next((a.i for a in concat.attribute if a.name == "axis"), 0) % len(joined)
        k = _same_axis(joined, axis, target)
        parts = [made_by.get(v) for v in concat.input]
        if k is None or any(p is None or p.op_type != "Reshape" or p.domain or uses[p.output[0]] != 1 for p in parts):
            continue
        for i, p in enumerate(parts):
            assert p is not None
            shape = list(target)
            shape[k] = shapes[p.output[0]][axis]
            name = f"{after.output[0]} (part {i} shape)"
            inits.append(numpy_helper.from_array(np.array(shape, np.int64), name))
            r = onnx.NodeProto()
            r.CopyFrom(p)
            r.input[1] = name
            reshaped.add(r.output[0])
            at[id(p)] = [r]
        joined_node = onnx.NodeProto()
        joined_node.CopyFrom(concat)
        for a in joined_node.attribute:
            if a.name == "axis":
                a.i = k
        joined_node.output[0] = after.output[0]
        at[id(concat)] = [joined_node]
        gone.add(id(after))
    if not at:
        return model
    views.splice(g, gone, at)
    kept_info = [vi for vi in g.value_info if vi.name not in reshaped]
    del g.value_info[:]
    g.value_info.extend(kept_info)
    g.initializer.extend(inits)
    views.drop_unread_constants(g)
    return model


def _same_axis(joined: tuple[int, ...], axis: int, target: tuple[int, ...]) -> int | None:
    """The axis of `target` that holds `joined`'s `axis` whole (the same elements before it and after
    it, in order), or None."""
    before, after = math.prod(joined[:axis]), math.prod(joined[axis + 1 :])
    for k, size in enumerate(target):
        if size == joined[axis] and math.prod(target[:k]) == before and math.prod(target[k + 1 :]) == after:
            return k
    return None
