"""tools/tail_report.py: the suite's cases below 0.5x PyTorch each with the written reason that covers
them, and a tail case no reason covers makes it fail (exit 1)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _row(case: str, ours_ms: float, torch_ms: float) -> dict[str, object]:
    return {
        "case": case,
        "chosen": "elementwise",
        "candidates": {"elementwise": {"median_ms": ours_ms}},
        "torch": {"median_ms": torch_ms},
    }


def _report(tmp_path: Path, rows: list[dict[str, object]]) -> tuple[int, str]:
    run = {"device": "NVIDIA H200", "date": "2026-12-03 11:00 UTC", "onnxruntime": "1.31.1", "torch": "2.11.0", "results": rows}
    (tmp_path / "run.json").write_text(json.dumps(run))
    tool = ROOT / "tools" / "tail_report.py"
    done = subprocess.run([sys.executable, str(tool), str(tmp_path / "run.json")], capture_output=True, text=True, check=False)
    return done.returncode, done.stdout


def test_tail_cases_listed_with_their_reasons(tmp_path: Path) -> None:
    status, out = _report(tmp_path, [_row("POW 4096x16384 float32", 4.0, 0.28), _row("EXP 4096x16384 float32", 0.2, 0.2)])
    assert status == 0
    table = [line for line in out.splitlines() if line.startswith("| POW")]
    assert len(table) == 1 and "| 0.07x |" in table[0]
    assert "EXP 4096" not in out  # 1.00x: not in the tail
    assert "DirectML's differs for every zero base" in out


def test_a_tail_case_without_a_reason_fails(tmp_path: Path) -> None:
    status, out = _report(tmp_path, [_row("NEW_OPERATOR 64M float32", 1.0, 0.1)])
    assert status == 1
    assert out.split("## Not explained")[1].strip() == "- NEW_OPERATOR 64M float32"
