"""Every operator's example descs rebuilt through the Python API (tests/dmlx, tests/backends)."""

from __future__ import annotations

from typing import Any

import numpy as np

from dml2onnx import dmlx, lowering
from dml2onnx.core import catalog
from dml2onnx.core.desc import OperatorDesc, parse_operator_desc
from dml2onnx.core.errors import ModelError
from dml2onnx.core.schema import Kind
from dml2onnx.dmlx import operators
from dml2onnx.lowering import onnx_ops

INPUTS = (Kind.INPUT, Kind.INPUT_ARRAY)
OUTPUTS = (Kind.OUTPUT, Kind.OUTPUT_ARRAY)


def valid_examples(name: str) -> list[tuple[dict[str, Any], OperatorDesc]]:
    op = catalog.lookup(name)
    assert op is not None
    out = []
    for example in onnx_ops.example_descs(op):
        try:
            desc = parse_operator_desc(name, example, ("desc",), ("type",))
            lowering.validate(desc)
        except ModelError:
            continue
        out.append((example, desc))
    return out


def rebuilt(
    example: dict[str, Any],
    desc: OperatorDesc,
    explicit: bool,
    output_type: str | None = None,
    output_sizes: list[int] | None = None,
    g: dmlx.Graph | None = None,
    prefix: str = "",
) -> tuple[dmlx.Graph, dict[str, dmlx.Expression], Any]:
    """The example desc through its generated function: its inputs as graph inputs, its fields as
    keywords, its outputs given (`explicit`) or left to the output rule (its optional outputs named)."""
    op = desc.schema
    g = dmlx.Graph() if g is None else g
    args: dict[str, Any] = {}
    inputs: dict[str, dmlx.Expression] = {}
    for f in op.fields:
        if f.kind not in INPUTS or example.get(f.name) is None:
            continue
        items = example[f.name] if f.kind is Kind.INPUT_ARRAY else [example[f.name]]
        made = []
        for i, t in enumerate(items):
            name = prefix + (f.name if f.kind is Kind.INPUT else f"{f.name}{i}")
            inputs[name] = g.input(name, t["DataType"], t["Sizes"], t.get("Strides"))
            made.append(inputs[name])
        args[operators.parameter_name(f.name)] = made if f.kind is Kind.INPUT_ARRAY else made[0]
    for f in op.fields:
        if f.kind not in (*INPUTS, *OUTPUTS, Kind.COUNT) and f.name in example:
            args[operators.parameter_name(f.name)] = example[f.name]
    present = [f for f in op.fields if f.kind in OUTPUTS and example.get(f.name) is not None]
    if op.tensor_of(Kind.OUTPUT_ARRAY):
        items = example[present[0].name]
        args["output_type"] = items[0]["DataType"]
        args["output_sizes"] = [t["Sizes"] for t in items]
    elif explicit:
        args["outputs"] = {f.name: example[f.name] for f in present}
    else:
        args["outputs"] = {f.name: None for f in present if f.optional}
        args["output_type"], args["output_sizes"] = output_type, output_sizes
    if operators.needs_graph(op):
        args["graph"] = g
    return g, inputs, dmlx.operator(op.name)(**args)


def plain(value: Any) -> Any:
    """A desc's values with its fused activations' descs as their own values (not their paths)."""
    if isinstance(value, OperatorDesc):
        return (value.schema.name, {k: plain(v) for k, v in value.values.items()})
    if isinstance(value, tuple):
        return tuple(plain(v) for v in value)
    return value


def call_node(result: Any) -> Any:
    e = result[0] if isinstance(result, list) else next(iter(result.values())) if isinstance(result, dict) else result
    return e.node


def ramp(t: Any) -> np.ndarray:
    """The example model's values (`ops NAME --example`): a ramp for floats, 1 for integers."""
    n = int(np.prod(t.sizes))
    if t.data_type.is_float:
        return (np.arange(n) * 0.25 - 1).reshape(t.sizes).astype(t.data_type.numpy)
    return np.ones(t.sizes, t.data_type.numpy)


def expressions(result: Any) -> list[dmlx.Expression]:
    return list(result) if isinstance(result, list) else list(result.values()) if isinstance(result, dict) else [result]


NAMES = sorted(catalog.OPERATORS)
