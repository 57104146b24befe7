"""A capture as one ONNX model: its DxDispatch chain (the partitions lowered by dml2onnx, the nodes
outside them as they are) composed into one graph (`export --single-graph`) behind the original
model's inputs and outputs. `dml2onnx capture` writes it as `<stem>.lowered.onnx`; `dml2onnx
bench` times it against the original."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from dml2onnx.formats import dxdispatch
from dml2onnx.graph import (
    axis_gather,
    concat_hoist,
    concat_views,
    cuda_fusions,
    inference,
    leading_ones,
    rename,
    slice_map_concat,
    views,
)
from dml2onnx.run import compose


def constant_value(model: onnx.ModelProto, name: str) -> np.ndarray | None:
    """The value of `name` where the model holds it as a constant (an initializer, a Constant
    node); None otherwise."""
    for t in model.graph.initializer:
        if t.name == name:
            return numpy_helper.to_array(t)
    for n in model.graph.node:
        if n.op_type == "Constant" and not n.domain and list(n.output) == [name] and len(n.attribute) == 1:
            a = n.attribute[0]
            value = helper.get_attribute_value(a)
            if a.name == "value":
                return numpy_helper.to_array(value)
            kinds = {"value_float": np.float32, "value_floats": np.float32, "value_int": np.int64, "value_ints": np.int64}
            if a.name in kinds:
                return np.array(value, kinds[a.name])
    return None


def _emitted(model_json: Path) -> list[tuple[str, list[int] | None]]:
    """The resources the chain's print and writeFile commands emit, in order (the single graph's
    outputs, one each), with the dimensions a writeFile writes its resource at."""
    commands = json.loads(model_json.read_text()).get("commands", [])
    return [(c["resource"], c.get("dimensions")) for c in commands if c.get("type") in ("writeFile", "print")]


def whole_model(model_json: Path, original: onnx.ModelProto, target: str = "portable") -> onnx.ModelProto:
    """The capture's DxDispatch model as one ONNX graph (export --single-graph: its resources are
    flat buffers) behind the original model's inputs and outputs: each input reshaped (BOOL as
    the UINT8 DirectML holds) into its buffer, each output's buffer back to its shape (the one the
    chain writes it at, where the model leaves a dimension free) and type (DirectML's UINT64
    indices as the model's INT64, BOOL from UINT8). A buffer the chain reads before anything writes
    it (the bytes past a small output, kept) starts as zeros, as the chain's resource does; an
    output that is a model input or a constant is that input or constant itself."""
    chain = compose.single_graph(dxdispatch.load(model_json), original.graph.name or "model", target=target)
    g = chain.graph
    renames = {vi.name: f"{vi.name} (buffer)" for vi in (*g.input, *g.output)}
    nodes = rename.renamed_nodes(g, renames)
    emitted = _emitted(model_json)
    # each resource's value where the chain emits it (`y@3` where `y` also names its initial contents)
    emits = {resource: vi for (resource, _), vi in zip(emitted, g.output, strict=True)}
    written = {resource: dims for resource, dims in emitted if dims is not None}
    constants = {t.name for t in original.graph.initializer}
    model_inputs = [vi for vi in original.graph.input if vi.name not in constants]
    input_names = {vi.name for vi in model_inputs}
    buffer_types = {r: vi.type.tensor_type.elem_type for r, vi in emits.items()}
    buffer_counts = {r: int(np.prod([d.dim_value for d in vi.type.tensor_type.shape.dim])) for r, vi in emits.items()}
    flat = numpy_helper.from_array(np.array([-1], np.int64), "(flat)")
    start = numpy_helper.from_array(np.array([0], np.int64), "(start)")
    adapters_in, adapters_out, extra = [], [], [flat, start]
    for vi in model_inputs:
        source = vi.name
        if vi.type.tensor_type.elem_type == TensorProto.BOOL:
            source = f"{vi.name} (uint8)"
            adapters_in.append(helper.make_node("Cast", [vi.name], [source], name=source, to=TensorProto.UINT8))
        adapters_in.append(helper.make_node("Reshape", [source, flat.name], [renames[vi.name]], name=renames[vi.name]))
    for vi in g.input:  # read before written, not a model input: a constant output's value, else zeros
        if vi.name in input_names:
            continue
        fixed = constant_value(original, vi.name)
        if fixed is not None:
            extra.append(numpy_helper.from_array(fixed.reshape(-1), renames[vi.name]))
            continue
        dims = [d.dim_value for d in vi.type.tensor_type.shape.dim]
        shape = numpy_helper.from_array(np.array(dims, np.int64), f"{renames[vi.name]} shape")
        zero = helper.make_tensor("zero", vi.type.tensor_type.elem_type, [1], [0])
        extra.append(shape)
        zeros = helper.make_node("ConstantOfShape", [shape.name], [renames[vi.name]], name=renames[vi.name], value=zero)
        adapters_in.append(zeros)
    for vi in original.graph.output:
        if vi.name in input_names:
            continue  # the graph output is the input itself
        fixed = constant_value(original, vi.name)
        if vi.name not in emits and fixed is not None:
            extra.append(numpy_helper.from_array(fixed, vi.name))
            continue
        dims = [d.dim_value if d.HasField("dim_value") else 0 for d in vi.type.tensor_type.shape.dim]
        if 0 in dims and vi.name in written:
            dims = written[vi.name]
        shape = numpy_helper.from_array(np.array(dims, np.int64), f"{vi.name} (shape)")
        extra.append(shape)
        want = vi.type.tensor_type.elem_type
        shaped = vi.name if buffer_types.get(vi.name, want) == want else f"{vi.name} (as held)"
        source = renames[emits[vi.name].name]
        count = int(np.prod(dims))
        if buffer_counts.get(vi.name, count) > count:  # a buffer of whole 4-byte words: its head
            ends = numpy_helper.from_array(np.array([count], np.int64), f"{vi.name} (count)")
            extra.append(ends)
            head = f"{vi.name} (elements)"
            adapters_out.append(helper.make_node("Slice", [source, "(start)", ends.name], [head], name=head))
            source = head
        adapters_out.append(helper.make_node("Reshape", [source, shape.name], [shaped], name=shaped))
        if shaped != vi.name:  # BOOL held as UINT8, INT64 indices as DirectML's UINT64: the same values
            adapters_out.append(helper.make_node("Cast", [shaped], [vi.name], name=vi.name, to=want))
    graph = helper.make_graph(
        adapters_in + nodes + adapters_out,
        g.name,
        model_inputs,
        list(original.graph.output),
        [*g.initializer, *extra],
        doc_string=f"{g.doc_string}, behind the original model's inputs and outputs",
    )
    whole = helper.make_model(graph, opset_imports=list(chain.opset_import), ir_version=chain.ir_version)
    for prop in chain.metadata_props:
        whole.metadata_props.add(key=prop.key, value=prop.value)
    # the buffers' views between the partitions, and the adapters, fold away (graph/views.py)
    whole = views.fold(inference.infer_shapes(whole))
    views.drop_dead_nodes(whole.graph)  # what DirectML writes that the model does not return
    views.drop_unread_constants(whole.graph)
    if target == "cuda":  # fewer nodes for the CUDA EP to dispatch, the same values (each module's doc)
        for rewrite in (
            axis_gather.rewrite,
            concat_hoist.hoist,
            slice_map_concat.rewrite,
            leading_ones.drop,
            concat_views.push,
            cuda_fusions.fuse,
        ):
            whole = rewrite(inference.infer_shapes(whole))
    inference.check_model(whole)
    return whole
