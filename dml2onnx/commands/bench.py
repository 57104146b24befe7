"""`dml2onnx bench`: time each dispatchable with inputs and outputs resident on the device (ONNX
Runtime io binding, no host copies in the timed loop), as GB/s and as a fraction of the device's
copy bandwidth measured in the same run."""

from __future__ import annotations

import io
import json
import statistics
import sys
import time
from dataclasses import asdict, dataclass
from typing import Any, TextIO

import numpy as np
import onnx
from onnx import TensorProto, helper

from dml2onnx import lowering
from dml2onnx.backends import runtime
from dml2onnx.core.errors import UsageError
from dml2onnx.formats.dxdispatch import Dispatch, Dispatchable, Model
from dml2onnx.graph import targets
from dml2onnx.run.executor import Executor

COPY_BYTES = 256 * 2**20


@dataclass
class Timing:
    iterations: int
    median_ms: float
    min_ms: float
    bytes: int

    @property
    def gb_per_s(self) -> float:
        return self.bytes / (self.median_ms * 1e-3) / 1e9


class Bound:
    """A session with its inputs and output already on the EP's device."""

    def __init__(
        self, session: runtime.Session, feeds: dict[str, np.ndarray], outputs: dict[str, tuple[tuple[int, ...], Any]]
    ) -> None:
        """`outputs`: every graph output (name -> shape, numpy type), bound on the device and
        counted in the bytes moved (`graph_outputs` gives a desc's)."""
        rt = runtime.ort()
        device = "cuda" if session.ep == "cuda" else ("dml" if session.ep == "dml" else "cpu")
        self.session, self.binding = session, session.session.io_binding()
        self.values = {n: rt.OrtValue.ortvalue_from_numpy(np.ascontiguousarray(a), device, 0) for n, a in feeds.items()}
        for name, value in self.values.items():
            self.binding.bind_ortvalue_input(name, value)
        self.outputs = {}
        self.bytes = sum(a.nbytes for a in feeds.values())
        for name, (shape, dtype) in outputs.items():
            self.outputs[name] = rt.OrtValue.ortvalue_from_shape_and_type(list(shape), dtype, device, 0)
            self.binding.bind_ortvalue_output(name, self.outputs[name])
            self.bytes += int(np.prod(shape)) * np.dtype(dtype).itemsize
        self.output = next(iter(self.outputs.values()))

    def run_once(self) -> float:
        start = time.perf_counter()
        self.session.session.run_with_iobinding(self.binding)
        self.binding.synchronize_outputs()
        return (time.perf_counter() - start) * 1e3

    def time(self, iterations: int, warmup: int = 3) -> Timing:
        for _ in range(warmup):
            self.run_once()
        samples = [self.run_once() for _ in range(iterations)]
        return Timing(iterations, statistics.median(samples), min(samples), self.bytes)


def copy_bandwidth(ep: str, iterations: int = 20) -> float:
    """GB/s of a device copy: a FLOAT32 Neg over 256 MiB reads and writes every byte once."""
    n = COPY_BYTES // 4
    graph = helper.make_graph(
        [helper.make_node("Neg", ["x"], ["OutputTensor"], name="copy")],
        "copy",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [n])],
        [helper.make_tensor_value_info("OutputTensor", TensorProto.FLOAT, [n])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    onnx.checker.check_model(model)
    bound = Bound(runtime.create(model, "copy", ep), {"x": np.ones(n, np.float32)}, {"OutputTensor": ((n,), np.float32)})
    return bound.time(iterations).gb_per_s


def graph_outputs(desc: Any) -> dict[str, tuple[tuple[int, ...], Any]]:
    """A desc's lowered graph outputs: name -> (shape, numpy type), for Bound."""
    return {lowering.graph_output(desc, f): (desc.tensor(f).sizes, desc.tensor(f).data_type.numpy) for f in desc.outputs}


def first_feeds(model: Model) -> dict[str, dict[str, np.ndarray]]:
    """The inputs each dispatchable gets at its first dispatch (random data for the others)."""
    feeds: dict[str, dict[str, np.ndarray]] = {}
    quiet = io.StringIO()
    ex = Executor(model, "reference", out=quiet, log=quiet, write_files=False)
    for cmd in model.commands:
        if isinstance(cmd, Dispatch):
            feeds.setdefault(cmd.dispatchable, ex.inputs(cmd))
            ex.dispatch(cmd)
    rng = np.random.default_rng(0)
    for name, d in model.dispatchables.items():
        if name in feeds:
            continue
        if isinstance(d, Dispatchable):
            feeds[name] = {f: _random(rng, d.desc.tensor(f)) for f in lowering.input_names(d.desc)}
        else:  # an ONNX graph's inputs, each free dimension 1 (DxDispatch's implicit bindings)
            feeds[name] = {
                t.name: _random(rng, t.numpy, tuple(x if isinstance(x, int) else 1 for x in t.dims or ()))
                for t in d.resolved_inputs().values()
            }
    return feeds


def _random(rng: np.random.Generator, tensor: Any, shape: tuple[int, ...] | None = None) -> np.ndarray:
    """Random values of a desc's tensor, or of a numpy type and shape."""
    dtype, sizes = (tensor.data_type.numpy, tensor.sizes) if shape is None else (np.dtype(tensor), shape)
    if dtype.kind == "f":
        return rng.standard_normal(sizes).astype(dtype)
    return rng.integers(0, 2 if dtype.kind == "b" else 4, size=sizes).astype(dtype)


def bench(
    model: Model,
    ep: str,
    iterations: int,
    out: TextIO,
    log: TextIO = sys.stderr,
    as_json: bool = False,
    opset: int = 17,
    target: str | None = None,
) -> dict[str, Any]:
    if runtime.canonical(ep) == runtime.DIRECTML:
        raise UsageError(
            f"bench times lowered ONNX graphs with device-bound I/O; DirectML's API ({runtime.DIRECTML}) runs the descs: "
            f"time them with dml2onnx run --ep {runtime.DIRECTML} -i N"
        )
    if runtime.canonical(ep) == "dml" and runtime.wine_dml():
        raise UsageError(
            "bench binds inputs and outputs on the EP's device, which the DirectML EP under Wine cannot: "
            "time it with dml2onnx run --ep dml -i N"
        )
    skipped = ep == "auto" and "dml" in runtime.available() and "dml" not in runtime.available(bound_io=True)
    ep = runtime.resolve(ep, bound_io=True)
    if skipped:
        log.write(
            f"dml2onnx bench: auto picked {runtime.label(ep)}, the best engine present that binds device memory "
            "(the DirectML EP under Wine cannot)\n"
        )
    target = target or targets.for_engine(ep)  # unless given, the graphs built for this EP
    log.write(f"dml2onnx bench: target {target}; measuring the copy bandwidth on {runtime.PROVIDERS[ep]}...\n")
    copy = copy_bandwidth(ep)
    feeds = first_feeds(model)
    rows = []
    for i, (name, d) in enumerate(model.dispatchables.items()):
        log.write(f"dml2onnx bench: '{name}' ({i + 1}/{len(model.dispatchables)})...\n")
        log.flush()
        start = time.perf_counter()
        lowered = lowering.lower(d.desc, name, opset, target) if isinstance(d, Dispatchable) else d.model(opset, target)
        lower_ms = (time.perf_counter() - start) * 1e3
        start = time.perf_counter()
        configure = None if isinstance(d, Dispatchable) or d.settings.default_session else d.settings.configure
        session = runtime.create(lowered, name, ep, configure)
        session_ms = (time.perf_counter() - start) * 1e3
        if isinstance(d, Dispatchable):
            outputs = graph_outputs(d.desc)
        else:  # an ONNX graph's output shapes may be known only once it runs: one untimed run
            outputs = {n: (v.shape, v.dtype) for n, v in session.run_all(feeds[name]).items()}
        timing = Bound(session, feeds[name], outputs).time(iterations)
        props = {p.key: p.value for p in lowered.metadata_props}
        rows.append(
            {
                "dispatchable": name,
                "operator": d.desc.schema.full_name if isinstance(d, Dispatchable) else f"ONNX graph ({d.kind})",
                "lowering": props.get("dml2onnx.lowering", "the graph as it is"),
                **asdict(timing),
                "gb_per_s": timing.gb_per_s,
                "fraction_of_copy": timing.gb_per_s / copy,
                "lower_and_check_ms": lower_ms,
                "session_ms": session_ms,
                "nodes_off_ep": session.nodes_off_ep(),
            }
        )
        if not as_json:
            out.write(
                f"Dispatch '{name}': {iterations} iterations, {timing.median_ms:.4f} ms median, "
                f"{timing.min_ms:.4f} ms min, {timing.gb_per_s:.1f} GB/s ({100 * timing.gb_per_s / copy:.1f}% of "
                f"the {copy:.0f} GB/s copy) [{runtime.PROVIDERS[ep]}]\n"
            )
            out.flush()
    result = {
        "engine": runtime.label(ep),  # the key check --json and run --json use
        "target": target,
        "versions": f"onnxruntime {runtime.version()}",
        "ep": runtime.PROVIDERS[ep],  # "ep" and "onnxruntime": bench's first keys, kept
        "onnxruntime": runtime.version(),
        "copy_gb_per_s": copy,
        "iterations": iterations,
        "dispatchables": rows,
    }
    if as_json:
        out.write(json.dumps(result, indent=2) + "\n")
    return result
