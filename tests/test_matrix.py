"""The operator matrix (tests/matrix.py) on every execution provider present, against the numpy
reference: exact for indices and 0/1 outputs, within tolerances.py for floats. On a GPU EP the
sessions run with CPU fallback disabled and every node must be assigned to that EP."""

from __future__ import annotations

import numpy as np
import pytest

from dml2onnx import choices, lowering, ops, runtime
from dml2onnx.builder import DEFAULT_OPSET
from dml2onnx.tolerances import compare, tolerance
from matrix import Case, all_cases
from support import EP_PARAMS, make_desc

CASES = all_cases()


def run_case(case: Case, ep: str, variant: str | None = None) -> tuple[np.ndarray, np.ndarray, list[str]]:
    desc = make_desc(case.op, case.fields)
    session = runtime.create(lowering.lower(desc, "case", variant=variant), "case", ep)
    got = session.run(case.inputs)
    want = ops.MODULES[desc.schema.name].reference(desc, case.inputs)
    return got, want, session.nodes_off_ep()


def variants() -> list[tuple[Case, str]]:
    """Every case with every candidate lowering that applies to it (choices.py)."""
    return [(c, v) for c in CASES for v in choices.available(make_desc(c.op, c.fields), DEFAULT_OPSET)]


CASE_VARIANTS = variants()


@pytest.mark.parametrize("ep", EP_PARAMS)
@pytest.mark.parametrize(("case", "variant"), CASE_VARIANTS, ids=[f"{c.id}-{v}" for c, v in CASE_VARIANTS])
def test_case(case: Case, variant: str, ep: str) -> None:
    got, want, off = run_case(case, ep, variant)
    assert off == [], f"nodes off {ep}: {off}"
    out_type = (d := make_desc(case.op, case.fields)).tensor(d.output).data_type
    c = compare(got, want, tolerance(case.op, out_type, ep))
    assert c.ok, f"max abs {c.max_abs}, max rel {c.max_rel}\ngot  {got.ravel()[:16]}\nwant {want.ravel()[:16]}"
