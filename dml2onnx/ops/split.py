"""DML_OPERATOR_SPLIT: InputTensor cut along Axis into the OutputCount tensors of OutputTensors
(a tensor array: one output and one binding each), in order; the inverse of JOIN (join.py), with
the same rules. Data movement: bit for bit in every type.

Lowering: ONNX Split with the outputs' sizes (an input from opset 13), which the CPU, CUDA and
DirectML EPs have for every type; the DirectML EP maps Split straight back onto
DML_OPERATOR_SPLIT (DmlOperatorSplit.cpp), so on the `dml` target it carries
targets.DML_NODE_DOC. The graph's outputs are the bind points `OutputTensors[0]`, ...
"""

from __future__ import annotations

import numpy as np

from dml2onnx.core.desc import OperatorDesc
from dml2onnx.core.schema import OperatorSchema
from dml2onnx.graph.builder import GraphBuilder
from dml2onnx.graph.targets import DML_NODE_DOC
from dml2onnx.ops import common
from dml2onnx.ops.family import Family
from dml2onnx.ops.join import check_parts

CANDIDATES = ("split",)


def validate(desc: OperatorDesc) -> None:
    check_parts(desc, "InputTensor", desc.outputs, "OutputTensors")


def lower(desc: OperatorDesc, b: GraphBuilder, inputs: dict[str, str]) -> dict[str, str]:
    axis = desc["Axis"]
    sizes = [desc.tensor(p).sizes[axis] for p in desc.outputs]
    doc = DML_NODE_DOC if b.target.dml_nodes else f"the input cut along axis {axis} into {sizes}"
    parts = b.node_outputs("Split", [inputs["InputTensor"], b.i64(sizes, "split_sizes")], "split", doc, len(sizes), axis=axis)
    return dict(zip(desc.outputs, parts, strict=True))


def reference(desc: OperatorDesc, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    axis = desc["Axis"]
    cuts = np.cumsum([desc.tensor(p).sizes[axis] for p in desc.outputs])[:-1]
    return dict(zip(desc.outputs, np.split(inputs["InputTensor"], cuts, axis=axis), strict=True))


def examples(op: OperatorSchema) -> list[common.Example]:
    """onnx_ops: each type, a 4-D input cut into three along axis 1."""
    out = []
    for t in common.example_types(op, "InputTensor"):
        parts = [common.example_tensor(t, [1, c, 2, 3]) for c in (1, 2, 3)]
        out.append({"InputTensor": common.example_tensor(t, [1, 6, 2, 3]), "OutputCount": 3, "OutputTensors": parts, "Axis": 1})
    return out


OPERATOR_FAMILY = Family(("SPLIT",), validate, lower, reference, CANDIDATES, examples=examples)
