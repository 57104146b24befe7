"""DML_OPERATOR_JOIN: the InputCount tensors of InputTensors (a tensor array: one binding each)
concatenated along Axis into OutputTensor; DML_OPERATOR_SPLIT (split.py) is its inverse. Every
tensor has the same DataType and DimensionCount, and the same Sizes but along Axis, where the
output's size is the sum of the inputs'. Data movement: bit for bit in every type (NaN payloads,
-0, 64-bit integers).

Lowering: ONNX Concat, which the CPU, CUDA and DirectML EPs have for every type (a copy); the
DirectML EP maps Concat straight back onto DML_OPERATOR_JOIN (DmlOperatorConcat.cpp), so on the
`dml` target it carries targets.DML_NODE_DOC.
"""

from __future__ import annotations

import numpy as np

from dml2onnx.core.desc import OperatorDesc
from dml2onnx.core.errors import ModelError
from dml2onnx.core.schema import OperatorSchema
from dml2onnx.graph.builder import GraphBuilder
from dml2onnx.graph.targets import DML_NODE_DOC
from dml2onnx.ops import common
from dml2onnx.ops.family import Family

CANDIDATES = ("concat",)


def validate(desc: OperatorDesc) -> None:
    check_parts(desc, "OutputTensor", desc.inputs, "InputTensors")


def check_parts(desc: OperatorDesc, whole: str, parts: tuple[str, ...], array: str) -> None:
    """`whole` is the `parts` side by side along Axis (JOIN: the output of the inputs; SPLIT: the
    input of the outputs): the same DataType and DimensionCount, the same Sizes but along Axis,
    and there the sizes add up."""
    w = desc.tensor(whole)
    axis = desc["Axis"]
    if axis >= w.rank:
        raise ModelError(desc.at("Axis"), f"must be less than the tensors' DimensionCount ({w.rank}), not {axis}")
    for part in parts:
        common.check_same_type(desc, part, whole)
        common.check_same_rank(desc, part, whole)
        t = desc.tensor(part)
        for i, (a, b) in enumerate(zip(t.sizes, w.sizes, strict=True)):
            if i != axis and a != b:
                raise ModelError(desc.at(part, "Sizes", i), f"must be {whole}'s size {b} (only Axis {axis} may differ), not {a}")
    total = sum(desc.tensor(p).sizes[axis] for p in parts)
    if total != w.sizes[axis]:
        raise ModelError(
            desc.at(whole, "Sizes", axis),
            f"must be {total}, the sum of the {array}' sizes along Axis {axis}, not {w.sizes[axis]}",
        )


def lower(desc: OperatorDesc, b: GraphBuilder, inputs: dict[str, str]) -> str:
    values = [inputs[p] for p in desc.inputs]
    doc = DML_NODE_DOC if b.target.dml_nodes else f"the inputs along axis {desc['Axis']}"
    return b.node("Concat", values, "join", doc, axis=desc["Axis"])


def reference(desc: OperatorDesc, inputs: dict[str, np.ndarray]) -> np.ndarray:
    return np.concatenate([inputs[p] for p in desc.inputs], axis=desc["Axis"])


def examples(op: OperatorSchema) -> list[common.Example]:
    """onnx_ops: each type, three 4-D inputs along axis 1."""
    out = []
    for t in common.example_types(op, "InputTensors"):
        parts = [common.example_tensor(t, [1, c, 2, 3]) for c in (1, 2, 3)]
        out.append({"InputCount": 3, "InputTensors": parts, "OutputTensor": common.example_tensor(t, [1, 6, 2, 3]), "Axis": 1})
    return out


OPERATOR_FAMILY = Family(("JOIN",), validate, lower, reference, CANDIDATES, examples=examples)
