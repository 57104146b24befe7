"""ONNX Runtime sessions on one execution provider, never silently falling back to the CPU."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import onnx
import onnxruntime as ort

from .errors import RuntimeFailure

PROVIDERS = {
    "dml": "DmlExecutionProvider",
    "cuda": "CUDAExecutionProvider",
    "cpu": "CPUExecutionProvider",
}
INSTALL_HINT = {
    "dml": "install onnxruntime-directml (Windows only): pip install dml2onnx[directml]",
    "cuda": "install onnxruntime-gpu (with CUDA): pip install dml2onnx[cuda]",
    "cpu": "install onnxruntime",
}
AUTO_ORDER = ("dml", "cuda", "cpu")


def available() -> list[str]:
    """The EP short names this onnxruntime offers, best first."""
    have = set(ort.get_available_providers())
    return [ep for ep in AUTO_ORDER if PROVIDERS[ep] in have]


def resolve(ep: str) -> str:
    """`auto` -> the best available EP; a named EP must be available."""
    if ep == "auto":
        return available()[0]
    if ep not in PROVIDERS:
        raise RuntimeFailure(f"unknown execution provider '{ep}' (auto, cpu, cuda, dml)")
    if ep not in available():
        raise RuntimeFailure(f"the {PROVIDERS[ep]} is not available in this onnxruntime ({ort.__version__}): {INSTALL_HINT[ep]}")
    return ep


@dataclass
class Session:
    name: str
    ep: str
    session: ort.InferenceSession

    def run(self, feeds: dict[str, np.ndarray]) -> np.ndarray:
        try:
            return self.session.run(["OutputTensor"], feeds)[0]
        except Exception as e:  # ORT raises its own exception types for runtime failures
            raise RuntimeFailure(f"dispatchable '{self.name}' failed on {PROVIDERS[self.ep]}: {e}") from None


def create(model: onnx.ModelProto, name: str, ep: str) -> Session:
    options = ort.SessionOptions()
    options.log_severity_level = 3
    if ep != "cpu":
        # A node the GPU EP cannot take must fail here, not run on the CPU unnoticed.
        options.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
    if ep == "dml":
        options.enable_mem_pattern = False
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    try:
        session = ort.InferenceSession(model.SerializeToString(), options, providers=[PROVIDERS[ep]])
    except Exception as e:
        raise RuntimeFailure(f"dispatchable '{name}': {PROVIDERS[ep]} cannot run the lowered graph: {e}") from None
    return Session(name, ep, session)
