"""Graph and Expression: DirectML descs built by function calls, with the output tensor descs
computed as DirectMLX computes them, each desc validated as the JSON path validates it."""

from __future__ import annotations

import copy
import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import onnx
from onnx import helper

from dml2onnx import __version__, lowering
from dml2onnx.backends import dmlapi, runtime
from dml2onnx.core import dtypes, featurelevels
from dml2onnx.core.desc import OperatorDesc, parse_operator_desc, parse_tensor_desc
from dml2onnx.core.tensor import TensorDesc
from dml2onnx.graph import targets
from dml2onnx.graph.builder import DEFAULT_OPSET
from dml2onnx.graph.rename import renamed_nodes
from dml2onnx.ops import registry

Outputs = Mapping[str, "Expression"] | Sequence["Expression"]
Arrays = Mapping[str, np.ndarray]


@dataclass(frozen=True, eq=False)
class Node:
    """One operator call: its name (`ArgMax_1`, the error path and node-name prefix), its
    validated desc and the expressions bound to its input bind points (`InputTensor`, JOIN's
    `InputTensors[0]`, ...)."""

    name: str
    desc: OperatorDesc
    inputs: dict[str, Expression]


@dataclass(frozen=True, eq=False)
class Expression:
    """A tensor of a Graph: a graph input (`node` is None) or an operator's OutputTensor."""

    graph: Graph
    tensor_desc: TensorDesc
    name: str  # the input's name, or the call's (with the output's field for all but its first output)
    node: Node | None = None
    output: str = "OutputTensor"  # the call's output bind point (TOP_K's OutputIndexTensor, SPLIT's OutputTensors[1])

    @property
    def data_type(self) -> str:
        return self.tensor_desc.data_type.name

    @property
    def sizes(self) -> tuple[int, ...]:
        return self.tensor_desc.sizes

    @property
    def rank(self) -> int:
        return self.tensor_desc.rank

    def __repr__(self) -> str:
        return f"<Expression {self.name}: {self.tensor_desc.describe()}>"


def tensor_json(t: TensorDesc) -> dict[str, Any]:
    """A TensorDesc as DxDispatch's short form."""
    obj: dict[str, Any] = {"DataType": t.data_type.name, "Sizes": list(t.sizes)}
    if t.strides is not None:
        obj["Strides"] = list(t.strides)
    return obj


def output_tensor(data_type: str | dtypes.DataType, sizes: Sequence[int]) -> dict[str, Any]:
    """An output's tensor desc as DxDispatch JSON (packed, as DirectMLX's default TensorPolicy)."""
    type_name = data_type.name if isinstance(data_type, dtypes.DataType) else str(data_type)
    return {"DataType": type_name.removeprefix("DML_TENSOR_DATA_TYPE_"), "Sizes": [int(n) for n in sizes]}


def json_float(v: float) -> float | str:
    """DxDispatch writes non-finite floats as "nan", "inf", "-inf"."""
    return float(v) if math.isfinite(v) else str(float(v)).replace("infinity", "inf")


class Graph:
    """Collects operator calls; `feature_level` is the DML_FEATURE_LEVEL every desc must be valid for."""

    def __init__(self, feature_level: str = featurelevels.NEWEST) -> None:
        self.feature_level = featurelevels.parse(feature_level)
        self.inputs: dict[str, Expression] = {}
        self.nodes: list[Node] = []
        self._names: set[str] = set()

    # -- building ------------------------------------------------------------------------------
    def input(self, name: str, data_type: str, sizes: Sequence[int], strides: Sequence[int] | None = None) -> Expression:
        """A graph input; `strides` (in elements) lay it out in its DxDispatch buffer."""
        if name in self._names:
            raise ValueError(f"the name {name!r} is already used in this graph")
        obj: dict[str, Any] = {"DataType": data_type.removeprefix("DML_TENSOR_DATA_TYPE_"), "Sizes": list(sizes)}
        if strides is not None:
            obj["Strides"] = list(strides)
        x = Expression(self, parse_tensor_desc(obj, (name,)), name)
        self._names.add(name)
        self.inputs[name] = x
        return x

    def call(
        self,
        function: str,
        op: str,
        tensors: Mapping[str, Expression | None],
        fields: Mapping[str, Any],
        output_type: str | dtypes.DataType,
        output_sizes: Sequence[int],
    ) -> Expression:
        """Validate one operator desc (as DxDispatch JSON, with the error path `<function>_<n>`)
        and return its OutputTensor."""
        fields = dict(fields)
        if "Axes" in fields:
            fields["AxisCount"] = len(fields["Axes"])
        results = self.call_many(function, op, tensors, fields, {"OutputTensor": output_tensor(output_type, output_sizes)})
        return results["OutputTensor"]

    def call_many(
        self,
        function: str,
        op: str,
        tensors: Mapping[str, Expression | Sequence[Expression] | None],
        fields: Mapping[str, Any],
        outputs: Mapping[str, dict[str, Any] | Sequence[dict[str, Any]]],
    ) -> dict[str, Expression]:
        """Validate one operator desc from its input expressions (a tensor array's as a list),
        its other fields as DxDispatch JSON and its outputs' tensor descs (JSON, a list for a tensor
        array), with the error path `<function>_<n>`. Returns the expression of each output bind point."""
        name = self.next_name(function)
        obj: dict[str, Any] = {}
        bound: dict[str, Expression] = {}
        for field, value in tensors.items():
            if value is None:
                continue
            items = [value] if isinstance(value, Expression) else list(value)
            for i, e in enumerate(items):
                if not isinstance(e, Expression):
                    raise TypeError(f"{name}: {field} must be an Expression, not {type(e).__name__}")
                if e.graph is not self:
                    raise ValueError(f"{name}: {field} {e.name!r} belongs to another Graph")
                bound[field if isinstance(value, Expression) else f"{field}[{i}]"] = e
            obj[field] = (
                tensor_json(value.tensor_desc) if isinstance(value, Expression) else [tensor_json(e.tensor_desc) for e in items]
            )
        obj.update(outputs)
        obj.update(fields)
        desc = parse_operator_desc(op, obj, (name,), (name,), level=self.feature_level)
        lowering.validate(desc)
        self._names.add(name)
        node = Node(name, desc, bound)
        self.nodes.append(node)
        return {
            point: Expression(self, desc.tensor(point), name if point == desc.outputs[0] else f"{name}.{point}", node, point)
            for point in desc.outputs
        }

    def next_name(self, function: str) -> str:
        """The name the next call of `function` gets: `<function>_<n>`, the first n free."""
        n = 1
        while f"{function}_{n}" in self._names:
            n += 1
        return f"{function}_{n}"

    # -- what a set of outputs needs -------------------------------------------------------------
    def _named(self, outputs: Outputs) -> list[tuple[str, Expression]]:
        pairs = list(outputs.items()) if isinstance(outputs, Mapping) else [(e.name, e) for e in outputs]
        if not pairs:
            raise ValueError("at least one output is required")
        seen: set[str] = set()
        named = []
        for key, e in pairs:
            if not isinstance(e, Expression) or e.graph is not self:
                raise ValueError(f"output {key!r} is not an Expression of this Graph")
            name, n = key, 1
            while name in seen:  # the same call listed twice
                n += 1
                name = f"{key}_{n}"
            seen.add(name)
            named.append((name, e))
        return named

    def _needed(self, named: list[tuple[str, Expression]]) -> tuple[list[Expression], list[Node]]:
        """The graph inputs and the calls (in call order) that the outputs depend on."""
        nodes: set[Node] = set()
        inputs: set[Expression] = set()
        todo = [e for _, e in named]
        while todo:
            e = todo.pop()
            if e.node is None:
                inputs.add(e)
            elif e.node not in nodes:
                nodes.add(e.node)
                todo.extend(e.node.inputs.values())
        return [x for x in self.inputs.values() if x in inputs], [n for n in self.nodes if n in nodes]

    def _feeds(self, inputs: Arrays, needed: list[Expression]) -> dict[str, np.ndarray]:
        feeds = {}
        for x in needed:
            if x.name not in inputs:
                raise ValueError(f"input {x.name!r} ({x.tensor_desc.describe()}) has no value")
            a = np.asarray(inputs[x.name], dtype=x.tensor_desc.data_type.numpy)
            if a.shape != x.sizes:
                raise ValueError(f"input {x.name!r} must have shape {list(x.sizes)}, not {list(a.shape)}")
            feeds[x.name] = a
        return feeds

    # -- compiling -------------------------------------------------------------------------------
    def to_onnx(self, outputs: Outputs, opset: int = DEFAULT_OPSET, target: str = "portable") -> onnx.ModelProto:
        """One ONNX graph: each call's lowered graph, chained; inputs are the graph inputs used."""
        named = self._named(outputs)
        used, nodes = self._needed(named)
        out_value: dict[Source, str] = {}
        for key, e in named:
            if e.node is not None and _source(e) not in out_value:
                out_value[_source(e)] = key
        for key, e in named:
            if key in self.inputs and self.inputs[key] is not e:
                raise ValueError(f"output name {key!r} is the name of an input")
        value: dict[Source, str] = {x: x.name for x in used}
        graph_nodes: list[onnx.NodeProto] = []
        initializers: list[onnx.TensorProto] = []
        for node in nodes:
            lowered = lowering.lower(node.desc, node.name, opset, target)
            renames = {f: value[_source(e)] for f, e in node.inputs.items()}
            for point in node.desc.outputs:
                result = out_value.get((node, point), f"{node.name}/{point}")
                renames[lowering.graph_output(node.desc, point)] = result
                value[(node, point)] = result
            graph_nodes.extend(renamed_nodes(lowered.graph, renames))
            initializers.extend(lowered.graph.initializer)
        for key, e in named:
            if value[_source(e)] != key:  # a graph input or a call listed again
                graph_nodes.append(helper.make_node("Identity", [value[_source(e)]], [key], name=f"outputs/{key}"))
        graph = helper.make_graph(
            graph_nodes,
            "dmlx",
            [helper.make_tensor_value_info(x.name, x.tensor_desc.data_type.onnx, list(x.sizes)) for x in used],
            [helper.make_tensor_value_info(k, e.tensor_desc.data_type.onnx, list(e.sizes)) for k, e in named],
            initializers,
            doc_string=f"dml2onnx.dmlx graph lowered by dml2onnx {__version__}",
        )
        opsets = [helper.make_opsetid("", opset)]
        model = helper.make_model(
            graph, opset_imports=opsets, producer_name="dml2onnx", producer_version=__version__,
            ir_version=helper.find_min_ir_version_for(opsets),
        )  # fmt: skip
        descs = {n.name: {"type": n.desc.schema.full_name, "desc": n.desc.source} for n in nodes}
        helper.set_model_props(
            model,
            {
                "dml2onnx.version": __version__,
                "dml2onnx.target": target,
                "dml2onnx.opset": str(opset),
                "dml2onnx.feature_level": self.feature_level,
                "dml2onnx.dispatchables": json.dumps(descs, sort_keys=True),
            },
        )
        return lowering.checked(model)

    def to_dxdispatch(self, outputs: Outputs, inputs: Arrays | None = None) -> dict[str, Any]:
        """An equivalent DxDispatch model: one resource per input (its values laid out by its
        strides, zeros without `inputs`) and per call, one dispatch per call, a print per output."""
        named = self._named(outputs)
        used, nodes = self._needed(named)
        feeds = self._feeds(inputs, used) if inputs is not None else {}
        resource: dict[Source, str] = {x: x.name for x in used}
        taken = set(self._names)
        for key, e in named:  # an output's resource takes the output's name when it is free
            if e.node is not None and _source(e) not in resource and key not in taken - {e.node.name}:
                resource[_source(e)] = key
                taken.add(key)
        resources: dict[str, Any] = {x.name: _input_resource(x, feeds.get(x.name)) for x in used}
        commands: list[dict[str, Any]] = []
        for node in nodes:
            bindings: dict[str, Any] = {}
            for point, e in node.inputs.items():
                _bind(bindings, point, resource[_source(e)])
            for point in node.desc.outputs:
                own = node.name if point == node.desc.outputs[0] else f"{node.name}_{point.replace('[', '').replace(']', '')}"
                name = resource.setdefault((node, point), own)
                out = node.desc.tensor(point)
                resources[name] = {
                    "initialValuesDataType": out.data_type.name,
                    "initialValues": {"valueCount": out.buffer_elements, "value": 0},
                }
                _bind(bindings, point, name)
            commands.append({"type": "dispatch", "dispatchable": node.name, "bindings": bindings})
        for _, e in named:
            commands.append({"type": "print", "resource": resource[_source(e)]})
        dispatchables = {n.name: {"type": n.desc.schema.full_name, "desc": copy.deepcopy(n.desc.source)} for n in nodes}
        return {"resources": resources, "dispatchables": dispatchables, "commands": commands}

    # -- running ---------------------------------------------------------------------------------
    def run(
        self, inputs: Arrays, outputs: Outputs, ep: str = "cpu", opset: int = DEFAULT_OPSET, target: str | None = None
    ) -> dict[str, np.ndarray] | list[np.ndarray]:
        """The to_onnx graph on `ep`: an ONNX Runtime EP (`cpu`, `cuda`, `dml`: no CPU fallback for a GPU
        EP; `auto`: the best present), `dml-api` (each call's desc executed by DirectML's own API, in
        order) or `reference` (the numpy references, chained). `target`: the EP's own unless given,
        as `dml2onnx run` lowers."""
        if ep == "reference":
            return self.reference(inputs, outputs)
        engine = runtime.resolve(ep)
        if engine == runtime.DIRECTML:
            return self._chained(inputs, outputs, lambda node, arrays: dmlapi.execute(node.desc, arrays, name=node.name).outputs)
        named = self._named(outputs)
        feeds = self._feeds(inputs, self._needed(named)[0])
        session = runtime.create(self.to_onnx(outputs, opset, target or targets.for_engine(engine)), "dmlx", engine)
        results = session.run_all(feeds, [k for k, _ in named])  # a RuntimeFailure names the EP
        return _shaped(outputs, named, [results[k] for k, _ in named])

    def reference(self, inputs: Arrays, outputs: Outputs) -> dict[str, np.ndarray] | list[np.ndarray]:
        """Each call's numpy reference, chained."""
        return self._chained(inputs, outputs, lambda node, arrays: registry.reference_outputs(node.desc, arrays))

    def _chained(
        self, inputs: Arrays, outputs: Outputs, compute: Callable[[Node, dict[str, np.ndarray]], Mapping[str, np.ndarray]]
    ) -> dict[str, np.ndarray] | list[np.ndarray]:
        """Each call computed by `compute(node, its input arrays)` (its outputs by bind point) in
        order, its inputs the values before it."""
        named = self._named(outputs)
        used, nodes = self._needed(named)
        values: dict[Source, np.ndarray] = dict(zip(used, self._feeds(inputs, used).values(), strict=True))
        for node in nodes:
            results = compute(node, {f: values[_source(e)] for f, e in node.inputs.items()})
            values.update({(node, point): results[point] for point in node.desc.outputs})
        return _shaped(outputs, named, [values[_source(e)] for _, e in named])


Source = Expression | tuple[Node, str]


def _source(e: Expression) -> Source:
    """What holds an expression's value: the graph input itself, or the call's output bind point."""
    return e if e.node is None else (e.node, e.output)


def _bind(bindings: dict[str, Any], point: str, resource: str) -> None:
    """A DxDispatch binding of one bind point: a tensor array's element goes into its field's list."""
    field, _, index = point.partition("[")
    if index:
        bindings.setdefault(field, []).append(resource)
    else:
        bindings[point] = resource


def _shaped(outputs: Outputs, named: list[tuple[str, Expression]], results: list[np.ndarray]) -> Any:
    if isinstance(outputs, Mapping):
        return {k: r for (k, _), r in zip(named, results, strict=True)}
    return list(results)


def _input_resource(x: Expression, values: np.ndarray | None) -> dict[str, Any]:
    t = x.tensor_desc
    initial: Any = {"valueCount": t.buffer_elements, "value": 0}
    if values is not None:
        buffer = np.zeros(t.buffer_elements, t.data_type.numpy)
        buffer[t.offsets().reshape(-1)] = values.reshape(-1)
        initial = [json_float(v) for v in buffer.tolist()] if t.data_type.is_float else buffer.tolist()
    return {"initialValuesDataType": t.data_type.name, "initialValues": initial}
