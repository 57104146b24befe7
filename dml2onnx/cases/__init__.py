"""The operator matrix: explicit desc cases for every operator family, covering every documented
data type, ranks 1-8, axis patterns (trailing, leading, middle, several, all), both directions,
ties, extreme values, INT64 beyond 2**53, every option and fused activation; one module per family
(or group of families), each with `cases()`. The test suites run them on every EP present and on
DirectML's API (tests/test_matrix.py, tests/test_dml_ep_matrix.py, tests/test_dmlapi.py), and
tools/gpu_report.py on a GPU; tests/test_matrix.py checks that every operator of ops/registry.py
has cases here. corpus.py holds the real networks that `capture` is tested on.
"""

from __future__ import annotations

import importlib
import pkgutil

from dml2onnx.cases.common import Case

# modules of this package that hold no matrix cases
_NOT_CASES = {"common", "corpus"}


def all_cases() -> list[Case]:
    """Every case of every module of this package, module by module (in name order)."""
    out: list[Case] = []
    for module in pkgutil.iter_modules(__path__):
        if module.name not in _NOT_CASES:
            out.extend(importlib.import_module(f"{__name__}.{module.name}").cases())
    return out
