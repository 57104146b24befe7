"""DirectML's serialized graphs (DxDispatch's `dmlSerializedGraph` dispatchables) as one ONNX graph.

ONNX Runtime's DirectML EP can write each partition of a model it compiles as a DirectML graph
(DML_GRAPH_DESC) in a flatbuffer, `Partition_N.bin` (its DmlGraphSerialization.cpp), and DxDispatch
runs such a file (DmlDispatchable.cpp, through DmlGraphDeserialization.cpp). The flatbuffer
(`dml::ir::DmlGraphDesc`, DxDispatch's DmlGraphDesc_generated.h) holds:
- `graphInputNames` and `graphOutputNames`: GraphInputIndex and GraphOutputIndex i is named by
  element i ("" where no edge uses that index);
- `nodes`, in topological order, each with a name, `inputNames` and `outputNames` (one per input
  and output index of the node, "" for none), and a desc: an operator (serialized_desc.py) or a
  constant, its bytes inline (`ConstantRawData`) or in a file: DxDispatch reads a `ConstantName`
  node's bytes from `<name>.bin` in the folder of the graph file (CreateResourceFromConstantNode).
The edges are not stored: they follow from the names (dml_graph.py).

`load` reads and checks it all (flatbuf.py reads the flatbuffer without trusting an offset).
`to_onnx` builds one ONNX graph: each operator node lowered by lowering.lower, its nodes renamed
onto the edges (graph/rename.py, as --single-graph does), constants as initializers, and a
few nodes where the two ends of an edge view its buffer differently (strided.py). `reference`
computes the same with each operator's numpy reference.

Its graph inputs and outputs are named by the serialized graph's input and output names, which
are what DxDispatch binds (GetSerializedBindPoints: the input and output edges' names): DxDispatch's
model binds `model_input` and `model_output`, the names ONNX Runtime gave them. A caller binds a
resource to a graph input by reading `SerializedGraph.inputs`' TensorDesc from it, and writes a
graph output through `SerializedGraph.outputs`' TensorDesc, as executor.py reads and writes a
desc's tensors.

Every problem with the file, or with the files it names, is a ModelError naming the file and the
place in it (`nodes[2].DML_OPERATOR_GEMM.TransA`).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import onnx
from onnx import helper, numpy_helper

from dml2onnx import __version__, lowering
from dml2onnx.core import files, limits
from dml2onnx.core import tensor as packing
from dml2onnx.core.errors import JsonPath, ModelError
from dml2onnx.core.schema import NEWEST_LEVEL
from dml2onnx.core.tensor import TensorDesc, read_tensor, write_tensor
from dml2onnx.formats.dml_graph import (
    ConstantNode,
    InputEdge,
    IntermediateEdge,
    OperatorNode,
    OutputEdge,
    SerializedGraph,
    connect,
    same_view,
)
from dml2onnx.formats.flatbuf import Table, root
from dml2onnx.formats.serialized_desc import operator_node
from dml2onnx.graph import rename, strided
from dml2onnx.graph.builder import DEFAULT_OPSET, GraphBuilder
from dml2onnx.graph.targets import TARGETS
from dml2onnx.ops import registry

__all__ = [
    "ConstantNode",
    "InputEdge",
    "IntermediateEdge",
    "OperatorNode",
    "OutputEdge",
    "SerializedGraph",
    "load",
    "parse",
    "reference",
    "to_onnx",
    "walk",
]

# dml::ir::NodeDesc and dml::ir::ConstantNodeDescDetail
_OPERATOR_NODE, _CONSTANT_NODE = 1, 2
_CONSTANT_NAME, _CONSTANT_RAW_DATA = 1, 2


def load(path: str | Path, where: JsonPath = (), level: str = NEWEST_LEVEL, label: str | None = None) -> SerializedGraph:
    """Reads a serialized graph file (and the constant files it names) and checks it: every
    operator desc validated at DML_FEATURE_LEVEL `level`, every edge connected. `where` is the JSON
    path that names the file (`dispatchables.g.sourcePath`), `label` its name as written there."""
    label = str(path) if label is None else label
    try:
        raw = files.read_regular(path, limits.max_bytes(), f"the {limits.text('file')}", label=label)
    except files.PathRefused as e:
        raise ModelError(where, str(e)) from None
    return parse(raw, path, where, level, label)


def parse(
    raw: bytes, path: str | Path, where: JsonPath = (), level: str = NEWEST_LEVEL, label: str | None = None
) -> SerializedGraph:
    """`load` of bytes already read from `path` (constant files are read next to `path`)."""
    path = Path(path)
    graph = SerializedGraph(path, str(path) if label is None else label, where, (), (), ())
    try:
        _read(graph, root(raw), level)
        connect(graph)
    except ModelError as e:
        raise graph.error(e) from None
    return graph


def _read(graph: SerializedGraph, top: Table, level: str) -> None:
    graph.input_names = tuple(top.strings(1, "graphInputNames") or ())
    graph.output_names = tuple(top.strings(2, "graphOutputNames") or ())
    tables = top.tables(0, "nodes")
    if not tables:
        raise ModelError(("nodes",), "the graph has no nodes")
    owned: set[str] = set()  # the values constant nodes read from files (DxDispatch's constantInputs)
    nodes: list[OperatorNode | ConstantNode] = []
    for i, t in enumerate(tables):
        name = t.string(2, "name")
        if not name:  # as DxDispatch
            raise ModelError(("nodes", i, "name"), "the node has no name")
        ins = tuple(t.strings(3, "inputNames") or ())
        outs = tuple(t.strings(4, "outputNames") or ())
        kind, desc = t.union(0, 1, "desc")
        if desc is None or kind not in (_OPERATOR_NODE, _CONSTANT_NODE):
            raise ModelError(("nodes", i, "desc"), "the node has no operator or constant desc")
        table = Table.at(t.buf, desc, ("nodes", i, "desc"))
        if kind == _OPERATOR_NODE:
            nodes.append(
                OperatorNode(i, name, operator_node(table, list(ins), list(outs), owned, ("nodes", i), level), ins, outs)
            )
            continue
        if any(ins):
            raise ModelError(("nodes", i, "inputNames"), "a constant node has no inputs")
        data, file = _constant(graph, table)
        if file is not None:
            owned.update(outs)
        nodes.append(ConstantNode(i, name, data, file, outs))
    graph.nodes = tuple(nodes)


def _constant(graph: SerializedGraph, table: Table) -> tuple[bytes, str | None]:
    """A constant node's bytes and the file they came from (None: inline)."""
    kind, pos = table.union(0, 1, "data")
    if pos is None or kind not in (_CONSTANT_NAME, _CONSTANT_RAW_DATA):
        raise ModelError(table.path + ("data",), "the constant node has neither a name nor data")
    detail = Table.at(table.buf, pos, table.path + ("data",))
    if kind == _CONSTANT_RAW_DATA:
        return detail.bytes(0, "data") or b"", None
    name = detail.string(0, "name")
    if not name:
        raise ModelError(detail.path + ("name",), "the constant node has no constant data name")
    # DxDispatch's CreateResourceFromConstantNode: <folder of the graph file>/<name>.bin
    source, label = graph.path.parent / f"{name}.bin", str(Path(graph.label).parent / f"{name}.bin")
    try:
        files.check_name(label)  # refused by the name the file gives, before any path is made of it
        return files.read_regular(source, limits.max_bytes(), f"the {limits.text('constant')}", label=label), str(source)
    except files.PathRefused as e:
        raise ModelError(detail.path + ("name",), str(e)) from None


# -- the ONNX graph -------------------------------------------------------------------------------


def to_onnx(graph: SerializedGraph, name: str, opset: int = DEFAULT_OPSET, target: str = "portable") -> onnx.ModelProto:
    """The whole graph as one checker-clean ONNX model with static shapes. Its inputs and outputs
    are named by the graph's input and output names and are `graph.inputs` / `graph.outputs`' tensors
    (in the graph's index order); `name` (the dispatchable) names the ONNX graph. Raises UsageError
    for an opset or target out of range, ModelError (naming the file) for what cannot be lowered."""
    try:
        return _Builder(graph, name, opset, target).model()
    except ModelError as e:
        raise graph.error(e) from None


class _Builder:
    def __init__(self, graph: SerializedGraph, name: str, opset: int, target: str) -> None:
        self.graph, self.name, self.opset, self.target = graph, name, opset, target
        self.names = _onnx_names(graph)
        self.prefixes = _prefixes(graph, set(self.names.values()))
        # the nodes that read one view of a buffer as another (strided.read), placed before their readers
        self.wiring = GraphBuilder(self.prefixes[-1], opset, TARGETS.get(target, TARGETS["portable"]))
        self.placed = 0
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[onnx.TensorProto] = []
        self.values: dict[tuple[int, int], str] = {}  # (node, output index) -> its ONNX value
        self.buffers: dict[tuple[int, int], str] = {}  # (node, output index) -> its tensor laid out as its buffer
        self.reads: dict[tuple[object, ...], str] = {}  # (edge's source, view) -> the value read
        self.constants: set[int] = set()  # the constant nodes whose initializer is added

    def model(self) -> onnx.ModelProto:
        g = self.graph
        for node in g.operators:
            self.operator(node)
        inputs = [helper.make_tensor_value_info(n, t.data_type.onnx, list(t.sizes)) for n, t in g.inputs.items()]
        outputs = [helper.make_tensor_value_info(n, t.data_type.onnx, list(t.sizes)) for n, t in g.outputs.items()]
        doc = f"DirectML serialized graph {g.path.name}, lowered by dml2onnx {__version__}"
        proto = helper.make_graph(self.nodes, self.name, inputs, outputs, self.initializers + self.wiring.initializers, doc)
        descs = {f"nodes[{n.index}] {n.name}": {"type": n.desc.schema.full_name, "desc": n.desc.source} for n in g.operators}
        props = {
            "dml2onnx.target": self.target,
            "dml2onnx.opset": str(self.opset),
            "dml2onnx.serialized_graph": g.path.name,
            "dml2onnx.descs": json.dumps(descs, sort_keys=True),
        }
        model = lowering.model_of(proto, self.opset, f"DirectML serialized graph '{self.name}'", props)
        return lowering.checked(model)

    def operator(self, node: OperatorNode) -> None:
        desc, prefix = node.desc, self.prefixes[node.index]
        lowered = lowering.lower(desc, prefix, self.opset, self.target)
        renames: dict[str, str] = {}
        for k, point in enumerate(node.node.inputs):
            if point is not None:
                renames[point] = self.read(self.graph.incoming[(node.index, k)], desc.tensor(point))
        for k, point in enumerate(node.node.outputs):
            if point is not None:  # an output no edge names keeps a name of its own
                value = self.names.get(node.output_names[k]) or f"{prefix}/{point} (unused)"
                renames[lowering.graph_output(desc, point)] = self.values[(node.index, k)] = value
        self.nodes.extend(self.wiring.nodes[self.placed :])
        self.placed = len(self.wiring.nodes)
        self.nodes.extend(rename.renamed_nodes(lowered.graph, renames))
        self.initializers.extend(lowered.graph.initializer)

    def read(self, edge: InputEdge | IntermediateEdge, view: TensorDesc) -> str:
        """The value `view` sees at the far end of `edge`."""
        g = self.graph
        source: str | int | tuple[int, int]  # a graph input, a constant node, an operator's output
        if isinstance(edge, InputEdge):
            source, value, whole = edge.name, edge.name, g.inputs[edge.name]
        elif isinstance(g.nodes[edge.from_node], ConstantNode):
            source, value, whole = edge.from_node, self.constant(edge.from_node), g.constants[edge.from_node]
        else:
            source = (edge.from_node, edge.from_output)
            value, whole = self.values[source], g.written(*source)
        if same_view(whole, view):
            return value
        key = (source, view.data_type.name, view.sizes, view.layout)
        if key not in self.reads:
            # a graph input or a constant that is not one tensor is its flat buffer already
            flat = self.buffer(source, value, whole) if isinstance(source, tuple) else value
            step = f"{self.names.get(edge.name, edge.name)}_as_{'x'.join(map(str, view.sizes))}"
            self.reads[key] = strided.read(self.wiring, flat, view, whole.span, step)
        return self.reads[key]

    def buffer(self, output: tuple[int, int], value: str, written: TensorDesc) -> str:
        """An operator's output tensor laid out as its buffer (1-D, `written.span` elements). The
        elements its strides skip are 0: DirectML leaves them undefined, and dml_graph.connect
        lets no reader read them."""
        if output not in self.buffers:
            b = self.wiring
            flat = b.reshape(value, [-1], f"{value}_flat", "the tensor as a flat array")
            if not written.packed:
                zeros = b.filled([written.span], 0, written.data_type.numpy, f"{value}_zeros", "the buffer")
                offsets = b.i64(written.offsets().reshape(-1).tolist(), f"{value}_offsets")
                flat = b.node("ScatterElements", [zeros, offsets, flat], f"{value}_buffer", "each element at its offset", axis=0)
            self.buffers[output] = flat
        return self.buffers[output]

    def constant(self, index: int) -> str:
        """A constant node's initializer (named by its first output name), added once."""
        node = self.graph.nodes[index]
        assert isinstance(node, ConstantNode)
        name = self.names[next(n for n in node.output_names if n)]
        if index not in self.constants:
            view = self.graph.constants[index]
            values = packing.unpack(node.data, view.element_count, view.data_type).reshape(view.sizes)  # 4-bit: unpacked
            self.initializers.append(numpy_helper.from_array(values, name))
            self.constants.add(index)
        return name


def _onnx_names(graph: SerializedGraph) -> dict[str, str]:
    """The ONNX value name of each value the graph names. Its inputs and outputs keep theirs (they
    are what a caller binds); the others lose their ':'. ONNX Runtime's DirectML EP names a graph's
    inner edges `<name>-nodeIdx:N-outputIdx:M` itself, and a value so named in a model it fuses
    makes its session fail ("invalid unordered_map<K, T> key", measured with 1.24.4)."""
    outer = {*graph.input_names, *graph.output_names}
    names = {n: n for n in outer if n}
    taken = set(names.values())
    for node in graph.nodes:
        for n in node.output_names:
            if not n or n in names:
                continue
            candidate, k = n.replace(":", "_"), 1
            while candidate in taken:
                k += 1
                candidate = f"{n.replace(':', '_')}#{k}"
            names[n] = candidate
            taken.add(candidate)
    return names


def _prefixes(graph: SerializedGraph, values: set[str]) -> list[str]:
    """A prefix for the ONNX names of each node's lowering (its name where that is free), and last
    one for the nodes that connect views: none is a value's name (`values`, the ONNX names) nor a
    "/"-prefix of one."""
    taken: set[str] = set()
    for n in values:
        parts = n.split("/")
        taken.update("/".join(parts[: i + 1]) for i in range(len(parts)))
    used: set[str] = set()

    def fresh(base: str) -> str:
        candidate, k = base, 1
        while candidate in taken or candidate in used or any(p in used for p in _parents(candidate)):
            k += 1
            candidate = f"{base}#{k}"
        used.add(candidate)
        taken.update(_parents(candidate))
        return candidate

    prefixes = [fresh(node.name) if isinstance(node, OperatorNode) else "" for node in graph.nodes]
    return prefixes + [fresh("edges")]


def _parents(name: str) -> list[str]:
    parts = name.split("/")
    return ["/".join(parts[: i + 1]) for i in range(len(parts) - 1)]


# -- the numpy reference --------------------------------------------------------------------------


def reference(graph: SerializedGraph, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The graph's outputs by each operator's numpy reference (`--ep reference`), each edge's
    buffer modelled as bytes: `inputs` by graph input name, each `graph.inputs`' tensor; the
    outputs by graph output name, each `graph.outputs`' tensor."""
    values: dict[tuple[int, int], np.ndarray] = {}
    for node, _, results in walk(graph, inputs):
        for k, point in enumerate(node.node.outputs):
            if point is not None:
                values[(node.index, k)] = results[point]
    return {e.name: values[(e.from_node, e.from_output)] for e in graph.output_edges}


def walk(
    graph: SerializedGraph, inputs: dict[str, np.ndarray]
) -> Iterator[tuple[OperatorNode, dict[str, np.ndarray], dict[str, np.ndarray]]]:
    """Each operator node in graph order with what the chain of numpy references feeds it (by
    input bind point, each the node's own tensor) and what its reference gives (by output field):
    `reference`'s steps, which `dml2onnx compare` feeds to DirectML node by node."""
    values: dict[tuple[int, int], np.ndarray] = {}

    def fetch(edge: InputEdge | IntermediateEdge, view: TensorDesc) -> np.ndarray:
        if isinstance(edge, InputEdge):
            whole, data = graph.inputs[edge.name], inputs[edge.name]
        elif isinstance(constant := graph.nodes[edge.from_node], ConstantNode):
            return read_tensor(constant.data, 0, view)
        else:
            whole, data = graph.written(edge.from_node, edge.from_output), values[(edge.from_node, edge.from_output)]
        data = np.ascontiguousarray(data, whole.data_type.numpy).reshape(whole.sizes)
        if same_view(whole, view):
            return data
        buffer = bytearray(packing.byte_count(whole.span, whole.data_type))  # what the strides skip stays 0
        write_tensor(buffer, 0, whole, data)
        return read_tensor(buffer, 0, view)

    for node in graph.operators:
        feeds = {p: fetch(graph.incoming[(node.index, k)], node.desc.tensor(p)) for k, p in enumerate(node.node.inputs) if p}
        results = registry.reference_outputs(node.desc, feeds)
        for k, point in enumerate(node.node.outputs):
            if point is not None:
                values[(node.index, k)] = results[point]
        yield node, feeds, results
