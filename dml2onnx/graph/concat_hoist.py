"""The `cuda` target's whole-model rewrite of a Concat whose every input is the result of one and the
same element-wise operator: the operator once, after the Concat of its inputs. Each element goes
through the same arithmetic as before (an element-wise operator's result for an element depends only
on that element and on the operator's attributes and scalar constants), so the values are the same
bit for bit; only the number of kernels drops. SqueezeNet's fire modules are the case: DirectML's
graph holds each expand convolution with its RELU fused, and the lowered graph had a Relu per
convolution before each Concat (eight kernels fewer over the network at batch 1, where a kernel's
launch costs about as much as its arithmetic)."""

from __future__ import annotations

import math

import onnx

from dml2onnx.graph import views

# operators whose result for an element depends only on that element (and attributes, and the
# scalar constants after the first input)
ELEMENT_WISE = views.ONE_INPUT_ELEMENT_WISE | {"Cast", "Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "Clip"}


def hoist(model: onnx.ModelProto) -> onnx.ModelProto:
    """The model with each such Concat rewritten; it must carry its value types
    (onnx.shape_inference.infer_shapes), and is changed in place."""
    g = model.graph
    uses = views.value_uses(g)
    made_by = {o: n for n in g.node for o in n.output}
    scalars = {t.name for t in g.initializer if math.prod(t.dims) == 1}
    types = {vi.name: vi.type.tensor_type.elem_type for vi in (*g.input, *g.value_info, *g.output)}
    types.update({t.name: t.data_type for t in g.initializer})
    gone: set[int] = set()
    after: dict[int, list[onnx.NodeProto]] = {}
    for concat in g.node:
        if concat.op_type != "Concat" or concat.domain or len(concat.input) < 2:
            continue
        parts = [made_by.get(v) for v in concat.input]
        first = parts[0]
        if first is None or not _hoistable(first, scalars):
            continue
        if not all(
            p is not None
            and id(p) not in gone
            and _same_operator(p, first)
            and uses[p.output[0]] == 1
            and types.get(p.input[0]) == types.get(first.input[0]) is not None
            for p in parts
        ):
            continue
        joined = f"{concat.output[0]} (before {first.op_type})"
        inner = onnx.NodeProto()
        inner.CopyFrom(concat)
        del inner.input[:]
        inner.input.extend(p.input[0] for p in parts if p is not None)
        inner.output[0] = joined
        once = onnx.NodeProto()
        once.CopyFrom(first)
        once.input[0], once.output[0] = joined, concat.output[0]
        once.name = f"{concat.name or concat.output[0]} ({first.op_type} once)"
        gone.update(id(p) for p in parts)
        gone.add(id(concat))
        after[id(concat)] = [inner, once]
    if after:
        views.splice(g, gone, after)
    return model


def _hoistable(n: onnx.NodeProto, scalars: set[str]) -> bool:
    """An element-wise operator of one tensor input (the first), any others scalar constants."""
    return (
        n.op_type in ELEMENT_WISE
        and not n.domain
        and len(n.output) == 1
        and all(v in scalars or v == "" for v in n.input[1:])
        and not any(a.HasField("g") or len(a.graphs) for a in n.attribute)
    )


def _same_operator(n: onnx.NodeProto, first: onnx.NodeProto) -> bool:
    return (
        n.op_type == first.op_type
        and n.domain == first.domain
        and list(n.input[1:]) == list(first.input[1:])
        and sorted(a.SerializeToString() for a in n.attribute) == sorted(a.SerializeToString() for a in first.attribute)
    )
