"""The operator matrix (dml2onnx/cases/) on every execution provider present, against the numpy
reference: exact for indices and 0/1 outputs, within tolerances.py for floats. On a GPU EP the
sessions run with CPU fallback disabled and every node must be assigned to that EP. One test per
operator and EP, its cases run in batched sessions (matrix_runs.py); a failure lists each case id
that differs (with its variant) and what differs."""

from __future__ import annotations

import pytest

from dml2onnx import lowering
from dml2onnx.cases import all_cases
from dml2onnx.cases.common import Case
from dml2onnx.graph import dml_ep, targets
from dml2onnx.graph.builder import DEFAULT_OPSET
from dml2onnx.lowering import choices
from matrix_runs import Lowered, differences, report
from support import EP_PARAMS, make_desc

CASES = all_cases()


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
OPERATORS = sorted({c.op for c in CASES})


def lowered(op: str, ep: str) -> list[tuple[Lowered, str]]:
    """The operator's cases, each lowered by each of its candidates that `ep` runs (with the target it
    is built for): every graph on the CPU EP (the cross-check), on a GPU EP those built for it."""
    out = []
    for case, variant in CASE_VARIANTS:
        target = choices.target_of(case.op, variant)
        if case.op == op and (ep == "cpu" or ep in targets.TARGETS[target].runs_on):
            model = lowering.lower(make_desc(case.op, case.fields), "case", target=target, variant=variant)
            out.append((Lowered(f"{case.id}-{variant}", case, model), target))
    return out


@pytest.mark.parametrize("ep", EP_PARAMS)
@pytest.mark.parametrize("op", OPERATORS)
def test_operator(op: str, ep: str) -> None:
    """On the CPU EP, every portable graph also passes the static check of what ONNX Runtime's DirectML
    EP registers (dml_ep.check; test_targets.py checks the dml target's graphs)."""
    built = lowered(op, ep)
    if not built:
        pytest.skip(f"no lowering of {op} is built for {ep}")
    if ep == "cpu":
        refused = {low.key: problems for low, target in built if target == "portable" and (problems := dml_ep.check(low.model))}
        assert refused == {}
    items = [low for low, _ in built]
    assert not (found := differences(items, ep)), report(found, len(items))
