"""The operator matrix (dml2onnx/cases/) on every execution provider present, against the numpy
reference: exact for indices and 0/1 outputs, within tolerances.py for floats. On a GPU EP the
sessions run with CPU fallback disabled and every node must be assigned to that EP."""

from __future__ import annotations

import numpy as np
import pytest

from dml2onnx import lowering
from dml2onnx.backends import runtime
from dml2onnx.cases import all_cases
from dml2onnx.cases.common import Case
from dml2onnx.graph import targets
from dml2onnx.graph.builder import DEFAULT_OPSET
from dml2onnx.lowering import choices
from dml2onnx.ops import registry
from support import EP_PARAMS, every_output, make_desc, mismatches

CASES = all_cases()


def run_case(case: Case, ep: str, variant: str | None = None) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray], list[str]]:
    """Every output of the lowered graph on `ep` and of the reference, and the nodes off `ep`."""
    desc = make_desc(case.op, case.fields)
    target = choices.target_of(case.op, variant) if variant else "portable"
    session = runtime.create(lowering.lower(desc, "case", target=target, variant=variant), "case", ep)
    return every_output(session, desc, case.inputs), registry.reference_outputs(desc, case.inputs), session.nodes_off_ep()


def variants() -> list[tuple[Case, str]]:
    """Every case with every candidate lowering that applies to it (choices.py), each built for its
    target (`portable`, `cuda` for a CUDA_ONLY candidate, the first of its ONLY_ON targets). DML_ONLY
    candidates mean DirectML's operator on the DirectML EP alone: tests/backends/test_dml_ep_matrix.py runs them."""
    return [
        (c, v)
        for c in CASES
        for v in choices.available(make_desc(c.op, c.fields), DEFAULT_OPSET)
        if choices.target_of(c.op, v) != "dml"
    ]


CASE_VARIANTS = variants()


@pytest.mark.parametrize("ep", EP_PARAMS)
@pytest.mark.parametrize(("case", "variant"), CASE_VARIANTS, ids=[f"{c.id}-{v}" for c, v in CASE_VARIANTS])
def test_case(case: Case, variant: str, ep: str) -> None:
    # Every graph runs on the CPU EP (the cross-check); a GPU EP runs those built for it.
    if ep != "cpu" and ep not in targets.TARGETS[choices.target_of(case.op, variant)].runs_on:
        pytest.skip(f"the {variant} lowering is built for EPs other than {ep}")
    got, want, off = run_case(case, ep, variant)
    assert off == [], f"nodes off {ep}: {off}"
    assert not (bad := mismatches(make_desc(case.op, case.fields), got, want, ep)), bad
