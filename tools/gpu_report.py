"""Runs the operator matrix (dml2onnx/cases/) on the CUDA EP, CPU fallback disabled, for the
`portable` and `cuda` targets, plus `dml2onnx check` on models/, and writes a Markdown report.

On the device machine (see ../shared/GPU.md and tools/gpu-check.sh):
    python3 tools/gpu_report.py > "$OUT/gpu-report.md"
"""

from __future__ import annotations

import io
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
import onnx  # noqa: E402

from dml2onnx import lowering  # noqa: E402
from dml2onnx.backends import runtime  # noqa: E402
from dml2onnx.cases import all_cases  # noqa: E402
from dml2onnx.commands import check as checks  # noqa: E402
from dml2onnx.core.desc import parse_operator_desc  # noqa: E402
from dml2onnx.formats import dxdispatch  # noqa: E402
from dml2onnx.lowering.tolerances import compare, tolerance  # noqa: E402
from dml2onnx.ops import registry  # noqa: E402


def device() -> str:
    try:
        return subprocess.run(
            ["nvidia-smi", "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "no nvidia-smi"


def main() -> int:
    ep = "cuda" if "cuda" in runtime.available() else "cpu"
    started = time.time()
    cases = all_cases()
    stats: dict[tuple[str, str, str], list[float]] = defaultdict(lambda: [0, 0, 0.0, 0.0])  # run, passed, abs, rel
    failures: list[str] = []
    off_gpu = 0
    for target in ("portable", "cuda"):
        for case in cases:
            desc = parse_operator_desc(case.op, case.fields, ("desc",), ("type",))
            lowering.validate(desc)
            out_type = desc.tensor("OutputTensor").data_type
            key = (target, case.op, out_type.name)
            s = stats[key]
            s[0] += 1
            try:
                session = runtime.create(lowering.lower(desc, "case", target=target), "case", ep)
                got = session.run(case.inputs)
                off = session.nodes_off_ep()
            except Exception as e:  # report, don't stop: the report lists every failure
                failures.append(f"{target} {case.id}: {str(e).splitlines()[0][:200]}")
                continue
            want = registry.family(desc.schema.name).reference(desc, case.inputs)
            c = compare(got, want, tolerance(case.op, out_type, ep))
            off_gpu += len(off)
            s[2], s[3] = max(s[2], c.max_abs), max(s[3], c.max_rel)
            if c.ok and not off:
                s[1] += 1
            else:
                failures.append(f"{target} {case.id}: max abs {c.max_abs:.3g}, max rel {c.max_rel:.3g}, nodes off {off}")
    models = io.StringIO()
    model_ok = True
    for path in sorted((ROOT / "models").glob("*.json")):
        models.write(f"$ dml2onnx check models/{path.name}\n")
        model_ok &= checks.dynamic(dxdispatch.load(path), runtime.available(), models)
    run = sum(s[0] for s in stats.values())
    passed = sum(s[1] for s in stats.values())
    out = sys.stdout
    out.write("# GPU report: the operator matrix on the CUDA execution provider\n\n")
    out.write(f"- Date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}\n")
    out.write(f"- Device: {device()} (name, driver, memory)\n")
    out.write(
        f"- onnxruntime-gpu {runtime.version()}, onnx {onnx.__version__}, numpy {np.__version__}, "
        f"Python {sys.version.split()[0]}\n"
    )
    fallback = ", `session.disable_cpu_ep_fallback=1`" if ep != "cpu" else " (no GPU EP here)"
    out.write(f"- Execution provider: {runtime.PROVIDERS[ep]} only{fallback}\n")
    out.write(
        f"- Cases run: {run} ({len(cases)} matrix cases x targets portable and cuda), passed: {passed}, failed: {len(failures)}\n"
    )
    out.write(f"- Nodes off {runtime.PROVIDERS[ep]}: {off_gpu}\n")
    out.write(f"- Models in models/ checked on {', '.join(runtime.available())}: {'all match' if model_ok else 'MISMATCH'}\n")
    out.write(f"- Wall time: {time.time() - started:.0f} s\n\n")
    out.write(
        "Cases come from `dml2onnx/cases/`: every documented data type, ranks 1-8, trailing / leading / "
        "middle / several / all axes, both ArgMax directions, ties and extreme values, INT64 beyond 2^53, "
        "OneHot negative and out-of-range indices, every MVN option and fused activation. Results are "
        "compared with the numpy reference (`dml2onnx/ops/*.py`): exactly for indices and 0/1 outputs, "
        "within `dml2onnx/lowering/tolerances.py` for floats.\n\n"
    )
    out.write("| target | operator | output type | cases | passed | max abs error | max rel error |\n")
    out.write("|---|---|---|---:|---:|---:|---:|\n")
    for (target, op, dtype), s in sorted(stats.items()):
        out.write(f"| {target} | {op} | {dtype} | {s[0]:.0f} | {s[1]:.0f} | {s[2]:.3g} | {s[3]:.3g} |\n")
    if failures:
        out.write("\n## Failures\n\n" + "".join(f"- {f}\n" for f in failures[:200]))
    out.write("\n## dml2onnx check on models/\n\n```\n" + models.getvalue() + "```\n")
    return 0 if not failures and model_ok and off_gpu == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
