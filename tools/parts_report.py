"""benchmarks/results/<run>.md from a benchmarks/suite.py run of parts 2, 3 and 4 (GEMM, convolution,
pooling, normalization, data movement; part 4's integer, recurrent, gradient and random operators
in a section of their own), against the issues' targets: GEMM and convolution at
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

# Part 4 (issue 23): integer multiplies as TOPS beside the INT8 tensor-core peak (H100 SXM5,
# dense), recurrent layers as time against PyTorch's cuDNN, the rest as GB/s against the copy.
PEAK_INT8_TOPS = 1978.9
PART4_INTEGER = ("MATRIX_MULTIPLY_INTEGER", "QUANTIZED_LINEAR_MATRIX_MULTIPLY", "CONVOLUTION_INTEGER")
PART4_RECURRENT = ("LSTM", "GRU")
PART4_MEMORY = ("AVERAGE_POOLING_GRAD", "MAX_POOLING_GRAD", "BATCH_NORMALIZATION_TRAINING_GRAD", "RANDOM_GENERATOR")
PART4 = PART4_INTEGER + PART4_RECURRENT + PART4_MEMORY


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


def part4_runs(row: dict[str, Any], kernels: dict[str, dict[str, Any]]) -> str:
    """What the CUDA EP runs for a part 4 case: the chosen graph's ONNX nodes, and its costliest
    kernels where a `--kernels` run recorded them."""
    ops = ", ".join(f"{op} x{n}" if n > 1 else op for op, n in row.get("onnx_ops", {}).items())
    line = kernel_line(kernels.get(row["case"], row))
    return "; ".join(part for part in (ops, line) if part)


def part4(
    runs: list[dict[str, Any]], rows: dict[str, tuple[int, dict[str, Any]]], kernels: dict[str, dict[str, Any]]
) -> list[str]:
    """Part 4's section: one table per kind of measure, each row with PyTorch's baseline (what it
    runs where it has no equal operation) and what the CUDA EP runs."""
    part = [(n, row) for n, row in rows.values() if row["group"] in PART4]
    if not part:
        return []
    out = [
        "",
        "## Part 4 (issue 23)",
        "",
        "### Integer matrix multiply and convolution: TOPS beside the INT8 peak",
        "",
        "| case | run | lowering | TOPS | of INT8 peak | PyTorch | PyTorch TOPS | time vs PyTorch | CUDA EP runs |",
        "|---|---|---|---:|---:|---|---:|---:|---|",
    ]
    timed = [(n, row, row["candidates"][row["chosen"]], row["torch"]) for n, row in part]
    failed = [(n, row, chosen) for n, row, chosen, _ in timed if "median_ms" not in chosen]
    timed = [(n, row, chosen, torch) for n, row, chosen, torch in timed if "median_ms" in chosen]
    for n, row, chosen, torch in timed:
        if row["group"] in PART4_INTEGER:
            ours = f"{chosen['tflops']:.1f} | {chosen['tflops'] / PEAK_INT8_TOPS:.1%}"
            out.append(part4_line(n, row, ours, f"{torch.get('tflops', 0):.1f}", kernels))
    out += [
        "",
        f"Peak: NVIDIA's H100 SXM5 datasheet (the H200's compute is the same), INT8 tensor cores, dense: "
        f"{PEAK_INT8_TOPS:.0f} TOPS. TOPS count 2 x multiply-adds; PyTorch's FLOAT32 baselines count the same operations.",
        "",
        "### LSTM and GRU: time against torch.nn.LSTM/GRU (cuDNN)",
        "",
        "| case | run | lowering | ms | PyTorch | PyTorch ms | time vs PyTorch | CUDA EP runs |",
        "|---|---|---|---:|---|---:|---:|---|",
    ]
    for n, row, chosen, torch in timed:
        if row["group"] in PART4_RECURRENT:
            out.append(part4_line(n, row, f"{chosen['median_ms']:.2f}", f"{torch.get('median_ms', float('nan')):.2f}", kernels))
    out += [
        "",
        "### Gradients and RANDOM_GENERATOR: GB/s against the copy bandwidth",
        "",
        "| case | run | lowering | GB/s | of copy | PyTorch | PyTorch GB/s | time vs PyTorch | CUDA EP runs |",
        "|---|---|---|---:|---:|---|---:|---:|---|",
    ]
    for n, row, chosen, torch in timed:
        if row["group"] in PART4_MEMORY:
            copy = runs[n - 1]["copy_gb_per_s"]
            ours = f"{chosen['gb_per_s']:.0f} | {chosen['gb_per_s'] / copy:.0%}"
            out.append(part4_line(n, row, ours, f"{torch.get('gb_per_s', 0):.0f}", kernels))
    out += [
        "",
        "GB/s counts the desc's inputs and outputs for both sides (PyTorch's own traffic may differ: "
        "max_pool2d's backward reads saved INT64 indices, not the input). \"time vs PyTorch\" is PyTorch's "
        "median over ours: above 1 is faster than PyTorch.",
    ]
    if failed:
        out += ["", "The CUDA EP could not run these chosen lowerings:", ""]
        out += [f"- {row['case']} (run {n}, `{row['chosen']}`): {chosen.get('error', '?')}" for n, row, chosen in failed]
    return out


def part4_line(n: int, row: dict[str, Any], ours: str, theirs: str, kernels: dict[str, dict[str, Any]]) -> str:
    """A part 4 table row: the case, its run and lowering, our cells, PyTorch's baseline and its
    cells, the time ratio, what the CUDA EP runs."""
    chosen, torch = row["candidates"][row["chosen"]], row["torch"]
    return (
        f"| {row['case']} | {n} | {row['chosen']} | {ours} | {row.get('torch_baseline', '')} | {theirs} "
        f"| {ratio(chosen, torch)} | {part4_runs(row, kernels)} |"
    )


def ratio(chosen: dict[str, Any], torch: dict[str, Any]) -> str:
    """PyTorch's median time over ours, or why there is none."""
    if "median_ms" not in torch:
        return f"PyTorch failed: {torch.get('error', '?')[:60]}"
    return f"{torch['median_ms'] / chosen['median_ms']:.2f}x"


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
        f"# Parts 2, 3 and 4 at full size: {last['device']}",
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
        if row["group"] in PART4:
            continue
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
    out += part4(runs, rows, kernels)
    if kernels:
        out += ["", "## Kernels of the chosen lowerings (`suite.py --kernels` runs)", ""]
        out += [
            f"- {case} (`{row['chosen']}`, {row['date']}): {kernel_line(row)}"
            for case, row in kernels.items()
            if kernel_line(row)
        ]
    out += ["", 'Why each target is missed, and what would close the gap: README.md, "Performance".']
    print("\n".join(without_empty_sections(out)))


def without_empty_sections(lines: list[str]) -> list[str]:
    """The report less its "## " sections whose tables have no rows (a run of part 4 cases only)."""
    sections: list[list[str]] = [[]]
    for line in lines:
        if line.startswith("## "):
            sections.append([])
        sections[-1].append(line)
    rows = lambda sec: [x for x in sec if x.startswith("| ") and not x.startswith("| case ")]  # noqa: E731
    tables = lambda sec: any(x.startswith("|---") for x in sec)  # noqa: E731
    return [line for sec in sections if not tables(sec) or rows(sec) for line in sec]


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", help="benchmarks/suite.py results, earliest first")
    parser.add_argument("--kernels", nargs="+", default=[], help="suite.py --kernels results, earliest first")
    args = parser.parse_args()
    main(args.runs, args.kernels)
