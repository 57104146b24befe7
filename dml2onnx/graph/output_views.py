"""No Reshape produces a graph output (or an If branch's result) where the node before it can make
that shape itself.

Why: ONNX Runtime runs a Reshape as a view of its input, except where its output is a graph output,
which gets a buffer of its own: then the Reshape is a full copy. Measured on an H100 (ORT 1.31.1,
CUDA EP, 8x64x256x512 FLOAT32; benchmarks/patterns.py round 8): Gather alone 1961 GB/s, Gather then
a Reshape to the same shape 1169; DepthToSpace 1752, then a Reshape to the same shape 1078; the same
inside an If's branch, whose result the If then writes to its output: 1333 against 938. Most
lowerings end in a Reshape to OutputTensor's Sizes, so this pass runs on every lowered graph:

- a Reshape to the shape its input already has is dropped: the producer writes the result itself;
- a Reshape of the result of a node whose output shape follows from its inputs' shapes element for
  element (element-wise nodes whose inputs all have its output's shape or hold one element, Where,
  Cast, and Gather on axis 0 of a 1-D input, whose output has its indices' shape) moves onto that
  node's inputs, where it is a view: the node then makes the output's shape directly.

The values and types are unchanged; only where the reshaping happens moves. A value that another
node also reads (in this graph or a branch) is left alone, as are graph inputs and initializers.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import onnx
from onnx import helper, numpy_helper

# Nodes whose output has the shape of their (non-scalar) inputs, element for element
_ELEMENT_WISE = {
    "Abs", "Add", "And", "BitShift", "BitwiseAnd", "BitwiseNot", "BitwiseOr", "BitwiseXor", "Cast", "Ceil", "Div",
    "Equal", "Exp", "Floor", "Greater", "GreaterOrEqual", "IsInf", "IsNaN", "Less", "LessOrEqual", "Log", "Max",
    "Min", "Mod", "Mul", "Neg", "Not", "Or", "Pow", "Reciprocal", "Relu", "Round", "Sign", "Sqrt", "Sub", "Where",
    "Xor",
}  # fmt: skip


def apply(model: onnx.ModelProto) -> onnx.ModelProto:
    """The model with its output Reshapes moved (needs every value's static shape: the model is
    shape-inferred here first)."""
    inferred = onnx.shape_inference.infer_shapes(model, strict_mode=True)
    shapes = dict(_shapes(inferred.graph))
    _graph(model.graph, shapes, [o.name for o in model.graph.output])
    return model


def _shapes(graph: onnx.GraphProto) -> Iterator[tuple[str, tuple[int, ...]]]:
    """Every value's static shape, subgraphs' values included (names are unique across them)."""
    for v in [*graph.input, *graph.value_info, *graph.output]:
        dims = v.type.tensor_type.shape.dim
        if v.type.tensor_type.HasField("shape") and all(d.HasField("dim_value") for d in dims):
            yield v.name, tuple(d.dim_value for d in dims)
    for init in graph.initializer:
        yield init.name, tuple(init.dims)
    for node in graph.node:
        for sub in _subgraphs(node):
            yield from _shapes(sub)


def _subgraphs(node: onnx.NodeProto) -> Iterator[onnx.GraphProto]:
    for attr in node.attribute:
        if attr.type == onnx.AttributeProto.GRAPH:
            yield attr.g


def _graph(graph: onnx.GraphProto, shapes: dict[str, tuple[int, ...]], results: list[str]) -> None:
    for node in graph.node:
        for sub in _subgraphs(node):
            _graph(sub, shapes, [o.name for o in sub.output])
    for result in results:
        _result(graph, shapes, result)


def _reads(graph: onnx.GraphProto, value: str) -> int:
    """How many node inputs read `value`, in this graph and its subgraphs (outer-scope reads)."""
    count = 0
    for node in graph.node:
        count += list(node.input).count(value)
        for sub in _subgraphs(node):
            count += _reads(sub, value)
    return count


def _producer(graph: onnx.GraphProto, value: str) -> onnx.NodeProto | None:
    return next((n for n in graph.node if value in n.output), None)


def _result(graph: onnx.GraphProto, shapes: dict[str, tuple[int, ...]], result: str) -> None:
    reshape = _producer(graph, result)
    if reshape is None or reshape.op_type != "Reshape" or result not in shapes:
        return
    source = reshape.input[0]
    node = _producer(graph, source)
    # the source must be this graph's own value, read by the Reshape alone, and not a result itself
    if node is None or _reads(graph, source) != 1 or any(o.name == source for o in graph.output):
        return
    want = shapes[result]
    if shapes.get(source) == want:
        node.output[list(node.output).index(source)] = result
    elif _reshapes_inputs(graph, node, shapes, want):
        node.output[0] = result
    else:
        return
    graph.node.remove(reshape)
    if len(reshape.input) > 1 and _reads(graph, reshape.input[1]) == 0:  # its shape, now unread
        unread = [t for t in graph.initializer if t.name == reshape.input[1]]
        for t in unread:
            graph.initializer.remove(t)


def _reshapes_inputs(
    graph: onnx.GraphProto, node: onnx.NodeProto, shapes: dict[str, tuple[int, ...]], want: tuple[int, ...]
) -> bool:
    """Reshape the inputs of `node` so that it makes shape `want` itself, where its output shape
    follows its inputs' element for element; False (nothing changed) elsewhere."""
    if len(node.output) != 1 or node.output[0] not in shapes:
        return False
    out = shapes[node.output[0]]
    if node.op_type in _ELEMENT_WISE:
        moved = [i for i, v in enumerate(node.input) if v and shapes.get(v) == out]
        ok = all(
            not v or (v in shapes and (shapes[v] == out or (np.prod(shapes[v]) == 1 and len(shapes[v]) <= len(want))))
            for v in node.input
        )
    elif node.op_type == "Gather" and _axis(node) == 0 and len(shapes.get(node.input[0], ())) == 1:
        moved, ok = [1], node.input[1] in shapes
    else:
        return False
    if not ok or not moved:
        return False
    target = f"{node.name}/result_shape"
    graph.initializer.append(numpy_helper.from_array(np.array(want, np.int64), target))
    for i in moved:
        view = f"{node.name}/input{i}_view"
        graph.node.insert(
            list(graph.node).index(node),
            helper.make_node("Reshape", [node.input[i], target], [view], name=view, doc_string="the result's shape, as a view"),
        )
        node.input[i] = view
    return True


def _axis(node: onnx.NodeProto) -> int:
    return next((a.i for a in node.attribute if a.name == "axis"), 0)
