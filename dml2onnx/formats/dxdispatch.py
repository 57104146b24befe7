"""The DxDispatch JSON model: resources, dispatchables and commands, parsed and checked as a
whole before anything runs, so that an invalid model fails before any output is written."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dml2onnx import lowering
from dml2onnx.core import files
from dml2onnx.core.desc import OperatorDesc, parse_operator_desc, split_type_and_desc
from dml2onnx.core.errors import JsonPath, ModelError, format_path
from dml2onnx.core.jsonvalues import (
    expect_array,
    expect_bool,
    expect_enum,
    expect_int,
    expect_object,
    expect_string,
    expect_uint32,
    load_jsonc,
    reject_unknown_keys,
    unknown_name,
)
from dml2onnx.core.schema import NEWEST_LEVEL, Kind
from dml2onnx.core.tensor import byte_count
from dml2onnx.formats import images, onnx_dispatchable
from dml2onnx.formats.bindings import Binding
from dml2onnx.formats.onnx_dispatchable import GraphDispatchable
from dml2onnx.formats.resources import Resource, parse_resource

MAX_MODEL_BYTES = 256 * 2**20
_EXECUTION_FLAGS = {"NONE": 0, "ALLOW_HALF_PRECISION_COMPUTATION": 1, "DISABLE_META_COMMANDS": 2, "DESCRIPTORS_VOLATILE": 4}
_BINDING_KEYS = (
    "name",
    "elementCount",
    "elementSizeInBytes",
    "elementOffset",
    "format",
    "counter",
    "counterOffsetBytes",
    "shape",
)


@dataclass
class Dispatchable:
    name: str
    desc: OperatorDesc
    init_bindings: dict[str, Binding]  # for tensors flagged OWNED_BY_DML
    path: JsonPath


@dataclass
class Dispatch:
    dispatchable: str
    bindings: dict[str, Binding]
    path: JsonPath

    def binding(self, point: str, d: Dispatchable) -> tuple[Binding, bool]:
        """The binding of `point` and whether it is the dispatchable's initialization binding
        (which reads the resource's initial contents, not its current ones)."""
        own = self.bindings.get(point)
        return (own, False) if own is not None else (d.init_bindings[point], True)


@dataclass
class Print:
    resource: str
    verbose: bool
    path: JsonPath


@dataclass
class WriteFile:
    resource: str
    target: str
    dimensions: tuple[int, ...] | None
    path: JsonPath


Command = Dispatch | Print | WriteFile


@dataclass
class Model:
    path: Path
    resources: dict[str, Resource]
    dispatchables: dict[str, Dispatchable | GraphDispatchable]  # a desc, or an ONNX graph (onnx_dispatchable.py)
    commands: list[Command] = field(default_factory=list)


def load(path: str | Path, level: str = NEWEST_LEVEL) -> Model:
    """Read and check a model; its descs are validated for DML_FEATURE_LEVEL `level`."""
    path = Path(path)
    try:  # named on the command line: a pipe (/dev/stdin) is the user's choice, read up to the limit
        raw = files.read_regular(path, MAX_MODEL_BYTES, f"{MAX_MODEL_BYTES >> 20} MiB", pipes=True)
    except files.PathRefused as e:
        raise ModelError((), str(e)) from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        if path.suffix.lower() == ".onnx":
            raise ModelError(
                (),
                f"{files.shown(path)} is an ONNX model, not a DxDispatch JSON model: run it as an ONNX dispatchable "
                f'(a model whose dispatchable is {{"type": "onnx", "sourcePath": "{path.name}"}}), or capture what '
                "DirectML runs for it (dml2onnx capture)",
            ) from None
        raise ModelError((), f"{files.shown(path)} is not UTF-8 text: {e.reason} at byte {e.start}") from None
    if not text.strip():
        raise ModelError((), f"{files.shown(path)} is empty: a DxDispatch model is one JSON object")
    return parse(load_jsonc(text), path.parent if str(path.parent) else Path("."), path, level)


def parse(root: Any, model_dir: Path, path: Path = Path("model.json"), level: str = NEWEST_LEVEL) -> Model:
    obj = expect_object(root, ())
    reject_unknown_keys(obj, ["$schema", "resources", "dispatchables", "commands"], (), "a DxDispatch model")
    for key in ("resources", "dispatchables", "commands"):
        if key not in obj:
            raise ModelError((key,), "required field is missing")
    resources = {
        name: parse_resource(name, v, ("resources", name), model_dir)
        for name, v in expect_object(obj["resources"], ("resources",)).items()
    }
    dispatchables = {
        name: _dispatchable(name, v, ("dispatchables", name), resources, level, model_dir)
        for name, v in expect_object(obj["dispatchables"], ("dispatchables",)).items()
    }
    model = Model(path, resources, dispatchables)
    for i, c in enumerate(expect_array(obj["commands"], ("commands",))):
        model.commands.append(_command(c, ("commands", i), model))
    return model


def _dispatchable(
    name: str, value: Any, path: JsonPath, resources: dict[str, Resource], level: str, model_dir: Path
) -> Dispatchable | GraphDispatchable:
    obj = expect_object(value, path)
    type_key = "Type" if "Type" in obj else "type"
    if isinstance(obj.get(type_key), str) and obj[type_key].lower() in onnx_dispatchable.GRAPH_KINDS:
        return onnx_dispatchable.parse(name, obj, path, model_dir, level)
    if isinstance(obj.get(type_key), str) and obj[type_key].lower() == "hlsl":
        raise ModelError(
            path + (type_key,),
            "'hlsl' dispatchables are compute shaders, which cannot be lowered to ONNX: run them with DxDispatch, "
            "or describe the computation with DirectML operators (dml2onnx ops lists them)",
        )
    extra = ("bindings", "executionFlags", "dmlCompileType")
    type_name, desc_obj, desc_path = split_type_and_desc(obj, path, extra)
    desc = parse_operator_desc(type_name, desc_obj, desc_path, path + (type_key,), level=level)
    lowering.validate(desc)
    if "executionFlags" in obj:
        flags = obj["executionFlags"]
        for i, f in enumerate(flags if isinstance(flags, list) else [flags]):
            p = path + ("executionFlags",) + ((i,) if isinstance(flags, list) else ())
            expect_enum(f, p, "DML_EXECUTION_FLAGS", _EXECUTION_FLAGS, "DML_EXECUTION_FLAG")
    if "dmlCompileType" in obj:
        expect_enum(
            obj["dmlCompileType"], path + ("dmlCompileType",), "dmlCompileType", {"DmlCompileOp": 0, "DmlCompileGraph": 1}
        )
    init: dict[str, Binding] = {}
    if "bindings" in obj:
        init = _bindings(obj["bindings"], path + ("bindings",), desc, resources)
    return Dispatchable(name, desc, init, path)


def _bindings(value: Any, path: JsonPath, desc: OperatorDesc, resources: dict[str, Resource]) -> dict[str, Binding]:
    obj = expect_object(value, path)
    kinds = (Kind.INPUT, Kind.OUTPUT, Kind.INPUT_ARRAY, Kind.OUTPUT_ARRAY)
    points = {f.name: f.kind for f in desc.schema.fields if f.kind in kinds}
    out: dict[str, Binding] = {}
    for name, v in obj.items():
        p = path + (name,)
        if name not in points:
            raise ModelError(p, f"DML_{desc.schema.name} has no bind point '{name}' (bind points: {', '.join(sorted(points))})")
        if desc[name] is None:
            raise ModelError(p, f"{name} is null in the desc, so nothing can be bound to it")
        if points[name] in (Kind.INPUT_ARRAY, Kind.OUTPUT_ARRAY):  # one resource per tensor, in order
            count = len(desc[name])
            if not isinstance(v, list) or len(v) != count:
                got = f"{len(v)} were" if isinstance(v, list) else "one was"
                raise ModelError(p, f"bind point '{name}' requires {count} resources (an array, as in the desc), but {got} bound")
            for i, item in enumerate(v):
                out[f"{name}[{i}]"] = _checked(_binding(item, p + (i,), resources), desc, f"{name}[{i}]", p + (i,), resources)
            continue
        if isinstance(v, list):
            if len(v) != 1:
                raise ModelError(p, f"bind point '{name}' requires 1 resource, but {len(v)} were bound")
            v, p = v[0], p + (0,)
        out[name] = _checked(_binding(v, p, resources), desc, name, p, resources)
    return out


def _checked(binding: Binding, desc: OperatorDesc, point: str, p: JsonPath, resources: dict[str, Resource]) -> Binding:
    """A binding whose offset the tensor's alignment allows and whose resource holds the tensor."""
    tensor = desc.tensor(point)
    res = resources[binding.resource]
    align = tensor.guaranteed_base_offset_alignment
    if align and binding.offset % align:
        raise ModelError(
            p, f"{point} guarantees a base offset aligned to {align} bytes, but it is bound at byte {binding.offset}"
        )
    room = res.size - binding.offset
    if room < tensor.size_in_bytes:
        held = f" ({room * 8 // res.data_type.element_bits} {res.data_type.name} values)" if res.data_type and room > 0 else ""
        elements = tensor.size_in_bytes * 8 // tensor.data_type.element_bits
        raise ModelError(
            p,
            f"resource '{binding.resource}' has {max(room, 0)} bytes from offset {binding.offset}{held}, but {point} "
            f"({tensor.describe()}) needs {tensor.size_in_bytes} ({elements} {tensor.data_type.name} elements)",
        )
    return binding


def reinterpretations(model: Model) -> list[str]:
    """One line per bind point that reads or writes a resource whose initial values have another data
    type: DirectML (and DxDispatch) take the bytes as the tensor's type, as dml2onnx does, which is
    rarely what a model's author meant."""
    notes: dict[tuple[str, str], str] = {}
    for cmd in model.commands:
        if not isinstance(cmd, Dispatch):
            continue
        d = model.dispatchables[cmd.dispatchable]
        if not isinstance(d, Dispatchable):
            continue
        for point in (*d.desc.inputs, *d.desc.outputs):
            b, _ = cmd.binding(point, d)
            res, tensor = model.resources[b.resource], d.desc.tensor(point)
            if res.data_type is not None and res.data_type != tensor.data_type and not res.deferred:
                notes[(d.name, point)] = (
                    f"{format_path(b.path)}: {d.name}'s {point} is {tensor.data_type.name}, but resource '{b.resource}' "
                    f"holds {res.data_type.name} values: their bytes are read as {tensor.data_type.name}, as DirectML does"
                )
    return list(notes.values())


def _binding(v: Any, p: JsonPath, resources: dict[str, Resource]) -> Binding:
    if isinstance(v, str):
        name, offset = v, 0
    else:
        obj = expect_object(v, p, "a resource name or a binding object")
        reject_unknown_keys(obj, _BINDING_KEYS, p, "a binding")
        if "name" not in obj:
            raise ModelError(p + ("name",), "required field is missing")
        name = expect_string(obj["name"], p + ("name",))
        for key in ("elementCount", "elementSizeInBytes", "elementOffset", "counterOffsetBytes"):
            if key in obj:
                expect_int(obj[key], p + (key,), 0, 2**64 - 1, "UINT64")
        element_offset = obj.get("elementOffset", 0)
        element_size = obj.get("elementSizeInBytes", 0)
        if not element_size and element_offset:
            res = resources.get(name)
            if res is None or res.data_type is None or res.data_type.is_packed:
                raise ModelError(
                    p + ("elementSizeInBytes",),
                    "required with elementOffset when the resource has no known data type (or a 4-bit one: two elements a byte)",
                )
            element_size = res.data_type.size
        offset = element_offset * element_size
    if name not in resources:
        raise ModelError(p, unknown_name("resource", name, resources))
    if resources[name].deferred:
        raise ModelError(p, f"resource '{name}' is deferred: only an ONNX dispatchable's output can be bound to it")
    return Binding(name, offset, p)


def _command(value: Any, path: JsonPath, model: Model) -> Command:
    obj = expect_object(value, path)
    if "type" not in obj:
        raise ModelError(path + ("type",), "required field is missing")
    kind = expect_string(obj["type"], path + ("type",)).lower()
    if kind == "dispatch":
        reject_unknown_keys(obj, ["type", "dispatchable", "bindings", "threadGroupCount"], path, "a dispatch command")
        if "threadGroupCount" in obj:  # HLSL's; DirectML operators ignore it (DxDispatch's Guide)
            p = path + ("threadGroupCount",)
            counts = expect_array(obj["threadGroupCount"], p)
            if not 1 <= len(counts) <= 3:
                raise ModelError(p, f"must hold 1 to 3 thread group counts (X, Y, Z), not {len(counts)}")
            for i, c in enumerate(counts):
                expect_uint32(c, p + (i,))
        for key in ("dispatchable", "bindings"):
            if key not in obj:
                raise ModelError(path + (key,), "required field is missing")
        name = expect_string(obj["dispatchable"], path + ("dispatchable",))
        d = model.dispatchables.get(name)
        if d is None:
            raise ModelError(path + ("dispatchable",), f"unknown dispatchable '{name}'")
        if not isinstance(d, Dispatchable):
            return Dispatch(
                name, onnx_dispatchable.parse_bindings(obj["bindings"], path + ("bindings",), d, model.resources), path
            )
        bindings = _bindings(obj["bindings"], path + ("bindings",), d.desc, model.resources)
        for point in (*d.desc.inputs, *d.desc.outputs):
            if point not in bindings and point not in d.init_bindings:
                field = point.partition("[")[0]
                raise ModelError(path + ("bindings", field), f"{point} of '{name}' is not bound")
        return Dispatch(name, bindings, path)
    if kind in ("print", "writefile"):
        keys = ["type", "resource"] + (["verbose"] if kind == "print" else ["targetPath", "dimensions"])
        reject_unknown_keys(obj, keys, path, f"a {obj['type']} command")
        if "resource" not in obj:
            raise ModelError(path + ("resource",), "required field is missing")
        name = expect_string(obj["resource"], path + ("resource",))
        res = model.resources.get(name)
        if res is None:
            raise ModelError(path + ("resource",), unknown_name("resource", name, model.resources))
        if res.deferred and not any(
            isinstance(c, Dispatch) and any(b.resource == name for b in c.bindings.values()) for c in model.commands
        ):
            raise ModelError(path + ("resource",), f"resource '{name}' is deferred and no dispatch before this command writes it")
        if kind == "print":
            if res.data_type is None:
                raise ModelError(path + ("resource",), f"resource '{name}' has no data type to print")
            verbose = expect_bool(obj.get("verbose", False), path + ("verbose",))
            return Print(name, verbose, path)
        return _write_file(obj, path, res)
    raise ModelError(path + ("type",), f"unknown command '{obj['type']}' (dispatch, print, writeFile)")


def _write_file(obj: dict[str, Any], path: JsonPath, res: Resource) -> WriteFile:
    if "targetPath" not in obj:
        raise ModelError(path + ("targetPath",), "required field is missing")
    target = expect_string(obj["targetPath"], path + ("targetPath",))
    if not target:
        raise ModelError(path + ("targetPath",), "must not be empty")
    try:
        files.check_name(target)
    except files.PathRefused as e:
        raise ModelError(path + ("targetPath",), str(e)) from None
    dims = None
    if "dimensions" in obj:
        p = path + ("dimensions",)
        dims = tuple(expect_uint32(d, p + (i,)) for i, d in enumerate(expect_array(obj["dimensions"], p)))
    if target.lower().endswith(".npy") and not res.deferred:  # a deferred one takes the output's shape
        if res.data_type is None:
            raise ModelError(path + ("resource",), f"resource '{res.name}' has no data type for .npy")
        if dims is not None and byte_count(math.prod(dims), res.data_type) > res.size:
            raise ModelError(
                path + ("dimensions",), f"{list(dims)} needs more than the {res.size} bytes of resource '{res.name}'"
            )
    elif images.is_image(target):
        images.check_write(target, res, dims, path)
    return WriteFile(res.name, target, dims, path)
