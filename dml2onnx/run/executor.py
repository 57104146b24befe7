"""Executing a DxDispatch model's commands on one ONNX Runtime execution provider."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any, TextIO

import numpy as np

from dml2onnx import lowering
from dml2onnx.backends import dmlapi, runtime
from dml2onnx.core import files
from dml2onnx.core import tensor as packing
from dml2onnx.core.errors import ModelError, RuntimeFailure, format_path
from dml2onnx.core.files import npy_bytes
from dml2onnx.core.tensor import TensorDesc, read_tensor, write_tensor
from dml2onnx.formats import images, onnx_dispatchable
from dml2onnx.formats.dxdispatch import Dispatch, Dispatchable, Model, Print, WriteFile
from dml2onnx.formats.printing import format_print
from dml2onnx.graph import targets
from dml2onnx.graph.builder import DEFAULT_OPSET


def _check_target(cmd: WriteFile, allow_any_path: bool) -> None:
    """A writeFile's target, checked before any command runs: inside the current folder unless
    allowed elsewhere, and nothing there that only a regular file may replace. An image name
    needs Pillow (images.py); one DxDispatch does not encode is refused, not written raw."""
    p = cmd.path + ("targetPath",)
    images.refuse_other(cmd.target, p, writing=True)
    if images.is_image(cmd.target):
        images.pillow(p, "writing")
    try:
        files.refuse_outside(cmd.target, allow_any_path)
        files.writable_target(cmd.target)
    except files.PathRefused as e:
        raise ModelError(cmd.path + ("targetPath",), str(e)) from None


class _FunctionGraph:
    """A graph dispatchable run by a function (its numpy reference, DirectML's API), with
    runtime.Session's run_all."""

    def __init__(self, run: onnx_dispatchable.Reference) -> None:
        self.run_all = run


class Executor:
    """Runs the commands in order. `ep` is an EP short name, `auto`, `dml-api` (DirectML's API) or
    `reference` (numpy); `iterations`: each dispatch runs that many times (DxDispatch's -i), its
    outputs from the first, the first run's time (sessions warming up) reported apart."""

    def __init__(
        self,
        model: Model,
        ep: str = "cpu",
        opset: int = DEFAULT_OPSET,
        out: TextIO = sys.stdout,
        log: TextIO = sys.stderr,
        target: str | None = None,
        write_files: bool = True,
        allow_any_path: bool = False,
        iterations: int = 1,
    ) -> None:
        self.model, self.out, self.log = model, out, log
        self.write_files = write_files
        if write_files:  # refused before anything runs or is written
            for cmd in model.commands:
                if isinstance(cmd, WriteFile):
                    _check_target(cmd, allow_any_path)
        self.ep = ep if ep == "reference" else runtime.resolve(ep)
        # unless given, the target built for this engine (graph/targets.py: for_engine)
        self.opset, self.target = opset, target or targets.for_engine(self.ep)
        self.iterations = iterations
        self.buffers = {name: r.new_buffer() for name, r in model.resources.items()}
        self.sessions: dict[str, Any] = {}  # runtime.Session, ReferenceSession or dmlapi.DmlApiSession
        # (dispatchable, {output field: its values}) per dispatch
        self.results: list[tuple[str, dict[str, np.ndarray]]] = []
        self.emitted: list[tuple[str, np.ndarray]] = []  # (resource, whole buffer) per print/writeFile
        self.printed: list[tuple[str, np.ndarray]] = []  # (resource, the values printed) per print
        self.timings: list[dict[str, Any]] = []  # per dispatch: its name, iterations and times (ms)
        self.written: list[str] = []  # the files writeFile wrote
        self.setup_ms = 0.0  # starting the engine and compiling every session, before the first dispatch
        self.unstable: dict[str, str] = {}  # dispatchable -> how a later iteration's outputs differed (bit for bit)
        self.shapes: dict[str, tuple[int, ...]] = {}  # a deferred resource's: its output's last shape
        self.plans: dict[int, list[onnx_dispatchable.Planned]] = {}  # id(dispatch of an ONNX graph) -> its tensors
        # Tensors bound at initialization (OWNED_BY_DML) take the resources' initial contents.
        self.init_values = {
            (d.name, point): read_tensor(self.buffers[b.resource], b.offset, d.desc.tensor(point))
            for d in model.dispatchables.values()
            if isinstance(d, Dispatchable)
            for point, b in d.init_bindings.items()
        }

    @property
    def ep_name(self) -> str:
        return runtime.label(self.ep)

    def session(self, name: str) -> Any:
        if name not in self.sessions:
            d = self.model.dispatchables[name]
            if not isinstance(d, Dispatchable):
                self.sessions[name] = self._graph_session(d)
            elif self.ep == "reference":
                self.sessions[name] = runtime.ReferenceSession(name, d.desc)
            elif self.ep == runtime.DIRECTML:
                self.sessions[name] = dmlapi.DmlApiSession(name, d.desc, runtime.DIRECTML)
            else:
                model = lowering.lower(d.desc, name, self.opset, self.target)
                self.sessions[name] = runtime.create(model, name, self.ep)
        return self.sessions[name]

    def _graph_session(self, d: onnx_dispatchable.GraphDispatchable) -> runtime.Session:
        """A graph's session: on the EP; for `reference`, its numpy reference where it has one (a
        serialized graph's descs), else the CPU EP (`check` says so: an ONNX file has none). On
        DirectML's API a serialized graph is compiled by DirectML itself; an ONNX graph runs on ONNX
        Runtime's DirectML EP, as DxDispatch runs its `onnx` dispatchables (and as the DirectML EP ran
        the nodes a capture found outside its partitions)."""
        if self.ep == runtime.DIRECTML:
            graph = d.serialized
            if graph is None:
                ep = runtime.resolve("dml")
                self.log.write(f"dml2onnx: '{d.name}' is an ONNX graph: it runs on {runtime.label(ep)}, as in DxDispatch\n")
                configure = None if d.settings.default_session else d.settings.configure
                return runtime.create(d.model(self.opset, self.target), d.name, ep, configure)
            return _FunctionGraph(lambda feeds: dmlapi.execute_graph(graph, feeds, name=d.name))
        if self.ep == "reference" and d.reference is not None:
            return _FunctionGraph(d.reference)
        configure = None if d.settings.default_session else d.settings.configure
        return runtime.create(d.model(self.opset, self.target), d.name, "cpu" if self.ep == "reference" else self.ep, configure)

    def plan(self, cmd: Dispatch) -> list[onnx_dispatchable.Planned]:
        """An ONNX graph dispatch's tensors and shapes (checked once, before any command runs)."""
        if id(cmd) not in self.plans:
            d = self.model.dispatchables[cmd.dispatchable]
            assert not isinstance(d, Dispatchable)
            self.plans[id(cmd)] = onnx_dispatchable.plan(d, cmd.bindings, self.model.resources)
        return self.plans[id(cmd)]

    def run(self) -> None:
        for cmd in self.model.commands:  # ONNX graphs' bindings: checked once overrides are known
            if isinstance(cmd, Dispatch) and not isinstance(self.model.dispatchables[cmd.dispatchable], Dispatchable):
                self.plan(cmd)
        graphs = f", target {self.target}" if self.ep in runtime.PROVIDERS else ""
        self.log.write(f"dml2onnx: running '{self.model.path}' on {self.ep_name}{graphs}\n")
        # Compile every dispatched operator first, as DxDispatch initializes them up front: the
        # engine's start (Wine, the device) and each session's compile are not a dispatch's time.
        start = time.perf_counter()
        for cmd in self.model.commands:
            if isinstance(cmd, Dispatch):
                self.session(cmd.dispatchable)
        self.setup_ms = (time.perf_counter() - start) * 1e3
        self.log.write(f"dml2onnx: set-up {self.setup_ms:.1f} ms (the engine and {len(self.sessions)} sessions)\n")
        for cmd in self.model.commands:
            if isinstance(cmd, Dispatch):
                self.dispatch(cmd)
            elif isinstance(cmd, Print):
                self.print(cmd)
            else:
                self.write_file(cmd)

    def inputs(self, cmd: Dispatch) -> dict[str, np.ndarray]:
        d = self.model.dispatchables[cmd.dispatchable]
        if not isinstance(d, Dispatchable):
            views = strided_views(d, "inputs")
            return {
                p.tensor.name: (
                    read_tensor(self.buffers[p.binding.resource], p.binding.offset, views[p.tensor.name])
                    if p.tensor.name in views
                    else onnx_dispatchable.read_input(self.buffers[p.binding.resource], p)
                )
                for p in self.plan(cmd)
                if p.tensor.name in d.inputs and p.binding is not None
            }
        feeds = {}
        for point in lowering.input_names(d.desc):
            b, initial = cmd.binding(point, d)
            feeds[point] = (
                self.init_values[(d.name, point)]
                if initial
                else read_tensor(self.buffers[b.resource], b.offset, d.desc.tensor(point))
            )
        return feeds

    def dispatch(self, cmd: Dispatch) -> None:
        session = self.session(cmd.dispatchable)
        feeds = self.inputs(cmd)
        d = self.model.dispatchables[cmd.dispatchable]
        times = []
        for i in range(self.iterations):
            start = time.perf_counter()
            if self.ep == runtime.DIRECTML and isinstance(d, Dispatchable):
                got = session.run_all(feeds, self.output_bytes(cmd, d))
            else:
                got = session.run_all(feeds)
            times.append((time.perf_counter() - start) * 1e3)
            if i == 0:
                values = got
            elif cmd.dispatchable not in self.unstable:
                changed = [k for k, v in got.items() if np.asarray(v).tobytes() != np.asarray(values[k]).tobytes()]
                if changed:
                    self.unstable[cmd.dispatchable] = f"run {i + 1} of {self.iterations} differs from the first in {changed[0]}"
        if isinstance(d, Dispatchable):
            result = lowering.by_field(d.desc, values)
            for field, value in result.items():  # in struct order, as DirectML writes its outputs
                out, _ = cmd.binding(field, d)
                write_tensor(self.buffers[out.resource], out.offset, d.desc.tensor(field), value)
        else:
            result = values
            self._write_outputs(cmd, values)
        self.results.append((cmd.dispatchable, result))
        rest = sorted(times[1:])
        self.timings.append(
            {"dispatchable": cmd.dispatchable, "iterations": len(times), "first_ms": times[0]}
            | ({"median_ms": rest[len(rest) // 2], "min_ms": rest[0]} if rest else {})
        )
        if len(times) == 1:
            self.log.write(f"Dispatch '{cmd.dispatchable}': 1 iteration, {times[0]:.4f} ms ({self.ep_name})\n")
        else:
            rest = sorted(times[1:])
            self.log.write(
                f"Dispatch '{cmd.dispatchable}': {len(times)} iterations, the first {times[0]:.4f} ms, then "
                f"{rest[len(rest) // 2]:.4f} ms median, {rest[0]:.4f} ms min ({self.ep_name})\n"
            )

    def output_bytes(self, cmd: Dispatch, d: Dispatchable) -> dict[str, bytes]:
        """Each output's bound bytes now (TotalTensorSizeInBytes from the binding's offset): DirectML's
        API writes into them, so what it leaves unwritten keeps the resource's contents."""
        out = {}
        for field in d.desc.outputs:
            b, _ = cmd.binding(field, d)
            size = d.desc.tensor(field).size_in_bytes
            out[field] = bytes(self.buffers[b.resource][b.offset : b.offset + size])
        return out

    def _write_outputs(self, cmd: Dispatch, values: dict[str, np.ndarray]) -> None:
        """An ONNX graph's outputs into their resources, from the first byte, in graph order; a
        deferred resource becomes the output (its size and shape). A serialized DirectML graph's
        output with Strides is written through them, as DirectML writes the buffer bound to it
        (the DirectML EP writes a permuting Einsum so: sizes (2, 3, 4), strides (3, 1, 6))."""
        d = self.model.dispatchables[cmd.dispatchable]
        assert not isinstance(d, Dispatchable)
        views = strided_views(d, "outputs")
        for p in self.plan(cmd):
            if p.binding is None or p.tensor.name not in values:  # an input, or an output left unbound
                continue
            value = values[p.tensor.name]
            if p.shape is not None and value.shape != p.shape:
                raise ModelError(
                    p.binding.path, f"output '{p.tensor.name}' has shape {list(value.shape)} when run, not {list(p.shape)}"
                )
            if p.tensor.name in views and not self.model.resources[p.binding.resource].deferred:
                write_tensor(self.buffers[p.binding.resource], p.binding.offset, views[p.tensor.name], value)
                continue
            data = np.ascontiguousarray(value).tobytes()
            if self.model.resources[p.binding.resource].deferred:
                self.buffers[p.binding.resource] = bytearray(data)
                self.shapes[p.binding.resource] = tuple(value.shape)
            else:
                self.buffers[p.binding.resource][: len(data)] = data

    def _length(self, name: str) -> int:
        """Elements of its data type in the whole buffer (a deferred one's: its output's)."""
        res = self.model.resources[name]
        assert res.data_type is not None
        return len(self.buffers[name]) * 8 // res.data_type.element_bits if res.deferred else res.length

    def resource_values(self, name: str, count: int | None = None) -> np.ndarray:
        res = self.model.resources[name]
        assert res.data_type is not None
        if count is None:  # DxDispatch prints a deferred resource whole
            count = self._length(name) if res.deferred else res.print_count
        if res.data_type.is_packed:  # one value per element
            return packing.unpack(self.buffers[name], count, res.data_type)
        return np.frombuffer(self.buffers[name], dtype=res.data_type.numpy, count=count)

    def snapshot(self, name: str) -> None:
        res = self.model.resources[name]
        if res.data_type is not None:
            self.emitted.append((name, self.resource_values(name, self._length(name)).copy()))

    def print(self, cmd: Print) -> None:
        self.snapshot(cmd.resource)
        values = self.resource_values(cmd.resource)
        self.printed.append((cmd.resource, values.copy()))
        self.out.write(format_print(cmd.resource, values, cmd.verbose))
        self.out.flush()

    def write_file(self, cmd: WriteFile) -> None:
        self.snapshot(cmd.resource)
        if not self.write_files:
            return
        res = self.model.resources[cmd.resource]
        target = Path(cmd.target)
        if target.suffix.lower() == ".npy":
            assert res.data_type is not None
            shape = self.shapes.get(cmd.resource) or (cmd.dimensions if cmd.dimensions is not None else (res.length,))
            values = self.resource_values(cmd.resource, int(np.prod(shape, dtype=np.int64)))
            descr = values.dtype.newbyteorder("<").str
            data = npy_bytes(values.astype(descr).tobytes(), descr, tuple(shape))
        elif images.is_image(target):  # dxdispatch.py checked the type and dimensions
            assert res.data_type is not None
            data = images.encode(self.buffers[cmd.resource], res.data_type, cmd.dimensions, cmd.target, cmd.path)
        else:
            data = bytes(self.buffers[cmd.resource])
        try:
            written = files.write_atomic(target, data)
        except files.PathRefused as e:  # the file changed since the check before the run
            raise ModelError(cmd.path + ("targetPath",), str(e)) from None
        except OSError as e:
            raise RuntimeFailure(
                f"{format_path(cmd.path + ('targetPath',))}: cannot write {files.shown(target)}: {e.strerror or e}"
            ) from None
        self.written.append(str(written))
        self.log.write(f"Resource '{cmd.resource}' written to '{written}'\n")


def strided_views(d: onnx_dispatchable.GraphDispatchable, side: str) -> dict[str, TensorDesc]:
    """A serialized DirectML graph's inputs or outputs (`side`) whose TensorDesc has Strides that
    are not the packed layout: bound through them, as DirectML reads and writes the buffers."""
    if d.serialized is None:
        return {}
    tensors: dict[str, TensorDesc] = getattr(d.serialized, side)
    return {name: t for name, t in tensors.items() if not t.packed}
