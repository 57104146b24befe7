"""Executing a DxDispatch model's commands on one ONNX Runtime execution provider."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any, TextIO

import numpy as np

from . import files, lowering, resources, runtime
from .builder import DEFAULT_OPSET
from .dxdispatch import Dispatch, Model, Print, WriteFile
from .errors import ModelError, RuntimeFailure, format_path
from .files import npy_bytes
from .printing import format_print
from .tensor import TensorDesc


def _view(buffer: bytearray | bytes, offset: int, tensor: TensorDesc) -> np.ndarray:
    """The tensor's elements in a bound buffer region, through its strides (no copy; writable
    when the buffer is)."""
    flat = np.frombuffer(buffer, dtype=tensor.data_type.numpy, count=tensor.span, offset=offset)
    size = flat.itemsize
    return np.lib.stride_tricks.as_strided(
        flat, tensor.sizes, [st * size for st in tensor.layout], writeable=flat.flags.writeable
    )


def read_tensor(buffer: bytearray | bytes, offset: int, tensor: TensorDesc) -> np.ndarray:
    """The tensor's elements from a bound buffer region (the bytes are reinterpreted)."""
    return _view(buffer, offset, tensor).copy()


def write_tensor(buffer: bytearray, offset: int, tensor: TensorDesc, values: np.ndarray) -> None:
    """Writes the elements where the strides put them; the bytes in between keep their values."""
    _view(buffer, offset, tensor)[...] = values


def _check_target(cmd: WriteFile, allow_any_path: bool) -> None:
    """A writeFile's target, checked before any command runs: inside the current folder unless
    allowed elsewhere, and nothing there that only a regular file may replace."""
    if Path(cmd.target).suffix.lower() in resources.IMAGE_SUFFIXES:
        # DxDispatch encodes an image there; raw floats under an image's name would mislead
        raise ModelError(
            cmd.path + ("targetPath",),
            f"writing an image ({Path(cmd.target).suffix}) is not supported by dml2onnx yet: name a .npy or raw file",
        )
    try:
        files.refuse_outside(cmd.target, allow_any_path)
        files.writable_target(cmd.target)
    except files.PathRefused as e:
        raise ModelError(cmd.path + ("targetPath",), str(e)) from None


class Executor:
    """Runs the commands in order. `ep` is an EP short name, `auto`, or `reference` (numpy)."""

    def __init__(
        self,
        model: Model,
        ep: str = "cpu",
        opset: int = DEFAULT_OPSET,
        out: TextIO = sys.stdout,
        log: TextIO = sys.stderr,
        target: str = "portable",
        write_files: bool = True,
        allow_any_path: bool = False,
    ) -> None:
        self.model, self.out, self.log = model, out, log
        self.write_files = write_files
        if write_files:  # refused before anything runs or is written
            for cmd in model.commands:
                if isinstance(cmd, WriteFile):
                    _check_target(cmd, allow_any_path)
        self.ep = ep if ep == "reference" else runtime.resolve(ep)
        self.opset, self.target = opset, target
        self.buffers = {name: r.new_buffer() for name, r in model.resources.items()}
        self.sessions: dict[str, Any] = {}  # runtime.Session, ReferenceSession or dmlapi.DmlApiSession
        # (dispatchable, {output field: its values}) per dispatch
        self.results: list[tuple[str, dict[str, np.ndarray]]] = []
        self.emitted: list[tuple[str, np.ndarray]] = []  # (resource, whole buffer) per print/writeFile
        # Tensors bound at initialization (OWNED_BY_DML) take the resources' initial contents.
        self.init_values = {
            (d.name, point): read_tensor(self.buffers[b.resource], b.offset, d.desc.tensor(point))
            for d in model.dispatchables.values()
            for point, b in d.init_bindings.items()
        }

    @property
    def ep_name(self) -> str:
        return runtime.label(self.ep)

    def session(self, name: str) -> Any:
        if name not in self.sessions:
            d = self.model.dispatchables[name]
            if self.ep == "reference":
                self.sessions[name] = runtime.ReferenceSession(name, d.desc)
            elif self.ep == runtime.DIRECTML:
                from . import dmlapi

                self.sessions[name] = dmlapi.DmlApiSession(name, d.desc, runtime.DIRECTML)
            else:
                model = lowering.lower(d.desc, name, self.opset, self.target)
                self.sessions[name] = runtime.create(model, name, self.ep)
        return self.sessions[name]

    def run(self) -> None:
        self.log.write(f"dml2onnx: running '{self.model.path}' on {self.ep_name}\n")
        # Compile every dispatched operator first, as DxDispatch initializes them up front.
        for cmd in self.model.commands:
            if isinstance(cmd, Dispatch):
                self.session(cmd.dispatchable)
        for cmd in self.model.commands:
            if isinstance(cmd, Dispatch):
                self.dispatch(cmd)
            elif isinstance(cmd, Print):
                self.print(cmd)
            else:
                self.write_file(cmd)

    def inputs(self, cmd: Dispatch) -> dict[str, np.ndarray]:
        d = self.model.dispatchables[cmd.dispatchable]
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
        start = time.perf_counter()
        values = session.run_all(feeds)
        ms = (time.perf_counter() - start) * 1e3
        d = self.model.dispatchables[cmd.dispatchable]
        result = lowering.by_field(d.desc, values)
        for field, value in result.items():  # in struct order, as DirectML writes its outputs
            out, _ = cmd.binding(field, d)
            write_tensor(self.buffers[out.resource], out.offset, d.desc.tensor(field), value)
        self.results.append((cmd.dispatchable, result))
        self.log.write(f"Dispatch '{cmd.dispatchable}': 1 iteration, {ms:.4f} ms ({self.ep_name})\n")

    def resource_values(self, name: str, count: int | None = None) -> np.ndarray:
        res = self.model.resources[name]
        assert res.data_type is not None
        n = res.print_count if count is None else count
        return np.frombuffer(self.buffers[name], dtype=res.data_type.numpy, count=n)

    def snapshot(self, name: str) -> None:
        res = self.model.resources[name]
        if res.data_type is not None:
            self.emitted.append((name, self.resource_values(name, res.length).copy()))

    def print(self, cmd: Print) -> None:
        self.snapshot(cmd.resource)
        self.out.write(format_print(cmd.resource, self.resource_values(cmd.resource), cmd.verbose))
        self.out.flush()

    def write_file(self, cmd: WriteFile) -> None:
        self.snapshot(cmd.resource)
        if not self.write_files:
            return
        res = self.model.resources[cmd.resource]
        target = Path(cmd.target)
        if target.suffix.lower() == ".npy":
            assert res.data_type is not None
            shape = cmd.dimensions if cmd.dimensions is not None else (res.length,)
            values = self.resource_values(cmd.resource, int(np.prod(shape, dtype=np.int64)))
            descr = values.dtype.newbyteorder("<").str
            data = npy_bytes(values.astype(descr).tobytes(), descr, tuple(shape))
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
        self.log.write(f"Resource '{cmd.resource}' written to '{written}'\n")
