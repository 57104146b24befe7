"""The ONNX ops an operator's lowerings use, found by lowering example descs (not declared by
hand, so the answer cannot drift from the code): for each lowered operator, small descs covering
every data type of its newest "Tensor support" table (its module's `examples(op)`, or the
element-wise rule below), lowered for the `portable` target with every candidate lowering that
applies; the answer is the union of the graphs' op types."""

from __future__ import annotations

import functools
from typing import Any

from dml2onnx import lowering
from dml2onnx.core import operator_table, schema
from dml2onnx.core.desc import parse_operator_desc
from dml2onnx.core.errors import ModelError
from dml2onnx.lowering import choices
from dml2onnx.ops import common, registry

_ACTIVATION_PARAMETERS = {"Steepness": 1.0, "Alpha": 0.5, "Beta": 0.25, "Gamma": 1.5, "Bias": 0.1, "Threshold": 0.2}
_BOUNDS = {"Min": 0, "Max": 1}  # CLIP, CLIP1, THRESHOLD (scalar unions take the tensor's type)


def example_descs(op: schema.OperatorSchema) -> list[dict[str, Any]]:
    """Example descs of `op`: its module's own (`examples(op)`), or for an element-wise operator
    one per input data type of its newest table."""
    family = registry.family(op.name)
    own = family.examples
    return own(op) if own is not None else _element_wise_examples(op, family.not_lowered_types)


def _element_wise_examples(op: schema.OperatorSchema, refused: tuple[str, ...]) -> list[dict[str, Any]]:
    """Every tensor of the same type and sizes (the element-wise operators' rule), but an output
    the table gives other types (comparisons and logic write 0/1 integers); FLOAT parameters and
    scalar unions set, DML_TENSOR_DATA_TYPE fields the tensor's type, other enums their first member."""
    first = (op.tensor_of(schema.Kind.INPUT) or op.tensor_of(schema.Kind.OUTPUT))[0].name
    outputs = common.example_types(op, "OutputTensor" if "OutputTensor" in op.support[0].tensors else first)
    out: list[dict[str, Any]] = []
    for t in common.example_types(op, first, refused):
        desc: dict[str, Any] = {
            f.name: common.example_tensor(t, [2, 3, 4, 5]) for f in op.fields if f.kind in (schema.Kind.INPUT, schema.Kind.OUTPUT)
        }
        if "OutputTensor" in desc and t not in outputs:
            desc["OutputTensor"] = common.example_tensor(outputs[0], [2, 3, 4, 5])
        for f in op.fields:
            if f.kind in (schema.Kind.FLOAT, schema.Kind.SCALAR_UNION):
                desc[f.name] = _ACTIVATION_PARAMETERS.get(f.name, _BOUNDS.get(f.name, 1))
            elif f.kind is schema.Kind.ENUM and f.enum == "DML_TENSOR_DATA_TYPE":
                desc[f.name] = t
            elif f.kind is schema.Kind.ENUM:  # its first member (IS_INFINITY's EITHER, ...)
                desc[f.name] = next(iter(operator_table.ENUMS[f.enum]))
        out.append(desc)
    return out


@functools.cache
def onnx_ops(name: str) -> tuple[str, ...]:
    """The ONNX op types of every portable lowering of the example descs of `name`, sorted."""
    op = operator_table.OPERATORS[name]
    found: set[str] = set()
    for example in example_descs(op):
        try:
            desc = parse_operator_desc(name, example, ("desc",), ("type",))
            lowering.validate(desc)
        except ModelError:  # an example a page's other rules refuse (e.g. a type pair): skip it
            continue
        for candidate in choices.available(desc, 17, "portable"):
            model = lowering.lower(desc, "op", target="portable", variant=candidate)
            found.update(n.op_type for n in model.graph.node)
    return tuple(sorted(found))
