"""The operator matrix (tests/matrix.py) on every execution provider present, against the numpy
reference: exact for indices and 0/1 outputs, within tolerances.py for floats. On a GPU EP the
sessions run with CPU fallback disabled and every node must be assigned to that EP."""

from __future__ import annotations

import numpy as np
import pytest

from dml2onnx import lowering, ops, runtime
from dml2onnx.tolerances import compare, tolerance
from matrix import Case, all_cases
from support import make_desc

CASES = all_cases()
EPS = [
    "cpu",
    pytest.param(
        "cuda",
        marks=[pytest.mark.gpu, pytest.mark.skipif("cuda" not in runtime.available(), reason="no CUDA execution provider")],
    ),
]


def run_case(case: Case, ep: str) -> tuple[np.ndarray, np.ndarray, list[str]]:
    desc = make_desc(case.op, case.fields)
    session = runtime.create(lowering.lower(desc, "case"), "case", ep)
    got = session.run(case.inputs)
    want = ops.MODULES[desc.schema.name].reference(desc, case.inputs)
    return got, want, session.nodes_off_ep()


@pytest.mark.parametrize("ep", EPS)
@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_case(case: Case, ep: str) -> None:
    got, want, off = run_case(case, ep)
    assert off == [], f"nodes off {ep}: {off}"
    out_type = make_desc(case.op, case.fields).tensor("OutputTensor").data_type
    c = compare(got, want, tolerance(case.op, out_type, ep))
    assert c.ok, f"max abs {c.max_abs}, max rel {c.max_rel}\ngot  {got.ravel()[:16]}\nwant {want.ravel()[:16]}"
