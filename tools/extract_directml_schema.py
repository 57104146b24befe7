"""Extracts the facts of every DirectML operator desc into tools/directml_schema.json.

Reads two Microsoft headers (neither is copied into this repository; only the facts are):
- DxDispatch's `src/dxdispatch/DirectMLHelpers/DirectMLSchema.h` (microsoft/DirectML): each
  operator's fields in struct order with their schema kind (input, output, attribute), schema type
  (TENSOR_DESC, UINT, SCALE_BIAS, ...) and optional flag;
- `include/directx/DirectML.h` (microsoft/DirectX-Headers): the C type of each field (which UINT
  is an enum, and of which type), which field counts which array (`_Field_size_(X)`), the
  `DML_OPERATOR_TYPE` values, the `DML_TARGET_VERSION` block that introduced each operator type,
  and the values of every enum.

DirectML.h can be newer than DirectMLSchema.h: DirectML 1.15's RESAMPLE3, FOLD and UNFOLD (feature
level 6_4) have structs in DirectML.h but no row in DxDispatch's DirectMLSchema.h (microsoft/DirectML
a9614e8). Their rows are derived from the struct alone (`header_only_rows`): a DML_TENSOR_DESC* is
an input, or an output where its name starts with Output; BOOL, enums, UINT, FLOAT and the arrays
by their C types (`_Field_size_` says which count they share). None of them has an optional field.

Usage: python tools/extract_directml_schema.py DirectMLSchema.h DirectML.h "SOURCE NOTE" > tools/directml_schema.json
then python tools/make_operator_table.py > dml2onnx/core/operator_table.py
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

# DirectMLSchema.h's DML_SCHEMA_FIELD_TYPE -> schema.Kind member name (tensors by field kind).
_SCHEMA_TYPE_KIND = {
    "OPERATOR_DESC": "ACTIVATION",
    "OPERATOR_DESC_ARRAY": "ACTIVATION_ARRAY",
    "UINT": "UINT",
    "UINT64": "UINT64",
    "INT": "INT",
    "FLOAT": "FLOAT",
    "UINT_ARRAY": "UINT_ARRAY",
    "INT_ARRAY": "INT_ARRAY",
    "FLOAT_ARRAY": "FLOAT_ARRAY",
    "SCALE_BIAS": "SCALE_BIAS",
    "SIZE_2D": "SIZE_2D",
    "SCALAR_UNION": "SCALAR_UNION",
    "BOOL": "BOOL",
}
# Enums that tensor descs use besides those of operator fields.
_TENSOR_ENUMS = ("DML_TENSOR_DATA_TYPE", "DML_TENSOR_TYPE", "DML_TENSOR_FLAGS")


def _text(path: str) -> str:
    return Path(path).read_text(encoding="utf-8-sig").replace("\r\n", "\n")


def _strip_comments(text: str) -> str:
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def schema_operators(text: str) -> list[dict[str, Any]]:
    """DirectMLSchema.h: [{name, in_place, fields: [(kind, type, name, optional)]}] in file order."""
    fields: dict[str, list[tuple[str, str, str, bool]]] = {}
    for struct, body in re.findall(r"DML_SCHEMA_FIELD (DML_\w+)_OPERATOR_SCHEMA_FIELDS\[\d+\] \{(.*?)\n\};", text, re.S):
        rows = re.findall(r"DML_SCHEMA_FIELD_KIND_(\w+), DML_SCHEMA_FIELD_TYPE_(\w+), \"(\w+)\", (true|false)", body)
        fields[struct] = [(k, t, n, o == "true") for k, t, n, o in rows]
    ops = []
    for struct, body in re.findall(r"DML_OPERATOR_SCHEMA (DML_\w+)_OPERATOR_SCHEMA \{(.*?)\n\};", text, re.S):
        name = re.search(r"\"DML_OPERATOR_(\w+)\"", body)
        assert name is not None, struct
        ops.append(
            {
                "name": name.group(1),
                "in_place": "IN_PLACE_EXECUTION" in body,
                "fields": fields.get(struct, []),
            }
        )
    return ops


def _enum_value(expr: str, known: dict[str, int]) -> int:
    expr = expr.strip()
    shift = re.fullmatch(r"\(?\s*(\w+)\s*<<\s*(\w+)\s*\)?", expr)
    if shift:
        return _enum_value(shift.group(1), known) << _enum_value(shift.group(2), known)
    if expr in known:
        return known[expr]
    return int(expr, 0)


def header_enums(text: str) -> dict[str, list[tuple[str, int]]]:
    """Every `enum NAME {...};` of DirectML.h, all DML_TARGET_VERSION blocks included."""
    text = _strip_comments(text)
    enums: dict[str, list[tuple[str, int]]] = {}
    for name, body in re.findall(r"^enum (\w+)\s*\{(.*?)\};", text, re.S | re.M):
        values: list[tuple[str, int]] = []
        known: dict[str, int] = {}
        nxt = 0
        for line in body.split("\n"):
            line = line.strip().rstrip(",")
            if not line or line.startswith("#"):
                continue
            member, _, expr = line.partition("=")
            member = member.strip()
            value = _enum_value(expr, known) if expr else nxt
            known[member] = value
            values.append((member, value))
            nxt = value + 1
        enums[name] = values
    return enums


def operator_levels(text: str) -> dict[str, str]:
    """DML_OPERATOR_TYPE member -> the feature level of the DML_TARGET_VERSION block it is in."""
    body = re.search(r"^enum DML_OPERATOR_TYPE\s*\{(.*?)\};", text, re.S | re.M)
    assert body is not None
    level, levels = "1_0", {}
    for line in body.group(1).split("\n"):
        block = re.match(r"#if DML_TARGET_VERSION >= 0x(\d)(\d)00", line.strip())
        if block:
            level = f"{block.group(1)}_{block.group(2)}"
        elif line.strip().startswith("#endif"):
            level = "1_0"
        else:
            member = re.match(r"\s*DML_OPERATOR_(\w+)\s*(?:=\s*DML_OPERATOR_(\w+)\s*)?,", line)
            if member:  # an alias (SCATTER = SCATTER_ELEMENTS) has its target's level
                levels[member.group(1)] = levels[member.group(2)] if member.group(2) else level
    return levels


def operator_aliases(text: str) -> dict[str, list[str]]:
    """DML_OPERATOR_TYPE members that name the same value as another: {DirectMLSchema.h's name: [others]}."""
    pairs = re.findall(r"^\s*DML_OPERATOR_(\w+)\s*=\s*DML_OPERATOR_(\w+)\s*,", text, re.M)
    out: dict[str, list[str]] = {}
    for a, b in pairs:
        out.setdefault(a, []).append(b)
        out.setdefault(b, []).append(a)
    return out


def header_structs(text: str) -> dict[str, list[tuple[str, str, str | None]]]:
    """`struct DML_<op>_OPERATOR_DESC` -> [(C type, member, counted by)] in struct order."""
    text = _strip_comments(text)
    structs = {}
    for name, body in re.findall(r"^struct DML_(\w+)_OPERATOR_DESC\s*\{(.*?)\};", text, re.S | re.M):
        members = []
        for decl in body.split(";"):
            decl = " ".join(decl.split())
            if not decl:
                continue
            size = re.search(r"_Field_size_(?:opt_)?\((\w+)\)", decl)
            decl = re.sub(r"^(?:_\w+_(?:\([^)]*\))?\s+)+", "", decl).replace("const ", "")  # SAL annotations
            ctype, member = decl.rsplit(" ", 1)
            members.append((ctype.replace(" ", ""), member, size.group(1) if size else None))
        structs[name] = members
    return structs


# A C member type of DirectML.h -> the DirectMLSchema.h field type it would have.
_C_TYPE_SCHEMA = {
    "UINT": "UINT",
    "INT": "INT",
    "FLOAT": "FLOAT",
    "UINT64": "UINT64",
    "BOOL": "BOOL",
    "UINT*": "UINT_ARRAY",
    "INT*": "INT_ARRAY",
    "FLOAT*": "FLOAT_ARRAY",
    "DML_SCALE_BIAS*": "SCALE_BIAS",
    "DML_SIZE_2D": "SIZE_2D",
    "DML_SCALAR_UNION": "SCALAR_UNION",
}


def header_only_rows(name: str, members: list[tuple[str, str, str | None]]) -> dict[str, Any]:
    """A DirectMLSchema.h-like row for an operator that file does not have, from its struct."""
    rows = []
    for ctype, member, _ in members:
        if ctype == "DML_TENSOR_DESC*":
            rows.append(("OUTPUT_TENSOR" if member.startswith("Output") else "INPUT_TENSOR", "TENSOR_DESC", member, False))
        elif ctype.startswith("DML_") and ctype in _ENUM_TYPES:
            rows.append(("ATTRIBUTE", "UINT", member, False))
        else:
            rows.append(("ATTRIBUTE", _C_TYPE_SCHEMA[ctype], member, False))
    return {"name": name, "in_place": False, "fields": rows}


_ENUM_TYPES: set[str] = set()


def _field(op: str, row: tuple[str, str, str, bool], member: tuple[str, str, str | None], counts: set[str]) -> dict[str, Any]:
    kind, stype, name, optional = row
    ctype, cname, count = member
    assert cname == name, f"{op}: DirectMLSchema.h has {name} where DirectML.h has {cname}"
    out: dict[str, Any] = {"name": name}
    if stype in ("TENSOR_DESC", "TENSOR_DESC_ARRAY"):
        assert kind in ("INPUT_TENSOR", "OUTPUT_TENSOR"), (op, name)
        out["kind"] = kind.split("_")[0] + ("_ARRAY" if stype.endswith("ARRAY") else "")
    else:
        out["kind"] = _SCHEMA_TYPE_KIND[stype]
    # DirectMLSchema.h types enums and most BOOLs as UINT: DirectML.h's C type says which they are.
    if out["kind"] in ("UINT", "BOOL") and ctype.startswith("DML_"):
        out["kind"], out["enum"] = "ENUM", ctype
    elif out["kind"] in ("UINT", "BOOL") and ctype == "BOOL":
        out["kind"] = "BOOL"
    elif out["kind"] == "UINT" and name in counts:
        out["kind"] = "COUNT"
    scalar = {"UINT": "UINT", "COUNT": "UINT", "INT": "INT", "FLOAT": "FLOAT", "UINT64": "UINT64"}
    assert out["kind"] not in scalar or scalar[out["kind"]] == ctype.upper(), (op, name, ctype)
    if count:
        out["count"] = count
    if optional:
        out["optional"] = True
    return out


def operators(schema_text: str, header_text: str) -> list[dict[str, Any]]:
    values = dict(header_enums(header_text)["DML_OPERATOR_TYPE"])
    levels = operator_levels(header_text)
    structs = header_structs(header_text)
    aliases = operator_aliases(header_text)
    _ENUM_TYPES.update(header_enums(header_text))
    rows = schema_operators(schema_text)
    known = {op["name"] for op in rows} | {a for op in rows for a in aliases.get(op["name"], [])}
    rows += [header_only_rows(n, structs[n]) for n in levels if n not in known and n in structs]
    out = []
    for op in rows:
        name = op["name"]
        members = structs[name]
        assert len(members) == len(op["fields"]), f"{name}: field counts differ"
        counts = {c for _, _, c in members if c}
        fields = [_field(name, row, m, counts) for row, m in zip(op["fields"], members, strict=True)]
        data_types = [f["name"] for f in fields if f.get("enum") == "DML_TENSOR_DATA_TYPE"]
        for f in fields:
            if f["kind"] == "SCALAR_UNION":  # the union holds a value of the desc's one data-type field
                assert len(data_types) == 1, (name, data_types)
                f["data_type"] = data_types[0]
            if f["kind"] == "COUNT":
                f["arrays"] = [g["name"] for g in fields if g.get("count") == f["name"]]
        out.append(
            {
                "name": name,
                "value": values[f"DML_OPERATOR_{name}"],
                "introduced": levels[name],
                "in_place": op["in_place"],
                **({"aliases": aliases[name]} if name in aliases else {}),
                "fields": fields,
            }
        )
    return sorted(out, key=lambda o: o["value"])


def enums_used(ops: list[dict[str, Any]], header_text: str) -> dict[str, dict[str, int]]:
    """The values of every enum an operator field or a tensor desc uses, prefixes dropped."""
    every = header_enums(header_text)
    wanted = sorted({f["enum"] for op in ops for f in op["fields"] if "enum" in f} | set(_TENSOR_ENUMS))
    out = {}
    for name in wanted:
        prefix = "DML_TENSOR_FLAG_" if name == "DML_TENSOR_FLAGS" else name + "_"
        out[name] = {m.removeprefix(prefix): v for m, v in every[name]}
    return out


def main() -> None:
    schema_text, header_text = _text(sys.argv[1]), _text(sys.argv[2])
    ops = operators(schema_text, header_text)
    facts = {"source": sys.argv[3], "operators": ops, "enums": enums_used(ops, header_text)}
    sys.stdout.write(json.dumps(facts, indent=1) + "\n")


if __name__ == "__main__":
    main()
