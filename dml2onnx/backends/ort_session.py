"""ONNX Runtime itself: the module (imported on first use), its execution providers, and a
session on one EP that never falls back to the CPU unnoticed. backends/runtime.py picks the engine
(the DirectML EP under Wine, DirectML's API, the numpy reference) above this."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import numpy as np
import onnx

from dml2onnx.core.errors import RuntimeFailure, first_line

PROVIDERS = {
    "dml": "DmlExecutionProvider",
    "cuda": "CUDAExecutionProvider",
    "cpu": "CPUExecutionProvider",
}
INSTALL_HINT = {
    "dml": "install onnxruntime-directml (Windows only): pip install dml2onnx[dml]",
    "cuda": "install onnxruntime-gpu (Linux or Windows, NVIDIA): pip install dml2onnx[cuda]",
    "cpu": "install onnxruntime: pip install dml2onnx[cpu]",
}


def ort() -> ModuleType:
    """onnxruntime, imported on first use: `export` and the static checks work without it."""
    try:
        module = importlib.import_module("onnxruntime")
        module.set_default_logger_severity(3)  # errors reach the user through our own messages
        return module
    except ImportError:
        raise RuntimeFailure(
            "ONNX Runtime is not installed: pip install dml2onnx[cpu] (or [cuda] on NVIDIA GPUs, [dml] on Windows)"
        ) from None


def version() -> str:
    return str(ort().__version__)


@dataclass
class Session:
    name: str
    ep: str
    session: Any  # onnxruntime.InferenceSession

    def run(self, feeds: dict[str, np.ndarray]) -> np.ndarray:
        """The graph's OutputTensor (the operator's first output)."""
        return self.run_all(feeds, ["OutputTensor"])["OutputTensor"]

    def run_all(self, feeds: dict[str, np.ndarray], names: list[str] | None = None) -> dict[str, np.ndarray]:
        """Every graph output (or those named), by name (lowering.graph_output)."""
        names = names or [o.name for o in self.session.get_outputs()]
        try:
            return dict(zip(names, self.session.run(names, feeds), strict=True))
        except Exception as e:  # ORT raises its own exception types for runtime failures
            raise RuntimeFailure(f"dispatchable '{self.name}' failed on {PROVIDERS[self.ep]}: {first_line(e)}") from None

    def assignment(self) -> dict[str, list[str]]:
        """EP name -> the nodes it runs (after ONNX Runtime's graph optimizations)."""
        out: dict[str, list[str]] = {}
        for sub in self.session.get_provider_graph_assignment_info():
            out.setdefault(sub.ep_name, []).extend(f"{n.name} ({n.op_type})" for n in sub.get_nodes())
        return out

    def nodes_off_ep(self) -> list[str]:
        return [n for ep, nodes in self.assignment().items() if ep != PROVIDERS[self.ep] for n in nodes]


# Intra-op threads per session; None leaves ONNX Runtime's default (one per core). The test suite
# sets 1 in each pytest-xdist worker: the workers fill the cores already, and ONNX Runtime's
# spinning pool threads otherwise compete with the other worker (tests/conftest.py).
INTRA_OP_THREADS: int | None = None


def _options(rt: ModuleType) -> Any:
    """Session options every session here shares: quiet, recording which EP runs each node."""
    options = rt.SessionOptions()
    options.log_severity_level = 3
    if INTRA_OP_THREADS is not None:
        options.intra_op_num_threads = INTRA_OP_THREADS
    options.add_session_config_entry("session.record_ep_graph_assignment_info", "1")
    return options


def create(model: onnx.ModelProto, name: str, ep: str, configure: Callable[[Any], None] | None = None) -> Session:
    """An ONNX Runtime session on `ep` (this Python's onnxruntime). `configure(options)`: an ONNX
    dispatchable's own session settings, applied before dml2onnx's (which keep a GPU EP from
    falling back to the CPU)."""
    rt = ort()
    options = _options(rt)
    if configure is not None:
        configure(options)
    if ep != "cpu":
        # A node the GPU EP cannot take must fail here, not run on the CPU unnoticed.
        options.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
    if ep == "dml":
        options.enable_mem_pattern = False
        options.execution_mode = rt.ExecutionMode.ORT_SEQUENTIAL
    providers: list[str | tuple[str, dict[str, str]]] = [PROVIDERS[ep]]
    if ep == "cuda":
        # FLOAT32 MatMul, Gemm and Conv in full FLOAT32, as DirectML computes them: the CUDA EP
        # would otherwise round their inputs to TF32 (10-bit mantissas) on Ampere and later GPUs
        providers = [(PROVIDERS[ep], {"use_tf32": "0"})]
    try:
        session = rt.InferenceSession(model.SerializeToString(), options, providers=providers)
    except Exception as e:
        raise RuntimeFailure(
            f"dispatchable '{name}': {PROVIDERS[ep]} cannot run the lowered graph: {first_line(e)}{_left_to_cpu(model, ep)}"
        ) from None
    return Session(name, ep, session)


def _left_to_cpu(model: onnx.ModelProto, ep: str) -> str:
    """Which nodes the EP refuses, found by a second session that may fall back to the CPU."""
    if ep == "cpu":
        return ""
    rt = ort()
    try:
        probe = rt.InferenceSession(model.SerializeToString(), _options(rt), providers=[PROVIDERS[ep], PROVIDERS["cpu"]])
    except Exception:
        return ""
    nodes = Session("probe", ep, probe).nodes_off_ep()
    return f" (nodes it does not take: {', '.join(nodes)})" if nodes else ""
