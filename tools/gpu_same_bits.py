"""Checks that two lowered variants of each captured network give the same outputs bit for bit on a
GPU machine's CUDA EP (../shared/GPU.md): on the bundle's inputs, and on them with NaN, inf, -inf and
-0.0 planted in every float input. For a rewrite of the whole model that claims to change no value
(dml2onnx/graph/: axis_gather, concat_hoist, slice_map_concat, leading_ones, concat_views).

    python3 tools/gpu_same_bits.py DIR A B      # DIR/<net>/{A,B}.onnx and inputs.npz (tools/gpu_variants.py's layout)

Prints a line per network; exits 1 if any differs."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))

from gpu_variants import ort_run  # beside this file (onnxruntime-gpu on the GPU machine)


def planted(inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The inputs with special values every few elements of each float one."""
    out = {}
    for name, value in inputs.items():
        value = value.copy()
        if value.dtype.kind == "f":
            flat = value.reshape(-1)
            flat[::7], flat[3::11], flat[5::13], flat[2::17] = np.nan, np.inf, -np.inf, -0.0
        out[name] = value
    return out


def outputs(path: Path, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    _, io = ort_run(path, feeds)
    return [x.numpy() for x in io.get_outputs()]


def main(source: Path, a: str, b: str) -> int:
    differ = 0
    for folder in sorted(p for p in source.iterdir() if (p / f"{a}.onnx").exists() and (p / f"{b}.onnx").exists()):
        with np.load(folder / "inputs.npz") as saved:
            base = {k: saved[k] for k in saved.files}
        verdicts = []
        for feeds in (base, planted(base)):
            got, want = outputs(folder / f"{b}.onnx", feeds), outputs(folder / f"{a}.onnx", feeds)
            same = all(x.tobytes() == y.tobytes() for x, y in zip(got, want, strict=True))
            nans = sum(int(np.isnan(x).sum()) for x in want if x.dtype.kind == "f")
            verdicts.append(f"{'same bits' if same else 'DIFFER'} ({nans} NaN)")
            differ += not same
        print(f"{folder.name:20s} inputs: {verdicts[0]}; with NaN, inf, -0.0 planted: {verdicts[1]}", flush=True)
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]), sys.argv[2], sys.argv[3]))
