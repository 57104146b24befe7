"""A DirectML graph (DML_GRAPH_DESC) as a serialized graph describes it: its nodes, the edges that
their names imply, and the tensor each end of an edge sees in the buffer it carries.

DxDispatch's DmlGraphDeserialization.cpp (PopulateEdges) derives the edges from the names: a node
input named like a graph input is an input edge (DML_INPUT_GRAPH_EDGE_DESC), else an intermediate
edge (DML_INTERMEDIATE_GRAPH_EDGE_DESC) from the earlier node output of that name; a node output
named like a graph output is an output edge (DML_OUTPUT_GRAPH_EDGE_DESC). The index of an edge's end
on a node counts the operator's tensor fields in struct order, null optional ones included
(DirectML binds those as NONE). `connect` derives them the same way and refuses what DxDispatch
would misread or DirectML refuse: a name read before it is written, written twice, a graph output
that nothing writes.

A DirectML edge carries a buffer, which each end views through its own tensor desc: ONNX Runtime
often writes a value as [1, 1, 1, 5] and reads it as [1, 5], or broadcasts it through strides of 0.
`connect` checks that each reader reads the data type its buffer holds and nothing past what was
written, and decides the ONNX view of each buffer that only edges read: a graph input, or a
constant, that all its readers see as one packed tensor is that tensor; otherwise it is its flat
buffer. A graph output is the tensor its producer writes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from dml2onnx.core import files
from dml2onnx.core.desc import OperatorDesc
from dml2onnx.core.errors import JsonPath, ModelError, format_path
from dml2onnx.core.tensor import TensorDesc
from dml2onnx.formats.serialized_desc import NodeDesc


@dataclass(frozen=True)
class OperatorNode:
    index: int
    name: str
    node: NodeDesc  # the desc and the bind point of each input and output index
    input_names: tuple[str, ...]
    output_names: tuple[str, ...]

    @property
    def desc(self) -> OperatorDesc:
        return self.node.desc


@dataclass(frozen=True)
class ConstantNode:
    index: int
    name: str
    data: bytes
    file: str | None  # where a ConstantName node's bytes were read; None: inline ConstantRawData
    output_names: tuple[str, ...]


class InputEdge(NamedTuple):  # DML_INPUT_GRAPH_EDGE_DESC
    graph_input: int
    to_node: int
    to_input: int
    name: str


class OutputEdge(NamedTuple):  # DML_OUTPUT_GRAPH_EDGE_DESC
    from_node: int
    from_output: int
    graph_output: int
    name: str


class IntermediateEdge(NamedTuple):  # DML_INTERMEDIATE_GRAPH_EDGE_DESC
    from_node: int
    from_output: int
    to_node: int
    to_input: int
    name: str


@dataclass
class SerializedGraph:
    """A serialized graph file, read and checked: its nodes in the file's order, the edges their
    names imply (in DxDispatch's order: by node, then by index on it), and the ONNX view of each
    graph input, graph output and constant (connect)."""

    path: Path
    label: str  # the file's name as the model gave it, for messages
    where: JsonPath  # where the model names the file
    input_names: tuple[str, ...]  # graphInputNames, by GraphInputIndex
    output_names: tuple[str, ...]
    nodes: tuple[OperatorNode | ConstantNode, ...]
    input_edges: list[InputEdge] = field(default_factory=list)
    output_edges: list[OutputEdge] = field(default_factory=list)
    intermediate_edges: list[IntermediateEdge] = field(default_factory=list)
    # What the bind points of the ONNX graph are, by name, in graph input / output order: the
    # tensor to read from (write to) the bound resource.
    inputs: dict[str, TensorDesc] = field(default_factory=dict)
    outputs: dict[str, TensorDesc] = field(default_factory=dict)
    constants: dict[int, TensorDesc] = field(default_factory=dict)  # constant node -> its ONNX value's view
    incoming: dict[tuple[int, int], InputEdge | IntermediateEdge] = field(default_factory=dict)  # (node, input index)

    def error(self, e: ModelError) -> ModelError:
        """`e` (a path inside the file) as the model's error: the file named where the model names it."""
        inside = f"{format_path(e.path)}: " if e.path else ""
        return ModelError(self.where, f"{files.shown(self.label)}: {inside}{e.rule}")

    @property
    def operators(self) -> list[OperatorNode]:
        return [n for n in self.nodes if isinstance(n, OperatorNode)]

    def written(self, node: int, index: int) -> TensorDesc:
        """The tensor desc of output `index` of operator node `node`."""
        producer = self.nodes[node]
        assert isinstance(producer, OperatorNode)
        point = producer.node.outputs[index]
        assert point is not None  # a null output has no name, so no edge
        return producer.desc.tensor(point)


def _unique(names: tuple[str, ...], what: str) -> dict[str, int]:
    """Name -> index of the names set (DxDispatch's ConvertToEdgeNameToIndexMap); a repeated name
    would make two graph inputs (outputs) of one."""
    out: dict[str, int] = {}
    for i, n in enumerate(names):
        if n in out:
            raise ModelError((what, i), f"repeats the name '{n}' of {what}[{out[n]}]")
        if n:
            out[n] = i
    return out


def connect(graph: SerializedGraph) -> None:
    """The edges, as DxDispatch's PopulateEdges derives them from the names, checked."""
    graph_inputs = _unique(graph.input_names, "graphInputNames")
    graph_outputs = _unique(graph.output_names, "graphOutputNames")
    written: dict[str, tuple[int, int]] = {}  # value name -> (node, output index)
    later = {n: node.index for node in graph.nodes for n in node.output_names if n}
    for node in graph.nodes:
        if isinstance(node, OperatorNode):
            for k, name in enumerate(node.input_names):
                point = node.node.inputs[k]
                if point is None:
                    continue
                p = ("nodes", node.index, "inputNames", k)
                edge: InputEdge | IntermediateEdge
                if not name:
                    raise ModelError(p, f"{point} has no name: nothing feeds it")
                if name in graph_inputs:
                    edge = InputEdge(graph_inputs[name], node.index, k, name)
                    graph.input_edges.append(edge)
                elif name in written:
                    edge = IntermediateEdge(*written[name], node.index, k, name)
                    graph.intermediate_edges.append(edge)
                elif name in later:
                    after = f"only nodes[{later[name]}], after it, writes (nodes must be in topological order)"
                    raise ModelError(p, f"{point} reads '{name}', which {after}")
                else:
                    raise ModelError(p, f"{point} reads '{name}', which is neither a graph input nor any node's output")
                graph.incoming[(node.index, k)] = edge
        for k, name in enumerate(node.output_names):
            if not name:
                continue
            p = ("nodes", node.index, "outputNames", k)
            if name in written:
                raise ModelError(p, f"'{name}' is written by nodes[{written[name][0]}] already")
            if name in graph_inputs:
                raise ModelError(p, f"'{name}' is a graph input's name; a node's output cannot have it")
            if name in graph_outputs:
                if isinstance(node, ConstantNode):
                    raise ModelError(p, f"graph output '{name}' is a constant; DirectML's graph outputs are operators' outputs")
                graph.output_edges.append(OutputEdge(node.index, k, graph_outputs[name], name))
            written[name] = (node.index, k)
    for name, i in graph_outputs.items():
        if name not in written:
            raise ModelError(("graphOutputNames", i), f"no node writes graph output '{name}'")
    graph.output_edges.sort(key=lambda e: e.graph_output)
    _views(graph)


def same_view(a: TensorDesc, b: TensorDesc) -> bool:
    """Both ends of an edge see the same tensor in the buffer."""
    return a.data_type == b.data_type and a.sizes == b.sizes and ((a.packed and b.packed) or a.layout == b.layout)


def _buffer_view(readers: list[TensorDesc], length: int) -> TensorDesc:
    """How a buffer that only graph edges read (a graph input, a constant) becomes an ONNX value:
    the one packed tensor all its readers see, else its `length` elements."""
    first = readers[0]
    if first.packed and all(same_view(first, r) for r in readers):
        return first
    return TensorDesc(first.data_type, (length,))


def _views(graph: SerializedGraph) -> None:
    """The ONNX view of each graph input, graph output and constant; each edge read in the data
    type its buffer holds, and no further than it holds."""
    by_input: dict[str, list[tuple[TensorDesc, JsonPath]]] = {}
    by_constant: dict[int, list[tuple[TensorDesc, JsonPath]]] = {}
    for (to_node, to_input), edge in graph.incoming.items():
        reader = graph.nodes[to_node]
        assert isinstance(reader, OperatorNode)
        point = reader.node.inputs[to_input] or ""
        end = (reader.desc.tensor(point), reader.desc.at(point))
        if isinstance(edge, InputEdge):
            by_input.setdefault(edge.name, []).append(end)
        elif isinstance(graph.nodes[edge.from_node], ConstantNode):
            by_constant.setdefault(edge.from_node, []).append(end)
        else:
            written = graph.written(edge.from_node, edge.from_output)
            _check_readers([end], f"'{edge.name}' ({written.describe()})", written, written.span)
    for name in graph.input_names:
        if name in by_input:
            ends = by_input[name]
            _check_readers(ends, f"graph input '{name}'")
            graph.inputs[name] = _buffer_view([t for t, _ in ends], max(t.span for t, _ in ends))
    for index, ends in sorted(by_constant.items()):
        data = graph.nodes[index].data  # type: ignore[union-attr]
        length = len(data) * 8 // ends[0][0].data_type.element_bits
        _check_readers(ends, f"constant nodes[{index}] ({len(data)} bytes)", length=length)
        graph.constants[index] = _buffer_view([t for t, _ in ends], length)
    graph.outputs = {e.name: graph.written(e.from_node, e.from_output) for e in graph.output_edges}


def _check_readers(
    ends: list[tuple[TensorDesc, JsonPath]], what: str, written: TensorDesc | None = None, length: int | None = None
) -> None:
    """The readers of a buffer read the data type it holds (`written`'s, else the first reader's)
    and no element past `length` (None: any), unless they see the tensor written."""
    first, first_at = ends[0]
    holds = f"it holds {written.data_type}" if written else f"{format_path(first_at)} reads it as {first.data_type}"
    for t, where in ends:
        if t.data_type != (written or first).data_type:
            raise ModelError(where, f"reads {what} as {t.data_type}, but {holds}")
        if length is not None and t.span > length and not (written and same_view(written, t)):
            raise ModelError(where, f"reads {t.span} elements of {what} ({t.describe()}), but it holds {length}")
