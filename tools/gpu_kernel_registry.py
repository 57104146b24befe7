"""Which ONNX operators (and types) an ONNX Runtime build's execution providers register kernels for,
read from the build itself (onnxruntime's get_all_opkernel_def): on the GPU machine, the CUDA EP's
kernel table, the fact behind "the CUDA EP has no X" in the operator notes and the speed results.

    python3 tools/gpu_kernel_registry.py OUT.json [PROVIDER]     # default CUDAExecutionProvider

Writes {op (domain:name): {"versions": [[first, last], ...], "types": {constraint: [types]}}} and prints
which of the operators dml2onnx decomposes on the CUDA EP (ABSENT_CHECKED) are registered there."""

from __future__ import annotations

import json
import sys

import onnxruntime as ort
from onnxruntime.capi import _pybind_state

# ONNX operators the `cuda` and `portable` targets compose from others because the CUDA EP lacked
# them when those lowerings were written (ops/element_wise_trig.py, activation_more.py, ...)
ABSENT_CHECKED = (
    "Acos",
    "Acosh",
    "Asin",
    "Asinh",
    "Atan",
    "Atanh",
    "Tan",
    "Sinh",
    "Cosh",
    "HardSwish",
    "Mish",
    "BitShift",
    "CumProd",
    "Shrink",
    "Celu",
    "Selu",
    "Softplus",
    "Softsign",
    "ThresholdedRelu",
    "Mod",
    "ArgMax",
    "ArgMin",
    "TopK",
    "MaxPool",
    "Where",
    "Sign",
    "Round",
    "IsNaN",
    "IsInf",
    "CumSum",
)


def registry(provider: str) -> dict[str, dict[str, object]]:
    out: dict[str, dict[str, object]] = {}
    for k in _pybind_state.get_all_opkernel_def():
        if k.provider != provider:
            continue
        entry = out.setdefault(f"{k.domain or 'ai.onnx'}:{k.op_name}", {"versions": [], "types": {}})
        entry["versions"].append(list(k.version_range))
        for name, types in k.type_constraints.items():
            known = entry["types"].setdefault(name, [])
            known.extend(t for t in types if t not in known)
    return out


def main(path: str, provider: str = "CUDAExecutionProvider") -> None:
    found = registry(provider)
    with open(path, "w") as f:
        json.dump({"onnxruntime": ort.__version__, "provider": provider, "kernels": found}, f, indent=1, sort_keys=True)
    print(f"onnxruntime {ort.__version__}: {len(found)} operators with {provider} kernels -> {path}")
    for op in ABSENT_CHECKED:
        entry = found.get(f"ai.onnx:{op}")
        print(f"  {op}: {'absent' if entry is None else entry['types']}")


if __name__ == "__main__":
    main(*sys.argv[1:])
