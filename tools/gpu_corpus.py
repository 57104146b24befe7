"""Runs captured networks' whole lowered models (`dml2onnx capture`'s <stem>.lowered.onnx) on the
CUDA EP, beside their original models, on a GPU machine (../shared/GPU.md): the lowered graph on
the CUDA EP with CPU fallback disabled (every node on the GPU, or the session fails), the original
on the CPU EP as the truth, and the original on the CUDA EP for scale.

    python tools/gpu_corpus.py bundle [DIR [MODEL.onnx ...]]   # on this machine: captures dml2onnx/cases/
                                              # corpus.py's small networks (or the models given) into DIR
                                              # (default .gpucorpus/; needs make dml-setup)
    python3 tools/gpu_corpus.py run .gpucorpus OUT.md   # on the GPU machine (onnxruntime-gpu)
    python3 tools/gpu_corpus.py bench .gpucorpus OUT     # there too: `dml2onnx bench CAPTURE --original`
                                                          # per network on the CUDA EP: OUT.json, OUT.md

Each folder of the bundle holds original.onnx, lowered.onnx, inputs.npz (by input name) and
capture/, the capture folder itself.
"""

from __future__ import annotations

import io
import shutil
import sys
from pathlib import Path

import numpy as np

# the corpus's networks too large to travel in one device call (64 MiB) with the rest
LARGE = ("bvlc_alexnet", "densenet121", "inception_v1", "inception_v2", "resnet50", "vgg19", "zfnet512")


def bundle(target: Path, models: list[Path] | None = None) -> None:
    """Captures the corpus's small networks, or the given ONNX models (`models`), into `target`."""
    # here, not at the top: `run` works on the GPU machine, where dml2onnx is not installed
    from dml2onnx.cases import corpus
    from dml2onnx.commands import capture
    from dml2onnx.formats.onnx_dispatchable import SessionSettings

    shutil.rmtree(target, ignore_errors=True)
    work = target / ".work"
    chosen = {m.stem: m for m in models} if models else {n: None for n in corpus.NAMES if n not in LARGE}
    for name, given in chosen.items():
        model = given or corpus.network(name, work / "models")
        got = capture.capture(model, work / name, {}, 0, SessionSettings(), io.StringIO())
        assert got.lowered is not None, name
        folder = target / name
        folder.mkdir(parents=True)
        shutil.copy(model, folder / "original.onnx")
        shutil.copy(got.lowered, folder / "lowered.onnx")
        shutil.copytree(got.folder, folder / "capture")
        np.savez(folder / "inputs.npz", **got.inputs)
        print(f"{folder}: {sum(p.stat().st_size for p in folder.rglob('*') if p.is_file()) >> 10} KiB")
    shutil.rmtree(work)


def run(source: Path, report: Path) -> int:
    import onnx
    import onnxruntime as ort

    def session(path: Path, ep: str) -> ort.InferenceSession:
        so = ort.SessionOptions()
        if ep == "CPUExecutionProvider":
            return ort.InferenceSession(str(path), so, providers=[ep])
        so.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
        return ort.InferenceSession(str(path), so, providers=[(ep, {"use_tf32": "0"})])

    lines = [
        f"onnxruntime {ort.__version__}, {ort.get_available_providers()}",
        "",
        "| network | lowered nodes | lowered on CUDA vs original on CPU (max abs / max abs of the output) "
        "| original on CUDA vs CPU |",
        "|---|---:|---|---|",
    ]
    failures = 0
    for folder in sorted(p for p in source.iterdir() if p.is_dir() and not p.name.startswith(".")):
        with np.load(folder / "inputs.npz") as saved:
            inputs = {k: saved[k] for k in saved.files}
        original = session(folder / "original.onnx", "CPUExecutionProvider")
        names = [o.name for o in original.get_outputs()]
        want = dict(zip(names, original.run(names, inputs), strict=True))
        cells = []
        for model, ep in (("lowered.onnx", "CUDAExecutionProvider"), ("original.onnx", "CUDAExecutionProvider")):
            try:
                got = dict(zip(names, session(folder / model, ep).run(names, inputs), strict=True))
            except Exception as e:  # the report says what failed
                cells.append(f"FAILED: {str(e).splitlines()[0][:160]}")
                failures += model == "lowered.onnx"
                continue
            parts = []
            for n in names:
                w, g = want[n].astype(np.float64), got[n].astype(np.float64)
                err, scale = float(np.max(np.abs(g - w), initial=0)), float(np.max(np.abs(w), initial=0))
                limit = (1e-2 if want[n].dtype == np.float16 else 1e-4) * max(1.0, scale)  # as tests/commands/test_capture.py
                ok = err <= limit
                failures += model == "lowered.onnx" and not ok
                parts.append(f"{n}: {err:.3g} / {scale:.3g} {'ok' if ok else 'MISMATCH'}")
            cells.append("; ".join(parts))
        nodes = len(onnx.load(str(folder / "lowered.onnx")).graph.node)
        lines.append(f"| {folder.name} | {nodes} | {cells[0]} | {cells[1]} |")
    report.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 1 if failures else 0


def bench(source: Path, out: Path, iterations: int = 50, ep: str = "cuda") -> int:
    """`dml2onnx bench` of each network's capture against its original on the CUDA EP, in one process:
    every result in OUT.json, a table in OUT.md (ratio: the original's median time over the lowered graph's)."""
    import contextlib
    import json
    import platform

    from dml2onnx.commands import cli

    results, failures = [], 0
    for folder in sorted(p for p in source.iterdir() if p.is_dir() and not p.name.startswith(".")):
        args = ["bench", str(folder / "capture"), "--original", str(folder / "original.onnx"), "--ep", ep]
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            status = cli.main([*args, "-i", str(iterations), "--json", "-q"])
        if status != 0:
            failures += 1
            results.append({"network": folder.name, "status": status})
            continue
        results.append({"network": folder.name, **json.loads(printed.getvalue())})
    out.with_suffix(".json").write_text(json.dumps(results, indent=1) + "\n")
    lines = [
        f"machine {platform.node()}; {next((r['versions'] for r in results if 'versions' in r), '?')}; "
        f"{iterations} timed runs per graph after warm-up, io binding, the {ep} EP (CPU fallback off on a GPU)",
        "",
        f"| network | original ms | lowered portable ms (ratio) | lowered {ep} ms (ratio) | nodes: original / portable / {ep} |",
        "|---|---:|---:|---:|---|",
    ]
    ratios: dict[str, list[float]] = {"portable": [], ep: []}
    for r in results:
        if "graphs" not in r:
            lines.append(f"| {r['network']} | FAILED (exit {r['status']}) | | | |")
            continue
        g = {x["graph"].removeprefix("lowered, target "): x for x in r["graphs"]}
        for t in ratios:
            ratios[t].append(g[t]["ratio"])
        lines.append(
            f"| {r['network']} | {g['original']['median_ms']:.3f} | {g['portable']['median_ms']:.3f} "
            f"({g['portable']['ratio']:.2f}x) | {g[ep]['median_ms']:.3f} ({g[ep]['ratio']:.2f}x) | "
            f"{g['original']['nodes']} / {g['portable']['nodes']} / {g[ep]['nodes']} |"
        )
    means = {t: float(np.exp(np.mean(np.log(v)))) if v else float("nan") for t, v in ratios.items()}
    lines += ["", f"geometric mean ratio: portable {means['portable']:.2f}x, {ep} {means[ep]:.2f}x"]
    out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 1 if failures else 0


if __name__ == "__main__":
    if sys.argv[1] == "bundle":  # [DIR [MODEL.onnx ...]]
        bundle(Path(sys.argv[2] if len(sys.argv) > 2 else ".gpucorpus"), [Path(m) for m in sys.argv[3:]])
    elif sys.argv[1] == "bench":  # [ITERATIONS [EP]]
        sys.exit(bench(Path(sys.argv[2]), Path(sys.argv[3]), *(int(a) if a.isdigit() else a for a in sys.argv[4:6])))
    else:
        sys.exit(run(Path(sys.argv[2]), Path(sys.argv[3])))
