"""Graph dispatchables: an ONNX graph run as it is, bound by its input and output names.

DxDispatch has dispatchables that are not one DirectML operator: `"type": "onnx"` runs an ONNX
file through ONNX Runtime (DxDispatch's OnnxDispatchable.cpp), and `"type": "dmlSerializedGraph"`
a serialized DirectML graph. Both are ONNX graphs here, and every verb treats them as graphs:

  JSON object --graph_source()--> a model builder (opset, target) -> onnx.ModelProto, the
  session settings (free dimension overrides, config entries, optimization and logging levels)
  and a numpy reference where there is one --> GraphDispatchable: the graph's inputs and
  outputs, bound by name in dispatch commands.

`graph_source` is the one place where a kind of graph dispatchable is added: `onnx` loads a file
(no reference: `--ep reference` and `check` compare with the CPU EP); `dmlSerializedGraph` reads a
DirectML graph (serialized_graph.py: to_onnx lowers its descs as one graph, reference runs their
numpy references).

Binding rules, from DxDispatch's OnnxDispatchable::Bind and the Guide's "Dispatchable: ONNX Model":
- A binding names a resource and optionally a `shape`; a resource is read or written from its
  first byte (DxDispatch refuses `elementOffset` and counters for ONNX dispatchables) as a tensor
  of the graph's element type (BOOL as UINT8, DxDispatch's GetDataTypeInfo).
- An input's shape is the binding's `shape`, else the graph's with every free dimension 1
  (after the free dimension overrides).
- An output bound to a resource needs a static shape (the binding's, or the graph's); an output
  bound to a `deferred` resource gives that resource its size and contents when it runs. An
  unbound output is computed and dropped (DxDispatch lets ONNX Runtime allocate it).
- DxDispatch makes uninitialized resources for unbound inputs (for benchmarking); their values
  would be meaningless, so here an unbound input is an invalid model.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto

from dml2onnx.core import dtypes, files, limits
from dml2onnx.core.errors import JsonPath, ModelError, UsageError, first_line
from dml2onnx.core.jsonvalues import (
    expect_array,
    expect_int,
    expect_object,
    expect_string,
    expect_uint32,
    reject_unknown_keys,
    unknown_name,
)
from dml2onnx.core.schema import NEWEST_LEVEL
from dml2onnx.formats import resources, serialized_graph
from dml2onnx.formats.bindings import Binding
from dml2onnx.formats.dml_graph import SerializedGraph
from dml2onnx.formats.resources import Resource
from dml2onnx.graph import inference
from dml2onnx.graph.builder import DEFAULT_OPSET
from dml2onnx.lowering.tolerances import Tolerance

# The dispatchable types (lowercase) whose model graph_source() builds.
GRAPH_KINDS = ("onnx", "dmlserializedgraph")
_ONNX_KEYS = (
    "type",
    "Type",
    "sourcePath",
    "freeDimensionNameOverrides",
    "freeDimensionDenotationOverrides",
    "sessionOptionsConfigEntries",
    "graphOptimizationLevel",
    "loggingLevel",
)
# graphOptimizationLevel's values; DxDispatch's default (JsonParsers.cpp) is 99. Its default
# loggingLevel, 2 (warnings), is not copied: ONNX Runtime's messages reach users through ours.
_OPTIMIZATION_LEVELS = {0: "ORT_DISABLE_ALL", 1: "ORT_ENABLE_BASIC", 2: "ORT_ENABLE_EXTENDED", 99: "ORT_ENABLE_ALL"}
# dml2onnx keeps a GPU EP from falling back to the CPU: no model may switch that off
_RESERVED_CONFIG = ("session.disable_cpu_ep_fallback",)
# DxDispatch's GetDataTypeInfo: the ONNX element types a resource can hold (BOOL as UINT8)
_DML_TYPES = dtypes.BY_ONNX | {TensorProto.BOOL: dtypes.UINT8}
# An arbitrary graph has no error analysis: these bound the few-ulp differences between EPs.
_GRAPH_TOLERANCE = {"FLOAT64": Tolerance(1e-9, 1e-12), "FLOAT32": Tolerance(1e-4, 1e-5), "FLOAT16": Tolerance(1e-2, 1e-3)}

Dim = int | str | None  # a size, a symbolic dimension's name, or unknown
Reference = Callable[[dict[str, np.ndarray]], dict[str, np.ndarray]]


@dataclass(frozen=True)
class GraphTensor:
    """A graph input or output: its name, ONNX element type and dimensions."""

    name: str
    elem_type: int
    dims: tuple[Dim, ...] | None  # None: the graph gives no shape (not even a rank)
    denotations: tuple[str, ...] = ()

    @property
    def data_type(self) -> dtypes.DataType | None:
        """The DirectML data type of a resource that holds it (None: none can)."""
        return _DML_TYPES.get(self.elem_type)

    @property
    def numpy(self) -> np.dtype:
        return np.dtype(np.bool_) if self.elem_type == TensorProto.BOOL else onnx.helper.tensor_dtype_to_np_dtype(self.elem_type)

    @property
    def static(self) -> tuple[int, ...] | None:
        if self.dims is None or not all(isinstance(d, int) for d in self.dims):
            return None
        return tuple(d for d in self.dims if isinstance(d, int))

    def describe(self) -> str:
        dims = "?" if self.dims is None else ",".join("?" if d is None else str(d) for d in self.dims)
        return f"{TensorProto.DataType.Name(self.elem_type)}[{dims}]"


@dataclass
class SessionSettings:
    """What DxDispatch's OnnxDispatchableDesc sets on the session (JSON, then the command line)."""

    name_overrides: dict[str, int] = field(default_factory=dict)
    denotation_overrides: dict[str, int] = field(default_factory=dict)
    config_entries: dict[str, str] = field(default_factory=dict)
    optimization_level: int = 99
    logging_level: int | None = None  # None: dml2onnx's own (errors only)

    def configure(self, options: Any) -> None:
        """Applies them to an onnxruntime.SessionOptions (free dimensions are in the graph)."""
        levels = type(options.graph_optimization_level)  # onnxruntime.GraphOptimizationLevel
        options.graph_optimization_level = getattr(levels, _OPTIMIZATION_LEVELS[self.optimization_level])
        if self.logging_level is not None:
            options.log_severity_level = self.logging_level
        for key, value in self.config_entries.items():
            options.add_session_config_entry(key, value)

    @property
    def default_session(self) -> bool:
        return not self.config_entries and self.optimization_level == 99 and self.logging_level is None


@dataclass
class GraphDispatchable:
    """A dispatchable that is an ONNX graph (`build(opset, target)` makes it)."""

    name: str
    kind: str
    source: dict[str, Any]  # the JSON object, as the exported models' metadata records it
    build: Callable[[int, str], onnx.ModelProto]
    settings: SessionSettings
    path: JsonPath
    inputs: dict[str, GraphTensor]
    outputs: dict[str, GraphTensor]
    # its numpy reference by graph input / output name (a serialized graph's descs have one; an
    # ONNX file has none: `--ep reference` and `check` then use the CPU EP)
    reference: Reference | None = None
    # a serialized DirectML graph: what DirectML's own API compiles whole (`--ep dml-api`)
    serialized: SerializedGraph | None = None

    def model(self, opset: int, target: str) -> onnx.ModelProto:
        """The graph with the free dimension overrides applied to its inputs."""
        return override_free_dimensions(self.build(opset, target), self.settings, self.path)

    def resolved_inputs(self) -> dict[str, GraphTensor]:
        """The inputs as the session sees them: free dimension overrides applied."""
        return {t.name: _overridden(t, self.settings, self.path) for t in self.inputs.values()}


def parse(name: str, obj: dict[str, Any], path: JsonPath, model_dir: Path, level: str = NEWEST_LEVEL) -> GraphDispatchable:
    """A graph dispatchable from its JSON object (type already known to be in GRAPH_KINDS)."""
    type_key = "Type" if "Type" in obj else "type"
    kind = str(obj[type_key]).lower()
    build, settings, reference, serialized = graph_source(name, kind, obj, path, model_dir, level)
    model = build(DEFAULT_OPSET, "portable")  # the interface does not depend on the opset or target
    inputs, outputs = interface(model, path)
    return GraphDispatchable(name, kind, dict(obj), build, settings, path, inputs, outputs, reference, serialized)


def graph_source(
    name: str, kind: str, obj: dict[str, Any], path: JsonPath, model_dir: Path, level: str = NEWEST_LEVEL
) -> tuple[Callable[[int, str], onnx.ModelProto], SessionSettings, Reference | None, SerializedGraph | None]:
    """The model builder `(opset, target) -> onnx.ModelProto`, the session settings, the numpy
    reference and the serialized DirectML graph (None: none) of the graph dispatchable `name`'s
    JSON object: the one place a kind of graph dispatchable is added (its lowercase type joins
    GRAPH_KINDS); `level` is --feature-level, for graphs made of descs. A `dmlSerializedGraph`
    reads its .bin here, refusing a bad one at its JSON path (no session settings: DxDispatch has
    none for it); its graph's inputs and outputs carry the DML graph's names, so bindings work as
    they do here."""
    if kind == "onnx":
        reject_unknown_keys(obj, list(_ONNX_KEYS), path, "an ONNX dispatchable")
        model = _load_onnx(obj, path, model_dir)
        return (lambda _opset, _target: model), _settings(obj, path), None, None
    if kind == "dmlserializedgraph":
        reject_unknown_keys(obj, ["type", "Type", "sourcePath"], path, "a dmlSerializedGraph dispatchable")
        sp = path + ("sourcePath",)
        if "sourcePath" not in obj:
            raise ModelError(sp, "required field is missing")
        source = expect_string(obj["sourcePath"], sp)
        try:
            files.check_name(source)
        except files.PathRefused as e:
            raise ModelError(sp, str(e)) from None
        graph = serialized_graph.load(resources._resolve(source, model_dir), where=sp, level=level, label=source)
        return (
            (lambda opset, target: serialized_graph.to_onnx(graph, name, opset, target)),
            SessionSettings(),
            lambda feeds: serialized_graph.reference(graph, feeds),
            graph,
        )
    raise ModelError(path + ("type",), f"'{kind}' is not a graph dispatchable type")  # GRAPH_KINDS and this disagree


def _load_onnx(obj: dict[str, Any], path: JsonPath, model_dir: Path) -> onnx.ModelProto:
    """The file at sourcePath (DxDispatch resolves it against the model's folder first), read
    through files.read_regular within --max-bytes, parsed and checked by onnx's checker."""
    sp = path + ("sourcePath",)
    if "sourcePath" not in obj:
        raise ModelError(sp, "required field is missing")
    source = expect_string(obj["sourcePath"], sp)
    limit = limits.max_bytes()
    try:
        files.check_name(source)
        raw = files.read_regular(
            resources._resolve(source, model_dir), limit, f"the limit of {limits.describe(limit)} (--max-bytes)", label=source
        )
    except files.PathRefused as e:
        raise ModelError(sp, str(e)) from None
    try:
        model = onnx.load_from_string(raw)
    except Exception as e:  # protobuf's DecodeError and friends: the file is not a model
        raise ModelError(sp, f"{files.shown(source)} is not an ONNX model: {type(e).__name__}") from None
    if not model.HasField("graph"):
        raise ModelError(sp, f"{files.shown(source)} is not an ONNX model: it has no graph")
    external = [t.name for t in model.graph.initializer if t.data_location == TensorProto.EXTERNAL]
    if external:  # their file names come from the model: not trusted, not read
        raise ModelError(
            sp, f"{files.shown(source)} keeps tensors in external files ({external[0]}...), which dml2onnx does not read"
        )
    try:
        inference.check_model(model)
    except Exception as e:
        raise ModelError(sp, f"{files.shown(source)} is not a valid ONNX model: {first_line(e)}") from None
    return model


def _settings(obj: dict[str, Any], path: JsonPath) -> SessionSettings:
    """DxDispatch's ParseModelOnnxDispatchableDesc: overrides are objects of UINT32, config
    entries an object of strings, the levels UINT32 (defaults 99 and 2)."""
    s = SessionSettings()
    for key, target in (
        ("freeDimensionNameOverrides", s.name_overrides),
        ("freeDimensionDenotationOverrides", s.denotation_overrides),
    ):
        if key in obj:
            for dim, value in expect_object(obj[key], path + (key,)).items():
                target[dim] = expect_uint32(value, path + (key, dim))
    if "sessionOptionsConfigEntries" in obj:
        p = path + ("sessionOptionsConfigEntries",)
        for key, value in expect_object(obj["sessionOptionsConfigEntries"], p).items():
            if key in _RESERVED_CONFIG:
                raise ModelError(p + (key,), "dml2onnx sets this itself: a GPU EP never falls back to the CPU here")
            s.config_entries[key] = expect_string(value, p + (key,))
    if "graphOptimizationLevel" in obj:
        p = path + ("graphOptimizationLevel",)
        s.optimization_level = expect_uint32(obj["graphOptimizationLevel"], p)
        if s.optimization_level not in _OPTIMIZATION_LEVELS:
            raise ModelError(p, "must be 0 (disabled), 1 (basic), 2 (extended) or 99 (all)")
    if "loggingLevel" in obj:
        s.logging_level = expect_int(obj["loggingLevel"], path + ("loggingLevel",), 0, 4, "an ONNX Runtime logging level (0-4)")
    return s


def _tensor(vi: onnx.ValueInfoProto, path: JsonPath) -> GraphTensor:
    t = vi.type
    if t.WhichOneof("value") != "tensor_type":
        raise ModelError(path, f"graph value '{vi.name}' is not a tensor ({t.WhichOneof('value')}): dml2onnx binds tensors only")
    tt = t.tensor_type
    dims: tuple[Dim, ...] | None = None
    if tt.HasField("shape"):
        dims = tuple(d.dim_value if d.HasField("dim_value") else (d.dim_param or None) for d in tt.shape.dim)
    return GraphTensor(vi.name, tt.elem_type, dims, tuple(d.denotation for d in tt.shape.dim))


def interface(model: onnx.ModelProto, path: JsonPath) -> tuple[dict[str, GraphTensor], dict[str, GraphTensor]]:
    """The graph's inputs (those that are not initializers, as in IR < 4 files) and outputs."""
    constants = {t.name for t in model.graph.initializer}
    inputs = {vi.name: _tensor(vi, path) for vi in model.graph.input if vi.name not in constants}
    return inputs, {vi.name: _tensor(vi, path) for vi in model.graph.output}


# Free dimension overrides: what ONNX Runtime's FreeDimensionOverrideTransformer does to the graph
# inputs (denotations compared case-insensitively, names exactly; a conflict, or an override of a
# fixed size that differs, is an error), done to the ModelProto itself: the DirectML EP under
# Wine takes a model and no session options, and `export` writes the graph the session runs.


def _override(t: GraphTensor, i: int, s: SessionSettings, path: JsonPath) -> int | None:
    """The size overrides give dimension `i` of input `t` (None: none applies)."""
    dim = t.dims[i] if t.dims is not None else None
    den = t.denotations[i] if i < len(t.denotations) else ""
    by_denotation = {k.lower(): v for k, v in s.denotation_overrides.items()}
    a = by_denotation.get(den.lower()) if den else None
    b = s.name_overrides.get(dim) if isinstance(dim, str) else None
    if a is not None and b is not None and a != b:
        raise ModelError(path, f"input '{t.name}' dimension {i}: denotation {den} = {a} and name {dim} = {b} conflict")
    return a if a is not None else b


def _overridden(t: GraphTensor, s: SessionSettings, path: JsonPath) -> GraphTensor:
    if t.dims is None:
        return t
    dims = list(t.dims)
    for i, d in enumerate(dims):
        value = _override(t, i, s, path)
        if value is None:
            continue
        if isinstance(d, int) and d != value:
            raise ModelError(path, f"input '{t.name}' dimension {i} is fixed at {d}, but an override sets it to {value}")
        dims[i] = value
    return GraphTensor(t.name, t.elem_type, tuple(dims), t.denotations)


def override_free_dimensions(model: onnx.ModelProto, s: SessionSettings, path: JsonPath) -> onnx.ModelProto:
    if not s.name_overrides and not s.denotation_overrides:
        return model
    out = onnx.ModelProto()
    out.CopyFrom(model)
    constants = {t.name for t in out.graph.initializer}
    for vi in out.graph.input:
        if vi.name in constants or not vi.type.tensor_type.HasField("shape"):
            continue
        t = _overridden(_tensor(vi, path), s, path)
        for d, value in zip(vi.type.tensor_type.shape.dim, t.dims or (), strict=True):
            if isinstance(value, int) and not d.HasField("dim_value"):
                d.dim_value = value  # clears dim_param: a oneof
    return out


def apply_command_line(dispatchables: dict[str, Any], by_name: list[str], by_denotation: list[str]) -> None:
    """`-f NAME:VALUE` and `-F DENOTATION:VALUE` for every graph dispatchable; they take priority
    over the JSON's overrides, as in DxDispatch."""
    names, denotations = _pairs(by_name, "-f"), _pairs(by_denotation, "-F")
    for d in dispatchables.values():
        if isinstance(d, GraphDispatchable):
            d.settings.name_overrides.update(names)
            d.settings.denotation_overrides.update(denotations)


def command_line_settings(by_name: list[str], by_denotation: list[str]) -> SessionSettings:
    """The free dimension overrides of `-f NAME:VALUE` and `-F DENOTATION:VALUE` alone."""
    return SessionSettings(name_overrides=_pairs(by_name, "-f"), denotation_overrides=_pairs(by_denotation, "-F"))


def apply_session_options(
    dispatchables: dict[str, Any], entries: list[str], optimization_level: int | None, logging_level: int | None
) -> None:
    """`-e KEY:VALUE`, `-l LEVEL` and `-L LEVEL` for every graph dispatchable, over the JSON's
    settings (DxDispatch's --onnx_session_config_entry, --onnx_graph_optimization_level and
    --onnx_logging_level)."""
    config = {}
    for item in entries:
        key, sep, value = item.partition(":")
        if not sep or not key:
            raise UsageError(f"-e {item!r}: expected KEY:VALUE (e.g. -e session.use_env_allocators:1)")
        if key in _RESERVED_CONFIG:
            raise UsageError(f"-e {key}: dml2onnx sets this itself: a GPU EP never falls back to the CPU here")
        config[key] = value
    for d in dispatchables.values():
        if isinstance(d, GraphDispatchable):
            d.settings.config_entries.update(config)
            if optimization_level is not None:
                d.settings.optimization_level = optimization_level
            if logging_level is not None:
                d.settings.logging_level = logging_level


def _pairs(items: list[str], flag: str) -> dict[str, int]:
    out = {}
    for item in items:
        key, sep, value = item.rpartition(":")
        if not sep or not key or not value.isdigit() or int(value) > 2**32 - 1:
            raise UsageError(f"{flag} {item!r}: expected NAME:VALUE with VALUE a UINT32 (e.g. {flag} N:2)")
        out[key] = int(value)
    return out


# Bindings


def parse_bindings(value: Any, path: JsonPath, d: GraphDispatchable, model_resources: dict[str, Resource]) -> dict[str, Binding]:
    """A dispatch command's bindings, by graph input/output name. Resource-less bindings (the
    Guide's name is optional for ONNX) leave the tensor unbound."""
    obj = expect_object(value, path)
    out: dict[str, Binding] = {}
    for name, v in obj.items():
        p = path + (name,)
        t = d.inputs.get(name) or d.outputs.get(name)
        if t is None:
            names = ", ".join([*d.inputs, *d.outputs])
            raise ModelError(p, f"the graph of '{d.name}' has no input or output '{name}' (it has: {names})")
        if isinstance(v, list):  # DxDispatch: "ONNX dispatchables' tensors must map to a single binding source"
            if len(v) != 1:
                raise ModelError(p, f"'{name}' takes one resource, but {len(v)} were bound")
            v, p = v[0], p + (0,)
        b = _binding(v, p, model_resources)
        if b is None:
            continue
        res = model_resources[b.resource]
        _check_type(t, res, p, name in d.inputs)
        out[name] = b
    for name in d.inputs:
        if name not in out:
            raise ModelError(path + (name,), f"graph input '{name}' of '{d.name}' is not bound to a resource")
    return out


def _binding(v: Any, p: JsonPath, model_resources: dict[str, Resource]) -> Binding | None:
    if isinstance(v, str):
        name, shape = v, None
    else:
        obj = expect_object(v, p, "a resource name or a binding object")
        reject_unknown_keys(
            obj,
            ["name", "shape", "elementCount", "elementSizeInBytes", "elementOffset", "format", "counter", "counterOffsetBytes"],
            p,
            "a binding",
        )
        for key in ("counter", "counterOffsetBytes"):
            if key in obj:
                raise ModelError(p + (key,), "ONNX dispatchables do not take counter resources (as in DxDispatch)")
        if obj.get("elementOffset", 0) != 0:
            raise ModelError(
                p + ("elementOffset",), "ONNX dispatchables read and write resources from their first byte (as in DxDispatch)"
            )
        shape = None
        if "shape" in obj:
            sp = p + ("shape",)
            shape = tuple(expect_uint32(s, sp + (i,)) for i, s in enumerate(expect_array(obj["shape"], sp)))
        if "name" not in obj:
            return None
        name = expect_string(obj["name"], p + ("name",))
    if name not in model_resources:
        raise ModelError(p, unknown_name("resource", name, model_resources))
    return Binding(name, 0, p, shape)


def _check_type(t: GraphTensor, res: Resource, p: JsonPath, is_input: bool) -> None:
    if t.data_type is None:
        raise ModelError(p, f"'{t.name}' is {t.describe()}, which no DirectML resource holds")
    if res.deferred and is_input:
        raise ModelError(p, f"resource '{res.name}' is deferred: it can only be bound to an output")
    if res.data_type is not None and res.data_type != t.data_type:
        raise ModelError(p, f"resource '{res.name}' holds {res.data_type}, but '{t.name}' is {t.describe()}")


@dataclass(frozen=True)
class Planned:
    """One tensor of a dispatch: its binding and the shape it is read or written with (None:
    an output to a deferred resource, or unbound)."""

    tensor: GraphTensor
    binding: Binding | None
    shape: tuple[int, ...] | None


def plan(d: GraphDispatchable, bindings: dict[str, Binding], model_resources: dict[str, Resource]) -> list[Planned]:
    """Every input and output of a dispatch with its shape, checked against the graph and the
    resources' sizes (free dimension overrides applied, so this runs once the command line's
    are known, before any command does)."""
    out = []
    for t in d.resolved_inputs().values():
        b = bindings[t.name]
        shape = _shape(t, b, free=1)
        _check_room(t, b, shape, model_resources[b.resource])
        out.append(Planned(t, b, shape))
    for t in d.outputs.values():
        b = bindings.get(t.name)
        if b is None:
            out.append(Planned(t, None, None))
            continue
        res = model_resources[b.resource]
        shape = _shape(t, b, free=None) if b.shape is not None or not res.deferred else None
        if shape is None and not res.deferred:
            raise ModelError(
                b.path,
                f"output '{t.name}' is {t.describe()}, not a static shape: "
                "give the binding a 'shape', or bind a deferred resource",
            )
        if shape is not None and not res.deferred:
            _check_room(t, b, shape, res)
        out.append(Planned(t, b, shape))
    return out


def _shape(t: GraphTensor, b: Binding, free: int | None) -> tuple[int, ...] | None:
    """The binding's shape (checked against the graph's fixed sizes), else the graph's with free
    dimensions set to `free` (None: not static)."""
    if b.shape is not None:
        if t.dims is not None and len(t.dims) != len(b.shape):
            raise ModelError(b.path + ("shape",), f"'{t.name}' is {t.describe()}: {len(t.dims)} dimensions, not {len(b.shape)}")
        for i, (want, got) in enumerate(zip(t.dims or (), b.shape, strict=False)):
            if isinstance(want, int) and want != got:
                raise ModelError(b.path + ("shape", i), f"'{t.name}' is {t.describe()}: dimension {i} is {want}, not {got}")
        return b.shape
    if t.dims is None:
        return None if free is None else ()
    if free is None:
        return t.static
    return tuple(d if isinstance(d, int) else free for d in t.dims)


def _check_room(t: GraphTensor, b: Binding, shape: tuple[int, ...], res: Resource) -> None:
    need = math.prod(shape) * t.numpy.itemsize
    if need > res.size:
        raise ModelError(
            b.path,
            f"resource '{res.name}' has {res.size} bytes, but '{t.name}' of shape {list(shape)} ({t.describe()}) needs {need}",
        )


def read_input(buffer: bytearray, p: Planned) -> np.ndarray:
    assert p.shape is not None
    count = math.prod(p.shape)
    return np.frombuffer(buffer, dtype=p.tensor.numpy, count=count).reshape(p.shape).copy()


def tolerance(value: np.ndarray) -> Tolerance:
    """How far an output may be from the CPU EP's (exact for integers)."""
    dt = dtypes.BY_NUMPY.get(value.dtype)
    return _GRAPH_TOLERANCE.get(dt.name if dt else "", Tolerance(0, 0))
