"""Fuzzing: every mutation of a valid model ends in success or a clean exit-2 error (one line
naming a JSON path and a rule), never a crash, a runtime failure or a hang. 5,000 examples per
run (`make test`; each run draws new ones); `DML2ONNX_FUZZ_EXAMPLES` raises the count for the longer
runs recorded in docs/fuzzing.md.

Models with hostile file names (tests/fuzzing.py's HOSTILE_PATHS: NULs, surrogates, over-long
names, devices, FIFOs, sockets, folders, links) run in a folder of real special files, with
their writeFile commands executed: none of those files may be read, replaced or left changed."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings

from fuzzing import hostile_folder, models_with_hostile_paths, mutated_models, run_model

EXAMPLES = int(os.environ.get("DML2ONNX_FUZZ_EXAMPLES", "5000"))
PATH_EXAMPLES = max(EXAMPLES // 10, 100)
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)


@FUZZ
@given(model=mutated_models())
def test_mutated_models_succeed_or_fail_cleanly(model: Any) -> None:
    status = run_model(model, Path("/nonexistent-dml2onnx-fuzz"))
    assert status in (0, 2)


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    with hostile_folder(tmp_path_factory.mktemp("hostile")) as base:
        yield base


def _within_seconds(seconds: int, model: Any, folder: Path, allow_any_path: bool) -> int:
    """run_model, failing instead of hanging (an alarm interrupts a blocked open or read)."""

    def expired(*_: Any) -> None:
        raise TimeoutError(f"a hang: still running after {seconds} s")

    old = signal.signal(signal.SIGALRM, expired)
    signal.alarm(seconds)
    try:
        return run_model(model, folder, write_files=True, allow_any_path=allow_any_path)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


@settings(FUZZ, max_examples=PATH_EXAMPLES)
@given(model=models_with_hostile_paths())
def test_hostile_paths_fail_cleanly(model: Any, folder: Path) -> None:
    assert _within_seconds(10, model, folder, allow_any_path=False) in (0, 2)


def _writes_only_here(model: Any) -> bool:
    commands = model.get("commands") if isinstance(model, dict) else None
    if not isinstance(commands, list):
        return True
    targets = [c.get("targetPath") for c in commands if isinstance(c, dict)]
    return all(not isinstance(t, str) or (not t.startswith("/") and ".." not in t) for t in targets)


@settings(FUZZ, max_examples=PATH_EXAMPLES)
@given(model=models_with_hostile_paths(local_targets_only=True))
def test_hostile_targets_with_allow_any_path(model: Any, folder: Path) -> None:
    """--allow-any-path lifts the current-folder rule only: special files are still refused.
    (Targets stay in the test's folder: a regression must not reach the machine's devices.)"""
    assume(_writes_only_here(model))
    assert _within_seconds(10, model, folder, allow_any_path=True) in (0, 2)
