"""The operator suite's tail: every case of benchmarks/suite.py runs whose chosen lowering takes more than
twice PyTorch's time (below 0.5x), with what the CUDA EP ran (the chosen graph's costliest kernels, from
a `--kernels` run) and the written reason no exact ONNX form on the CUDA EP is faster (REASONS).

    python tools/tail_report.py RUN.json [RUN.json ...] > REPORT.md

A later run's row replaces an earlier one's of the same case. A tail case that no reason covers is listed
as such and the exit status is 1.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

from parts_report import kernel_line

THRESHOLD = 0.5

# What every reason rests on, measured in each element-wise run (benchmarks/results/*-elementwise-*.md):
# the CUDA EP runs one kernel per ONNX node and fuses no element-wise chain, each kernel at best at the
# copy bandwidth, and PyTorch's eager kernel for these reads each input and writes the output once. An
# element-wise ONNX form at 0.5x PyTorch or better therefore has at most two nodes.
PREMISE = (
    "ONNX Runtime's CUDA EP runs one kernel per ONNX node and fuses no element-wise chain; each kernel at best "
    "reads and writes the whole tensor at the copy bandwidth, as PyTorch's one eager kernel does. An "
    "element-wise form at 0.5x PyTorch or better therefore has at most two nodes: every reason below says why "
    "the exact form needs more passes than that (or which single kernel is the slow one), and the kernels "
    "column shows where this run's time went."
)

# (case-name pattern, the reason); "round 9" is benchmarks/patterns.py's, timed on the same H200 as
# benchmarks/results/h200-operator-tail-2026-12-03.md
REASONS: tuple[tuple[str, str], ...] = (
    (
        r"^(ACOS|SINH|ATAN_YX) ",
        "The CUDA EP registers no inverse trigonometric or hyperbolic kernel, and ONNX has no atan2: the exact "
        "FLOAT32 result (a few ulps) is cephes' range reduction and a minimax polynomial written as ONNX nodes "
        "(ops/element_wise_trig.py), and a polynomial of degree d alone is 2d nodes in Horner's form (ONNX has "
        "no fused multiply-add): far past two. A lookup table or FLOAT16 would not be exact.",
    ),
    (
        r"^POW ",
        "The CUDA EP's Pow is IEEE's pow; DirectML's differs for every zero base (+0 for every exponent), for "
        "1**+-inf, 1**NaN, inf**0 and NaN**0 (NaN), for negative bases with infinite exponents (NaN) and with "
        "exponents >= 2**31 (negative: Direct3D's saturating INT32 conversion makes them odd). Each difference "
        "is a comparison and a select beside the Pow: Pow and the zero-base select alone are three nodes.",
    ),
    (
        r"^MODULUS_FLOOR ",
        "ONNX's Mod takes fmod=0 (the floored remainder) on integers only; on floats the floored remainder is "
        "fmod, then r + d where r != 0 and its sign differs from d's: Mod, the sign test (Sign, Mul, Less) and "
        "the select (Add, Where). a - floor(a / b) * b is not exact (a / b rounds).",
    ),
    (
        r"^HARD_SWISH ",
        "HardSigmoid then Mul: two nodes, the limit itself, and HardSigmoid runs below the copy bandwidth. ONNX "
        "HardSwish is one CUDA EP kernel (round 9: 3358 GB/s against 1600 for HardSigmoid and Mul) but rounds "
        "otherwise: 1,939,273 of 536,870,912 FLOAT32 inputs (every 8th bit pattern) differ from HardSigmoid "
        "(Alpha 1/6, Beta 0.5) and Mul, which is DirectML's x * max(0, min(1, Alpha * x + Beta)).",
    ),
    (
        r"^ARGMAX trailing-\d+M-int(32|64)",
        "The CUDA EP's ArgMax takes FLOAT, DOUBLE and FLOAT16 only. INT32 is exact in DOUBLE: a Cast (4 bytes "
        "read, 8 written) and ArgMax over 8 bytes, 20 bytes per element against PyTorch's 4; the one other exact "
        "form tried, ReduceMax, Equal, Cast to FLOAT16 and ArgMax, ran at 104 GB/s against 766 (round 9). INT64 "
        "does not fit DOUBLE: it is split into digits, each compared in turn (ops/argmax.py). TopK, which takes "
        "integers, did not keep the first of tied maxima there (ops/argmax.py).",
    ),
    (
        r"^ARGMAX leading-",
        "ArgMax over the leading axis: the CUDA EP's ArgMax reduces a non-innermost axis far below the copy "
        "bandwidth, so the chosen form moves the axis last first (a Transpose: one more pass over the tensor "
        "before the reduction); the suite times every candidate and the row shows the fastest.",
    ),
    (
        r"^LOG_SOFTMAX1 trailing-",
        "Short rows: the CUDA EP's LogSoftmax runs its warp kernel there without subtracting the row's maximum "
        "first and is then not exact (targets.cuda_warp_softmax), so the max is found first (ArgMax and "
        "GatherElements, faster than ReduceMax) and subtracted: three kernels against PyTorch's one.",
    ),
    (
        r"^MAX_POOLING1 ",
        "DirectML's MAX pooling skips NaN; cuDNN's pooling in the CUDA EP propagates it (and the EP's Max and "
        "Clip give NaN too; FusedConv's activation maps NaN to 0, not to the lowest value), so NaN becomes "
        "-inf first: GreaterOrEqual and Where before the MaxPool, more than half of the time (kernels column).",
    ),
    (
        r"^LP_NORMALIZATION ",
        "Timed with `reduce` (ReduceSumSquare over the channel axis, then x / sqrt(sum + Epsilon)), whose "
        "reduction over a middle axis runs well below the copy bandwidth. Round 9 timed the sum as Mul and a "
        "MatMul of ones at 840 GB/s against 710 (and as a 1x1 Conv of ones at 940; cuDNN may pick FFT or "
        "Winograd algorithms, not exact sums): the `cuda` target chooses `matmul` since (ops/lp_normalization.py) "
        "where 1024 or more elements follow the axis.",
    ),
    (
        r"^CUMULATIVE_SUMMATION ",
        "The CUDA EP's CumSum kernel runs far below the copy bandwidth (the suite's `cumsum` candidate); the "
        "chosen form sums blocks by MatMul with a triangular matrix and carries the blocks' totals: several "
        "passes, still faster than the EP's own kernel.",
    ),
    (
        r"^CUMULATIVE_PRODUCT ",
        "ONNX has no CumProd: an exact product (signs, zeros and infinities included; exp(cumsum(log)) is not "
        "exact) is a log2(n)-step scan of Mul over shifted copies, each step a pass.",
    ),
    (
        r"^MAX_POOLING_GRAD ",
        "DirectML's MAX_POOLING_GRAD takes the forward input, not saved indices: each window's first maximum "
        "is found again (window Gather, ArgMax) and the gradients scattered (ScatterElements), where PyTorch's "
        "backward reads the forward's saved indices.",
    ),
    (
        r"^BATCH_NORMALIZATION_TRAINING_GRAD ",
        "ONNX has no batch-normalization gradient: two reductions per channel over N, H and W (the gradient's "
        "sum and its sum against the normalized input) and the element-wise rest, each a pass; PyTorch's "
        "backward is one fused kernel pair with the forward's saved statistics.",
    ),
    (
        r"^RANDOM_GENERATOR ",
        "DirectML's generator is Philox 4x32-10 from its state tensor, bit for bit: ONNX's RandomUniform is "
        "another generator. Each round's 32 x 32 -> 64-bit products are built from byte tables and FLOAT "
        "partial products (the CUDA EP has no UINT32/UINT64 Mul), hundreds of kernels per call.",
    ),
)


def ratio(row: dict[str, Any]) -> float | None:
    """PyTorch's median time over the chosen lowering's (1.0: as fast)."""
    torch = row.get("torch") or {}
    chosen = row["candidates"].get(row["chosen"], {})
    if not torch.get("median_ms") or not chosen.get("median_ms"):
        return None
    return torch["median_ms"] / chosen["median_ms"]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("runs", nargs="+")
    args = parser.parse_args()
    runs = [json.loads(Path(path).read_text()) for path in args.runs]
    rows = {row["case"]: row | {"run": f"{run['device']}, {run['date']}"} for run in runs for row in run["results"]}
    first = runs[0]
    # by ratio alone: two rows of one ratio must not be compared as dicts
    tail = sorted(((r, row) for row in rows.values() if (r := ratio(row)) is not None and r < THRESHOLD), key=lambda t: t[0])
    lines = [
        f"# The operator suite's tail: cases below {THRESHOLD}x PyTorch",
        "",
        f"onnxruntime-gpu {first['onnxruntime']} (CUDA EP, CPU fallback off, TF32 off), PyTorch {first['torch']}; medians; "
        f"{len(rows)} cases timed in {', '.join(Path(p).name for p in args.runs)}. "
        "Produced by `python tools/tail_report.py` (tools/tail_report.py holds the reasons).",
        "",
        PREMISE,
        "",
        "| case | run | lowering | ms | PyTorch ms | vs PyTorch | what the CUDA EP ran |",
        "|---|---|---|---:|---:|---:|---|",
    ]
    unexplained = []
    reasons_used: set[str] = set()
    for r, row in tail:
        chosen = row["candidates"][row["chosen"]]
        why = next((why for pattern, why in REASONS if re.search(pattern, row["case"])), None)
        if why is None:
            unexplained.append(row["case"])
        else:
            reasons_used.add(why)
        times = f"{chosen['median_ms']:.3f} | {row['torch']['median_ms']:.3f} | {r:.2f}x"
        lines.append(f"| {row['case']} | {row['run']} | {row['chosen']} | {times} | {kernel_line(row)} |")
    lines += ["", "## Why no exact ONNX form on the CUDA EP is faster", ""]
    for pattern, why in REASONS:
        if why in reasons_used:
            lines.append(f"- `{pattern}`: {why}")
    if unexplained:
        lines += ["", "## Not explained", "", *(f"- {c}" for c in unexplained)]
    print("\n".join(lines))
    return 1 if unexplained else 0


if __name__ == "__main__":
    sys.exit(main())
