"""The ONNX ops an operator's lowerings use, found by lowering example descs (not declared by
hand, so the answer cannot drift from the code): for each lowered operator, one small desc per
data type of its newest "Tensor support" table (REDUCE: per function), lowered for the
`portable` target with every candidate lowering that applies; the answer is the union of the
graphs' op types."""

from __future__ import annotations

import functools
from typing import Any

from . import choices, lowering, operator_table, ops, schema
from .desc import parse_operator_desc
from .errors import ModelError

_SOFTMAX_FAMILY = ("ACTIVATION_HARDMAX", "ACTIVATION_LOG_SOFTMAX", "ACTIVATION_SOFTMAX")
_AXES_FAMILY = ("ACTIVATION_HARDMAX1", "ACTIVATION_LOG_SOFTMAX1", "ACTIVATION_SOFTMAX1")
_MVN = ("MEAN_VARIANCE_NORMALIZATION", "MEAN_VARIANCE_NORMALIZATION1", "MEAN_VARIANCE_NORMALIZATION2")
_ACTIVATION_PARAMETERS = {"Steepness": 1.0, "Alpha": 0.5, "Beta": 0.25, "Gamma": 1.5, "Bias": 0.1, "Threshold": 0.2}
_BOUNDS = {"Min": 0, "Max": 1}  # CLIP, CLIP1, THRESHOLD (scalar unions take the tensor's type)


def _tensor(data_type: str, sizes: list[int]) -> dict[str, Any]:
    return {"DataType": data_type, "Sizes": sizes}


def _examples(op: schema.OperatorSchema) -> list[dict[str, Any]]:
    """Example descs of `op`, one per input data type (and REDUCE function) of its newest table."""
    name = op.name
    inputs = op.tensor_fields(schema.Kind.INPUT)  # none: the fills
    first_input = (inputs[0] if inputs else op.tensor_fields(schema.Kind.OUTPUT)[0]).name
    if name == "REDUCE":  # the newest table of each group of functions, every input type
        return [
            _reduce(f, d.name, t.tensors["OutputTensor"].types[0].name)
            for t in catalog_newest(op)
            for f in t.functions
            for d in t.tensors["InputTensor"].types
        ]
    refused = getattr(ops.MODULES[name], "NOT_LOWERED_TYPES", ())  # listed by the page, refused by the module
    types = [d.name for d in op.support[0].tensors[first_input].types if d.name not in refused]
    out: list[dict[str, Any]] = []
    for t in types:
        # every tensor of the same type and sizes: the activations' and the element-wise operators' rule
        io = {f.name: _tensor(t, [2, 3, 4, 5]) for f in op.fields if f.kind in (schema.Kind.INPUT, schema.Kind.OUTPUT)}
        outputs = [d.name for d in op.support[0].tensors.get("OutputTensor", op.support[0].tensors[first_input]).types]
        if "OutputTensor" in io and t not in outputs:  # comparisons and logic write 0/1 integers
            io["OutputTensor"] = _tensor(outputs[0], [2, 3, 4, 5])
        if name in _SOFTMAX_FAMILY:
            out.append({"InputTensor": _tensor(t, [3, 8]), "OutputTensor": _tensor(t, [3, 8])})
        elif name in _AXES_FAMILY:
            out += [{**io, "AxisCount": len(a), "Axes": a} for a in ([3], [1, 3])]
        elif name in _MVN:
            out.append(_mvn(name, t))
        elif name in ("ARGMAX", "ARGMIN"):
            for index in [d.name for d in op.support[0].tensors["OutputTensor"].types]:
                out.append(
                    {
                        "InputTensor": _tensor(t, [3, 8]),
                        "OutputTensor": _tensor(index, [3, 1]),
                        "AxisCount": 1,
                        "Axes": [1],
                        "AxisDirection": "DECREASING",
                    }
                )
        elif name == "ONE_HOT":
            for values in [d.name for d in op.support[0].tensors["ValuesTensor"].types]:
                out.append(
                    {
                        "IndicesTensor": _tensor(t, [3, 1]),
                        "ValuesTensor": _tensor(values, [1, 2]),
                        "OutputTensor": _tensor(values, [3, 4]),
                        "Axis": 1,
                    }
                )
        elif name == "CAST":  # every output type
            out += [{**io, "OutputTensor": _tensor(d.name, [2, 3, 4, 5])} for d in op.support[0].tensors["OutputTensor"].types]
        elif name in ("FILL_VALUE_CONSTANT", "FILL_VALUE_SEQUENCE"):
            out.append({**io, "ValueDataType": t} | {f.name: 1 for f in op.fields if f.kind is schema.Kind.SCALAR_UNION})
        else:  # an element-wise operator: its FLOAT parameters, scalar unions of the tensor's type
            params: dict[str, Any] = {}
            for f in op.fields:
                if f.kind in (schema.Kind.FLOAT, schema.Kind.SCALAR_UNION):
                    params[f.name] = _ACTIVATION_PARAMETERS.get(f.name, _BOUNDS.get(f.name, 1))
                elif f.kind is schema.Kind.ENUM and f.enum == "DML_TENSOR_DATA_TYPE":
                    params[f.name] = t
                elif f.kind is schema.Kind.ENUM:  # its first member (IS_INFINITY's EITHER, ...)
                    params[f.name] = next(iter(operator_table.ENUMS[f.enum]))
            out.append({**io, **params})
    return out


def catalog_newest(op: schema.OperatorSchema) -> list[schema.SupportTable]:
    """The newest table of each function group (REDUCE's page has one group per set of functions)."""
    seen: set[tuple[str, ...]] = set()
    out = []
    for t in op.support:
        if t.functions not in seen:
            seen.add(t.functions)
            out.append(t)
    return out


def _reduce(function: str, in_type: str, index_type: str) -> dict[str, Any]:
    arg = function in ("ARGMAX", "ARGMIN")
    return {
        "Function": function,
        "InputTensor": _tensor(in_type, [3, 8]),
        "OutputTensor": _tensor(index_type if arg else in_type, [3, 1]),
        "AxisCount": 1,
        "Axes": [1],
    }


def _mvn(name: str, data_type: str) -> dict[str, Any]:
    t = {"DataType": data_type, "Sizes": [2, 3, 4, 5]}
    desc: dict[str, Any] = {
        "InputTensor": t,
        "ScaleTensor": {**t, "Sizes": [1, 3, 1, 1]},
        "BiasTensor": {**t, "Sizes": [1, 3, 1, 1]},
        "OutputTensor": t,
        "Epsilon": 1e-5,
        "FusedActivation": {"Type": "ACTIVATION_RELU"},
    }
    if name == "MEAN_VARIANCE_NORMALIZATION":
        return {**desc, "CrossChannel": False, "NormalizeVariance": True}
    axes = {"AxisCount": 2, "Axes": [2, 3]}
    if name == "MEAN_VARIANCE_NORMALIZATION1":
        return {**desc, **axes, "NormalizeVariance": True}
    return {**desc, **axes, "UseMean": True, "UseVariance": True}


@functools.cache
def onnx_ops(name: str) -> tuple[str, ...]:
    """The ONNX op types of every portable lowering of the example descs of `name`, sorted."""
    op = schema.OPERATORS[name]
    found: set[str] = set()
    for example in _examples(op):
        try:
            desc = parse_operator_desc(name, example, ("desc",), ("type",))
            lowering.validate(desc)
        except ModelError:  # an example a page's other rules refuse (e.g. a type pair): skip it
            continue
        for candidate in choices.available(desc, 17):
            model = lowering.lower(desc, "op", target="portable", variant=candidate)
            found.update(n.op_type for n in model.graph.node)
    return tuple(sorted(found))
