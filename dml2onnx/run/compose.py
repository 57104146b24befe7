"""Whole-model graphs: a desc as one model-local ONNX function (`export --functions`), and a
DxDispatch command list as one ONNX graph (`export --single-graph`)."""

from __future__ import annotations

import json

import numpy as np
import onnx
from onnx import helper, numpy_helper

from dml2onnx import __version__, lowering
from dml2onnx.core import dtypes
from dml2onnx.core.errors import ModelError, first_line
from dml2onnx.core.tensor import TensorDesc
from dml2onnx.formats import onnx_dispatchable
from dml2onnx.formats.dxdispatch import Binding, Dispatch, Dispatchable, Model
from dml2onnx.graph import rename, strided
from dml2onnx.graph.builder import DEFAULT_OPSET, GraphBuilder

FUNCTION_DOMAIN = "dml"


def as_function(model: onnx.ModelProto) -> onnx.ModelProto:
    """The lowered graph of one desc as a function `dml.<OPERATOR>` called by a single node, so
    that Netron shows one node per DirectML operator that opens into its subgraph."""
    g = model.graph
    props = {p.key: p.value for p in model.metadata_props}
    op = props["dml2onnx.operator"].removeprefix("DML_OPERATOR_")
    constants = [helper.make_node("Constant", [], [t.name], name=t.name, value=t) for t in g.initializer]
    onnx_opsets = [o for o in model.opset_import if o.domain == ""]
    function = helper.make_function(
        FUNCTION_DOMAIN,
        op,
        [i.name for i in g.input],
        [o.name for o in g.output],
        constants + list(g.node),
        onnx_opsets,
        doc_string=f"DML_OPERATOR_{op} as lowered by dml2onnx {__version__}: {props['dml2onnx.desc']}",
    )
    call = helper.make_node(
        op,
        [i.name for i in g.input],
        [o.name for o in g.output],
        name=g.name,
        domain=FUNCTION_DOMAIN,
        doc_string=f"DML_OPERATOR_{op} (open the function for its ONNX subgraph)",
    )
    graph = helper.make_graph([call], g.name, list(g.input), list(g.output), doc_string=g.doc_string)
    out = helper.make_model(
        graph,
        opset_imports=[*onnx_opsets, helper.make_opsetid(FUNCTION_DOMAIN, 1)],
        functions=[function],
        producer_name=model.producer_name,
        producer_version=model.producer_version,
        ir_version=model.ir_version,
    )
    out.doc_string = model.doc_string
    helper.set_model_props(out, props | {"dml2onnx.functions": "true"})
    return lowering.checked(out)


class _SingleGraph:
    """Builds one graph from the commands: each resource is a flat 1-D tensor of its own element
    type, read through Slice/Reshape and written back (Concat where only part is written)."""

    def __init__(self, model: Model, opset: int, target: str, functions: bool) -> None:
        self.model, self.opset, self.target, self.functions = model, opset, target, functions
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[onnx.TensorProto] = []
        self.inputs: list[onnx.ValueInfoProto] = []
        self.outputs: list[onnx.ValueInfoProto] = []
        self.function_protos: dict[str, onnx.FunctionProto] = {}
        self.current: dict[str, str] = {}  # resource -> the value holding its contents now
        self.dispatched: dict[str, int] = {}
        self.domains: dict[str, int] = {}  # opsets of other domains the inlined ONNX graphs use
        self.written: list[tuple[Binding, str, TensorDesc, str]] = []

    def resource_type(self, name: str, path: tuple[str | int, ...]) -> dtypes.DataType:
        res = self.model.resources[name]
        if res.data_type is None:
            raise ModelError(path, f"--single-graph needs a data type for resource '{name}' (it is UNKNOWN)")
        return res.data_type

    def length(self, name: str) -> int:
        return self.model.resources[name].length

    def initial(self, name: str, path: tuple[str | int, ...]) -> str:
        """The graph input holding the resource's contents before any command."""
        if not any(i.name == name for i in self.inputs):
            t = self.resource_type(name, path)
            self.inputs.append(helper.make_tensor_value_info(name, t.onnx, [self.length(name)]))
        return name

    def read(self, name: str, path: tuple[str | int, ...]) -> str:
        return self.current.get(name) or self.initial(name, path)

    def const(self, name: str, values: list[int]) -> str:
        self.initializers.append(numpy_helper.from_array(np.array(values, np.int64), name))
        return name

    def node(self, op: str, inputs: list[str], output: str, doc: str, name: str | None = None, **attrs: object) -> str:
        self.nodes.append(helper.make_node(op, inputs, [output], name=name or output, doc_string=doc, **attrs))
        return output

    def view(self, prefix: str, field: str, flat: str, binding: Binding, tensor: TensorDesc, total: int) -> str:
        start, count = binding.offset * 8 // tensor.data_type.element_bits, tensor.element_count
        if not tensor.packed:  # the tensor's buffer, then its strides
            b = GraphBuilder(prefix, self.opset)
            where = f"'{binding.resource}' from element {start}"
            region = b.slice(flat, [0], [start], [start + tensor.span], f"{field}_buffer", where)
            value = strided.read(b, region, tensor, tensor.span, field)
            self.nodes.extend(b.nodes)
            self.initializers.extend(b.initializers)
            return value
        sizes = tensor.sizes
        if (start, count) != (0, total):
            flat = self.node(
                "Slice",
                [flat, self.const(f"{prefix}/{field}_start", [start]), self.const(f"{prefix}/{field}_end", [start + count])],
                f"{prefix}/{field}_slice",
                f"elements {start}..{start + count - 1} of '{binding.resource}'",
            )
        return self.node(
            "Reshape",
            [flat, self.const(f"{prefix}/{field}_sizes", list(sizes))],
            f"{prefix}/{field}",
            f"'{binding.resource}' seen as {field}",
        )

    def dispatch(self, index: int, cmd: Dispatch) -> None:
        d = self.model.dispatchables[cmd.dispatchable]
        k = self.dispatched.get(d.name, 0)
        self.dispatched[d.name] = k + 1
        prefix = d.name if k == 0 else f"{d.name}#{k + 1}"
        path = ("commands", index, "bindings")
        if not isinstance(d, Dispatchable):
            self._inline(index, cmd, d, prefix)
            return
        lowered = lowering.lower(d.desc, prefix, self.opset, self.target)
        if self.functions:
            lowered = as_function(lowered)
            self._add_function(lowered.functions[0], lowered.graph.node[0], prefix)
        renames: dict[str, str] = {}
        for field in lowering.input_names(d.desc):
            source, initial = cmd.binding(field, d)
            tensor = d.desc.tensor(field)
            self._check_type(source, tensor.data_type, path + (field,))
            flat = (self.initial if initial else self.read)(source.resource, path + (field,))
            renames[field] = self.view(prefix, field, flat, source, tensor, self.length(source.resource))
        written = []
        for field in d.desc.outputs:
            out_binding, _ = cmd.binding(field, d)
            out = d.desc.tensor(field)
            self._check_type(out_binding, out.data_type, path + (field,))
            graph_output = lowering.graph_output(d.desc, field)
            renames[graph_output] = f"{prefix}/{graph_output}"
            written.append((out_binding, renames[graph_output], out, graph_output))
        self.nodes.extend(rename.renamed_nodes(lowered.graph, renames))
        self.initializers.extend(lowered.graph.initializer)
        for out_binding, value, out, graph_output in written:  # in struct order, as DirectML writes
            self._write(prefix, graph_output, out_binding, value, out, path)

    def _inline(self, index: int, cmd: Dispatch, d: onnx_dispatchable.GraphDispatchable, prefix: str) -> None:
        """An ONNX graph's nodes, every name prefixed with the dispatch's, between views of the
        resources bound to it: its inputs in the shapes the bindings give (a free dimension of
        one the bindings leave open is 1, as when it runs), its outputs written back."""
        path = ("commands", index, "bindings")
        planned = onnx_dispatchable.plan(d, cmd.bindings, self.model.resources)
        source = self._at_opset(d)
        graph = onnx.compose.add_prefix(source, f"{prefix}/", rename_functions=False).graph
        # add_prefix leaves a subgraph's reads of the outer graph's initializers unprefixed (onnx
        # 1.23: an If branch's Gather of an embedding table read a value no longer there)
        g = source.graph
        outer = {v: f"{prefix}/{v}" for v in (*(i.name for i in g.input), *(t.name for t in g.initializer))}
        outer |= {o: f"{prefix}/{o}" for n in g.node for o in n.output if o}
        for n in graph.node:
            for a in n.attribute:
                for sub in (*([a.g] if a.HasField("g") else []), *a.graphs):
                    rename.rename_outer(sub, outer)
        for p in planned:
            t, b = p.tensor, p.binding
            if b is None:  # an output left unbound: computed, not kept
                continue
            assert t.data_type is not None
            self._check_type(b, t.data_type, path + (t.name,))
            if self.model.resources[b.resource].deferred:
                raise ModelError(
                    b.path, f"--single-graph cannot hold deferred resource '{b.resource}': its size is known only when it runs"
                )
            assert p.shape is not None
            # a serialized DirectML graph's input or output with Strides: read and written through them
            views = {} if d.serialized is None else {**d.serialized.inputs, **d.serialized.outputs}
            tensor = views.get(t.name) or TensorDesc(t.data_type, p.shape)
            value = f"{prefix}/{t.name}"
            if t.name in d.inputs:
                flat = self.read(b.resource, path + (t.name,))
                if t.elem_type == onnx.TensorProto.BOOL:  # a resource holds BOOL as UINT8 (DxDispatch)
                    flat = self.node("Cast", [flat], f"{prefix}/{t.name}_bool", "UINT8 bytes as BOOL", to=t.elem_type)
                view = self.view(prefix, t.name, flat, b, tensor, self.length(b.resource))
                if view != value:
                    self.node("Identity", [view], value, f"'{b.resource}' as graph input {t.name}")
                continue
            if t.elem_type == onnx.TensorProto.BOOL:
                value = self.node("Cast", [value], f"{prefix}/{t.name}_uint8", "BOOL as UINT8 bytes", to=t.data_type.onnx)
            self.written.append((b, value, tensor, t.name))
        self.nodes.extend(graph.node)
        self.initializers.extend(graph.initializer)
        if graph.sparse_initializer:
            raise ModelError(d.path, "--single-graph does not take sparse initializers")
        for b, value, tensor, name in self.written:
            self._write(prefix, name, b, value, tensor, path)
        self.written.clear()

    def _at_opset(self, d: onnx_dispatchable.GraphDispatchable) -> onnx.ModelProto:
        """The graph at the single graph's opset (onnx's version converter), its other domains
        and functions recorded."""
        model = d.model(self.opset, self.target)
        for o in model.opset_import:
            if o.domain not in ("", "ai.onnx") and self.domains.setdefault(o.domain, o.version) != o.version:
                raise ModelError(
                    d.path, f"--single-graph needs one version of domain '{o.domain}': {o.version} and {self.domains[o.domain]}"
                )
        for f in model.functions:
            self.function_protos[f"{f.domain}.{f.name}:{f.overload}"] = f
        have = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), self.opset)
        if have == self.opset:
            return model
        try:
            return onnx.version_converter.convert_version(model, self.opset)
        except Exception as e:
            raise ModelError(
                d.path,
                f"--single-graph puts every graph at --opset {self.opset}, but this one (opset {have}) does not convert: "
                + first_line(e),
            ) from None

    def _add_function(self, f: onnx.FunctionProto, call: onnx.NodeProto, prefix: str) -> None:
        """Several dispatches of one operator type are overloads of `dml.<OPERATOR>` (IR 10)."""
        if any(g.name == f.name for g in self.function_protos.values()):
            f.overload = call.overload = prefix
        self.function_protos[f"{f.name}:{f.overload}"] = f

    def _check_type(self, b: Binding, t: dtypes.DataType, path: tuple[str | int, ...]) -> None:
        res_type = self.resource_type(b.resource, path)
        if res_type != t:
            raise ModelError(
                path,
                f"--single-graph needs each resource used with its own data type: '{b.resource}' is {res_type}, bound as {t}",
            )

    def _write(self, prefix: str, output: str, b: Binding, value: str, tensor: TensorDesc, path: tuple[str | int, ...]) -> None:
        """The graph output `output` (OutputTensor, OutputIndicesTensor, ...) written into its
        binding's resource."""
        tag = "" if output == "OutputTensor" else f"{output}_"  # a second output's nodes say whose
        total = self.length(b.resource)
        count = tensor.element_count
        flat = self.node(
            "Reshape",
            [value, self.const(f"{prefix}/{output}_flat_shape", [-1])],
            f"{prefix}/{output}_flat",
            f"{output} as a flat buffer" if tag else "the output as a flat buffer",
        )
        if not tensor.packed:  # each element to its buffer offset; the bytes between keep theirs
            start = b.offset * 8 // tensor.data_type.element_bits
            offsets = (tensor.offsets().reshape(-1) + start).tolist()
            before = self.read(b.resource, path + (output,))
            self.current[b.resource] = self.node(
                "ScatterElements",
                [before, self.const(f"{prefix}/{output}_offsets", offsets), flat],
                f"{prefix}/{tag}written",
                f"'{b.resource}' after the dispatch, written through Strides {list(tensor.layout)}",
                axis=0,
            )
            return
        start = b.offset * 8 // self.model.resources[b.resource].data_type.element_bits  # type: ignore[union-attr]
        if (start, count) != (0, total):
            before = self.read(b.resource, path + (output,))
            parts = []
            if start:
                parts.append(
                    self.node(
                        "Slice",
                        [
                            before,
                            self.const(f"{prefix}/{tag}kept_head_start", [0]),
                            self.const(f"{prefix}/{tag}kept_head_end", [start]),
                        ],
                        f"{prefix}/{tag}kept_head",
                        "the buffer before the written part",
                    )
                )
            parts.append(flat)
            if start + count < total:
                parts.append(
                    self.node(
                        "Slice",
                        [
                            before,
                            self.const(f"{prefix}/{tag}kept_tail_start", [start + count]),
                            self.const(f"{prefix}/{tag}kept_tail_end", [total]),
                        ],
                        f"{prefix}/{tag}kept_tail",
                        "the buffer after the written part",
                    )
                )
            flat = self.node("Concat", parts, f"{prefix}/{tag}written", f"'{b.resource}' after the dispatch", axis=0)
        self.current[b.resource] = flat

    def emit(self, index: int, resource: str) -> None:
        value = self.read(resource, ("commands", index, "resource"))
        taken = {o.name for o in self.outputs} | {i.name for i in self.inputs}
        name = resource if resource not in taken else f"{resource}@{index}"
        if value in taken or name != value:
            value = self.node("Identity", [value], name, f"'{resource}' at command {index}", name=f"commands[{index}]/{resource}")
        t = self.resource_type(resource, ("commands", index, "resource"))
        self.outputs.append(helper.make_tensor_value_info(name, t.onnx, [self.length(resource)]))


def single_graph(
    model: Model, name: str, opset: int = DEFAULT_OPSET, target: str = "portable", functions: bool = False
) -> onnx.ModelProto:
    """The command list as one graph: resources read before being written are inputs, each
    print/writeFile is an output holding the resource's contents at that command."""
    sg = _SingleGraph(model, opset, target, functions)
    for i, cmd in enumerate(model.commands):
        if isinstance(cmd, Dispatch):
            sg.dispatch(i, cmd)
        else:
            sg.emit(i, cmd.resource)
    if not sg.outputs:
        raise ModelError(("commands",), "--single-graph needs at least one print or writeFile command (the outputs)")
    graph = helper.make_graph(
        sg.nodes,
        name,
        sg.inputs,
        sg.outputs,
        sg.initializers,
        doc_string=f"DxDispatch model '{model.path.name}' as one graph, by dml2onnx {__version__}",
    )
    opsets = [helper.make_opsetid("", opset)] + ([helper.make_opsetid(FUNCTION_DOMAIN, 1)] if functions else [])
    opsets += [helper.make_opsetid(domain, version) for domain, version in sg.domains.items()]
    out = helper.make_model(
        graph,
        opset_imports=opsets,
        functions=list(sg.function_protos.values()),
        producer_name="dml2onnx",
        producer_version=__version__,
        ir_version=max(helper.find_min_ir_version_for(opsets[:1]), 10 if functions else 0),
    )
    helper.set_model_props(
        out,
        {
            "dml2onnx.version": __version__,
            "dml2onnx.target": target,
            "dml2onnx.opset": str(opset),
            "dml2onnx.single_graph": "true",
            "dml2onnx.dispatchables": json.dumps(
                {n: d.desc.source if isinstance(d, Dispatchable) else d.source for n, d in model.dispatchables.items()},
                sort_keys=True,
            ),
        },
    )
    return lowering.checked(out)
