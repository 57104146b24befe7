"""A validated desc -> a checker-clean onnx.ModelProto with static shapes and exact types."""

from __future__ import annotations

import json

import numpy as np
import onnx
from onnx import helper

from dml2onnx import __version__
from dml2onnx.core import featurelevels
from dml2onnx.core.desc import OperatorDesc
from dml2onnx.core.errors import UsageError
from dml2onnx.graph import inference, output_views, strided
from dml2onnx.graph.builder import DEFAULT_OPSET, MAX_OPSET, MIN_OPSET, GraphBuilder
from dml2onnx.graph.targets import TARGETS
from dml2onnx.lowering import choices
from dml2onnx.ops import registry


def validate(desc: OperatorDesc) -> None:
    """The page's tensor support table at the desc's feature level, then the operator's rules."""
    featurelevels.check_tensors(desc)
    registry.family(desc.schema.name).validate(desc)


def input_names(desc: OperatorDesc) -> list[str]:
    """The desc's input bind points that are set, in struct order: the graph's inputs (a tensor
    array's elements as `InputTensors[0]`, ...)."""
    return list(desc.inputs)


def graph_output(desc: OperatorDesc, field: str) -> str:
    """The graph output holding an output: OutputTensor for the operator's first output field
    (OutputGradientTensor included, so every single-output graph reads alike), else the bind
    point's own name (OutputIndicesTensor, OutputMeanTensor, SPLIT's OutputTensors[0], ...)."""
    return "OutputTensor" if field == desc.output and "[" not in field else field


def by_field(desc: OperatorDesc, values: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """A lowered graph's outputs (Session.run_all: by graph output name) by output field."""
    return {field: values[graph_output(desc, field)] for field in desc.outputs}


def lower(
    desc: OperatorDesc,
    name: str,
    opset: int = DEFAULT_OPSET,
    target: str = "portable",
    variant: str | None = None,
    buffer_inputs: bool = False,
) -> onnx.ModelProto:
    """Lower one validated desc. `name` (the dispatchable) prefixes every node name. With
    `buffer_inputs`, each input is its flat buffer (TotalTensorSizeInBytes of elements) and the
    graph applies the tensor's strides itself."""
    if not MIN_OPSET <= opset <= MAX_OPSET:
        raise UsageError(f"--opset must be in [{MIN_OPSET}, {MAX_OPSET}], got {opset}")
    if target not in TARGETS:
        raise UsageError(f"--target must be one of {', '.join(TARGETS)}, got {target!r}")
    chosen = choices.resolve(desc, target, opset, variant)
    b = GraphBuilder(name, opset, TARGETS[target], chosen)
    family = registry.family(desc.schema.name)
    # An element-wise operator broadcasts its inputs itself: a buffer input of stride 0 on some
    # axes stays compact (read once, as DirectML reads it), and only the result is expanded.
    broadcasts = buffer_inputs and family.broadcasts
    values, shapes = {}, []
    for n in input_names(desc):
        t = desc.tensor(n)
        if buffer_inputs:
            flat = b.add_input(n, t.data_type, [t.buffer_elements])
            values[n] = strided.read(b, flat, t, t.buffer_elements, f"{n}_view", expand=not broadcasts)
        else:
            values[n] = b.add_input(n, t.data_type, t.sizes)
        b.shapes[values[n]] = strided.compact_sizes(t) if broadcasts else t.sizes
        shapes.append(b.shapes[values[n]])
    results = registry.by_output(desc, family.lower(desc, b, values))
    for field, result in results.items():
        out = desc.tensor(field)
        if broadcasts and tuple(np.broadcast_shapes(*shapes)) != out.sizes:
            result = b.node(
                "Expand", [result, b.i64(list(out.sizes), "output_sizes")], "broadcast", "the result at the output's sizes"
            )
        b.set_output(result, graph_output(desc, field), out.data_type, out.sizes)
    graph = b.graph(name, f"{desc.schema.full_name} lowered by dml2onnx {__version__}")
    props = {
        "dml2onnx.operator": desc.schema.full_name,
        "dml2onnx.target": target,
        "dml2onnx.lowering": chosen,
        "dml2onnx.inputs": "buffers" if buffer_inputs else "tensors",
        "dml2onnx.opset": str(opset),
        "dml2onnx.desc": json.dumps(desc.source, sort_keys=True),
    }
    return checked(output_views.apply(model_of(graph, opset, f"DirectML {desc.schema.full_name} '{name}'", props)))


def model_of(graph: onnx.GraphProto, opset: int, doc: str, props: dict[str, str]) -> onnx.ModelProto:
    """`graph` as a dml2onnx model of the default ONNX domain at `opset`, with metadata `props`
    (and dml2onnx.version)."""
    opsets = [helper.make_opsetid("", opset)]
    model = helper.make_model(
        graph,
        opset_imports=opsets,
        producer_name="dml2onnx",
        producer_version=__version__,
        ir_version=helper.find_min_ir_version_for(opsets),
    )
    model.doc_string = doc
    helper.set_model_props(model, {"dml2onnx.version": __version__, **props})
    return model


# What checked() raises for a graph that is not valid ONNX.
INVALID_GRAPH = (onnx.checker.ValidationError, onnx.shape_inference.InferenceError)


def checked(model: onnx.ModelProto) -> onnx.ModelProto:
    """Strict shape inference (every edge typed and shaped) and the checker's full check (on the
    model's skeleton: graph/inference.py)."""
    model = inference.infer_shapes(model, check_type=True, strict_mode=True)
    inference.check_model(model, full_check=True)
    return model
