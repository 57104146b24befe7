"""ONNX shape inference and the checker on a model without its weights' bytes.

onnx.shape_inference.infer_shapes and onnx.checker.check_model serialize the whole model for their
C++ side: a network's weights each time (VGG-19's 548 MB: about 0.4 s per call, and lowering a
captured graph calls them once per operator). Neither reads a large initializer's values (shape
inference reads the values of small integer tensors: Reshape's shape, Slice's starts ...), so they
run on a skeleton of the model here, each large initializer a graph input of its type and sizes,
and the types and shapes inferred are copied back onto the model itself."""

from __future__ import annotations

import math

import onnx
from onnx import helper

# Initializers of more elements than this are read by their type and sizes alone (counted from
# their dims: a message's ByteSize() or raw_data would go through all of its bytes).
LARGE_ELEMENTS = 1 << 14


def _large(t: onnx.TensorProto) -> bool:
    return t.data_location != onnx.TensorProto.EXTERNAL and math.prod(t.dims) > LARGE_ELEMENTS


def skeleton(model: onnx.ModelProto) -> onnx.ModelProto:
    """The model (itself, where nothing is large) with each large initializer of its main graph a
    graph input of the same type and sizes instead."""
    graph = model.graph
    if not any(_large(t) for t in graph.initializer):
        return model
    listed = {i.name for i in graph.input}
    out = onnx.ModelProto()
    out.ir_version = model.ir_version
    out.opset_import.extend(model.opset_import)
    out.functions.extend(model.functions)
    g = out.graph
    g.name = graph.name
    g.node.extend(graph.node)
    g.input.extend(graph.input)
    g.output.extend(graph.output)
    g.value_info.extend(graph.value_info)
    g.sparse_initializer.extend(graph.sparse_initializer)
    for t in graph.initializer:
        if not _large(t):
            g.initializer.append(t)
        elif t.name not in listed:
            g.input.append(helper.make_tensor_value_info(t.name, t.data_type, list(t.dims)))
    return out


def infer_shapes(model: onnx.ModelProto, **options: bool) -> onnx.ModelProto:
    """onnx.shape_inference.infer_shapes(model, **options), the model's weights not passed through
    it: `model` itself is returned, its value_info and outputs as inference left them (where it
    holds no large initializer, inference's own new model)."""
    light = skeleton(model)
    inferred = onnx.shape_inference.infer_shapes(light, **options)
    if light is model:
        return inferred
    for field in ("value_info", "output"):
        values = getattr(model.graph, field)
        del values[:]
        values.extend(getattr(inferred.graph, field))
    return model


def check_model(model: onnx.ModelProto, full_check: bool = False) -> None:
    """onnx.checker.check_model on the model's skeleton (its large initializers' values unread)."""
    onnx.checker.check_model(skeleton(model), full_check=full_check)
