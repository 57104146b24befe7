"""Running lowered graphs: ONNX Runtime sessions on one execution provider (never silently
falling back to the CPU), or the numpy reference."""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable
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
# Not an execution provider: DirectML's own API executes the desc itself (dml2onnx.dmlapi).
DIRECTML = "directml"


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


def wine_dml() -> bool:
    """Whether `dml` means ONNX Runtime's DirectML EP under Wine (dml2onnx.winhost): on Linux,
    where the onnxruntime module has no DirectML EP (DML2ONNX_WINE_DML=0 turns it off)."""
    if sys.platform == "win32" or os.environ.get("DML2ONNX_WINE_DML") == "0":
        return False
    return PROVIDERS["dml"] not in set(ort().get_available_providers())


def available(bound_io: bool = False) -> list[str]:
    """The EP short names this onnxruntime offers, best first (`dml` also when the DirectML EP
    under Wine is set up: files only, Wine is not started here). DirectML under Wine runs on
    Mesa's CPU Vulkan driver, so it comes after a real GPU's CUDA EP. `bound_io`: only EPs whose
    sessions take device-bound inputs and outputs (bench), which the Wine host does not."""
    have = set(ort().get_available_providers())
    order = AUTO_ORDER
    if wine_dml():
        from . import winhost

        if winhost.available() and not bound_io:
            have.add(PROVIDERS["dml"])
            order = ("cuda", "dml", "cpu")
    return [ep for ep in order if PROVIDERS[ep] in have]


def engines() -> list[str]:
    """What `check` runs by default: the EPs present, and DirectML's own API where it is set up."""
    from . import dmlapi

    return available() + ([DIRECTML] if dmlapi.missing() is None else [])


def label(ep: str) -> str:
    """How messages name an EP or engine."""
    return PROVIDERS.get(ep) or {DIRECTML: "DirectML API", "reference": "numpy reference"}.get(ep, ep)


def resolve(ep: str, bound_io: bool = False) -> str:
    """`auto` -> the best available EP; a named EP (or `directml`, DirectML's own API executing
    the desc) must be available. `bound_io` as for `available`."""
    if ep == "auto":
        return available(bound_io)[0]
    if bound_io and ep == "dml" and wine_dml():
        raise RuntimeFailure(f"device-bound I/O (bench) is not available on {label(ep)} under Wine")
    if ep == DIRECTML:
        from . import dmlapi

        if dmlapi.missing() is not None:
            raise RuntimeFailure(dmlapi.missing_message())
        return ep
    if ep not in PROVIDERS:
        raise RuntimeFailure(f"unknown execution provider '{ep}' (auto, cpu, cuda, dml, directml)")
    if ep not in available():
        if ep == "dml" and wine_dml():
            from . import winhost

            raise RuntimeFailure(winhost.missing_message())
        raise RuntimeFailure(f"the {PROVIDERS[ep]} is not available in this onnxruntime ({version()}): {INSTALL_HINT[ep]}")
    return ep


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


def create(model: onnx.ModelProto, name: str, ep: str, configure: Callable[[Any], None] | None = None) -> Session:
    """A session on `ep`. `configure(options)`: an ONNX dispatchable's own session settings,
    applied before dml2onnx's (which keep a GPU EP from falling back to the CPU)."""
    if ep == "dml" and wine_dml():
        from . import winhost

        if configure is not None:
            raise RuntimeFailure(
                f"dispatchable '{name}': session options (sessionOptionsConfigEntries, graphOptimizationLevel, "
                "loggingLevel) cannot be passed to the DirectML EP under Wine: remove them, or use another EP"
            )
        return winhost.create(model, name)
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
        return self.run_all(feeds)["OutputTensor"]

    def run_all(self, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        from . import lowering, ops

        return {lowering.graph_output(self.desc, f): v for f, v in ops.reference_outputs(self.desc, feeds).items()}
