"""Operator descs as the C structs of directml.h (x64 Windows ABI), packed into one byte blob.

The packing is generic: it follows the schema table's field kinds (schema.py lists the fields in
struct order), so every operator of the table packs without code of its own. Pointers inside the
blob hold the blob offset of their target; `Packed.relocations` lists them (pointer offset,
target offset) so that a C program can copy the blob and rebase each pointer to
`base + target`. The blob starts with the root `DML_OPERATOR_DESC {Type, Desc*}`, which is
what `IDMLDevice::CreateOperator` takes.

Layouts (x64: pointers and UINT64 8 bytes, aligned to 8; UINT, INT, FLOAT, BOOL and enums 4):

    DML_OPERATOR_DESC        {UINT Type @0; const void* Desc @8}                          16 bytes
    DML_TENSOR_DESC          {UINT Type @0; const void* Desc @8}                          16 bytes
    DML_BUFFER_TENSOR_DESC   {DataType @0; Flags @4; DimensionCount @8; Sizes* @16;
                              Strides* @24; UINT64 TotalTensorSizeInBytes @32;
                              UINT GuaranteedBaseOffsetAlignment @40}                     48 bytes
    DML_SCALAR_UNION         8 bytes, aligned to 8

tests/backends/test_dmlapi.py checks these offsets, and every operator desc's, against Microsoft's
DirectML.h compiled by mingw-w64's gcc.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dml2onnx.core import dtypes, operator_table
from dml2onnx.core.desc import OperatorDesc
from dml2onnx.core.schema import Kind, OperatorSchema
from dml2onnx.core.tensor import TensorDesc

# directml.h's DML_OPERATOR_TYPE value of every operator (operator_table.py, generated from
# DirectML.h: the enum counts up from DML_OPERATOR_INVALID = 0 through its DML_TARGET_VERSION blocks).
OPERATOR_TYPE: dict[str, int] = operator_table.OPERATOR_TYPE
# Every enum's values (schema.ENUMS holds the few the lowered operators use; they agree).
ENUMS: dict[str, dict[str, int]] = operator_table.ENUMS

# DML_TENSOR_DATA_TYPE, for the types dtypes models (every one but UNKNOWN)
DATA_TYPE: dict[str, int] = {k: v for k, v in ENUMS["DML_TENSOR_DATA_TYPE"].items() if k in dtypes.BY_NAME}
DATA_TYPE_BY_VALUE: dict[int, dtypes.DataType] = {v: dtypes.BY_NAME[k] for k, v in DATA_TYPE.items()}

TENSOR_TYPE_BUFFER = 1  # DML_TENSOR_TYPE_BUFFER
POINTER = 8

# (size, alignment) of one field of each kind; pointers for tensors, arrays and activations.
# INT and SCALAR_UNION are matched by member name (a Kind named so by any enum packs as these):
# INT a signed 4-byte INT, SCALAR_UNION a DML_SCALAR_UNION (8 bytes; its value a numpy scalar of
# the desc's own data-type field, whose bytes it holds).
_SCALAR_UNION = "SCALAR_UNION"
_FIELD_LAYOUT: dict[str, tuple[int, int]] = {
    Kind.INPUT.value: (POINTER, POINTER),
    Kind.OUTPUT.value: (POINTER, POINTER),
    Kind.UINT_ARRAY.value: (POINTER, POINTER),
    Kind.ACTIVATION.value: (POINTER, POINTER),
    Kind.UINT.value: (4, 4),
    Kind.COUNT.value: (4, 4),
    Kind.ENUM.value: (4, 4),
    Kind.BOOL.value: (4, 4),
    Kind.FLOAT.value: (4, 4),
    "INT": (4, 4),
    _SCALAR_UNION: (8, 8),
    Kind.INPUT_ARRAY.value: (POINTER, POINTER),  # const DML_TENSOR_DESC*: an array of DML_TENSOR_DESC
    Kind.OUTPUT_ARRAY.value: (POINTER, POINTER),
    Kind.INT_ARRAY.value: (POINTER, POINTER),
    Kind.FLOAT_ARRAY.value: (POINTER, POINTER),
    Kind.ACTIVATION_ARRAY.value: (POINTER, POINTER),  # const DML_OPERATOR_DESC*: an array of DML_OPERATOR_DESC
    Kind.SCALE_BIAS.value: (POINTER, POINTER),  # const DML_SCALE_BIAS* {FLOAT Scale; FLOAT Bias}
    Kind.SIZE_2D.value: (8, 4),  # DML_SIZE_2D {UINT Width; UINT Height}, by value
    Kind.UINT64.value: (8, 8),
}

OPERATOR_DESC_SIZE = 16
TENSOR_DESC_SIZE = 16
BUFFER_TENSOR_DESC_SIZE = 48
BUFFER_TENSOR_DESC_OFFSETS = {
    "DataType": 0,
    "Flags": 4,
    "DimensionCount": 8,
    "Sizes": 16,
    "Strides": 24,
    "TotalTensorSizeInBytes": 32,
    "GuaranteedBaseOffsetAlignment": 40,
}


def _align(n: int, a: int) -> int:
    return (n + a - 1) // a * a


def _kind_key(kind: Any) -> str:
    name = getattr(kind, "name", "")
    return name if name in ("INT", _SCALAR_UNION) else str(getattr(kind, "value", kind))


def layout(op: OperatorSchema) -> tuple[int, dict[str, int]]:
    """(sizeof, {field: offsetof}) of `DML_<op>_OPERATOR_DESC` under the x64 Windows ABI."""
    offsets: dict[str, int] = {}
    at, biggest = 0, 1
    for f in op.fields:
        try:
            size, align = _FIELD_LAYOUT[_kind_key(f.kind)]
        except KeyError:
            raise NotImplementedError(f"{op.full_name}.{f.name}: no C layout for field kind {f.kind}") from None
        at = _align(at, align)
        offsets[f.name] = at
        at += size
        biggest = max(biggest, align)
    return _align(at, biggest), offsets


@dataclass
class Binding:
    """One tensor of the operator's binding order: what DirectML binds at this index."""

    name: str  # the desc's field name, e.g. "InputTensor"
    tensor: TensorDesc | None  # None: an optional tensor left null (bound as DML_BINDING_TYPE_NONE)

    @property
    def size_in_bytes(self) -> int:
        return 0 if self.tensor is None else self.tensor.size_in_bytes


@dataclass
class Packed:
    operator: str  # schema name, e.g. "ARGMAX"
    operator_type: int  # DML_OPERATOR_TYPE
    blob: bytes
    relocations: list[tuple[int, int]]  # (offset of a pointer in blob, offset of its target)
    root: int = 0  # offset of the root DML_OPERATOR_DESC
    desc: int = OPERATOR_DESC_SIZE  # offset of DML_<op>_OPERATOR_DESC
    inputs: list[Binding] = field(default_factory=list)
    outputs: list[Binding] = field(default_factory=list)

    def rebased(self, base: int) -> bytes:
        """The blob as it would lie at address `base` (what the C side does after copying)."""
        out = bytearray(self.blob)
        for at, target in self.relocations:
            struct.pack_into("<Q", out, at, base + target)
        return bytes(out)

    def encode_relocations(self) -> bytes:
        return b"".join(struct.pack("<II", a, t) for a, t in self.relocations)


class _Blob:
    def __init__(self) -> None:
        self.data = bytearray()
        self.relocations: list[tuple[int, int]] = []

    def reserve(self, size: int, align: int = 8) -> int:
        at = _align(len(self.data), align)
        self.data.extend(b"\0" * (at + size - len(self.data)))
        return at

    def put(self, fmt: str, at: int, *values: Any) -> None:
        struct.pack_into("<" + fmt, self.data, at, *values)

    def pointer(self, at: int, target: int | None) -> None:
        """A pointer field at `at`: null, or the blob offset of its target plus a relocation."""
        if target is None:
            self.put("Q", at, 0)
            return
        self.put("Q", at, target)
        self.relocations.append((at, target))

    def uints(self, values: tuple[int, ...] | list[int]) -> int:
        at = self.reserve(4 * max(len(values), 1), 4)
        for i, v in enumerate(values):
            self.put("I", at + 4 * i, v)
        return at


def _tensor(blob: _Blob, t: TensorDesc) -> int:
    """DML_TENSOR_DESC -> DML_BUFFER_TENSOR_DESC -> Sizes[], Strides[]; returns the first's offset."""
    tensor_at = blob.reserve(TENSOR_DESC_SIZE)
    _tensor_at(blob, tensor_at, t)
    return tensor_at


def _tensor_at(blob: _Blob, tensor_at: int, t: TensorDesc) -> None:
    """Fills the DML_TENSOR_DESC reserved at `tensor_at` (one of an array, or alone)."""
    buffer_at = blob.reserve(BUFFER_TENSOR_DESC_SIZE)
    sizes_at = blob.uints(t.sizes)
    strides_at = blob.uints(t.strides) if t.strides is not None else None
    blob.put("I", tensor_at, TENSOR_TYPE_BUFFER)
    blob.pointer(tensor_at + 8, buffer_at)
    o = BUFFER_TENSOR_DESC_OFFSETS
    blob.put("I", buffer_at + o["DataType"], DATA_TYPE[t.data_type.name])
    blob.put("I", buffer_at + o["Flags"], t.flags)
    blob.put("I", buffer_at + o["DimensionCount"], t.rank)
    blob.pointer(buffer_at + o["Sizes"], sizes_at)
    blob.pointer(buffer_at + o["Strides"], strides_at)
    blob.put("Q", buffer_at + o["TotalTensorSizeInBytes"], t.size_in_bytes)
    blob.put("I", buffer_at + o["GuaranteedBaseOffsetAlignment"], t.guaranteed_base_offset_alignment)


def _tensor_array(blob: _Blob, tensors: list[TensorDesc]) -> int:
    """An array of DML_TENSOR_DESC (JOIN's InputTensors), each pointing to its buffer desc."""
    at = blob.reserve(TENSOR_DESC_SIZE * len(tensors))
    for i, t in enumerate(tensors):
        _tensor_at(blob, at + TENSOR_DESC_SIZE * i, t)
    return at


def _values(blob: _Blob, fmt: str, values: tuple[Any, ...] | list[Any]) -> int:
    """An array of 4-byte values (INT `i`, FLOAT `f`)."""
    at = blob.reserve(4 * max(len(values), 1), 4)
    for i, v in enumerate(values):
        blob.put(fmt, at + 4 * i, v)
    return at


def _operator(blob: _Blob, desc: OperatorDesc, root_at: int) -> int:
    """DML_OPERATOR_DESC at `root_at` -> DML_<op>_OPERATOR_DESC (and everything it points to)."""
    op = desc.schema
    size, offsets = layout(op)
    at = blob.reserve(size)
    blob.put("I", root_at, OPERATOR_TYPE[op.name])
    blob.pointer(root_at + 8, at)
    for f in op.fields:
        p, value = at + offsets[f.name], desc.values[f.name]
        kind = _kind_key(f.kind)
        if f.kind in (Kind.INPUT, Kind.OUTPUT):
            blob.pointer(p, None if value is None else _tensor(blob, value))
        elif f.kind in (Kind.UINT, Kind.COUNT):
            blob.put("I", p, value)
        elif f.kind is Kind.ENUM:
            assert f.enum is not None
            blob.put("I", p, ENUMS[f.enum][value])
        elif f.kind is Kind.BOOL:
            blob.put("i", p, 1 if value else 0)
        elif f.kind is Kind.FLOAT:
            blob.put("f", p, value)
        elif kind == "INT":
            blob.put("i", p, value)
        elif f.kind is Kind.UINT_ARRAY:
            blob.pointer(p, blob.uints(value) if value else None)
        elif f.kind is Kind.ACTIVATION:
            if value is None:
                blob.pointer(p, None)
            else:
                inner_root = blob.reserve(OPERATOR_DESC_SIZE)
                blob.pointer(p, inner_root)
                _operator(blob, value, inner_root)
        elif kind == _SCALAR_UNION:
            blob.put("8s", p, scalar_union(value))
        else:
            _pack_more(blob, desc, f, p, value)
    return at


def _pack_more(blob: _Blob, desc: OperatorDesc, f: Any, p: int, value: Any) -> None:
    """The kinds that only not-yet-lowered operators have, as the parser will give them: arrays
    as sequences, SCALE_BIAS as (Scale, Bias) or None, SIZE_2D as (Width, Height)."""
    if f.kind in (Kind.INPUT_ARRAY, Kind.OUTPUT_ARRAY):
        blob.pointer(p, _tensor_array(blob, list(value)) if value else None)
    elif f.kind is Kind.INT_ARRAY:
        blob.pointer(p, _values(blob, "i", value) if value else None)
    elif f.kind is Kind.FLOAT_ARRAY:
        blob.pointer(p, _values(blob, "f", value) if value else None)
    elif f.kind is Kind.ACTIVATION_ARRAY:
        if not value:
            blob.pointer(p, None)
            return
        first = blob.reserve(OPERATOR_DESC_SIZE * len(value))
        blob.pointer(p, first)
        for i, inner in enumerate(value):
            _operator(blob, inner, first + OPERATOR_DESC_SIZE * i)
    elif f.kind is Kind.SCALE_BIAS:
        blob.pointer(p, None if value is None else _values(blob, "f", tuple(value)))
    elif f.kind is Kind.SIZE_2D:
        blob.put("II", p, *value)
    elif f.kind is Kind.UINT64:
        blob.put("Q", p, value)
    else:
        raise NotImplementedError(f"{desc.schema.full_name}.{f.name}: cannot pack field kind {f.kind}")


def scalar_union(value: Any) -> bytes:
    """DML_SCALAR_UNION: the value's own bytes (a numpy scalar or 0-d array), zero-padded to 8."""
    raw = np.asarray(value).tobytes()
    if len(raw) > 8:
        raise ValueError(f"a DML_SCALAR_UNION holds 8 bytes, not {len(raw)}")
    return raw.ljust(8, b"\0")


def bindings(desc: OperatorDesc) -> tuple[list[Binding], list[Binding]]:
    """The input and output tensors in DirectML's binding order (struct order of each kind)."""
    return _bound(desc, Kind.INPUT, Kind.INPUT_ARRAY), _bound(desc, Kind.OUTPUT, Kind.OUTPUT_ARRAY)


def _bound(desc: OperatorDesc, single: Kind, array: Kind) -> list[Binding]:
    """A tensor array (JOIN's InputTensors) binds one tensor per element, named `Field[i]`."""
    out = []
    for f in desc.schema.fields:
        if f.kind is single:
            out.append(Binding(f.name, desc.values[f.name]))
        elif f.kind is array:
            out += [Binding(f"{f.name}[{i}]", t) for i, t in enumerate(desc.values[f.name] or ())]
    return out


def pack(desc: OperatorDesc) -> Packed:
    """The desc as directml.h structs in one blob, with its relocations and binding order."""
    blob = _Blob()
    root = blob.reserve(OPERATOR_DESC_SIZE)
    desc_at = _operator(blob, desc, root)
    ins, outs = bindings(desc)
    data = bytes(blob.data.ljust(_align(len(blob.data), 8), b"\0"))
    return Packed(desc.schema.name, OPERATOR_TYPE[desc.schema.name], data, blob.relocations, root, desc_at, ins, outs)


def unpack_tensor(blob: bytes, tensor_at: int) -> TensorDesc:
    """Reads a DML_TENSOR_DESC back from an unrebased blob (for tests and debugging)."""
    kind, buffer_at = struct.unpack_from("<I4xQ", blob, tensor_at)
    assert kind == TENSOR_TYPE_BUFFER
    data_type, flags, rank, sizes_at, strides_at, total, align = struct.unpack_from("<III4xQQQI", blob, buffer_at)
    sizes = struct.unpack_from(f"<{rank}I", blob, sizes_at)
    strides = struct.unpack_from(f"<{rank}I", blob, strides_at) if strides_at else None
    return TensorDesc(DATA_TYPE_BY_VALUE[data_type], tuple(sizes), tuple(strides) if strides else None, flags, total, align)
