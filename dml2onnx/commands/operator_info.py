"""`dml2onnx ops NAME`: one operator's facts (its desc's fields with their kinds, enum values and
counts, the feature level that introduced it, the data types and dimension counts of its doc page's
"Tensor support" table, its doc page, its lowerings' ONNX ops and candidates), and `--example`: a
DxDispatch model that runs it as it is (`dml2onnx run`), made from the first example desc of its
family that validates. docs/operators.md is these pages for every operator (tools/make_operator_docs.py)."""

from __future__ import annotations

import inspect
import json
from typing import Any

from dml2onnx import dmlx, lowering
from dml2onnx.core import catalog, operator_table
from dml2onnx.core.desc import OperatorDesc, parse_operator_desc
from dml2onnx.core.errors import ModelError, UsageError
from dml2onnx.core.schema import NEWEST_LEVEL, Field, Kind, OperatorSchema
from dml2onnx.dmlx import shapes
from dml2onnx.lowering import onnx_ops
from dml2onnx.ops import registry

DOCS = "https://learn.microsoft.com/en-us/windows/win32/api/directml/ns-directml-"
_TENSOR_KINDS = (Kind.INPUT, Kind.OUTPUT, Kind.INPUT_ARRAY, Kind.OUTPUT_ARRAY)
# What an enum's values mean where the names alone mislead.
ENUM_NOTES = {
    "DML_CONVOLUTION_MODE": "CROSS_CORRELATION is what ONNX's Conv and PyTorch compute; CONVOLUTION flips the filter first",
    "DML_MATRIX_TRANSFORM": "TRANSPOSE swaps the last two dimensions",
}


def find(name: str) -> OperatorSchema:
    """The operator named (full or short form, any case), or a UsageError with the closest names."""
    op = catalog.find(name.upper())
    if op is not None:
        return op
    close = catalog.close_names(name, cutoff=0.6)
    hint = f"; did you mean {' or '.join(close)}?" if close else " (dml2onnx ops lists them all)"
    raise UsageError(f"unknown operator '{name}'{hint}")


def doc_page(op: OperatorSchema) -> str:
    return f"{DOCS}dml_{op.name.lower()}_operator_desc"


def field_kind(f: Field) -> str:
    """A field's kind as the pages would say it: its type, enum values, what counts it."""
    if f.kind is Kind.ENUM and f.enum is not None:
        note = ENUM_NOTES.get(f.enum)
        return f"enum {f.enum}: {', '.join(operator_table.ENUMS[f.enum])}" + (f" ({note})" if note else "")
    if f.kind is Kind.COUNT:
        return f"UINT, the number of elements of {f.array}"
    if f.count is not None:
        return f"{f.kind.value} of {f.count} elements"
    if f.kind is Kind.SCALAR_UNION:
        return f"scalar union of the type in {f.data_type}"
    if f.kind is Kind.ACTIVATION:
        return "fused activation (an ACTIVATION_* desc with null tensors)"
    return f.kind.value


def facts(name: str, level: str = NEWEST_LEVEL) -> dict[str, Any]:
    """Everything `ops NAME` prints, as JSON-ready values; the data types and dimension counts of
    the feature level `level`."""
    op = find(name)
    if not catalog.available(op, level):
        raise UsageError(f"{op.full_name} came with feature level {op.feature_level}; {level} has no such operator")
    family = registry.family(op.name)
    tables = catalog.tables_at(op, level)
    tensors: dict[str, dict[str, Any]] = {}
    for t in tables:
        for tensor, support in t.tensors.items():
            entry = tensors.setdefault(tensor, {"dimensions": list(support.ranks), "data_types": []})
            entry["data_types"] += [d.name for d in support.types if d.name not in entry["data_types"]]
    return {
        "name": op.full_name,
        "desc": f"DML_{op.name}_OPERATOR_DESC",
        "introduced": op.feature_level,
        "doc_page": doc_page(op),
        "fusable": op.fusable,
        "fields": [
            {"name": f.name, "kind": field_kind(f), "optional": f.optional, **({"enum": f.enum} if f.enum else {})}
            for f in op.fields
        ],
        "feature_level": level,
        "tensor_support": tensors,
        "onnx_ops": list(onnx_ops.onnx_ops(op.name)),
        "candidate_lowerings": list(family.candidates),
        "python": python_call(op),
        "python_outputs": python_outputs(op),
    }


def python_outputs(op: OperatorSchema) -> str:
    if shapes.rule(op) or dmlx.function_of(op.name) is not dmlx.operator(op.name):
        return "by DirectMLX's rule"
    return "given by the caller (output_type, output_sizes, outputs)"


def _bare(function: Any) -> str:
    """A function's signature without its annotations: what a call writes."""
    sig = inspect.signature(function)
    params = [p.replace(annotation=inspect.Parameter.empty) for p in sig.parameters.values()]
    return str(sig.replace(parameters=params, return_annotation=inspect.Signature.empty))


def python_call(op: OperatorSchema) -> str:
    """The dmlx function's call, as its signature reads (the hand-written one where DirectMLX's differs)."""
    function = dmlx.function_of(op.name)
    generated = dmlx.operator(op.name)
    text = f"dmlx.{function.__name__}{_bare(function)}"
    if function is not generated:
        text += f"; generated: dmlx.operator({op.name!r}){_bare(generated)}"
    return text


def text(info: dict[str, Any]) -> str:
    lines = [
        f"{info['name']}  ({info['desc']}, feature level {info['introduced']}, lowered by dml2onnx)",
        f"doc page: {info['doc_page']}",
        "fields, in struct order:",
    ]
    width = max(len(f["name"]) for f in info["fields"])
    for f in info["fields"]:
        lines.append(f"  {f['name']:<{width}}  {f['kind']}{', optional' if f['optional'] else ''}")
    newest = " (the newest)" if info["feature_level"] == NEWEST_LEVEL else ""
    lines.append(f"tensor support at feature level {info['feature_level']}{newest}:")
    for tensor, s in info["tensor_support"].items():
        lo, hi = s["dimensions"]
        dims = f"{lo} dimensions" if lo == hi else f"{lo} to {hi} dimensions"
        lines.append(f"  {tensor}: {', '.join(s['data_types'])}; {dims}")
    lines.append(f"ONNX ops of its lowerings: {', '.join(info['onnx_ops'])}")
    lines.append(f"candidate lowerings (picked per target and shape): {', '.join(info['candidate_lowerings'])}")
    lines.append(f"Python: {info['python']}; outputs {info['python_outputs']}")
    short = info["name"].removeprefix("DML_OPERATOR_")
    file = f"{short.lower()}.json"
    lines.append(f"a runnable example: dml2onnx ops {short} --example > {file} && dml2onnx run {file}")
    return "\n".join(lines)


def _example_desc(op: OperatorSchema) -> tuple[dict[str, Any], OperatorDesc]:
    valid = []
    for example in onnx_ops.example_descs(op):
        try:
            desc = parse_operator_desc(op.name, example, ("desc",), ("type",))
            lowering.validate(desc)
        except ModelError:
            continue
        valid.append((example, desc))
    if not valid:
        raise AssertionError(f"{op.name} has no valid example desc")  # tests/commands check every operator has one
    # FLOAT32 where the operator takes it: the type a newcomer expects first
    return next((v for v in valid if v[1].tensor((*v[1].inputs, *v[1].outputs)[0]).data_type.name == "FLOAT32"), valid[0])


def _initial_values(desc: OperatorDesc, point: str, is_input: bool) -> dict[str, Any]:
    t = desc.tensor(point)
    packed = t.data_type.is_packed  # 4-bit types: their bytes, as UINT8 (0x11: a 1 in each nibble)
    count, dtype = (t.size_in_bytes, "UINT8") if packed else (t.buffer_elements, t.data_type.name)
    if not is_input:
        values: dict[str, Any] = {"valueCount": count, "value": 0}
    elif t.data_type.is_float:  # a ramp, so that the output shows what the operator does
        values = {"valueCount": count, "valueStart": -1, "valueDelta": 0.25}
    else:
        values = {"valueCount": count, "value": 0x11 if packed else 1}
    return {"initialValuesDataType": dtype, "initialValues": values}


def example_model(name: str) -> dict[str, Any]:
    """A DxDispatch model running one example desc of the operator: a resource per bind point
    (inputs a ramp for floats, 1 for integers; outputs zeros), one dispatch, and a print of every output."""
    op = find(name)
    source, desc = _example_desc(op)
    resources: dict[str, Any] = {}
    bindings: dict[str, Any] = {}
    for f in op.fields:
        if f.kind not in _TENSOR_KINDS or desc[f.name] is None:
            continue
        points = [p for p in (*desc.inputs, *desc.outputs) if p == f.name or p.startswith(f"{f.name}[")]
        names = []
        for point in points:
            resource = point.replace("[", "").replace("]", "")
            resources[resource] = _initial_values(desc, point, point in desc.inputs)
            names.append(resource)
        bindings[f.name] = names if f.kind in (Kind.INPUT_ARRAY, Kind.OUTPUT_ARRAY) else names[0]
    outputs = [p.replace("[", "").replace("]", "") for p in desc.outputs]
    return {
        "resources": resources,
        "dispatchables": {op.name.lower(): {"type": op.full_name, "desc": source}},
        "commands": [
            {"type": "dispatch", "dispatchable": op.name.lower(), "bindings": bindings},
            *({"type": "print", "resource": r} for r in outputs),
        ],
    }


def example_json(name: str) -> str:
    return dumps(example_model(name)) + "\n"


def dumps(value: Any, indent: str = "") -> str:
    """JSON as people write DxDispatch models: objects one key per line, arrays of numbers and
    strings (Sizes, Axes) and small objects on one line."""
    inline = json.dumps(value)
    if not isinstance(value, dict | list) or (len(inline) <= 100 and not any(_nested(v) for v in _items(value))):
        return inline
    inner = indent + "  "
    if isinstance(value, list):
        return "[\n" + ",\n".join(inner + dumps(v, inner) for v in value) + "\n" + indent + "]"
    return "{\n" + ",\n".join(f"{inner}{json.dumps(k)}: {dumps(v, inner)}" for k, v in value.items()) + "\n" + indent + "}"


def _nested(v: Any) -> bool:
    return isinstance(v, dict) or (isinstance(v, list) and any(isinstance(x, dict | list) for x in v))


def _items(value: dict[str, Any] | list[Any]) -> list[Any]:
    return list(value.values()) if isinstance(value, dict) else list(value)


def markdown_page() -> str:
    """docs/operators.md: every operator's facts and its example model (tools/make_operator_docs.py)."""
    lines = [
        "# DirectML operators in dml2onnx",
        "",
        "Generated by tools/make_operator_docs.py from the operator table (`dml2onnx ops NAME` prints the same",
        "for one operator). Each operator: its desc's fields in struct order with their kinds and enum values,",
        'the data types and dimension counts of its doc page\'s newest "Tensor support" table, the ONNX ops its',
        "lowerings use, and a DxDispatch model that runs it (`dml2onnx ops NAME --example > m.json`,",
        "`dml2onnx run m.json`). Enum values are written short (`CROSS_CORRELATION`) or in full",
        "(`DML_CONVOLUTION_MODE_CROSS_CORRELATION`).",
        "",
    ]
    for name in operator_table.OPERATORS:
        info = facts(name)
        short = info["name"].removeprefix("DML_OPERATOR_")
        lines += [f"## {short}", "", f"`{info['desc']}`, feature level {info['introduced']}: [doc page]({info['doc_page']})", ""]
        lines += ["| field | kind |", "|---|---|"]
        lines += [f"| `{f['name']}` | {f['kind']}{', optional' if f['optional'] else ''} |" for f in info["fields"]]
        lines.append("")
        for tensor, support in info["tensor_support"].items():
            lo, hi = support["dimensions"]
            dims = f"{lo}" if lo == hi else f"{lo}-{hi}"
            lines.append(f"- `{tensor}`: {', '.join(support['data_types'])}; {dims} dimensions")
        lines += ["", f"ONNX ops of its lowerings: {', '.join(info['onnx_ops'])}.", ""]
        lines += [f"Python (docs/python-api.md): `{info['python']}`; outputs {info['python_outputs']}.", ""]
        lines += ["<details><summary>A model that runs it</summary>", "", "```json", example_json(name).rstrip("\n"), "```", ""]
        lines += ["</details>", ""]
    return "\n".join(lines)
