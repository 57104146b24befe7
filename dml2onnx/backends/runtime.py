"""Running lowered graphs on an engine chosen by name: an ONNX Runtime EP (ort_session.py), the
DirectML EP under Wine on Linux (winhost.py), DirectML's own API (dmlapi.py), or the numpy
reference. `create(model, name, ep)` is the one way in; `resolve` and `available` say which engines
there are."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import onnx

from dml2onnx import lowering
from dml2onnx.backends import dmlapi, ort_session, winhost

# what callers use of ONNX Runtime itself, through this module
from dml2onnx.backends.ort_session import PROVIDERS as PROVIDERS
from dml2onnx.backends.ort_session import Session as Session
from dml2onnx.backends.ort_session import ort as ort
from dml2onnx.backends.ort_session import version as version
from dml2onnx.core.errors import RuntimeFailure
from dml2onnx.ops import registry

AUTO_ORDER = ("dml", "cuda", "cpu")
# Not an execution provider: DirectML's own API executes the desc itself (dml2onnx.backends.dmlapi).
# Spelled `dml-api` so that it is not taken for `dml`, ONNX Runtime's DirectML EP; `directml`, its
# first spelling, still means it (OLD_SPELLINGS).
DIRECTML = "dml-api"
OLD_SPELLINGS = {"directml": DIRECTML}
ENGINE_NAMES = ("auto", "cpu", "cuda", "dml", DIRECTML)


def canonical(ep: str) -> str:
    """An engine's name as it is spelled now (`directml` -> `dml-api`)."""
    return OLD_SPELLINGS.get(ep, ep)


def spelling_note(ep: str) -> str | None:
    """What to say when an engine is named by an old spelling; None for a current one."""
    if ep not in OLD_SPELLINGS:
        return None
    return f"--ep {ep} is spelled --ep {OLD_SPELLINGS[ep]} now (DirectML's own API; --ep dml is ONNX Runtime's DirectML EP)"


def wine_dml() -> bool:
    """Whether `dml` means ONNX Runtime's DirectML EP under Wine (dml2onnx.backends.winhost): on Linux,
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
    if wine_dml() and winhost.available() and not bound_io:
        have.add(PROVIDERS["dml"])
        order = ("cuda", "dml", "cpu")
    return [ep for ep in order if PROVIDERS[ep] in have]


def engines() -> list[str]:
    """What `check` runs by default: the EPs present, and DirectML's own API where it is set up."""
    return available() + ([DIRECTML] if dmlapi.missing() is None else [])


def label(ep: str) -> str:
    """How messages name an EP or engine."""
    ep = canonical(ep)
    return PROVIDERS.get(ep) or {DIRECTML: "DirectML API", "reference": "numpy reference"}.get(ep, ep)


def resolve(ep: str, bound_io: bool = False) -> str:
    """`auto` -> the best available EP; a named EP (or `dml-api`, DirectML's own API executing
    the desc; `directml` as before) must be available. `bound_io` as for `available`."""
    ep = canonical(ep)
    if ep == "auto":
        return available(bound_io)[0]
    if bound_io and ep == "dml" and wine_dml():
        raise RuntimeFailure(f"device-bound I/O (bench) is not available on {label(ep)} under Wine")
    if ep == DIRECTML:
        if dmlapi.missing() is not None:
            raise RuntimeFailure(dmlapi.missing_message())
        return ep
    if ep not in PROVIDERS:
        raise RuntimeFailure(f"unknown execution provider '{ep}' ({', '.join(ENGINE_NAMES)})")
    if ep not in available():
        if ep == "dml" and wine_dml():
            raise RuntimeFailure(winhost.missing_message())
        hint = ort_session.INSTALL_HINT[ep]
        raise RuntimeFailure(f"the {PROVIDERS[ep]} is not available in this onnxruntime ({version()}): {hint}")
    return ep


def create(model: onnx.ModelProto, name: str, ep: str, configure: Callable[[Any], None] | None = None) -> Session:
    """A session on `ep`. `configure(options)`: an ONNX dispatchable's own session settings,
    applied before dml2onnx's (which keep a GPU EP from falling back to the CPU)."""
    if ep == "dml" and wine_dml():
        if configure is not None:
            raise RuntimeFailure(
                f"dispatchable '{name}': session options (sessionOptionsConfigEntries, graphOptimizationLevel, "
                "loggingLevel) cannot be passed to the DirectML EP under Wine: remove them, or use another EP"
            )
        return winhost.create(model, name)
    return ort_session.create(model, name, ep, configure)


@dataclass
class ReferenceSession:
    """The numpy reference of a desc, behind the same interface as `Session`."""

    name: str
    desc: Any  # OperatorDesc
    ep: str = field(default="reference")

    def run(self, feeds: dict[str, np.ndarray]) -> np.ndarray:
        return self.run_all(feeds)["OutputTensor"]

    def run_all(self, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        return {lowering.graph_output(self.desc, f): v for f, v in registry.reference_outputs(self.desc, feeds).items()}
