"""docs/patterns.md from benchmarks/patterns.py results (JSON files, later ones win per pattern).

python tools/patterns_report.py benchmarks/results/patterns-*.json  (the H200 rounds in order, then the H100 rounds 7 and 8)
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

HEADER = """# Raw ONNX patterns tried on the CUDA execution provider

`benchmarks/patterns.py` times hand-built graphs (not dml2onnx lowerings) on an {device}, with
onnxruntime-gpu {ort}, CPU fallback disabled, io binding, median of 20 runs. Each output is checked
against numpy. "ties" runs the ArgMax patterns again on small data with many ties, a slice of -inf, a
slice of +inf, NaN and large equal values: "no" there comes from NaN (every pattern, as ONNX Runtime's
own ArgMax, ranks NaN differently from numpy, which dml2onnx leaves unspecified) unless said otherwise:
the R3 "two stages" over an outer axis answer 2**31 - 1 (plus the chunk's offset) for the column of
-inf, the outer-axis ArgMax quirk below. R3 is the third round: chunked stages (not adopted for outer
axes; adopted as `two_stage` for DECREASING and as `chunked_chain` for a few long rows). R4, the
fourth, times a one-hot of one index over 64M elements: as fast as a copy, so the 47% of Hardmax1
over every axis came from the Reshape that followed it (adopted: a one-hot along the last reduced
axis, docs/benchmarks.md). R5, the fifth: values-only MaxPool (cuDNN) over chunks as the first
stage of an outer-axis ArgMax (its MaxPool alone reaches 1380 GB/s, the whole search under 1000: not
adopted), TopK with k = 1 for the types the EP's ArgMax lacks (slower than the DOUBLE ArgMax, and it
does not keep the first of tied maxima: not adopted), and MVN across channels as
InstanceNormalization over (1, N, C*H*W) (795 GB/s, slower than the reduction chain: not adopted).
R6, the sixth: LogSoftmax on rows of 1024 with an If that skips subtracting the maximum when every
row's |max| is at most 64 (the warp kernel's error is then under 4e-6): 1.47x faster on such data,
7% slower on data that needs the subtraction (not adopted yet: docs/benchmarks.md). Its "ties"
columns for ArgMax use finite data (no NaN): "no" there is a wrong index.
R7, the seventh (on an NVIDIA H100, part 3's data movement at 64M FLOAT32 elements): TopK in four
key types (FLOAT32's "ties" no: rows [3, 3, -inf] give a wrong third value, the -inf sorting past
the kernel's padding; DOUBLE's right), CumSum as MatMuls of 16-64 wide blocks by triangles of ones
(5x CumSum: adopted behind an If, `blocked`), Gather, GatherElements and ScatterElements as such and
behind an If on the indices' range (adopted as `guarded`), DepthToSpace against its Transpose (adopted
as `native`), Tile against Concat and Expand, and Resize nearest and linear against Expand, two 1-D
Resizes and the 2x linear formula (Resize adopted off the `dml` target where it computes DirectML's).
R8, the eighth (the H100 again): a Reshape that produces the graph's output (or an If branch's result)
is a copy of it (Gather 1961 GB/s, then a Reshape to the same shape 1169; DepthToSpace 1752 and 1078;
If in range: Gather 1333, with the Reshape 938: adopted for every lowering, dml2onnx/graph/output_views.py);
GATHER by rows with the rows outside fixed by NonZero + ScatterND (the CUDA EP left a node to the CPU:
not adopted); the guards' reductions over 64M INT32 indices (Cast to FLOAT32 + ReduceMax stays the
fastest: 738 GB/s, against 514 for ReduceMax on INT32 and 249 staged along the last axis); the sum of
|x| (ReduceL1 1928 GB/s, against 714 for ReduceMax of Abs); and TopK 8 of 512 as 8 ArgMax passes,
each taking its pick out with ScatterElements (108 GB/s in FLOAT32, 56 in DOUBLE, TopK 27: adopted
behind an If on finite data as TOP_K's `selection`).
The patterns that won became candidates in `dml2onnx/lowering/choices.py`; docs/benchmarks.md times those.

Sources: {sources}.

## How the EP treats special values (index per column; numpy's in brackets)

Columns: all -inf, all NaN, one NaN (row 2, the largest finite value at row 3), -inf with a finite
value at rows 2 and 4, all +inf, all equal and large (FLOAT32 1e30, FLOAT16 4096), ties of 3 at
rows 0, 2, 4 and 7.

| probe | got | numpy |
|---|---|---|
"""


def main(paths: list[str]) -> None:
    rows: dict[str, dict] = {}
    versions = set()
    for p in paths:
        data = json.loads(Path(p).read_text())
        versions.add(data["onnxruntime"])
        for r in data["results"]:
            rows[r["name"]] = r
    device = "NVIDIA H200 (rounds 1-6; an H100 for R7 and R8)"
    text = HEADER.format(device=device, ort=", ".join(sorted(versions)), sources=", ".join(f"`{p}`" for p in paths))
    want = {"float32": "[0, 0, 2, 2, 0, 0, 0]", "float16": "[0, 0, 2, 2, 0, 0, 0]"}
    for name, r in rows.items():
        if name.startswith("semantics"):
            dtype = name.split()[1].rstrip(":")
            text += f"| {name.removeprefix('semantics ')} | {r['got']} | {want[dtype]} |\n"
    text += "\n## Timings\n\n| case | pattern | GB/s | correct | ties |\n|---|---|---:|---|---|\n"
    for name, r in rows.items():
        if name.startswith("semantics"):
            continue
        group, _, pattern = name.replace("|", "\\|").partition(": ")  # a | inside a cell would end it
        if "failed" in r:
            text += f"| {group} | {pattern} | failed: {r['failed'][:80]} | | |\n"
            continue
        ties = "" if "ties_correct" not in r else ("yes" if r["ties_correct"] else f"no {r.get('ties_first_diffs') or ''}")
        text += f"| {group} | {pattern} | {r['gb_per_s']:.0f} | {'yes' if r['correct'] else 'no'} | {ties} |\n"
    (ROOT / "docs" / "patterns.md").write_text(text)


if __name__ == "__main__":
    main(sys.argv[1:])
