"""`dml2onnx bench CAPTURE_DIR --original MODEL.onnx`: what the DirectML EP ran for a model (a
`dml2onnx capture` folder), lowered by dml2onnx, timed against the model it was captured from,
in one process on one EP (io binding: inputs and outputs on the device, no host copies in the
timed loop), with the captured inputs, the graphs' runs interleaved in rounds. Ratios are the
original's median time over each lowered graph's: 1.0x or more means the lowered graph is at least
as fast."""

from __future__ import annotations

import json
import platform
import statistics
from pathlib import Path
from typing import Any, TextIO

import numpy as np
import onnx

from dml2onnx import lowering
from dml2onnx.backends import runtime
from dml2onnx.commands import capture, whole_model
from dml2onnx.commands.bench import Bound
from dml2onnx.core import files
from dml2onnx.core.errors import Dml2OnnxError, RuntimeFailure, UsageError, one_line
from dml2onnx.formats.onnx_dispatchable import SessionSettings
from dml2onnx.graph import targets
from dml2onnx.lowering.tolerances import Comparison, Tolerance, compare

_EXACT = Tolerance(0.0, 0.0)


def find_chain(folder: Path) -> Path:
    """The capture's DxDispatch model: `<stem>.json` beside its `<stem>/` partitions folder."""
    found = sorted(p for p in folder.glob("*.json") if (folder / p.stem).is_dir())
    if len(found) != 1:
        raise UsageError(f"{files.shown(folder)} is not a dml2onnx capture folder (no <stem>.json beside a <stem>/ folder)")
    return found[0]


def captured_inputs(folder: Path, model: onnx.ModelProto) -> dict[str, np.ndarray]:
    """The inputs the capture ran with (inputs/<name>.npy), by the original model's input names."""
    constants = {t.name for t in model.graph.initializer}
    names = [vi.name for vi in model.graph.input if vi.name not in constants]
    stored = capture.file_names(names)
    feeds = {}
    for vi in model.graph.input:
        if vi.name in constants:
            continue
        path = folder / "inputs" / f"{stored[vi.name]}.npy"
        if not path.exists():
            raise UsageError(f"{files.shown(path)} is missing: was the capture made from {vi.name!r}'s model?")
        value = np.load(path, allow_pickle=False)
        feeds[vi.name] = value.astype(np.bool_) if vi.type.tensor_type.elem_type == onnx.TensorProto.BOOL else value
    return feeds


def bench_capture(
    folder: Path,
    original_path: Path,
    ep: str,
    iterations: int,
    target: str | None,
    out: TextIO,
    log: TextIO,
    as_json: bool = False,
    settings: SessionSettings | None = None,
) -> dict[str, Any]:
    """Times the original model and the capture lowered for `portable` and the EP's own target
    (or only `target`), each against the original's outputs; prints a table or JSON. `settings`:
    the free dimension overrides the capture was made with (-f, -F)."""
    chain = find_chain(folder)
    original = capture.load_model(original_path, settings or SessionSettings())
    feeds = captured_inputs(folder, original)
    ep = runtime.resolve(ep, bound_io=True)
    wanted = [target] if target else list(dict.fromkeys(["portable", targets.for_engine(ep)]))
    graphs: list[tuple[str, onnx.ModelProto]] = [("original", original)]
    for t in wanted:
        log.write(f"dml2onnx bench: lowering the capture for target {t}...\n")
        try:
            graphs.append((f"lowered, target {t}", whole_model.whole_model(chain, original, t)))
        except (Dml2OnnxError, *lowering.INVALID_GRAPH) as e:
            raise RuntimeFailure(f"the capture cannot be lowered for target {t}: {one_line(str(e))}") from None
    bound: list[tuple[str, onnx.ModelProto, Bound, dict[str, np.ndarray]]] = []
    for label, model in graphs:
        log.write(f"dml2onnx bench: {label} on {runtime.label(ep)}...\n")
        log.flush()
        session = runtime.create(model, label, ep)
        results = session.run_all(feeds)  # untimed: the output shapes, and the answers compared
        bound.append((label, model, Bound(session, feeds, {n: (v.shape, v.dtype) for n, v in results.items()}), results))
    samples = _interleaved([b for _, _, b, _ in bound], iterations)
    reference = bound[0][3]
    rows: list[dict[str, Any]] = []
    for (label, model, _, results), times in zip(bound, samples, strict=True):
        worst = max((_difference(results[n], reference[n]) for n in reference), key=lambda c: c.max_abs)
        rows.append(
            {
                "graph": label,
                "nodes": len(model.graph.node),
                "median_ms": statistics.median(times),
                "min_ms": min(times),
                "max_abs_vs_original": worst.max_abs,
            }
        )
    for row in rows:
        row["ratio"] = rows[0]["median_ms"] / row["median_ms"]
    result = {
        "engine": runtime.label(ep),
        "versions": f"onnxruntime {runtime.version()}",
        "machine": platform.node(),
        "model": str(original_path),
        "capture": str(folder),
        "iterations": iterations,
        "graphs": rows,
    }
    if as_json:
        out.write(json.dumps(result, indent=1) + "\n")
    else:
        out.write(_table(rows, result))
    return result


def _interleaved(bound: list[Bound], iterations: int, rounds: int = 10) -> list[list[float]]:
    """Each graph's times (ms), taken in rounds that run every graph in turn: a shared machine's
    drift (clocks, other work) then falls on all of them alike, not on whichever ran last."""
    for b in bound:  # warm-up
        for _ in range(3):
            b.run_once()
    per_round = max(1, -(-iterations // rounds))
    samples: list[list[float]] = [[] for _ in bound]
    while len(samples[0]) < iterations:
        for b, times in zip(bound, samples, strict=True):
            times.extend(b.run_once() for _ in range(min(per_round, iterations - len(times))))
    return samples


def _difference(got: np.ndarray, want: np.ndarray) -> Comparison:
    if got.shape != want.shape:
        return Comparison(float("inf"), float("inf"), False)
    if want.dtype.kind != "f":
        return compare(got.astype(np.float64), want.astype(np.float64), _EXACT)
    return compare(got, want, _EXACT)


def _table(rows: list[dict[str, Any]], result: dict[str, Any]) -> str:
    width = max(len(r["graph"]) for r in rows)
    lines = [f"{'graph':<{width}}  {'nodes':>6}  {'median ms':>10}  {'min ms':>9}  {'ratio':>6}  max abs vs original"]
    for r in rows:
        lines.append(
            f"{r['graph']:<{width}}  {r['nodes']:>6}  {r['median_ms']:>10.4f}  {r['min_ms']:>9.4f}  {r['ratio']:>5.2f}x  "
            f"{r['max_abs_vs_original']:.3g}"
        )
    lines.append(
        f"{result['iterations']} timed runs each after warm-up on {result['engine']} ({result['versions']}); ratio: the "
        "original's median over the graph's (1.00x or more: the lowered graph is at least as fast)"
    )
    return "\n".join(lines) + "\n"
