"""benchmarks/results/<run>.md from a benchmarks/suite.py run of the element-wise cases
(`--only 4096x16384`): GB/s against the copy bandwidth measured in the same run, beside PyTorch,
with the number of ONNX nodes (CUDA kernels) of each chosen lowering, counted by lowering the
same descs here.

python tools/elementwise_report.py benchmarks/results/h100-elementwise-2026-11-23.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import suite  # noqa: E402

from dml2onnx import lowering  # noqa: E402

# The buffer views (a Reshape of a dense buffer, a Slice of a broadcast one) cost no kernel.
VIEWS = {"Reshape", "Slice"}

WHY = """## Where the 80% of the copy bandwidth is missed, and why

ONNX Runtime's CUDA EP runs one kernel per ONNX node and fuses no element-wise chain, so a
lowering of k nodes reads and writes the tensor about k times; PyTorch (eager) runs one kernel for
most of these. Each row below is one of those:

- **ScaleBias** (`EXP ScaleBias`): Mul, Add, then the operator: three passes (PyTorch's eager
  `(x * s + b).exp()` is three kernels too).
- **MEAN** (a/2 + b/2: two Mul and an Add): (a + b) / 2 would overflow for two large values, where
  DirectML's MEAN stays finite.
- **ADD1 + RELU**: Add, then Relu (PyTorch the same two kernels); the DirectML EP fuses them into
  one ADD1 with a fused activation, the CUDA EP does not.
- **MODULUS_FLOOR** on floats: ONNX's Mod takes fmod=0 on integers only, so fmod, then the
  divisor's sign fixed by selects.
- **GREATER_THAN** (and every comparison): the BOOL result, then a Cast to DirectML's UINT8.
- **CLIP** (ONNX Clip with constant bounds): one kernel at ~78%: the CUDA EP's Clip reads its
  bounds from device memory per element.
- **LOG** is one kernel: 2654 and 2758 GB/s in the two earlier runs of the same day on the same
  machine kind (98-102% of their copy), 1559 in this one; the machines are shared, and the report
  keeps the run as it came.
- **The inverse trigonometric and hyperbolic functions** (ACOS 26 nodes, ATAN_YX 38, SINH 20): the
  CUDA EP has none of ONNX's Acos ... Cosh, so they are range reductions and polynomials written
  as ONNX nodes, each node a pass; under 5% of copy. The `cpu` and `dml` targets use ONNX's own
  nodes (one kernel); on the CUDA EP only a custom kernel or fusion would close this.
- **POW** (DirectML's special values as selects around Pow: 25 nodes); CONSTANT_POW of 2 is Pow
  alone, at 64%: the CUDA EP's Pow reads its constant exponent from device memory per element.
- **QUANTIZE_LINEAR** with broadcast scales (8 nodes: Div, Round, Add, Clip, Cast, NaN select):
  PyTorch's eager version of the same arithmetic is no faster.
- **SWISH** (Mul, Exp, Add, Div: the CUDA EP's Sigmoid is too inexact in its negative tail),
  **HARD_SWISH** (HardSigmoid, Mul), **PARAMETERIZED_RELU** (Less, Mul, Where: the CUDA EP's
  PRelu gives NaN at x = 0 with an infinite slope), **RELU_GRAD** (Greater, Where).
"""


def main(path: str) -> None:
    run = json.loads(Path(path).read_text())
    copy = run["copy_gb_per_s"]
    descs = {c.name: c.desc for c in [*suite.element_wise_cases(False), *suite.more_element_wise_cases(False)]}
    lines = [
        f"# Element-wise operators at 64M elements: {run['device']}",
        "",
        f"{run['date']}; onnxruntime-gpu {run['onnxruntime']} (CUDA EP, CPU fallback off), PyTorch {run['torch']}; "
        f"{run['iterations']} iterations, medians; copy bandwidth {copy:.0f} GB/s (a FLOAT32 Neg over 256 MiB, same run). "
        "GB/s counts the bytes read and written once: a broadcast input is its compact buffer (`--buffer-inputs`: "
        "an input of stride 0 stays compact in the graph). Produced by `tools/gpu-families.sh` and "
        f"`python tools/elementwise_report.py {Path(path).relative_to(ROOT) if Path(path).is_absolute() else path}`.",
        "",
        "| case | nodes | GB/s | of copy | PyTorch GB/s | vs PyTorch | lowering + check |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in run["results"]:
        chosen = row["candidates"][row["chosen"]]
        model = lowering.lower(descs[row["case"]], "b", target="cuda", buffer_inputs=True)
        kernels = sum(1 for n in model.graph.node if n.op_type not in VIEWS)
        torch = row["torch"]["gb_per_s"]
        lines.append(
            f"| {row['case']} | {kernels} | {chosen['gb_per_s']:.0f} | {chosen['gb_per_s'] / copy:.0%} | {torch:.0f} "
            f"| {chosen['gb_per_s'] / torch:.2f}x | {chosen['lower_and_check_ms']:.1f} ms |"
        )
    met = sum(1 for r in run["results"] if r["candidates"][r["chosen"]]["gb_per_s"] >= 0.8 * copy)
    lines += ["", f"{met} of {len(run['results'])} cases reach 80% of the copy bandwidth.", "", WHY]
    out = Path(path).with_suffix(".md")
    out.write_text("\n".join(lines))
    print(f"wrote {out}")


if __name__ == "__main__":
    main(sys.argv[1])
