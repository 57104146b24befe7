"""Times variants of each captured network's whole lowered model against its original, and PyTorch's
eager module beside them, on a GPU machine's CUDA EP (../shared/GPU.md), in one process: every
variant's runs interleaved in rounds (a shared machine's drift falls on all alike), io binding with
the inputs on the GPU, CPU fallback off, TF32 off.

    python3 tools/gpu_variants.py DIR OUT ROUNDS RUNS original,cuda,new[,torch]

DIR holds one folder per network with inputs.npz and <variant>.onnx for each ONNX variant named
(make them here with `tools/gpu_corpus.py bundle` and commands.whole_model for the code to compare);
`torch` builds the network's module from tools/make_networks.py (where it has one; random weights: the
time does not depend on them) and runs it on the same inputs. Prints a line per network (median ms,
ratio: the original's median over the variant's) and writes OUT/time.json."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime as ort

sys.path.insert(0, str(Path(__file__).parent))


def torch_module(name: str) -> Any:
    """make_networks.py's module for a corpus network (or a --larger one) at its size, on the GPU; None where
    there is none."""
    import make_networks as mn  # torch: on the GPU machine only

    made = {
        "bert_encoder": lambda: mn.Encoder(),
        "bert_encoder_fp16": lambda: mn.Encoder().half(),
        "gpt2_decoder": lambda: mn.Decoder(),
        "unet_up_block": lambda: mn.UNetBlock(),
        "detection_head": lambda: mn.DetectionHead(),
        "lstm_gru": lambda: mn.Recurrent(),
        "convnet_fp16": lambda: mn.ConvNet().half(),
        # make_networks.py --larger
        "bert_b16s256": lambda: mn.Encoder(4, 256, 256),
        "gpt2_b16s256": lambda: mn.Decoder(4, 256, 256),
        "unet_up_block_b16": lambda: mn.UNetBlock(64),
        "detection_head_b32": lambda: mn.DetectionHead(),
        "convnet_fp16_b32": lambda: mn.ConvNet().half(),
    }
    return made[name]().eval().cuda() if name in made else None


class TorchRun:
    """A module and its arguments behind the one call the timing loop makes (synchronous, as ONNX
    Runtime's run_with_iobinding is)."""

    def __init__(self, module: Any, args: list[Any]) -> None:
        import torch

        self.torch, self.module, self.args = torch, module, args

    def run_with_iobinding(self, _: object) -> None:
        with self.torch.no_grad():
            self.module(*self.args)
        self.torch.cuda.synchronize()


def ort_run(path: Path, inputs: dict[str, np.ndarray]) -> tuple[ort.InferenceSession, ort.IOBinding]:
    so = ort.SessionOptions()
    so.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
    session = ort.InferenceSession(str(path), so, providers=[("CUDAExecutionProvider", {"use_tf32": "0"})])
    io = session.io_binding()
    for i in session.get_inputs():
        io.bind_ortvalue_input(i.name, ort.OrtValue.ortvalue_from_numpy(inputs[i.name], "cuda", 0))
    for o in session.get_outputs():
        io.bind_output(o.name, "cuda")
    session.run_with_iobinding(io)
    return session, io


def _max_abs(got: list[np.ndarray], want: list[np.ndarray]) -> float:
    pairs = zip(got, want, strict=True)
    return max(float(np.max(np.abs(a.astype(np.float64) - b.astype(np.float64)), initial=0)) for a, b in pairs)


def main(source: Path, out: Path, rounds: int, runs: int, variants: list[str]) -> None:
    results = {}
    for folder in sorted(p for p in source.iterdir() if p.is_dir()):
        with np.load(folder / "inputs.npz") as saved:
            inputs = {k: saved[k] for k in saved.files}
        bound: dict[str, tuple[Any, Any]] = {}
        outputs = {}
        for v in variants:
            try:
                if v == "torch":
                    import torch

                    module = torch_module(folder.name)
                    if module is None or "original" not in bound:
                        continue
                    order = [i.name for i in bound["original"][0].get_inputs()]
                    run = TorchRun(module, [torch.from_numpy(inputs[n]).cuda() for n in order])
                    run.run_with_iobinding(None)
                    bound[v] = (run, None)
                else:
                    session, io = ort_run(folder / f"{v}.onnx", inputs)
                    bound[v] = (session, io)
                    outputs[v] = [x.numpy() for x in io.get_outputs()]
            except Exception as e:  # reported, and the variant left out
                print(f"{folder.name} {v}: FAILED {str(e).splitlines()[0][:150]}", flush=True)
        if "original" not in bound or len(bound) < 2:
            continue
        for _ in range(30):
            for runner, io in bound.values():
                runner.run_with_iobinding(io)
        medians: dict[str, list[float]] = {v: [] for v in bound}
        for _ in range(rounds):
            for v, (runner, io) in bound.items():
                times = []
                for _ in range(runs):
                    start = time.perf_counter()
                    runner.run_with_iobinding(io)
                    times.append(time.perf_counter() - start)
                medians[v].append(float(np.median(times)))
        ms = {v: float(np.median(m)) * 1e3 for v, m in medians.items()}
        errors = {v: _max_abs(got, outputs["original"]) for v, got in outputs.items()}
        results[folder.name] = {"ms": ms, "ratio": {v: ms["original"] / ms[v] for v in ms}, "max_abs_vs_original": errors}
        cells = "  ".join(f"{v} {ms[v]:.3f} ms ({ms['original'] / ms[v]:.2f}x)" for v in ms)
        print(f"{folder.name:20s} {cells}  max abs vs original {errors}", flush=True)
    for v in variants[1:]:
        ratios = [r["ratio"][v] for r in results.values() if v in r["ratio"]]
        if ratios:
            print(f"{v}: geometric mean ratio {float(np.exp(np.mean(np.log(ratios)))):.3f} over {len(ratios)} networks")
    out.mkdir(parents=True, exist_ok=True)
    (out / "time.json").write_text(json.dumps({"onnxruntime": ort.__version__, "results": results}, indent=1) + "\n")


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5].split(","))
