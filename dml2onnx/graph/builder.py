"""A small ONNX graph builder: unique Netron-friendly names, constants, opset-aware helpers."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from dml2onnx.core import dtypes
from dml2onnx.graph.targets import TARGETS, Target

# The opset range the lowerings are written and tested for.
MIN_OPSET = 13
MAX_OPSET = 21
DEFAULT_OPSET = 17


class GraphBuilder:
    """Collects the nodes of one lowered desc. Node names are `<prefix>/<step>`."""

    def __init__(self, prefix: str, opset: int = DEFAULT_OPSET, target: Target = TARGETS["portable"], variant: str = "") -> None:
        self.prefix = prefix
        self.opset = opset
        self.target = target
        self.variant = variant  # which of the operator's candidate lowerings (choices.py)
        self.shapes: dict[str, tuple[int, ...]] = {}  # the shapes of the values lower() receives (lowering.py)
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[onnx.TensorProto] = []
        self.inputs: list[onnx.ValueInfoProto] = []
        self.outputs: list[onnx.ValueInfoProto] = []
        self._used: set[str] = set()
        self.renamed: dict[str, str] = {}  # value -> the graph output it became (set_output)

    # -- naming ----------------------------------------------------------------------------
    def _unique(self, base: str) -> str:
        name, n = base, 1
        while name in self._used:
            n += 1
            name = f"{base}_{n}"
        self._used.add(name)
        return name

    # -- graph interface -------------------------------------------------------------------
    def add_input(self, name: str, dtype: dtypes.DataType, shape: Sequence[int]) -> str:
        self._used.add(name)
        self.inputs.append(helper.make_tensor_value_info(name, dtype.onnx, list(shape)))
        return name

    def set_output(self, value: str, name: str, dtype: dtypes.DataType, shape: Sequence[int]) -> None:
        """Make `value` the graph output `name`, renaming its producer's output."""
        value = self.renamed.get(value, value)
        producer = next((n for n in self.nodes if value in n.output), None)
        if producer is None or any(o.name == value for o in self.outputs):
            # a graph input or initializer passed straight through, or a value that is already
            # another output (operators with several outputs)
            label = "output" if name == "OutputTensor" else f"output_{name}"
            self.node("Identity", [value], label, "passes the value to the output", outputs=[name])
        else:
            for i, out in enumerate(producer.output):
                if out == value:
                    producer.output[i] = name
            self.renamed[value] = name
            for n in self.nodes:
                for i, inp in enumerate(n.input):
                    if inp == value:
                        n.input[i] = name
        self._used.add(name)
        self.outputs.append(helper.make_tensor_value_info(name, dtype.onnx, list(shape)))

    def node(
        self, op: str, inputs: Sequence[str], step: str, doc: str, outputs: Sequence[str] | None = None, **attrs: object
    ) -> str:
        """Append one node; returns its (first) output name."""
        return self.node_outputs(op, inputs, step, doc, outputs=outputs, **attrs)[0]

    def node_outputs(
        self,
        op: str,
        inputs: Sequence[str],
        step: str,
        doc: str,
        n_outputs: int = 1,
        outputs: Sequence[str] | None = None,
        **attrs: object,
    ) -> list[str]:
        """Append one node with `n_outputs` outputs; returns their names."""
        name = self._unique(f"{self.prefix}/{step}")
        if outputs is None:
            outputs = [name if i == 0 else f"{name}:{i}" for i in range(n_outputs)]
            self._used.update(outputs)
        self.nodes.append(helper.make_node(op, list(inputs), list(outputs), name=name, doc_string=doc, **attrs))
        return list(outputs)

    def const(self, value: np.ndarray, step: str) -> str:
        name = self._unique(f"{self.prefix}/{step}")
        self.initializers.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def filled(self, shape: Sequence[int], value: float, dtype: np.dtype, step: str, doc: str) -> str:
        """A tensor of one value, made by ConstantOfShape: large ones stay out of the file (ONNX
        Runtime folds it into an initializer when the session is created)."""
        fill = numpy_helper.from_array(np.array([value], dtype=dtype), f"{step}_value")
        return self.node("ConstantOfShape", [self.i64(list(shape), f"{step}_shape")], step, doc, value=fill)

    def i64(self, values: Sequence[int] | int, step: str) -> str:
        return self.const(np.asarray(values, dtype=np.int64), step)

    # -- common shapes of nodes ------------------------------------------------------------
    def reshape(self, x: str, shape: Sequence[int], step: str, doc: str) -> str:
        return self.node("Reshape", [x, self.i64(list(shape), f"{step}_shape")], step, doc)

    def slice(self, x: str, axes: Sequence[int], starts: Sequence[int], ends: Sequence[int], step: str, doc: str) -> str:
        """Slice-13: elements [starts, ends) on `axes`, bounds given as constants."""
        bounds = [
            self.i64(list(starts), f"{step}_starts"),
            self.i64(list(ends), f"{step}_ends"),
            self.i64(list(axes), f"{step}_axes"),
        ]
        return self.node("Slice", [x, *bounds], step, doc)

    def transpose(self, x: str, perm: Sequence[int], step: str, doc: str) -> str:
        return self.node("Transpose", [x], step, doc, perm=list(perm))

    def cast(self, x: str, to: dtypes.DataType | int, step: str, doc: str) -> str:
        onnx_type = to.onnx if isinstance(to, dtypes.DataType) else to
        return self.node("Cast", [x], step, doc, to=onnx_type)

    def reduce(self, op: str, x: str, axes: Sequence[int], step: str, doc: str, keepdims: bool = True) -> str:
        """Reduce* with `axes` as attribute or input, whichever the opset wants."""
        axes_as_input = self.opset >= (13 if op == "ReduceSum" else 18)
        if axes_as_input:
            return self.node(op, [x, self.i64(list(axes), f"{step}_axes")], step, doc, keepdims=int(keepdims))
        return self.node(op, [x], step, doc, axes=list(axes), keepdims=int(keepdims))

    def remainder(self, x: str, divisor: str, step: str, doc: str) -> str:
        """x - (x // divisor) * divisor, for non-negative integers: Mod by Div/Mul/Sub, since the
        DirectML EP registers no Mod for 64-bit integers (dml_ep_registry)."""
        return self.divmod(x, divisor, step, doc)[1]

    def divmod(self, x: str, divisor: str, step: str, doc: str, quotient_doc: str = "x // divisor") -> tuple[str, str]:
        """(x // divisor, the `remainder`), for non-negative integers; `doc` describes the remainder."""
        quotient = self.node("Div", [x, divisor], f"{step}_quotient", quotient_doc)
        multiple = self.node("Mul", [quotient, divisor], f"{step}_multiple", "(x // divisor) * divisor")
        return quotient, self.node("Sub", [x, multiple], step, doc)

    def scalar(self, value: float | int, dtype: dtypes.DataType, step: str) -> str:
        return self.const(np.asarray(value, dtype=dtype.numpy), step)

    def branch(
        self,
        condition: str,
        then: Callable[[GraphBuilder], str],
        otherwise: Callable[[GraphBuilder], str],
        dtype: dtypes.DataType,
        step: str,
        doc: str,
    ) -> str:
        """An If node: `then(b)` builds the branch taken when the BOOL scalar `condition` is true,
        `otherwise(b)` the other; each returns its one result (of `dtype`) and may read any value
        of this graph. The branches' nodes and constants are named from this builder's names (one
        namespace, as Netron shows them). For a fast path whose preconditions only the data tells
        (indices in range, finite values): the CUDA EP runs If with its condition copied to the host."""
        results = []
        bodies = []
        for label, build in (("then", then), ("else", otherwise)):
            sub = GraphBuilder(f"{self.prefix}/{step}_{label}", self.opset, self.target, self.variant)
            sub._used = self._used  # one namespace: a branch's names never shadow the outer graph's
            sub.shapes = self.shapes
            value = build(sub)
            if not any(value in n.output for n in sub.nodes):  # an outer value passed through
                value = sub.node("Identity", [value], "result", "the branch's result")
            results.append(value)
            out = [helper.make_tensor_value_info(value, dtype.onnx, None)]
            bodies.append(helper.make_graph(sub.nodes, f"{step}_{label}", [], out, sub.initializers, doc_string=doc))
        return self.node("If", [condition], step, doc, then_branch=bodies[0], else_branch=bodies[1])

    # -- result ------------------------------------------------------------------------------
    def graph(self, name: str, doc: str) -> onnx.GraphProto:
        return helper.make_graph(self.nodes, name, self.inputs, self.outputs, self.initializers, doc_string=doc)


def onnx_type_name(onnx_type: int) -> str:
    return TensorProto.DataType.Name(onnx_type)
