"""Running lowered graphs: ONNX Runtime sessions on one execution provider (never silently
falling back to the CPU), or the numpy reference."""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

import numpy as np
import onnx

from .errors import RuntimeFailure

PROVIDERS = {
    "dml": "DmlExecutionProvider",
    "cuda": "CUDAExecutionProvider",
    "cpu": "CPUExecutionProvider",
}
INSTALL_HINT = {
    "dml": "install onnxruntime-directml (Windows only): pip install dml2onnx[directml]",
    "cuda": "install onnxruntime-gpu (Linux or Windows, NVIDIA): pip install dml2onnx[cuda]",
    "cpu": "install onnxruntime: pip install dml2onnx[cpu]",
}
AUTO_ORDER = ("dml", "cuda", "cpu")


def ort() -> ModuleType:
    """onnxruntime, imported on first use: `export` and the static checks work without it."""
    try:
        module = importlib.import_module("onnxruntime")
        module.set_default_logger_severity(3)  # errors reach the user through our own messages
        return module
    except ImportError:
        raise RuntimeFailure(
            "ONNX Runtime is not installed: pip install dml2onnx[cpu] (or [cuda] on NVIDIA GPUs, [directml] on Windows)"
        ) from None


def version() -> str:
    return str(ort().__version__)


def available() -> list[str]:
    """The EP short names this onnxruntime offers, best first."""
    have = set(ort().get_available_providers())
    return [ep for ep in AUTO_ORDER if PROVIDERS[ep] in have]


def resolve(ep: str) -> str:
    """`auto` -> the best available EP; a named EP must be available."""
    if ep == "auto":
        return available()[0]
    if ep not in PROVIDERS:
        raise RuntimeFailure(f"unknown execution provider '{ep}' (auto, cpu, cuda, dml)")
    if ep not in available():
        raise RuntimeFailure(f"the {PROVIDERS[ep]} is not available in this onnxruntime ({version()}): {INSTALL_HINT[ep]}")
    return ep


@dataclass
class Session:
    name: str
    ep: str
    session: Any  # onnxruntime.InferenceSession

    def run(self, feeds: dict[str, np.ndarray]) -> np.ndarray:
        try:
            return self.session.run(["OutputTensor"], feeds)[0]
        except Exception as e:  # ORT raises its own exception types for runtime failures
            raise RuntimeFailure(f"dispatchable '{self.name}' failed on {PROVIDERS[self.ep]}: {e}") from None

    def assignment(self) -> dict[str, list[str]]:
        """EP name -> the nodes it runs (after ONNX Runtime's graph optimizations)."""
        out: dict[str, list[str]] = {}
        for sub in self.session.get_provider_graph_assignment_info():
            out.setdefault(sub.ep_name, []).extend(f"{n.name} ({n.op_type})" for n in sub.get_nodes())
        return out

    def nodes_off_ep(self) -> list[str]:
        return [n for ep, nodes in self.assignment().items() if ep != PROVIDERS[self.ep] for n in nodes]


def _options(rt: ModuleType) -> Any:
    """Session options every session here shares: quiet, recording which EP runs each node."""
    options = rt.SessionOptions()
    options.log_severity_level = 3
    options.add_session_config_entry("session.record_ep_graph_assignment_info", "1")
    return options


def create(model: onnx.ModelProto, name: str, ep: str) -> Session:
    rt = ort()
    options = _options(rt)
    if ep != "cpu":
        # A node the GPU EP cannot take must fail here, not run on the CPU unnoticed.
        options.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
    if ep == "dml":
        options.enable_mem_pattern = False
        options.execution_mode = rt.ExecutionMode.ORT_SEQUENTIAL
    try:
        session = rt.InferenceSession(model.SerializeToString(), options, providers=[PROVIDERS[ep]])
    except Exception as e:
        first_line = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise RuntimeFailure(
            f"dispatchable '{name}': {PROVIDERS[ep]} cannot run the lowered graph: {first_line}{_left_to_cpu(model, ep)}"
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


@dataclass
class ReferenceSession:
    """The numpy reference of a desc, behind the same interface as `Session`."""

    name: str
    desc: Any  # OperatorDesc
    ep: str = field(default="reference")

    def run(self, feeds: dict[str, np.ndarray]) -> np.ndarray:
        from . import ops

        return ops.MODULES[self.desc.schema.name].reference(self.desc, feeds)
