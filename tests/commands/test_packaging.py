"""Install extras pick one ONNX Runtime build per platform, and dml2onnx works for export and
the static check without any."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[2]
PLATFORMS = {
    "linux": {"platform_system": "Linux", "platform_machine": "x86_64"},
    "windows": {"platform_system": "Windows", "platform_machine": "AMD64"},
    "macos": {"platform_system": "Darwin", "platform_machine": "arm64"},
}


def installed(extra: str, platform: str) -> set[str]:
    reqs = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"][extra]
    return {r.name for r in map(Requirement, reqs) if r.marker is None or r.marker.evaluate(PLATFORMS[platform])}


def test_extras_pull_in_the_right_build_only() -> None:
    assert installed("cpu", "linux") == installed("cpu", "macos") == {"onnxruntime"}
    assert installed("cuda", "linux") == installed("cuda", "windows") == {"onnxruntime-gpu"}
    assert installed("cuda", "macos") == set()
    for extra in ("dml", "directml"):  # named after --ep dml; its first name kept
        assert installed(extra, "windows") == {"onnxruntime-directml"}
        assert installed(extra, "linux") == installed(extra, "macos") == set()
    base = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    assert not any(Requirement(r).name.startswith("onnxruntime") for r in base)


def run_without_onnxruntime(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    code = "import sys; sys.modules['onnxruntime'] = None; from dml2onnx.commands.cli import main; sys.exit(main(sys.argv[1:]))"
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
        check=False,
    )


def test_export_and_static_check_need_no_onnxruntime(tmp_path: Path) -> None:
    model = str(ROOT / "models" / "argmax.json")
    done = run_without_onnxruntime("export", model, "-o", "out", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "out" / "argmax_all.onnx").exists()
    assert run_without_onnxruntime("check", model, "--static", cwd=tmp_path).returncode == 0
    done = run_without_onnxruntime("run", model, cwd=tmp_path)
    assert done.returncode == 1 and "pip install dml2onnx[cpu]" in done.stderr and "Traceback" not in done.stderr
