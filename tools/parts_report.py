"""benchmarks/results/<run>.md from a benchmarks/suite.py run of parts 2 and 3 (GEMM, convolution,
pooling, normalization, data movement), against the issues' targets: GEMM and convolution at
>= 0.9x PyTorch's time (TFLOP/s beside the GPU's peak); pooling and normalization as GB/s against
the copy bandwidth; data movement >= 70% of it, resampling and cumulative operators >= 50%, TOP_K
at least torch.topk. Several runs of the same day and machine: a later run's row replaces an earlier
one's (the cases re-timed after a change), and the "run" column says which. With `--kernels`, the
CUDA kernels of the lowerings chosen in `suite.py --kernels` runs (a later file's case replaces an
earlier one's; each line names the lowering and the run's date: a lowering may have changed since).

python tools/parts_report.py RUN1.json [RUN2.json ...] [--kernels K1.json [K2.json ...]] > REPORT.md
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

# NVIDIA's datasheet peaks of the H100 SXM5 (dense): FLOAT32 on the CUDA cores (TF32 is off, as
# DirectML computes FLOAT32), FLOAT16 on the tensor cores.
PEAK_TFLOPS = {"float32": 67.0, "float16": 989.4}

# (groups, fraction of the copy bandwidth) per part 3 target; TOP_K's target is PyTorch itself
COPY_TARGETS = (
    (("JOIN", "SPLIT", "SLICE1", "PADDING1", "TILE", "DEPTH_TO_SPACE1", "GATHER", "GATHER_ELEMENTS", "SCATTER"), 0.70),
    (("RESAMPLE", "CUMULATIVE_SUMMATION", "CUMULATIVE_PRODUCT"), 0.50),
)
COMPUTE = ("GEMM", "CONVOLUTION")


def copy_target(group: str) -> float | None:
    return next((fraction for groups, fraction in COPY_TARGETS if group in groups), None)


def kernel_line(row: dict[str, Any] | None) -> str:
    """The chosen lowering's three costliest kernels, shortened, with their share of the time."""
    if not row or not isinstance(row.get("kernels"), list):
        return ""
    total, *kernels = row["kernels"]
    parts = []
    for k in kernels[:3]:
        name = k["kernel"].replace("void ", "").split("(")[0].split("<")[0].replace("onnxruntime::cuda::", "")
        parts.append(f"{name} {k['us']:.0f} us x{k['launches']:.0f}")
    return f"{total['us']:.0f} us in {total['launches']:.0f} launches: " + "; ".join(parts)


def main(paths: list[str], kernel_paths: list[str]) -> None:
    runs = [json.loads(Path(p).read_text()) for p in paths]
    rows: dict[str, tuple[int, dict[str, Any]]] = {}
    for i, run in enumerate(runs, 1):
        rows |= {r["case"]: (i, r) for r in run["results"]}
    kernels: dict[str, dict[str, Any]] = {}
    for path in kernel_paths:
        run = json.loads(Path(path).read_text())
        kernels |= {r["case"]: r | {"date": run["date"]} for r in run["results"]}
    last = runs[-1]
    dated = ", ".join(
        f"{i} ({r['date']}, copy {r['copy_gb_per_s']:.0f} GB/s, {r['iterations']} iterations)" for i, r in enumerate(runs, 1)
    )
    out = [
        f"# Parts 2 and 3 at full size: {last['device']}",
        "",
        f"Runs {dated}; "
        f"onnxruntime-gpu {last['onnxruntime']} (CUDA EP, CPU fallback off, TF32 off), PyTorch {last['torch']} (TF32 "
        "off); medians; each row's percentages against its own run's copy bandwidth. "
        "GB/s counts every input and output byte once; TFLOP/s counts 2 x multiply-adds. Produced by "
        f"`benchmarks/suite.py` and `python tools/parts_report.py {' '.join(paths)}"
        + (f" --kernels {' '.join(kernel_paths)}`." if kernel_paths else "`."),
        "",
        "## GEMM and convolution: >= 0.9x PyTorch's time",
        "",
        "| case | run | lowering | TFLOP/s | of peak | PyTorch TFLOP/s | time vs PyTorch | target |",
        "|---|---|---|---:|---:|---:|---:|---|",
    ]
    rest = []
    for n, row in rows.values():
        chosen = row["candidates"][row["chosen"]]
        torch = row["torch"]
        if row["group"] in COMPUTE:
            dtype = row["case"].split()[-1]
            ratio = torch["median_ms"] / chosen["median_ms"]
            out.append(
                f"| {row['case']} | {n} | {row['chosen']} | {chosen['tflops']:.1f} | {chosen['tflops'] / PEAK_TFLOPS[dtype]:.0%} "
                f"| {torch['tflops']:.1f} | {ratio:.2f}x | {'yes' if ratio >= 0.9 else '**no**'} |"
            )
        else:
            rest.append((n, row))
    out += [
        "",
        "Peaks: NVIDIA's H100 SXM5 datasheet, dense: 67 TFLOP/s FLOAT32 (CUDA cores), 989 TFLOP/s FLOAT16 (tensor cores).",
        "",
        "## Pooling, normalization and data movement: GB/s against the copy bandwidth",
        "",
        "| case | run | lowering | GB/s | of copy | target | PyTorch GB/s | vs PyTorch | other candidates (GB/s) |",
        "|---|---|---|---:|---:|---|---:|---:|---|",
    ]
    for n, row in rest:
        copy = runs[n - 1]["copy_gb_per_s"]
        chosen = row["candidates"][row["chosen"]]
        torch = row["torch"]
        speed = torch["median_ms"] / chosen["median_ms"]
        fraction = copy_target(row["group"])
        if row["group"].startswith("TOP_K"):
            target = f"PyTorch ({'yes' if speed >= 1 else '**no**'})"
        elif fraction is not None:
            target = f"{fraction:.0%} ({'yes' if chosen['gb_per_s'] >= fraction * copy else '**no**'})"
        else:
            target = "report"
        others = ", ".join(
            f"{v} {c['gb_per_s']:.0f}" for v, c in row["candidates"].items() if v != row["chosen"] and "gb_per_s" in c
        )
        out.append(
            f"| {row['case']} | {n} | {row['chosen']} | {chosen['gb_per_s']:.0f} | {chosen['gb_per_s'] / copy:.0%} | {target} "
            f"| {torch['gb_per_s']:.0f} | {speed:.2f}x | {others} |"
        )
    if kernels:
        out += ["", "## Kernels of the chosen lowerings (`suite.py --kernels` runs)", ""]
        out += [
            f"- {case} (`{row['chosen']}`, {row['date']}): {kernel_line(row)}"
            for case, row in kernels.items()
            if kernel_line(row)
        ]
    out += ["", 'Why each target is missed, and what would close the gap: README.md, "Performance".']
    print("\n".join(out))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", help="benchmarks/suite.py results, earliest first")
    parser.add_argument("--kernels", nargs="+", default=[], help="suite.py --kernels results, earliest first")
    args = parser.parse_args()
    main(args.runs, args.kernels)
