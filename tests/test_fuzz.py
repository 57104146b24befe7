"""Fuzzing: every mutation of a valid model ends in success or a clean exit-2 error (one line
naming a JSON path and a rule), never a crash, a runtime failure or a hang. 10,000 examples per
run; `DML2ONNX_FUZZ_EXAMPLES` raises the count for the longer runs recorded in docs/fuzzing.md."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from fuzzing import mutated_models, run_model
from hypothesis import HealthCheck, given, settings

EXAMPLES = int(os.environ.get("DML2ONNX_FUZZ_EXAMPLES", "10000"))


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)
@given(model=mutated_models())
def test_mutated_models_succeed_or_fail_cleanly(model: Any) -> None:
    status = run_model(model, Path("/nonexistent-dml2onnx-fuzz"))
    assert status in (0, 2)
