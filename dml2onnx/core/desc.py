"""Parsing operator descs (DxDispatch's JSON form) against the schema table."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dml2onnx.core import catalog, dtypes, limits, operator_table, schema
from dml2onnx.core.errors import JsonPath, ModelError
from dml2onnx.core.jsonvalues import (
    expect_array,
    expect_bool,
    expect_enum,
    expect_float,
    expect_int,
    expect_object,
    expect_string,
    expect_uint32,
    expect_uint64,
    reject_unknown_keys,
)
from dml2onnx.core.schema import NEWEST_LEVEL, Kind, level_key
from dml2onnx.core.tensor import MAX_DIMENSIONS, TensorDesc

_BUFFER_KEYS = (
    "DataType",
    "Flags",
    "DimensionCount",
    "Sizes",
    "Strides",
    "TotalTensorSizeInBytes",
    "GuaranteedBaseOffsetAlignment",
)


@dataclass
class OperatorDesc:
    """A parsed desc: field values keyed by their directml.h names."""

    schema: schema.OperatorSchema
    values: dict[str, Any]
    path: JsonPath = ()
    source: dict[str, Any] = field(default_factory=dict)  # the JSON it came from
    level: str = NEWEST_LEVEL  # the DML_FEATURE_LEVEL it is validated for (featurelevels.py)

    def __getitem__(self, name: str) -> Any:
        return self.values[name]

    def at(self, name: str, *more: str | int) -> JsonPath:
        """The JSON path of a field or bind point (for error messages): `InputTensors[1]` is
        the field's element 1."""
        field, index = split_point(name)
        return self.path + ((field,) if index is None else (field, index)) + more

    def tensor(self, name: str) -> TensorDesc:
        """A tensor field, or one element of a tensor array (`InputTensors[1]`: a bind point)."""
        value = self.optional_tensor(name)
        assert isinstance(value, TensorDesc), name
        return value

    def optional_tensor(self, name: str) -> TensorDesc | None:
        field, index = split_point(name)
        value = self.values[field]
        return value if index is None else value[index]

    @property
    def output(self) -> str:
        """Its first output: OutputTensor, or OutputGradientTensor (the GRAD operators), or
        SPLIT's `OutputTensors[0]`. The lowered graph names it OutputTensor (a plain field) or
        by the bind point (lowering.graph_output). A fused activation's desc, whose tensors are
        null, names its output field."""
        outputs = self.outputs
        return outputs[0] if outputs else self.schema.tensor_of(Kind.OUTPUT)[0].name

    @property
    def inputs(self) -> tuple[str, ...]:
        """The bind points of every input set, in DirectML's binding order (struct order; a
        tensor array's elements `InputTensors[0]`, `InputTensors[1]`, ... in place)."""
        return self._points(Kind.INPUT, Kind.INPUT_ARRAY)

    @property
    def outputs(self) -> tuple[str, ...]:
        """Every output set, as `inputs`: OutputTensor first, then the others (MAX_POOLING2's
        OutputIndicesTensor, BATCH_NORMALIZATION_TRAINING's mean and variance, attention's
        present key and value; SPLIT's `OutputTensors[i]`). Each is an output of the lowered
        graph (lowering.graph_output names it)."""
        return self._points(Kind.OUTPUT, Kind.OUTPUT_ARRAY)

    def _points(self, single: Kind, array: Kind) -> tuple[str, ...]:
        out: list[str] = []
        for f in self.schema.fields:
            if f.kind is single and self.values[f.name] is not None:
                out.append(f.name)
            elif f.kind is array:
                out += [f"{f.name}[{i}]" for i in range(len(self.values[f.name] or ()))]
        return tuple(out)


def split_point(point: str) -> tuple[str, int | None]:
    """`InputTensors[1]` -> ("InputTensors", 1); `InputTensor` -> ("InputTensor", None)."""
    if point.endswith("]") and "[" in point:
        field, _, index = point[:-1].partition("[")
        return field, int(index)
    return point, None


def parse_tensor_desc(value: Any, path: JsonPath) -> TensorDesc:
    """`{"DataType": ..., "Sizes": [...]}` or `{"Type": "DML_TENSOR_TYPE_BUFFER", "Desc": {...}}`."""
    obj = expect_object(value, path, "a tensor desc object (omit the field to leave it null)")
    if "Desc" in obj:
        reject_unknown_keys(obj, ["Type", "Desc"], path, "DML_TENSOR_DESC")
        if "Type" in obj:
            expect_enum(obj["Type"], path + ("Type",), "DML_TENSOR_TYPE", schema.ENUMS["DML_TENSOR_TYPE"])
        path = path + ("Desc",)
        obj = expect_object(obj["Desc"], path)
    else:
        if "Type" in obj:
            expect_enum(obj["Type"], path + ("Type",), "DML_TENSOR_TYPE", schema.ENUMS["DML_TENSOR_TYPE"])
        reject_unknown_keys(obj, ("Type",) + _BUFFER_KEYS, path, "DML_BUFFER_TENSOR_DESC")
    for required in ("DataType", "Sizes"):
        if required not in obj:
            raise ModelError(path + (required,), "required field is missing")

    type_name = expect_string(obj["DataType"], path + ("DataType",))
    short = type_name.removeprefix("DML_TENSOR_DATA_TYPE_")
    data_type = dtypes.BY_NAME.get(short)
    if data_type is None:
        raise ModelError(
            path + ("DataType",),
            f"'{type_name}' is not a supported DML_TENSOR_DATA_TYPE (one of {dtypes.names(dtypes.ALL + dtypes.PACKED)})",
        )

    sizes_path = path + ("Sizes",)
    raw_sizes = expect_array(obj["Sizes"], sizes_path)
    if not 1 <= len(raw_sizes) <= MAX_DIMENSIONS:
        raise ModelError(sizes_path, f"a tensor has 1 to {MAX_DIMENSIONS} dimensions, got {len(raw_sizes)}")
    sizes = tuple(expect_uint32(s, sizes_path + (i,)) for i, s in enumerate(raw_sizes))
    for i, s in enumerate(sizes):
        if s == 0:
            raise ModelError(sizes_path + (i,), "sizes must be at least 1")
    count = 1
    for s in sizes:
        count *= s
    if count > limits.MAX_ELEMENTS:  # DirectML counts elements in UINT32
        raise ModelError(sizes_path, f"{count} elements do not fit in UINT32 (DirectML's limit)")
    if count * data_type.size > limits.max_bytes():
        raise ModelError(
            sizes_path,
            f"{count * data_type.size} bytes of {data_type} exceed the {limits.text('tensor')}",
        )

    if "DimensionCount" in obj:
        n = expect_uint32(obj["DimensionCount"], path + ("DimensionCount",))
        if n != len(sizes):
            raise ModelError(path + ("DimensionCount",), f"DimensionCount is {n} but Sizes has {len(sizes)} elements")

    strides = None
    if "Strides" in obj:
        raw = expect_array(obj["Strides"], path + ("Strides",))
        if raw:  # DxDispatch treats [] as null
            strides = tuple(expect_uint32(s, path + ("Strides", i)) for i, s in enumerate(raw))
            if len(strides) != len(sizes):
                raise ModelError(path + ("Strides",), f"Strides has {len(strides)} elements, Sizes {len(sizes)}")

    flags = 0
    if "Flags" in obj:
        raw_flags = obj["Flags"]
        items = raw_flags if isinstance(raw_flags, list) else [raw_flags]
        for i, item in enumerate(items):
            p = path + ("Flags",) + ((i,) if isinstance(raw_flags, list) else ())
            flags |= schema.ENUMS["DML_TENSOR_FLAGS"][
                expect_enum(item, p, "DML_TENSOR_FLAGS", schema.ENUMS["DML_TENSOR_FLAGS"], "DML_TENSOR_FLAG")
            ]

    desc = TensorDesc(data_type, sizes, strides, flags)
    if desc.min_size_in_bytes > limits.max_bytes():  # strides can spread few elements far apart
        raise ModelError(
            path + ("Strides",), f"the strides span {desc.min_size_in_bytes} bytes, over the {limits.text('tensor')}"
        )
    total = None
    if "TotalTensorSizeInBytes" in obj:
        total = expect_uint64(obj["TotalTensorSizeInBytes"], path + ("TotalTensorSizeInBytes",)) or None
        if total is not None:  # 0 means "compute it", as in DxDispatch
            if total > limits.max_bytes():
                raise ModelError(path + ("TotalTensorSizeInBytes",), f"{total} bytes exceed the {limits.text('tensor')}")
            if total < desc.min_size_in_bytes:
                raise ModelError(
                    path + ("TotalTensorSizeInBytes",),
                    f"{total} bytes cannot hold the tensor, which needs {desc.min_size_in_bytes} (DMLCalcBufferTensorSize)",
                )
            if total % 4:
                raise ModelError(path + ("TotalTensorSizeInBytes",), f"must be a multiple of 4, not {total}")
    align = 0
    if "GuaranteedBaseOffsetAlignment" in obj:
        align_path = path + ("GuaranteedBaseOffsetAlignment",)
        align = expect_uint32(obj["GuaranteedBaseOffsetAlignment"], align_path)
        if align and (align & (align - 1) or align < data_type.size):
            raise ModelError(
                align_path, f"must be 0 or a power of two of at least the element size ({data_type.size}), not {align}"
            )
    return TensorDesc(data_type, sizes, strides, flags, total, align)


def split_type_and_desc(
    obj: dict[str, Any], path: JsonPath, extra_keys: tuple[str, ...] = ()
) -> tuple[str, dict[str, Any], JsonPath]:
    """`{"type": T, "desc": {...}}` or the inline form `{"type": T, ...fields}`."""
    type_key = "Type" if "Type" in obj else "type"
    if type_key not in obj:
        raise ModelError(path + ("type",), "required field is missing (the operator type)")
    type_name = expect_string(obj[type_key], path + (type_key,))
    desc_key = "Desc" if "Desc" in obj else ("desc" if "desc" in obj else None)
    if desc_key is None:
        inline = {k: v for k, v in obj.items() if k != type_key and k not in extra_keys}
        return type_name, inline, path
    reject_unknown_keys(obj, (type_key, desc_key) + extra_keys, path, "a dispatchable")
    return type_name, expect_object(obj[desc_key], path + (desc_key,)), path + (desc_key,)


def parse_operator_desc(
    type_name: str,
    obj: dict[str, Any],
    path: JsonPath,
    type_path: JsonPath,
    fused: bool = False,
    level: str = NEWEST_LEVEL,
    owner: str | None = None,
) -> OperatorDesc:
    """A desc from its JSON object; `fused`: a FusedActivation of the operator `owner` (GEMM)."""
    op = catalog.lookup(type_name)
    if op is None:
        raise ModelError(type_path, catalog.refusal(type_name))
    if level_key(level) < level_key(op.feature_level):
        raise ModelError(
            type_path, f"{op.full_name} needs feature level {op.feature_level} or newer (this is {level}: --feature-level)"
        )
    if fused and not op.fusable and owner not in schema.FUSED_ONLY_INTO.get(op.name, ()):
        fusable = ", ".join(s.name for s in operator_table.OPERATORS.values() if s.fusable)
        also = "".join(f"; {a} into {', '.join(into)} only" for a, into in schema.FUSED_ONLY_INTO.items())
        raise ModelError(type_path, f"{op.full_name} cannot be a fused activation here (fusable: {fusable}{also})")
    reject_unknown_keys(obj, [f.name for f in op.fields], path, f"DML_{op.name}_OPERATOR_DESC")
    missing = [
        f.name for f in op.fields if f.name not in obj and not f.optional and not (fused and f.kind in (Kind.INPUT, Kind.OUTPUT))
    ]
    if len(missing) > 1:  # all of them in one message (one alone: at its own path, below)
        raise ModelError(path, f"required fields are missing: {', '.join(missing)} (DML_{op.name}_OPERATOR_DESC)")
    values: dict[str, Any] = {}
    for f in op.fields:
        p = path + (f.name,)
        if f.kind in (Kind.INPUT, Kind.OUTPUT) and fused:
            if f.name in obj:
                raise ModelError(p, "a fused activation's tensors must be null (omit the field)")
            values[f.name] = None
            continue
        if f.name not in obj:
            if f.optional:
                values[f.name] = None
                continue
            raise ModelError(p, "required field is missing")
        values[f.name] = _parse_field(f, obj[f.name], p, level, values, op.name)
    desc = OperatorDesc(op, values, path, obj, level)
    for f in op.fields:
        if f.kind is Kind.COUNT:
            array = values[f.array]
            if values[f.name] != len(array):
                raise ModelError(path + (f.name,), f"{f.name} is {values[f.name]} but {f.array} has {len(array)} elements")
    return desc


def _tensor_field(value: Any, p: JsonPath, output: bool) -> TensorDesc:
    tensor = parse_tensor_desc(value, p)
    if output and tensor.overlapping:  # which write would win is undefined
        overlap = f"an output's elements must not share memory: Strides {list(tensor.layout)} overlap"
        if tensor.nested_order() is None and tensor.element_count > 2**24:
            overlap += " (or are too irregular to check for this many elements)"
        raise ModelError(p + ("Strides",), overlap)
    return tensor


def _parse_field(f: schema.Field, value: Any, p: JsonPath, level: str, earlier: dict[str, Any], owner: str) -> Any:
    """One field's JSON value; `earlier` holds the fields before it (a scalar union's data type)."""
    if f.kind in (Kind.INPUT, Kind.OUTPUT):
        return _tensor_field(value, p, f.kind is Kind.OUTPUT)
    if f.kind in (Kind.INPUT_ARRAY, Kind.OUTPUT_ARRAY):  # JOIN's InputTensors, SPLIT's OutputTensors
        items = expect_array(value, p)
        if not items:
            raise ModelError(p, f"{f.name} needs at least one tensor desc")
        return tuple(_tensor_field(v, p + (i,), f.kind is Kind.OUTPUT_ARRAY) for i, v in enumerate(items))
    if f.kind in (Kind.UINT, Kind.COUNT):
        return expect_uint32(value, p)
    if f.kind is Kind.INT:  # a signed 32-bit INT (DIAGONAL_MATRIX's Offset)
        return expect_int(value, p, -(2**31), 2**31 - 1, "INT")
    if f.kind is Kind.UINT_ARRAY:
        return tuple(expect_uint32(v, p + (i,)) for i, v in enumerate(expect_array(value, p)))
    if f.kind is Kind.INT_ARRAY:  # const INT* (SLICE1's InputWindowStrides)
        return tuple(expect_int(v, p + (i,), -(2**31), 2**31 - 1, "INT") for i, v in enumerate(expect_array(value, p)))
    if f.kind is Kind.FLOAT_ARRAY:  # const FLOAT* (RESAMPLE's Scales)
        return tuple(expect_float(v, p + (i,)) for i, v in enumerate(expect_array(value, p)))
    if f.kind is Kind.UINT64:
        return expect_uint64(value, p)
    if f.kind is Kind.ENUM:
        assert f.enum is not None
        return expect_enum(value, p, f.enum, operator_table.ENUMS[f.enum])
    if f.kind is Kind.BOOL:
        return expect_bool(value, p)
    if f.kind is Kind.FLOAT:
        return expect_float(value, p)
    if f.kind is Kind.ACTIVATION:
        obj = expect_object(value, p, "an operator desc object (omit the field to leave it null)")
        type_name, inner, inner_path = split_type_and_desc(obj, p)
        type_key = "Type" if "Type" in obj else "type"
        return parse_operator_desc(type_name, inner, inner_path, p + (type_key,), fused=True, level=level, owner=owner)
    if f.kind is Kind.ACTIVATION_ARRAY:  # RNN/LSTM/GRU's ActivationDescs: fused-activation descs, in order
        items = expect_array(value, p)
        one = schema.Field(f.name, Kind.ACTIVATION)
        return tuple(_parse_field(one, v, p + (i,), level, earlier, owner) for i, v in enumerate(items))
    if f.kind is Kind.SCALE_BIAS:  # DML_SCALE_BIAS {Scale, Bias}, both required as in DxDispatch
        obj = expect_object(value, p, "a {Scale, Bias} object (omit the field to leave it null)")
        reject_unknown_keys(obj, ("Scale", "Bias"), p, "DML_SCALE_BIAS")
        for name in ("Scale", "Bias"):
            if name not in obj:
                raise ModelError(p + (name,), "required field is missing")
        return tuple(float(np.float32(expect_float(obj[n], p + (n,)))) for n in ("Scale", "Bias"))
    if f.kind is Kind.SIZE_2D:  # DML_SIZE_2D {Width, Height}, both required as in DxDispatch
        obj = expect_object(value, p, "a {Width, Height} object")
        reject_unknown_keys(obj, ("Width", "Height"), p, "DML_SIZE_2D")
        for name in ("Width", "Height"):
            if name not in obj:
                raise ModelError(p + (name,), "required field is missing")
        return tuple(expect_uint32(obj[n], p + (n,)) for n in ("Width", "Height"))
    if f.kind is Kind.SCALAR_UNION:
        assert f.data_type is not None
        return parse_scalar(value, p, earlier[f.data_type], f.data_type)
    raise AssertionError(f.kind)


# DxDispatch's member names of DML_SCALAR_UNION, for its object form {"Float32": 1.5}.
_UNION_MEMBERS = {t.name: t.name.title().replace("Uint", "UInt") for t in dtypes.ALL} | {"FLOAT16": "UInt16"}


def _union_bytes(value: Any, path: JsonPath, type_field: str) -> np.uint64:
    """A DML_SCALAR_UNION whose type field is UNKNOWN (ONNX Runtime writes such, serialized graphs'
    ByteArray): `{"Bytes": [8 numbers 0-255]}`, its 8 bytes in memory order, held as the UINT64 that
    has them (the operator says how they are read)."""
    obj = expect_object(value, path, f'{{"Bytes": [8 bytes]}} ({type_field} UNKNOWN gives the union no type)')
    reject_unknown_keys(obj, ("Bytes",), path, "DML_SCALAR_UNION of UNKNOWN")
    if "Bytes" not in obj:
        raise ModelError(path + ("Bytes",), "required field is missing (the union's 8 bytes)")
    items = expect_array(obj["Bytes"], path + ("Bytes",))
    if len(items) != 8:
        raise ModelError(path + ("Bytes",), f"a DML_SCALAR_UNION has 8 bytes, not {len(items)}")
    raw = bytes(expect_int(v, path + ("Bytes", i), 0, 255, "byte") for i, v in enumerate(items))
    return np.frombuffer(raw, "<u8")[0]


def parse_scalar(value: Any, path: JsonPath, type_name: str, type_field: str) -> np.generic:
    """A DML_SCALAR_UNION of the type `type_name` (the desc's `type_field`): a JSON number (or
    "inf"/"nan" for floats) of that type, or DxDispatch's object form with the union member named
    (`{"UInt16": 15360}` is FLOAT16's bits). Returned as a numpy scalar of the type."""
    t = dtypes.BY_NAME.get(type_name)
    if t is None and type_name == "UNKNOWN":
        return _union_bytes(value, path, type_field)
    if t is None:
        raise ModelError(path, f"{type_field} {type_name} has no scalar value: use a DML_TENSOR_DATA_TYPE with one")
    if isinstance(value, dict):
        member = _UNION_MEMBERS[t.name]
        reject_unknown_keys(value, (member,), path, f"DML_SCALAR_UNION of {t.name}")
        if member not in value:
            raise ModelError(path + (member,), f"required field is missing (the {t.name} member)")
        if t.name == "FLOAT16":  # the half's bits
            bits = expect_int(value[member], path + (member,), 0, 2**16 - 1, "UINT16")
            return np.array([bits], np.uint16).view(np.float16)[0]
        return parse_scalar(value[member], path + (member,), type_name, type_field)
    if t.is_float:
        number = expect_float(value, path)
        with np.errstate(over="ignore"):  # beyond the type's range: infinity, as DxDispatch's cast
            return t.numpy.type(number)
    info = np.iinfo(t.numpy)
    return t.numpy.type(expect_int(value, path, int(info.min), int(info.max), t.name))
