"""docs/benchmarks.md and docs/roofline.png from a benchmarks/suite.py result (needs matplotlib).

python tools/benchmarks_report.py benchmarks/results/h200-2026-11-21.json
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# Targets of the performance issue, at 64M-element FLOAT32 inputs: fraction of copy bandwidth.
TARGETS = {"trailing": 0.60, "leading": 0.35, "middle": 0.35, "several": 0.35, "ONE_HOT": 0.70, "MVN": 0.40}


GAPS = """## Where the targets are missed or PyTorch is faster, why, and what would close the gap

Percentages are of the copy bandwidth of this run. Patterns that were tried and not adopted, with
their numbers, are in [patterns.md](patterns.md).

- **LogSoftmax1 over the innermost axis: 63% on rows of 16384 (target met), PyTorch 1.25x faster;
  38% on rows of 1024 (PyTorch 2.5x faster).** The CUDA EP has two LogSoftmax kernels. On rows of
  more than 1024 elements (FLOAT16: more than 2048, or 1025-2048 with fewer than 8192 rows) a block
  per row computes `(x - max) - log(sum)`, which is exact, and the `cuda` target uses it alone.
  Each row is read three times, where PyTorch's kernel keeps the row in shared memory. On shorter
  rows a warp per row computes `x - (max + log(sum))`, which is 2e-3 off in FLOAT32 once |max| is 5e4.
  There the lowering finds the max first (ArgMax + GatherElements, 4x faster than ReduceMax) and
  subtracts it: two more passes. A -inf column appended to move such rows to the exact kernel (Pad,
  LogSoftmax, Slice) was slower (856 GB/s). `tests/ops/test_log_softmax_kernels.py` checks both sides of
  the bound on the GPU. Its kernels: Sub 139 µs, LogSoftmax 130, ArgMax 73 (next section). An If
  that skips the Sub when every row's |max| is at most 64 (the warp kernel's error is then under
  4e-6) was 1.47x faster on such data (2145 GB/s, 56%: still under the target) and 7% slower on data
  that needs the Sub (patterns.md, R6). It is not adopted: ONNX Runtime reads an If's condition on
  the host, so the host waits for the GPU in the middle of every graph that holds it (in a larger
  model, no kernel is queued ahead across it); and its speed would depend on the data. To close the
  gap, the warp kernel needs PyTorch's order of operations.
- **LogSoftmax1 over a few long rows (4, 16 or 64 rows: 21%; 2.1-7.8x PyTorch at 4-16 rows, PyTorch
  1.5x faster at 64; 256 rows: 45%, PyTorch 1.1x faster).** The EP's kernel runs one block per row, about
  11-13 GB/s each: 52 GB/s for 4 rows of 16M, 723 for 64 rows. Its one-step reductions over a few
  long rows are slower still (2 GB/s for 16 rows of 4M). `chunked_chain` cuts each row into chunks
  of up to 65536: every reduction runs over the chunks first, then over their results (the chunk's
  maximum by ArgMax + GatherElements). It reaches about 800 GB/s for any row count (665 before its
  last Sub was taken in the input's shape, below), and the rule takes it up to 64 rows; at 256 rows
  the EP's kernel is 2.2x faster. It reads the input four times and writes three intermediates. To
  close the gap, the EP needs a split-row softmax.
- **LogSoftmax1 over leading, middle and several axes (20-30%, 1.1-10x PyTorch).** The EP's kernel
  moves an outer axis last with its own Transpose and moves it back afterwards: the two transposes
  cost as much as the softmax. Moving the axes with our own Transpose (`last_axis`) is no faster.
  Reductions over an outer axis run at 550-830 GB/s on the CUDA EP (cuDNN), so a chain of them is
  slower too. On rows of 1024 the exact kernel is not available, and the reduction chain (17%) is
  the fastest.
- **ArgMax over a leading or middle axis (30%; PyTorch 1.7-1.8x faster). Hardmax1 there: 46-47%,
  target met, PyTorch 1.5x faster.** The CUDA EP's ArgMax over an outer axis reaches about 470 GB/s
  (and answers 2**31 - 1 for a slice of -inf only, which the lowerings guard). `last_axis` moves the
  axis last with a Transpose and a merging Reshape, and ArgMax then runs on the innermost axis: 2.5x
  faster. Without that Reshape, ONNX Runtime's transpose optimizer moves the Transpose behind the
  ArgMax again. The Transpose is a full extra read and write. Two stages without a Transpose do not
  help: ArgMax or ReduceMax over chunks of 4-64 along the outer axis reach only 430-830 GB/s, and a
  two-stage MaxPool with Indices 1100, and a values-only MaxPool (cuDNN) over chunks reaches 1380 alone
  and under 1000 as a whole search (patterns.md, R5). The Transpose (139 µs) costs twice the ArgMax
  (72 µs). To close the gap, ONNX Runtime needs a strided ArgMax kernel.
  On DirectML, the `dml` target maps straight to DML_ARGMAX and DML_ACTIVATION_HARDMAX.
- **ArgMax and Hardmax1 over one long row (all axes: ArgMax 69%, 0.99x PyTorch; Hardmax1 75%, 0.89x).**
  The EP's ArgMax over a single 64M row reaches 45%. `two_stage` cuts the row into chunks, takes each
  chunk's extreme, then the first chunk holding the overall one: 1.6x faster (1.3x for Hardmax1, whose
  OneHot then writes 64M elements). With 4 rows or more, one pass is already at full speed.
- **A Reshape that ends a graph copies the output.** When the caller binds its own output buffer
  (io binding, as here and in DirectML apps), ONNX Runtime's Reshape cannot alias it and copies the
  whole tensor. Hardmax1 over every axis wrote a one-hot of the merged axis and reshaped it: 47%. A
  OneHot of one index with depth 64M alone runs at 3470 GB/s (patterns.md, round 4), so the copy was
  most of the time. Hardmax1 over several contiguous axes whose last is 64 long or more (256 until this
  run) writes its one-hot along the last reduced axis, one index per row of it (out of range, a row
  of zeros, except in the row holding the maximum): 75% over every axis. `chunked_chain` takes its last Sub in the input's
  shape: 665 -> 800 GB/s.
- **ArgMax and Hardmax1 over axes in several runs (axes 0 and 2 of 256 x 1024 x 256: ArgMax 48%,
  2.0x PyTorch; Hardmax1 61%, 1.6x; targets met).** When the last run of axes is innermost,
  `inner_first` takes ArgMax over that run where it lies (the rows' extremes and their positions),
  then the first row holding the overall extreme among the other axes, in a tensor 256 times smaller,
  and the position that row's search found. The earlier lowerings moved the whole input with a
  Transpose first (ArgMax 30%, Hardmax1 35%). Hardmax1 writes its one-hot along the last reduced axis,
  in place (as for contiguous axes above), instead of `one_hot_product`'s broadcast Mul. On rows
  shorter than 128 in the innermost run (axes 0 and 2 of 256 x 4096 x 64), the EP's ArgMax scans each
  row with one thread (270 µs), and the Transpose of the other candidates is faster: ArgMax 30%, below
  the target; the Transpose of the input is the cost (144 µs), as over a leading axis. Hardmax1 there
  now writes its one-hot along the last reduced axis too (rows of 64 and longer, 256 before): 43%,
  1.25x `one_hot_product` (34%) and 1.18x PyTorch, target met. Its 298 µs of kernels: Transpose 144,
  ArgMax 75, the OneHot's memset 60, the rows' indices and the one-hot under 20.
  When the last run is not innermost (axes 0 and 2 of 64 x 1024 x 256 x 4, a kept axis inside), the
  axes are moved last with a Transpose that ONNX Runtime runs in its generic kernel (265 µs, twice a
  copy): ArgMax 21% (0.99x PyTorch, whose own permute costs the same), Hardmax1 34% (0.96x; 1.29x
  `one_hot_product`), LogSoftmax1 20% (1.14x PyTorch). To close the gap, the EP needs a strided
  ArgMax, or a faster Transpose for such permutations.
- **ArgMax DECREASING (43% on rows of 16384 in this run and 47% in the previous, with the same
  graph, 1.85x PyTorch; 32% on rows of 1024, 1.35x; 19% on a leading axis, 0.87x).** The CUDA EP has
  no `select_last_index`, so the search from the end needs the values reversed. `two_stage` finds each
  chunk's maximum with a first-index ArgMax (its value is the same), picks the last chunk holding the
  overall maximum, and reverses only that chunk: 1.4x faster than reversing the whole input on rows
  of 16384 (the rule takes it from 4096 elements, over trailing axes). The chosen chunk is gathered
  as one row of a table of chunks (Gather) rather than element by element (Expand + GatherElements):
  1666 -> 1814 GB/s in the previous run. Its 12 kernels take 120 µs, of which the chunk ArgMax 78;
  launching them adds about 40 µs (163 µs wall). On rows of 1024 the chunks are too short for the
  EP's ArgMax, and after the Transpose of a leading axis `two_stage` was slower (608 against 741
  GB/s) than reversing with a Slice.
- **Integer ArgMax (INT32 28% of PyTorch, INT64 14%).** The CUDA EP has no integer ArgMax, and its
  TopK misorders ties (docs/gpu-report.md) and is slower than the DOUBLE ArgMax (patterns.md, R5).
  INT32 on the `cuda` target casts to DOUBLE: 759 GB/s,
  against 2676 for PyTorch; the Cast and the DOUBLE ArgMax move 20 bytes per element. INT64 on the
  `cuda` target: an ArgMax over a DOUBLE copy finds a value that rounds like the maximum (at most
  2**12 from it); every value is clamped to one step beyond it and measured from there, which is
  exact in FLOAT32, and a FLOAT32 ArgMax picks the first maximum. Six passes, 72 bytes per element:
  447 GB/s (91 with the 22-bit digits of the last run, which the `portable` target still uses: it
  has no DOUBLE ArgMax on DirectML). DECREASING: 390 GB/s with `two_stage`. To close the gap, ONNX
  Runtime needs an integer ArgMax kernel.
- **OneHot with small depths (38% at depth 16, 60-61% at 256; 2.0-3.3x PyTorch).** With an Off
  value of 0, the EP's OneHot kernel clears the output (a memset) and then writes one value per index;
  those scattered writes, not the bandwidth, bound it at small depths: at depth 16 the memset takes
  63 µs and the writes of one value per index 95 µs, at depth 256 67 and 19 µs. A Gather from a (depth + 1) x
  depth table of Off/On values, and Equal + Where, were both slower. The EP takes the other kernel,
  which writes every element once, only when the Off value is not 0 (it compares it with 0 on the
  host, so -0.0 counts as 0). From depth 4096 on, OneHot reaches 72-76% in this run (target met);
  the two runs before gave 69-70% and 73-78%. The memset alone is 60-63 µs; the rest of the wall time
  is launching and the copy of Off/On to the host, which the EP reads there. With a 2-element
  ValuesTensor the lowering no longer slices it first (one kernel less before that copy).
- **MVN per channel in FLOAT16 (0.87x PyTorch).** LayerNormalization in FLOAT16 takes longer than in
  FLOAT32 for the same element count on the CUDA EP (0.34 against 0.29 ms at 64M). Computing in
  FLOAT32 adds two casts, which cost more; InstanceNormalization is half as fast.
- **MVN with Scale, Bias and a fused activation (22% per channel, 1.4x PyTorch; 14% across channels,
  2.5x).** Per channel, InstanceNormalization applies Scale and Bias in its own kernel, but the
  activation is one more pass: ONNX Runtime fuses none. Across channels, the reduction chain reads the
  input three times (23% without Scale/Bias, 3.3x PyTorch), and Scale, Bias and the activation add
  three more passes (five kernels of 130-170 µs each without Scale/Bias). InstanceNormalization over
  the input viewed as (1, N, C*H*W), whose channels are then the batch items, normalizes across
  channels in one node, but cuDNN's kernel reaches only 795 GB/s there (patterns.md, R5).
  Where Scale is constant over the normalized axes, the chain now divides Scale by
  the standard deviation (a small tensor) and applies both in one Mul: the per-channel chain with
  Scale/Bias/Relu went from 427 to 494 GB/s, still behind InstanceNormalization (862). Across channels
  Scale varies along C, a normalized axis, so nothing folds. ReduceSumSquare in place of Mul +
  ReduceMean was measured no faster (875 against 877 GB/s across channels) and is not used. Applying
  the statistics, Scale and Bias per (n, c) with BatchNormalization or a
  depthwise Conv (with Relu fused) was slower per channel. Across channels with Scale/Bias/Relu it was
  30% faster (683 against 525 GB/s), still far from 40%, and is not adopted: it needs
  LayerNormalization's optional Mean and InvStdDev outputs, which the DirectML EP's support of we
  cannot check here. A fused kernel, or DirectML's own MVN operator, would close these."""


# Said of the run in benchmarks/results that this page shows.
NOTES = [
    "- LOG_SOFTMAX1 leading-64K (reduce_chain 11% slower than last_axis) and leading-1M (1% slower than"
    " in_place) take 0.04-0.1 ms, where launching decides; the previous run had both within 3%. LOG_SOFTMAX1"
    " middle-64M, several-kept-64M and all-64M: within 0.3% of the fastest.",
    "- HARDMAX1 trailing-256M: in_place 3% slower than two_stage here, 5% in the previous run and 6% faster in"
    " the one before; the rule keeps two_stage for one row only.",
    "- This run was up to 9% slower than the previous one on unchanged graphs (ArgMax DECREASING over rows of"
    " 16384: 1650 against 1814 GB/s; copy 3804 against 3846); the machine is shared.",
]


def first_lowering(data: dict) -> str:
    if "first_lower_and_check_ms" not in data:
        return ""
    return f" (the first in the process, which also loads onnx's checker: {data['first_lower_and_check_ms']:.1f} ms, not counted)"


def target_for(group: str) -> float | None:
    if group.startswith("ONE_HOT"):
        return TARGETS["ONE_HOT"]
    if group.startswith("MVN"):
        return TARGETS["MVN"]
    pattern = group.split()[-1]
    return TARGETS.get(pattern)


def best(row: dict) -> tuple[str, float]:
    timed = {v: c["median_ms"] for v, c in row["candidates"].items() if "median_ms" in c}
    name = min(timed, key=timed.get)
    return name, timed[name]


def gbs(row: dict, ms: float) -> float:
    return row["bytes"] / (ms * 1e-3) / 1e9


def kernel_name(signature: str) -> str:
    """`void onnxruntime::cuda::detail::arg_min_max_last_axis_kernel<float, true>(...)` -> the bare name."""
    if signature.startswith(("Memset", "Memcpy")):
        return signature.split(" (")[0]
    head = signature.removeprefix("(anonymous namespace)::").split("(")[0].split("<")[0]
    return head.removeprefix("void ").split("::")[-1].strip() or signature[:40]


def kernel_section(rows: list[dict]) -> list[str]:
    """The CUDA kernels of each 64M-element target case's chosen lowering (suite.py --kernels)."""
    profiled = [
        r
        for r in rows
        if r.get("kernels")
        and target_for(r["group"]) is not None
        and ("64M" in r["case"] or "64x64" in r["case"] or r["group"].startswith("ONE_HOT"))
    ]
    if not profiled:
        return []
    lines = [
        "## Where the time goes: the CUDA kernels of each chosen lowering",
        "",
        "Recorded by PyTorch's profiler (CUPTI) over 5 runs of the chosen lowering (`suite.py --kernels`), per run.",
        "The wall time includes launching the kernels and waiting for them: for short kernels and many nodes, that",
        "overhead is a large part. A full read and write of 256 MiB (one elementwise pass) takes about 130-140 µs here.",
        "",
        "| case | chosen | wall µs | kernels µs (launches) | largest kernels, µs |",
        "|---|---|---:|---:|---|",
    ]
    for row in profiled:
        total, *top = row["kernels"]
        wall = row["candidates"][row["chosen"]]["median_ms"] * 1e3
        biggest = ", ".join(
            f"{kernel_name(k['kernel'])} {k['us']:.0f}" + (f" (x{k['launches']:.0f})" if k["launches"] > 1 else "")
            for k in top[:4]
        )
        lines.append(
            f"| {row['case']} | {row['chosen']} | {wall:.0f} | {total['us']:.0f} ({total['launches']:.0f}) | {biggest} |"
        )
    return [*lines, ""]


def main(path: str) -> None:
    data = json.loads(Path(path).read_text())
    copy = data["copy_gb_per_s"]
    rows = data["results"]
    lines = [
        "# Benchmarks: dml2onnx lowerings on the CUDA execution provider",
        "",
        f"- Device: {data['device']}; date {data['date']}; onnxruntime-gpu {data['onnxruntime']}; PyTorch {data['torch']}",
        f"- Copy bandwidth measured in the same run: {copy:.0f} GB/s (a FLOAT32 `Neg` over 256 MiB through ONNX Runtime)",
        f"- Each time is the median of {data['iterations']} runs after 3 warm-up runs, with inputs and outputs resident on",
        "  the GPU (ONNX Runtime io binding, PyTorch CUDA tensors), synchronized after each run.",
        "- GB/s = (bytes of the inputs + bytes of the output) / median time: every byte read and written once.",
        "  Operators that mostly read (ArgMax, Hardmax1's ArgMax) can pass the copy line, which reads and writes equally.",
        f"- Source: `benchmarks/suite.py`, raw results `{Path(path).resolve().relative_to(ROOT)}`, this page by "
        "`tools/benchmarks_report.py`.",
        "",
        "![GB/s against size, per operator](roofline.png)",
        "",
        "## Targets at 64M-element FLOAT32 inputs",
        "",
        "| case | chosen lowering | GB/s | of copy | target | PyTorch GB/s | ours / PyTorch |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        target = target_for(row["group"])
        is_64m = "64M" in row["case"] or row["group"].startswith(("ONE_HOT", "MVN"))
        if target is None or not is_64m or "fp16" in row["case"] or "float16" in row["case"] or "int" in row["case"]:
            continue
        if row["group"].startswith("MVN") and "64x64" not in row["case"]:
            continue
        chosen = row["candidates"][row["chosen"]]
        ours = chosen["gb_per_s"]
        torch = row["torch"].get("gb_per_s", float("nan"))
        ok = "yes" if ours / copy >= target else "**no**"
        lines.append(
            f"| {row['case']} | {row['chosen']} | {ours:.0f} | {100 * ours / copy:.0f}% | {100 * target:.0f}% ({ok}) "
            f"| {torch:.0f} | {ours / torch:.2f} |"
        )
    lines += [
        "",
        "## Every case: all candidates, the chosen one, and PyTorch",
        "",
        "| case | elements | candidates (GB/s) | chosen | fastest | chosen / fastest time | PyTorch GB/s | ours / PyTorch |",
        "|---|---:|---|---|---|---:|---:|---:|",
    ]
    mismatches: list[str] = []
    for row in rows:
        name, ms = best(row)
        cands = ", ".join(f"{v} {c['gb_per_s']:.0f}" if "gb_per_s" in c else f"{v} error" for v, c in row["candidates"].items())
        chosen_ms = row["candidates"][row["chosen"]]["median_ms"]
        if name != row["chosen"]:
            mismatches.append(f"{row['case']} ({row['chosen']}, {100 * (chosen_ms / ms - 1):.0f}% slower than {name})")
        torch = row["torch"].get("gb_per_s", float("nan"))
        ours = gbs(row, chosen_ms)
        lines.append(
            f"| {row['case']} | {row['elements']:,} | {cands} | {row['chosen']} | {name} | {chosen_ms / ms:.2f} "
            f"| {torch:.0f} | {ours / torch:.2f} |"
        )
    lower = [c["lower_and_check_ms"] for r in rows for c in r["candidates"].values() if "lower_and_check_ms" in c]
    session = [c["session_ms"] for r in rows for c in r["candidates"].values() if "session_ms" in c]
    off = sum(c.get("nodes_off_gpu", 0) for r in rows for c in r["candidates"].values())
    lines += [
        "",
        "## Summary",
        "",
        f"- Nodes off the GPU, over every candidate of every case: {off}.",
        f"- The chosen lowering was the fastest candidate in {len(rows) - len(mismatches)} of {len(rows)} cases in this "
        f"run. The others: {'; '.join(mismatches) or 'none'}.",
        f"- Lowering + `onnx.checker` full check per operator: median {statistics.median(lower):.2f} ms, "
        f"max {max(lower):.2f} ms{first_lowering(data)}.",
        f"- ONNX Runtime session creation on the CUDA EP: median {statistics.median(session):.1f} ms, max {max(session):.1f} ms.",
        *NOTES,
        "",
        *kernel_section(rows),
        GAPS,
        "",
    ]
    (ROOT / "docs" / "benchmarks.md").write_text("\n".join(lines) + "\n")
    plot(rows, copy, ROOT / "docs" / "roofline.png", data["device"])


def plot(rows: list[dict], copy: float, png: Path, device: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9, 5.5), dpi=110)
    series: dict[str, list[tuple[int, float]]] = {}
    torch_series: dict[str, list[tuple[int, float]]] = {}
    for row in rows:
        if "fp16" in row["case"] or "DECREASING" in row["case"]:
            continue
        parts = row["case"].split()
        if len(parts) < 2 or not parts[1].startswith(("trailing-", "leading-")) or "int" in parts[1]:
            continue
        key = f"{parts[0]} {parts[1].split('-')[0]}"
        series.setdefault(key, []).append((row["elements"], row["candidates"][row["chosen"]]["gb_per_s"]))
        if "gb_per_s" in row["torch"]:
            torch_series.setdefault(key, []).append((row["elements"], row["torch"]["gb_per_s"]))
    for key, points in sorted(series.items()):
        points.sort()
        (line,) = ax.plot([p[0] for p in points], [p[1] for p in points], marker="o", label=f"{key} (dml2onnx)")
        tp = sorted(torch_series.get(key, []))
        ax.plot([p[0] for p in tp], [p[1] for p in tp], linestyle=":", color=line.get_color(), alpha=0.7)
    ax.axhline(copy, color="black", linestyle="--", label=f"device copy {copy:.0f} GB/s")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("elements per input (FLOAT32)")
    ax.set_ylabel("effective GB/s (bytes read + written once)")
    ax.set_title(f"dml2onnx on the CUDA EP, {device} (dotted: PyTorch eager)")
    ax.legend(fontsize=7, loc="lower right")
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(png)


if __name__ == "__main__":
    main(sys.argv[1])
