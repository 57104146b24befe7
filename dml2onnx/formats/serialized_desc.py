"""Operator descs of DirectML's serialized graphs, read into dml2onnx's OperatorDesc.

ONNX Runtime's DirectML EP writes each operator node as an `OperatorNodeDesc` table (its
DmlGraphSerialization.cpp): the operator's type name, its non-null input and output tensor descs
in struct order (`DmlBufferTensorDesc`: data type name, sizes, strides when set, total size in
bytes), and one `AttributeDesc` per non-tensor field in struct order, counts and enums included,
each holding one member of a union (`UInt32`, `Float32`, `UIntArray`, `Activation`, ...). The node's
`inputNames`/`outputNames` hold one name per tensor field, "" where the optional tensor is null.
DxDispatch's DmlGraphDeserialization.cpp walks the operator's schema fields in the same order to
rebuild the desc; this module does the same, into the JSON form a DxDispatch model would give the
desc, which then goes through the same parsing and validation (desc.parse_operator_desc,
lowering.validate) as a JSON model's desc: one set of rules, one set of messages.

Where DxDispatch would dereference null or read what is not there (an attribute holding another
union member than its field's type, a fused activation with too few attributes, more tensors in
an array than names), each is a ModelError naming the field here, and so are attributes, names or
tensor descs left over (a desc of another DirectML version would be misread). Inputs fed by a
constant node that is read from a file (ConstantName) are flagged DML_TENSOR_FLAG_OWNED_BY_DML, as
DxDispatch does.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from dml2onnx import lowering
from dml2onnx.core import catalog, dtypes, operator_table, schema
from dml2onnx.core.desc import OperatorDesc, parse_operator_desc
from dml2onnx.core.errors import JsonPath, ModelError
from dml2onnx.core.schema import Kind, OperatorSchema
from dml2onnx.formats.flatbuf import Table

_TENSORS = (Kind.INPUT, Kind.OUTPUT, Kind.INPUT_ARRAY, Kind.OUTPUT_ARRAY)

# dml::ir::operatorFieldTypes::AttributeFieldVariant: the union member each field kind is stored as.
_VARIANT_NAMES = (
    "NONE",
    "Activation",
    "ActivationArray",
    "UInt32",
    "UInt64",
    "Int32",
    "Float32",
    "UIntArray",
    "IntArray",
    "FloatArray",
    "ScaleBias",
    "Size2D",
    "ScalarUnionData",
    "Bool",
)
# DirectMLSchema.h, which ONNX Runtime's DmlGraphSerialization.cpp writes by, types most BOOL
# fields (pooling's IncludePadding, MVN's NormalizeVariance, ...) as UINT: those come as UInt32.
_ALSO = {Kind.BOOL: ("UInt32",)}
_VARIANT_OF = {
    Kind.ACTIVATION: "Activation",
    Kind.ACTIVATION_ARRAY: "ActivationArray",
    Kind.UINT: "UInt32",
    Kind.COUNT: "UInt32",
    Kind.ENUM: "UInt32",
    Kind.UINT64: "UInt64",
    Kind.INT: "Int32",
    Kind.FLOAT: "Float32",
    Kind.UINT_ARRAY: "UIntArray",
    Kind.INT_ARRAY: "IntArray",
    Kind.FLOAT_ARRAY: "FloatArray",
    Kind.SCALE_BIAS: "ScaleBias",
    Kind.SIZE_2D: "Size2D",
    Kind.SCALAR_UNION: "ScalarUnionData",
    Kind.BOOL: "Bool",
}
# The struct members of the scalar variants (a struct in a union is stored inline, by offset).
_STRUCTS = {
    "UInt32": "<I",
    "UInt64": "<Q",
    "Int32": "<i",
    "Float32": "<f",
    "ScaleBias": "<ff",
    "Size2D": "<II",  # width, height
    "Bool": "<B",
}
_ARRAYS = {"UIntArray": "I", "IntArray": "i", "FloatArray": "f"}
# dml::ir::operatorFieldTypes::ScalarVariant: ByteArray is DML_SCALAR_UNION's 8 bytes (what ONNX
# Runtime writes); the others name one member, stored as a C union would hold it.
_SCALAR_VARIANTS = {1: "8s", 2: "<b", 3: "<B", 4: "<h", 5: "<H", 6: "<i", 7: "<I", 8: "<q", 9: "<Q", 10: "<f", 11: "<d"}
# Fields an absent value leaves null, as in DxDispatch.
_NULLABLE = (Kind.ACTIVATION, Kind.ACTIVATION_ARRAY, Kind.SCALE_BIAS)


@dataclass(frozen=True)
class NodeDesc:
    """An operator node's desc and the bind point of each of its input and output indices (the
    ToNodeInputIndex / FromNodeOutputIndex of DirectML's graph edges): a tensor field, or a tensor
    array's element `InputTensors[1]`, or None for a null optional tensor."""

    desc: OperatorDesc
    inputs: tuple[str | None, ...]
    outputs: tuple[str | None, ...]


def lookup(type_name: str, path: JsonPath) -> OperatorSchema:
    """A lowered operator's schema; an unknown or not yet lowered one is refused as in JSON models."""
    op = catalog.lookup(type_name)
    if op is None:
        raise ModelError(path, catalog.refusal(type_name))
    return op


def operator_node(
    table: Table,
    input_names: list[str],
    output_names: list[str],
    owned: set[str],
    path: JsonPath,
    level: str,
) -> NodeDesc:
    """An `OperatorNodeDesc`, its node's input and output names, and the names of the values
    that constant nodes read from files (`owned`). `path` names the node (`nodes[2]`); the
    desc's fields are reported under `nodes[2].DML_OPERATOR_GEMM`."""
    type_name = table.string(0, "type")
    if not type_name:
        raise ModelError(table.path + ("type",), "the operator node has no operator type")
    op = lookup(type_name, table.path + ("type",))
    desc_path = path + (op.full_name,)
    obj: dict[str, Any] = {}
    ins = _Tensors(table.tables(1, "inputs") or [], input_names, path, "input", owned)
    outs = _Tensors(table.tables(2, "outputs") or [], output_names, path, "output", set())
    in_points: list[str | None] = []
    out_points: list[str | None] = []
    for f in op.fields:
        if f.kind in (Kind.INPUT, Kind.OUTPUT):
            tensors, points = (ins, in_points) if f.kind is Kind.INPUT else (outs, out_points)
            value = tensors.single(f.name)
            points.append(f.name if value is not None else None)
            if value is not None:
                obj[f.name] = value
        elif f.kind in (Kind.INPUT_ARRAY, Kind.OUTPUT_ARRAY):
            tensors, points = (ins, in_points) if f.kind is Kind.INPUT_ARRAY else (outs, out_points)
            obj[f.name] = tensors.rest(f.name)
            points += [f"{f.name}[{i}]" for i in range(len(obj[f.name]))]
    ins.finished(op)
    outs.finished(op)
    obj.update(attributes(op, table.tables(3, "attributes") or [], table.path + ("attributes",)))
    desc = parse_operator_desc(type_name, obj, desc_path, table.path + ("type",), level=level)
    lowering.validate(desc)
    return NodeDesc(desc, tuple(in_points), tuple(out_points))


class _Tensors:
    """The tensor descs of one direction of a node, handed out field by field with their names."""

    def __init__(self, tables: list[Table], names: list[str], path: JsonPath, direction: str, owned: set[str]) -> None:
        self.tables, self.names, self.path, self.direction, self.owned = tables, names, path, direction, owned
        self.next_table = self.next_name = 0

    def _name(self, field: str) -> str:
        if self.next_name >= len(self.names):
            raise ModelError(
                self.path + (f"{self.direction}Names",),
                f"has {len(self.names)} names, too few: there is none for {field}",
            )
        self.next_name += 1
        return self.names[self.next_name - 1]

    def _table(self, field: str, name: str) -> dict[str, Any]:
        if self.next_table >= len(self.tables):
            raise ModelError(
                self.path + ("desc", f"{self.direction}s"),
                f"has {len(self.tables)} tensor descs, too few: there is none for {field} ('{name}')",
            )
        self.next_table += 1
        return tensor_json(self.tables[self.next_table - 1], name in self.owned)

    def single(self, field: str) -> dict[str, Any] | None:
        """A tensor field's desc, or None where its name is "" (a null optional tensor)."""
        name = self._name(field)
        return self._table(field, name) if name else None

    def rest(self, field: str) -> list[dict[str, Any]]:
        """A tensor array: every desc left, each with a name (as DxDispatch reads JOIN's inputs)."""
        out = []
        while self.next_table < len(self.tables):
            name = self._name(f"{field}[{len(out)}]")
            out.append(self._table(f"{field}[{len(out)}]", name))
        return out

    def finished(self, op: OperatorSchema) -> None:
        if self.next_name < len(self.names):
            raise ModelError(
                self.path + (f"{self.direction}Names",),
                f"has {len(self.names)} names, but {op.full_name} has {self.next_name} {self.direction} tensors here",
            )
        if self.next_table < len(self.tables):
            raise ModelError(
                self.path + ("desc", f"{self.direction}s"),
                f"has {len(self.tables)} tensor descs, but only {self.next_table} {self.direction} names are set",
            )


def tensor_json(table: Table, owned: bool) -> dict[str, Any]:
    """A `DmlBufferTensorDesc` as DxDispatch's JSON tensor desc (checked by desc.parse_tensor_desc)."""
    data_type = table.string(0, "dataType")
    if data_type is None:
        raise ModelError(table.path + ("dataType",), "the tensor desc has no data type")
    sizes = table.scalars(1, "sizes", "I")
    if sizes is None:
        raise ModelError(table.path + ("sizes",), "the tensor desc has no sizes")
    out: dict[str, Any] = {"DataType": data_type, "Sizes": list(sizes)}
    strides = table.scalars(2, "strides", "I")
    if strides is not None:  # DxDispatch: present means set
        out["Strides"] = list(strides)
    total = table.scalar(3, "<Q", "totalTensorSizeInBytes")
    if total:
        out["TotalTensorSizeInBytes"] = total
    if owned:
        out["Flags"] = "DML_TENSOR_FLAG_OWNED_BY_DML"
    return out


def attributes(op: OperatorSchema, tables: list[Table], path: JsonPath) -> dict[str, Any]:
    """The non-tensor fields of `op` from its `AttributeDesc`s, one each in struct order, as
    JSON values; null ones are left out. Every field needs its attribute (DxDispatch throws where
    an operator's are too few; ONNX Runtime writes a valueless one for a null field)."""
    fields = [f for f in op.fields if f.kind not in _TENSORS]
    if len(tables) != len(fields):
        listed = ", ".join(f.name for f in fields) or "none"
        raise ModelError(path, f"has {len(tables)} attributes, but {op.full_name} has {len(fields)} ({listed})")
    out: dict[str, Any] = {}
    for f, table in zip(fields, tables, strict=True):
        value = _attribute(f, table, out)
        if value is not None:
            out[f.name] = value
    return out


def _attribute(f: schema.Field, table: Table, earlier: dict[str, Any]) -> Any:
    declared = table.string(0, "name")
    if declared and declared != f.name:  # a desc of another DirectML version: every value would shift
        raise ModelError(table.path + ("name",), f"names the field '{declared}' where {f.name} belongs")
    tag, pos = table.union(1, 2, "val")
    want = _VARIANT_OF[f.kind]
    if pos is None:
        if f.optional or f.kind in _NULLABLE:
            return None
        raise ModelError(table.path + ("val",), f"{f.name} has no value")
    if tag < len(_VARIANT_NAMES) and _VARIANT_NAMES[tag] in _ALSO.get(f.kind, ()):
        want = _VARIANT_NAMES[tag]
    elif tag >= len(_VARIANT_NAMES) or _VARIANT_NAMES[tag] != want:
        got = _VARIANT_NAMES[tag] if tag < len(_VARIANT_NAMES) else f"union member {tag}"
        raise ModelError(table.path + ("val",), f"{f.name} ({f.kind.value}) holds a {got}, not a {want}")
    if want in _STRUCTS:
        members = table.struct(pos, _STRUCTS[want], "val")
        return _scalar_json(f, members, table.path + ("val",))
    value = Table.at(table.buf, pos, table.path + ("val",))
    if want in _ARRAYS:
        return list(value.scalars(0, "data", _ARRAYS[want]) or ())
    if want == "Activation":
        return activation_json(value)
    if want == "ActivationArray":
        return [activation_json(a) for a in value.tables(0, "data") or []]
    assert f.data_type is not None  # ScalarUnionData
    return scalar_union_json(value, earlier.get(f.data_type))


def _scalar_json(f: schema.Field, members: tuple[Any, ...], path: JsonPath) -> Any:
    if f.kind is Kind.SCALE_BIAS:
        return {"Scale": members[0], "Bias": members[1]}
    if f.kind is Kind.SIZE_2D:
        return {"Width": members[0], "Height": members[1]}
    (value,) = members
    if f.kind is Kind.BOOL:
        return bool(value)  # a C BOOL: any nonzero value is TRUE
    if f.kind is Kind.ENUM:
        assert f.enum is not None
        names = operator_table.ENUMS[f.enum]
        member = next((n for n, v in names.items() if v == value), None)
        if member is None:
            raise ModelError(
                path, f"{value} is not a {f.enum} value (one of {', '.join(f'{n} ({v})' for n, v in names.items())})"
            )
        return f"{f.enum}_{member}"
    return value


def activation_json(table: Table) -> dict[str, Any]:
    """A fused activation (`Activation`: type name and attributes) as DxDispatch's JSON form."""
    type_name = table.string(0, "type")
    if not type_name:
        raise ModelError(table.path + ("type",), "the fused activation has no operator type")
    op = lookup(type_name, table.path + ("type",))
    return {"Type": type_name, "Desc": attributes(op, table.tables(1, "attributes") or [], table.path + ("attributes",))}


def scalar_union_json(table: Table, type_name: Any) -> Any:
    """A `ScalarUnionData` as the JSON value of the type the desc's data type field names."""
    tag, pos = table.union(0, 1, "data")
    if pos is None or tag not in _SCALAR_VARIANTS:
        raise ModelError(
            table.path + ("data",), "the scalar union has no value" if pos is None else f"unknown scalar variant {tag}"
        )
    fmt = _SCALAR_VARIANTS[tag]
    raw = table.struct(pos, fmt, "data")[0]
    if not isinstance(raw, bytes):  # one member, its bytes zero-padded to the union's 8
        raw = np.array(raw, np.dtype(fmt)).tobytes().ljust(8, b"\0")
    short = type_name.removeprefix("DML_TENSOR_DATA_TYPE_") if isinstance(type_name, str) else None
    if short == "UNKNOWN":  # the union's bytes as they are (desc.parse_scalar)
        return {"Bytes": list(raw)}
    t = dtypes.BY_NAME.get(short or "")
    if t is None:  # no value of that type: parse_scalar says why
        return 0
    if t == dtypes.FLOAT16:  # DxDispatch's form for a half's bits
        return {"UInt16": int.from_bytes(raw[:2], "little")}
    value = np.frombuffer(raw[: t.size], t.numpy)[0]
    return float(value) if t.is_float else int(value)
