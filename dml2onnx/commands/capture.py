"""`dml2onnx capture`: the DirectML graphs ONNX Runtime's DirectML EP compiles for a model.

The DirectML EP (ONNX Runtime 1.18 and later) writes every graph it compiles when the session
config entry `ep.dml.enable_graph_serialization` is "true": `<model file stem>/Partition_N.bin`
(DxDispatch's serialized-graph flatbuffer, serialized_graph.py) and one `<constant>.bin` per
constant, relative to the process's current folder, for a session made from a model file (from
memory it fails). It then compiles the graph it read back from that file, so whatever it writes
is a graph DirectML accepted. Here that session runs in the Wine host (winhost.py; natively on
Windows it would be onnxruntime-directml's own), with CPU fallback off: a node the DirectML EP
does not take fails the capture with its name (from ONNX Runtime's node placement log).

Nodes the DirectML EP runs as single DirectML operators, outside any partition (LSTM, GRU, ...:
its OperatorRegistration marks them, or their shapes are not static), are found from ONNX
Runtime's optimized graph (a second session that writes it): every node between a partition's
inputs and outputs belongs to that partition, the others ran alone. They are kept as ONNX
models (`outside/<node>.onnx`), run as DxDispatch `onnx` dispatchables.

The capture folder holds:
  <stem>/Partition_N.bin, <stem>/<constant>.bin   what the DirectML EP wrote
  inputs/<name>.npy                                the inputs the model ran with
  expected/<name>.npy                              its outputs on the DirectML EP
  outside/<node>.onnx                              the nodes that ran outside partitions
  <stem>.json                                      a DxDispatch model: the partitions and the
                                                   outside nodes in order, bound by value name,
                                                   each model output written to <name>.npy
  <stem>.lowered.onnx                              the whole model as DirectML runs it: that
                                                   DxDispatch model as one ONNX graph (each
                                                   partition lowered by dml2onnx, the outside
                                                   nodes as they are), with the original model's
                                                   inputs and outputs
It is made in a staging folder beside it and renamed into place: a failure leaves nothing.
"""

from __future__ import annotations

import json
import re
import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import numpy as np
import onnx
from onnx import TensorProto, helper

from dml2onnx import lowering
from dml2onnx.backends import winhost
from dml2onnx.commands.whole_model import constant_value, whole_model
from dml2onnx.core import dtypes, files
from dml2onnx.core.errors import Dml2OnnxError, ModelError, RuntimeFailure, UsageError, one_line
from dml2onnx.formats import serialized_graph
from dml2onnx.formats.flatbuf import root
from dml2onnx.formats.onnx_dispatchable import GraphTensor, SessionSettings, interface, override_free_dimensions
from dml2onnx.graph import inference

SERIALIZE = "ep.dml.enable_graph_serialization"
_NO_FALLBACK = "fallback to CPU EP has been explicitly disabled"
# ONNX Runtime's VERBOSE node placement log (session_state.cc, VerifyEachNodeIsAssignedToAnEp)
_PLACED_ON = re.compile(r"Node\(s\) placed on \[(\w+)\]")
_PLACED_NODE = re.compile(r"VerifyEachNodeIsAssignedToAnEp\]\s{3}(\S+) \((.*)\)\s*$")
_ALL_ON_CPU = "All nodes placed on [CPUExecutionProvider]"
_SAFE = re.compile(r"[^A-Za-z0-9_.-]")


@dataclass
class Partition:
    """One Partition_N.bin: its value names, and its graph where dml2onnx reads it (else why not)."""

    index: int
    path: Path
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    graph: serialized_graph.SerializedGraph | None = None
    problem: str | None = None

    @property
    def name(self) -> str:
        return f"Partition_{self.index}"


@dataclass
class Capture:
    folder: Path
    stem: str
    partitions: list[Partition]
    outside: list[onnx.NodeProto]  # ONNX Runtime's optimized graph's nodes that ran alone
    inputs: dict[str, np.ndarray]
    outputs: dict[str, np.ndarray]  # the model's outputs on the DirectML EP
    model_json: Path
    units: list[str] = field(default_factory=list)  # the dispatchables, in the order they run
    lowered: Path | None = None  # the whole model as one ONNX graph (where dml2onnx reads every partition)


def file_name(value: str) -> str:
    """A value or node name as a file name: what is not a letter, digit, '_', '.' or '-' becomes '_'."""
    safe = _SAFE.sub("_", value).lstrip(".") or "_"
    return safe[:120]


def file_names(names: list[str]) -> dict[str, str]:
    """`file_name` of each name, made unique ("a/b" and "a_b" are "a_b" and "a_b#2")."""
    out: dict[str, str] = {}
    taken: set[str] = set()
    for name in names:
        base = candidate = file_name(name)
        k = 1
        while candidate.lower() in taken:  # case-insensitive file systems too
            k += 1
            candidate = f"{base}#{k}"
        taken.add(candidate.lower())
        out[name] = candidate
    return out


def load_model(path: Path, settings: SessionSettings) -> onnx.ModelProto:
    """The model, checked, with free dimension overrides applied and every input's shape static.
    What is wrong with it is a UsageError naming the file (it is the command's argument)."""
    try:
        return _checked_model(path, settings)
    except ModelError as e:
        raise UsageError(e.rule if not e.path else f"{files.shown(path)}: {e}") from None


def _checked_model(path: Path, settings: SessionSettings) -> onnx.ModelProto:
    label = files.shown(path)
    try:
        raw = files.read_regular(path, 2**40, "the size limit", label=str(path))
    except files.PathRefused as e:
        raise UsageError(f"MODEL {e}") from None
    try:
        model = onnx.load_from_string(raw)
    except Exception as e:  # protobuf's DecodeError and friends
        raise ModelError((), f"{label} is not an ONNX model: {type(e).__name__}") from None
    if not model.HasField("graph"):
        raise ModelError((), f"{label} is not an ONNX model: it has no graph")
    if any(t.data_location == TensorProto.EXTERNAL for t in model.graph.initializer):
        onnx.load_external_data_for_model(model, str(path.parent))
    try:
        inference.check_model(model)
    except Exception as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise ModelError((), f"{label} is not a valid ONNX model: {first}") from None
    model = override_free_dimensions(model, settings, ())
    ins, _ = interface(model, ())
    for t in ins.values():
        if t.static is None:
            free = [d for d in t.dims or () if not isinstance(d, int)]
            raise ModelError(
                (),
                f"{label}: input '{t.name}' is {t.describe()}: capture needs static shapes "
                + (f"(-f {free[0]}:N sets a free dimension)" if free and free[0] else "(its shape is not known)"),
            )
        if t.data_type is None:
            raise ModelError((), f"{label}: input '{t.name}' is {t.describe()}, a type DirectML has no tensors of")
    return model


def model_inputs(model: onnx.ModelProto, given: dict[str, Path], seed: int) -> dict[str, np.ndarray]:
    """The inputs to run with: `given` (NAME -> .npy file), the rest generated from `seed`: floats
    from a standard normal, integers and booleans 0 or 1 (valid token ids, masks and indices)."""
    ins, _ = interface(model, ("inputs",))
    unknown = sorted(set(given) - set(ins))
    if unknown:
        raise UsageError(f"--input {unknown[0]}: the model has no such input (it has: {', '.join(ins)})")
    rng = np.random.default_rng(seed)
    out = {}
    for name, t in ins.items():
        shape = t.static
        assert shape is not None  # load_model checked
        if name in given:
            out[name] = _given(name, given[name], t, shape)
        elif np.dtype(t.numpy).kind == "f":
            out[name] = rng.standard_normal(shape).astype(t.numpy)
        else:
            out[name] = rng.integers(0, 2, shape).astype(t.numpy)
    return out


def _given(name: str, path: Path, t: GraphTensor, shape: tuple[int, ...]) -> np.ndarray:
    try:
        value = np.load(path, allow_pickle=False)
    except (OSError, ValueError) as e:
        raise UsageError(f"--input {name}={files.shown(path)}: not a readable .npy file: {e}") from None
    if value.dtype != t.numpy or tuple(value.shape) != shape:
        want = f"{np.dtype(t.numpy)}{list(shape)}"
        raise UsageError(f"--input {name}={files.shown(path)}: {value.dtype}{list(value.shape)}, the model wants {want}")
    return value


# -- running the DirectML EP ------------------------------------------------------------------------


def _flags() -> int:
    return winhost.flags() & ~winhost.FLAG_NO_FUSION  # partitions only exist with graph fusion on


def _session(host: winhost.Host, model: Path, cwd: Path, entries: dict[str, str], **kw: Any) -> int:
    label = files.shown(model.name)
    try:
        sid, _ = host.load_path(model, cwd, entries, flags=_flags(), **kw)
    except winhost.HostError as e:
        if _NO_FALLBACK in e.text:
            raise RuntimeFailure(_cpu_nodes_message(host, model, cwd)) from None
        first = e.text.splitlines()[0] if e.text else "unknown error"
        raise RuntimeFailure(f"the DirectML EP (Wine) cannot run {label}: {first}") from None
    return sid


def _cpu_nodes_message(host: winhost.Host, model: Path, cwd: Path) -> str:
    """Which nodes ONNX Runtime gives the CPU: a session with fallback allowed, its placement log."""
    scratch = Path(tempfile.mkdtemp(dir=cwd))
    try:
        sid, lines = host.load_path(model, scratch, {"session.disable_cpu_ep_fallback": "0"}, log_level=0, flags=_flags())
        host.free(sid)
    except winhost.HostError as e:
        return f"the DirectML EP (Wine) cannot run {files.shown(model.name)}: {e.text.splitlines()[0] if e.text else e}"
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    cpu, ep = [], None
    for line in lines:
        if m := _PLACED_ON.search(line):
            ep = m.group(1)
        elif (m := _PLACED_NODE.search(line)) and ep == "CPUExecutionProvider":
            cpu.append(f"{m.group(2)} ({m.group(1)})")
    if not cpu and any(_ALL_ON_CPU in line for line in lines):  # the log then names no node: all of them
        graph = onnx.load(str(model)).graph
        cpu = [f"{n.name or '(unnamed)'} ({n.op_type})" for n in graph.node]
    listed = ", ".join(cpu[:8]) + (f" and {len(cpu) - 8} more" if len(cpu) > 8 else "") if cpu else "nodes not named in its log"
    return f"the DirectML EP does not run every node of {files.shown(model.name)}: ONNX Runtime gives {listed} to the CPU EP"


def _run_serialized(model: onnx.ModelProto, stem: str, staging: Path, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Runs the model on the DirectML EP with graph serialization on, in `staging` (the
    partitions land in staging/<stem>/); returns its outputs."""
    host = winhost.host()
    source = staging / "source" / f"{stem}.onnx"
    source.parent.mkdir()
    source.write_bytes(model.SerializeToString())
    try:
        sid = _session(host, source, staging, {SERIALIZE: "true"})
    except RuntimeFailure as e:
        _without_serialization(host, source, staging, e)
        raise
    try:
        names = [o.name for o in model.graph.output]
        values = host.run(sid, feeds, names, f"{stem} on the DirectML EP")
    except winhost.HostError as e:
        raise RuntimeFailure(f"{stem} failed on the DirectML EP (Wine): {e.text.splitlines()[0] if e.text else e}") from None
    finally:
        host.free(sid)
    return dict(zip(names, values, strict=True))


def _without_serialization(host: winhost.Host, source: Path, staging: Path, failure: RuntimeFailure) -> None:
    """Where the session failed with graph serialization on, whether it runs without it: then the
    EP's own round trip (it compiles the graph it read back from its file) is what fails, and the
    message says so (ONNX Runtime 1.24 writes a TopK or a MaxPool whose second output nothing reads
    with one output name for two tensors, and cannot read that back)."""
    if "cannot run" not in str(failure):
        return
    scratch = staging / "unserialized"
    scratch.mkdir(exist_ok=True)
    try:
        host.free(_session(host, source, scratch, {}))
    except RuntimeFailure:
        return
    raise RuntimeFailure(
        f"{failure}; without ep.dml.enable_graph_serialization the DirectML EP runs it: the graph it serialized is "
        "what it cannot read back, so there is nothing to capture (an ONNX Runtime defect)"
    ) from None


def _optimized(stem: str, staging: Path) -> onnx.ModelProto:
    """ONNX Runtime's optimized graph for the DirectML EP (graph fusion is off when it writes it,
    so the nodes the partitions hold are there one by one, under the same value names)."""
    host = winhost.host()
    target = staging / "optimized.onnx"
    scratch = staging / "optimizing"
    scratch.mkdir()
    sid = _session(host, staging / "source" / f"{stem}.onnx", scratch, {}, optimized=target)
    host.free(sid)
    if not target.is_file():
        raise RuntimeFailure("ONNX Runtime wrote no optimized model: the nodes outside the partitions cannot be named")
    return onnx.load(str(target))


# -- what ran where ----------------------------------------------------------------------------------


def read_partitions(folder: Path) -> list[Partition]:
    """Every Partition_N.bin of a folder, by N: its value names (read even where dml2onnx cannot
    lower the graph) and its graph or the reason it is not read."""
    found = []
    for path in folder.glob("Partition_*.bin"):
        suffix = path.stem.removeprefix("Partition_")
        if suffix.isdigit():
            found.append((int(suffix), path))
    out = []
    for index, path in sorted(found):
        raw = path.read_bytes()
        try:
            top = root(raw)
            names = tuple(top.strings(1, "graphInputNames") or ()), tuple(top.strings(2, "graphOutputNames") or ())
        except ModelError as e:
            out.append(Partition(index, path, (), (), problem=str(e)))
            continue
        part = Partition(index, path, tuple(n for n in names[0] if n), tuple(n for n in names[1] if n))
        try:
            part.graph = serialized_graph.parse(raw, path, label=f"{folder.name}/{path.name}")
        except Dml2OnnxError as e:
            part.problem = str(e)
        out.append(part)
    return out


def outside_nodes(optimized: onnx.ModelProto, partitions: list[Partition]) -> list[onnx.NodeProto]:
    """The nodes of ONNX Runtime's optimized graph that no partition holds: a partition holds
    every node found walking back from its outputs to its inputs (and constants)."""
    producer = {out: n for n in optimized.graph.node for out in n.output if out}
    held: set[int] = set()
    for part in partitions:
        stop = set(part.inputs)
        todo = [v for v in part.outputs if v in producer]
        while todo:
            node = producer[todo.pop()]
            if id(node) in held:
                continue
            held.add(id(node))
            todo += [v for v in node.input if v and v in producer and v not in stop]
    return [n for n in optimized.graph.node if id(n) not in held]


def _outside_model(node: onnx.NodeProto, optimized: onnx.ModelProto, shapes: dict[str, onnx.ValueInfoProto]) -> onnx.ModelProto:
    """One node of the optimized graph as a model of its own: its inputs that are constants there
    as initializers, the others as graph inputs."""
    constants = {t.name: t for t in optimized.graph.initializer}
    inits = [constants[v] for v in dict.fromkeys(node.input) if v in constants]
    unknown = [v for v in (*node.input, *node.output) if v and v not in constants and v not in shapes]
    if unknown:
        raise RuntimeFailure(f"node {node.name or node.op_type} outside the partitions: the type of '{unknown[0]}' is not known")
    inputs = [shapes[v] for v in dict.fromkeys(node.input) if v and v not in constants]
    outputs = [shapes[v] for v in node.output if v]
    graph = helper.make_graph([node], file_name(node.name or node.op_type), inputs, outputs, inits)
    model = helper.make_model(graph, opset_imports=list(optimized.opset_import), ir_version=optimized.ir_version)
    try:
        onnx.checker.check_model(model)
    except onnx.checker.ValidationError as e:
        raise RuntimeFailure(f"node {node.name or node.op_type} outside the partitions: {one_line(str(e))}") from None
    return model


def _value_infos(model: onnx.ModelProto) -> dict[str, onnx.ValueInfoProto]:
    inferred = onnx.shape_inference.infer_shapes(model)
    g = inferred.graph
    return {vi.name: vi for vi in (*g.input, *g.output, *g.value_info)}


# -- the DxDispatch model ------------------------------------------------------------------------------


@dataclass
class _Unit:
    """A dispatchable of the chain: a partition or an outside node, the values it reads and writes."""

    name: str
    obj: dict[str, Any]
    reads: tuple[str, ...]
    writes: tuple[str, ...]


def _order(units: list[_Unit], available: set[str]) -> list[_Unit]:
    """The units in an order that runs each after the producers of what it reads."""
    done, ordered, pending = set(available), [], list(units)
    while pending:
        ready = next((u for u in pending if all(v in done for v in u.reads)), None)
        if ready is None:
            missing = sorted({v for u in pending for v in u.reads} - done)
            raise RuntimeFailure(f"the captured graphs read values nothing writes: {', '.join(missing[:5])}")
        pending.remove(ready)
        ordered.append(ready)
        done.update(ready.writes)
    return ordered


def _resource_bytes(partitions: list[Partition], shapes: dict[str, onnx.ValueInfoProto]) -> dict[str, tuple[str, int]]:
    """Each value's resource: its DirectML data type and the bytes its largest view needs."""
    out: dict[str, tuple[str, int]] = {}

    def note(name: str, data_type: str, size: int) -> None:
        old = out.get(name)
        out[name] = (old[0] if old else data_type, max(size, old[1] if old else 0))

    for part in partitions:
        g = part.graph
        if g is None:
            continue
        for name, t in (*g.inputs.items(), *g.outputs.items()):
            note(name, t.data_type.name, t.size_in_bytes)
    for name, vi in shapes.items():
        tt = vi.type.tensor_type
        if not tt.HasField("shape") or any(not d.HasField("dim_value") for d in tt.shape.dim):
            continue
        dtype = dtypes.BY_ONNX.get(tt.elem_type)
        if dtype is not None:
            count = int(np.prod([d.dim_value for d in tt.shape.dim], dtype=np.int64))
            note(name, dtype.name, (count * dtype.size + 3) // 4 * 4)
    return out


def _chain_json(
    stem: str,
    model: onnx.ModelProto,
    partitions: list[Partition],
    outside: list[tuple[str, onnx.NodeProto]],
    inputs: dict[str, str],
    shapes: dict[str, onnx.ValueInfoProto],
    results: dict[str, np.ndarray],
    constants_files: dict[str, str],
) -> tuple[dict[str, Any], list[str]]:
    """The chain: `results`, the DirectML EP's outputs (their shapes are the files' dimensions where
    the model leaves one free); `constants_files`, the .npy of each output that is a constant."""
    units = [
        _Unit(p.name, {"type": "dmlSerializedGraph", "sourcePath": f"{stem}/{p.path.name}"}, p.inputs, p.outputs)
        for p in partitions
    ]
    constants = {t.name for t in model.graph.initializer}
    for path, node in outside:
        reads = tuple(v for v in dict.fromkeys(node.input) if v and v not in constants)
        units.append(_Unit(Path(path).stem, {"type": "onnx", "sourcePath": path}, reads, tuple(v for v in node.output if v)))
    ordered = _order(units, set(inputs))
    sizes = _resource_bytes(partitions, shapes)
    resources: dict[str, Any] = {}
    for name, npy in (*inputs.items(), *constants_files.items()):
        resources[name] = {"initialValues": {"sourcePath": npy}}
    for u in ordered:
        for v in (*u.reads, *u.writes):
            if v in resources:
                continue
            if v not in sizes:
                raise RuntimeFailure(f"the size of value '{v}' is not known: it cannot get a resource")
            data_type, size = sizes[v]
            dtype = dtypes.BY_NAME[data_type]
            count = size * 2 if dtype.is_packed else size // dtype.size
            resources[v] = {"initialValuesDataType": data_type, "initialValues": {"valueCount": count, "value": 0}}
    commands: list[dict[str, Any]] = [
        {"type": "dispatch", "dispatchable": u.name, "bindings": {v: v for v in (*u.reads, *u.writes)}} for u in ordered
    ]
    targets = file_names([o.name for o in model.graph.output])
    for o in model.graph.output:
        dims = list(results[o.name].shape)
        commands.append({"type": "writeFile", "resource": o.name, "targetPath": f"{targets[o.name]}.npy", "dimensions": dims})
    obj = {"resources": resources, "dispatchables": {u.name: u.obj for u in ordered}, "commands": commands}
    return obj, [u.name for u in ordered]


# -- the command --------------------------------------------------------------------------------------


def capture(
    model_path: Path,
    out: Path,
    given: dict[str, Path],
    seed: int,
    settings: SessionSettings,
    log: IO[str] = sys.stderr,
) -> Capture:
    """Captures what the DirectML EP runs for the model into `out` (a new or empty folder);
    progress on `log`."""

    def say(text: str) -> None:
        log.write(f"capture: {text}\n")
        log.flush()

    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise UsageError(f"-o {files.shown(out)} exists and is not an empty folder")
    missing = winhost.missing() if sys.platform != "win32" else "capture runs the Wine host (Linux) only for now"
    if missing is not None:
        raise RuntimeFailure(f"capture needs the DirectML EP under Wine ({missing}): {winhost.SETUP_HINT}")
    model = load_model(model_path, settings)
    stem = file_name(model_path.stem)
    feeds = model_inputs(model, given, seed)
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        say(f"running {model_path.name} on the DirectML EP (Wine) with graph serialization on")
        outputs = _run_serialized(model, stem, staging, feeds)
        partitions = read_partitions(staging / stem)
        if not partitions:  # every node may run alone (GridSample, Sum of three): outside nodes below
            say("the DirectML EP wrote no partition: each node ran as a single DirectML operator")
        for p in partitions:
            state = f"{len(p.graph.nodes)} nodes" if p.graph else f"not read by dml2onnx: {p.problem}"
            say(f"{p.name}: {len(p.inputs)} inputs, {len(p.outputs)} outputs, {state}")
        written = {v for p in partitions for v in p.outputs}
        ins = set(feeds)
        fixed = {o.name: v for o in model.graph.output if (v := constant_value(model, o.name)) is not None}
        loose = [v for p in partitions for v in p.inputs if v not in written and v not in ins]
        loose += [o.name for o in model.graph.output if o.name not in written and o.name not in ins and o.name not in fixed]
        outside: list[onnx.NodeProto] = []
        optimized = model
        if loose:
            say("some values come from nodes outside the partitions: reading ONNX Runtime's optimized graph")
            optimized = _optimized(stem, staging)
            outside = outside_nodes(optimized, partitions)
            if not outside and not partitions:
                raise RuntimeFailure(f"the DirectML EP wrote no partition for {model_path.name} and ran no node alone")
            for n in outside:
                say(f"outside any partition: {n.name or '(unnamed)'} ({n.op_type}), run as a single DirectML operator")
        shapes = _value_infos(optimized)
        folder = staging / "capture"
        folder.mkdir()
        (staging / stem).mkdir(exist_ok=True)  # no partition: the EP made no folder
        shutil.move(str(staging / stem), str(folder / stem))
        for p in partitions:
            p.path = folder / stem / p.path.name
        (folder / "inputs").mkdir()
        (folder / "expected").mkdir()
        npys = {}
        input_files, output_files = file_names(list(feeds)), file_names(list(outputs))
        for name, value in feeds.items():
            npys[name] = f"inputs/{input_files[name]}.npy"
            np.save(folder / npys[name], value.astype(np.uint8) if value.dtype == np.bool_ else value, allow_pickle=False)
        for name, value in outputs.items():
            np.save(folder / "expected" / f"{output_files[name]}.npy", value, allow_pickle=False)
        constant_files = {}
        if fixed:  # outputs that are constants: the chain's resources start with their values
            (folder / "constants").mkdir()
            for name, stored in file_names(list(fixed)).items():
                constant_files[name] = f"constants/{stored}.npy"
                np.save(folder / constant_files[name], fixed[name], allow_pickle=False)
        kept = []
        if outside:
            (folder / "outside").mkdir()
            keys = [n.name or f"{n.op_type}_{i}" for i, n in enumerate(outside)]
            node_files = file_names(keys)
            for key, n in zip(keys, outside, strict=True):
                path = f"outside/{node_files[key]}.onnx"
                onnx.save(_outside_model(n, optimized, shapes), str(folder / path))
                kept.append((path, n))
        obj, order = _chain_json(stem, optimized, partitions, kept, npys, shapes, outputs, constant_files)
        model_json = folder / f"{stem}.json"
        model_json.write_text(json.dumps(obj, indent=1) + "\n")
        lowered = None
        if all(p.graph is not None for p in partitions):
            say("lowering the captured graphs into one ONNX model")
            try:
                whole = whole_model(model_json, model)
            except (Dml2OnnxError, *lowering.INVALID_GRAPH) as e:  # the capture stands without it
                say(f"no {stem}.lowered.onnx: {one_line(str(e))}")
            else:
                lowered = f"{stem}.lowered.onnx"
                onnx.save(whole, str(folder / lowered))
        folder.rename(out) if not out.exists() else _fill(out, folder)
        for p in partitions:
            p.path = out / stem / p.path.name
        say(f"wrote {out}: {len(partitions)} partition(s), {len(outside)} node(s) outside them, {out / model_json.name}")
        return Capture(
            out, stem, partitions, outside, feeds, outputs, out / model_json.name, order, out / lowered if lowered else None
        )
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _fill(empty: Path, folder: Path) -> None:
    """Moves the capture into the existing empty folder `empty`."""
    for item in folder.iterdir():
        shutil.move(str(item), str(empty / item.name))
