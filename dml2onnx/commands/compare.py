"""`dml2onnx compare TARGET`: every DirectML operator of a model on DirectML against the numpy
reference, node by node, the first node that differs beyond its tolerance, and a DxDispatch repro
of each node that does (divergence.py compares, repro.py writes the repros).

What users of DirectML are told to do by hand when "my model gives different results on DirectML
than on the CPU" (unregister operators one by one, dump every node's inputs and outputs, hand in a
DxDispatch model of the one operator), done at once, as Polygraphy's `run --validate --mark all`
and `debug reduce` do for TensorRT. TARGET is a DxDispatch model, a capture folder (its <stem>.json)
or an ONNX model, captured first (capture.py) into a scratch folder that is removed afterwards.
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
from pathlib import Path
from typing import IO, Any

import numpy as np

from dml2onnx.backends import runtime
from dml2onnx.commands import capture, options
from dml2onnx.commands.capture import file_name
from dml2onnx.commands.divergence import NodeResult, Report, Verdict, onnx_writers, run
from dml2onnx.commands.loading import load
from dml2onnx.core import files
from dml2onnx.core.errors import UsageError
from dml2onnx.formats import onnx_dispatchable
from dml2onnx.formats.dxdispatch import Model

# -- where things go ------------------------------------------------------------------------------------


def output_folder(given: str | None, target: Path) -> Path:
    """The repros' folder: `-o`, which must be new or empty (checked before anything runs), else
    compare-<target stem> in the current folder, numbered past any that exists."""
    if given is not None:
        out = Path(given)
        if out.exists() and (not out.is_dir() or any(out.iterdir())):
            raise UsageError(f"-o {files.shown(out)} exists and is not an empty folder")
        return out
    base = f"compare-{file_name(target.stem if target.suffix else target.name)}"
    out, k = Path(base), 1
    while out.exists():
        k += 1
        out = Path(f"{base}-{k}")
    return out


def capture_json(folder: Path) -> Path:
    """A capture folder's DxDispatch model: the one <stem>.json beside its <stem>/ of partitions."""
    found = sorted(p for p in folder.glob("*.json") if (folder / p.stem).is_dir())
    if len(found) != 1:
        what = "no" if not found else f"{len(found)}"
        raise UsageError(
            f"{files.shown(folder)} holds {what} capture model{'s' if found else ''} (a <stem>.json beside its <stem>/ "
            "folder of Partition_N.bin, as dml2onnx capture writes): give the folder of one capture, or its .json"
        )
    return found[0]


def load_target(args: argparse.Namespace, scratch: Path, log: IO[str]) -> tuple[Model, dict[str, str] | None]:
    """The model TARGET names (a DxDispatch model, a capture folder, or an ONNX model captured into
    `scratch` first), and for an ONNX model its value -> node names."""
    target = Path(args.model)
    writers = None
    if args.input and target.suffix.lower() != ".onnx":
        raise UsageError(f"--input gives an ONNX model's inputs; {files.shown(target)} is not an .onnx file")
    if target.is_dir():
        target = capture_json(target)
    elif target.suffix.lower() == ".onnx":
        settings = onnx_dispatchable.command_line_settings(args.free_dim_name, args.free_dim_denotation)
        captured = capture.capture(target, scratch / "capture", options.input_files(args.input), args.seed, settings, log)
        writers = onnx_writers(capture.load_model(target, settings))
        target = captured.model_json
    return load(argparse.Namespace(**{**vars(args), "model": str(target)})), writers


def command(args: argparse.Namespace, out: IO[str], log: IO[str]) -> int:
    """`dml2onnx compare`: 0 when no node diverges, 1 when one does (2, invalid input, is raised)."""
    for name in ("atol", "rtol"):
        value = getattr(args, name)
        if value is not None and not (value >= 0 and np.isfinite(value)):
            raise UsageError(f"--{name} must be a finite number of at least 0, got {value}")
    ep = runtime.resolve(args.ep)  # the engine missing is a runtime failure (exit 1), before any capture
    folder = output_folder(args.output, Path(args.model))
    scratch = Path(tempfile.mkdtemp(prefix="dml2onnx-compare-"))
    try:
        model, writers = load_target(args, scratch, log)
        report = run(model, ep, args.opset, args.target, folder, log, args.atol, args.rtol, writers)
        report.target = args.model  # what the user named (an ONNX model's capture is gone when this returns)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    out.write(json.dumps(as_json(report), indent=1) + "\n" if args.json else text(report))
    return 1 if report.diverged else 0


def as_json(report: Report) -> dict[str, Any]:
    """`compare --json`: every node in graph order, each whole graph, what was not compared, and
    the first node over tolerance on the engine (null: none)."""
    first = report.first_divergence
    return {
        "model": report.target,
        "engine": report.engine,
        "nodes": [
            {
                "index": n.index,
                "dispatch": n.dispatch,
                "node": n.name,
                "type": n.type,
                "function": n.function,
                "onnx_value": n.onnx_value,
                "onnx_nodes": n.onnx_nodes,
                **n.engine.as_json(),
                "cpu": n.cpu.as_json() if n.cpu is not None else None,
                "repro": str(n.repro) if n.repro else None,
            }
            for n in report.nodes
        ],
        "graphs": [{"dispatch": g.dispatch, **g.verdict.as_json()} for g in report.graphs],
        "not_compared": report.skipped,
        "first_divergence": None
        if first is None
        else {
            "node": first.name,
            "type": first.type,
            "dispatch": first.dispatch,
            "index": first.index,
            "repro": str(first.repro),
        },
        "repros": str(report.folder) if report.folder else None,
        "diverged": report.diverged,
    }


def _source(n: NodeResult) -> str:
    """The ONNX node a capture's node came from: its name where the ONNX model is known, else the
    value it writes."""
    return ", ".join(n.onnx_nodes) or (f"writing '{n.onnx_value}'" if n.onnx_value else "")


def _count(n: int, what: str) -> str:
    return f"{n} {what}{'s' if n != 1 else ''}"


def _fmt(x: float | None) -> str:
    return "-" if x is None else "0" if x == 0 else f"{x:.3g}"


def _state(v: Verdict | None) -> str:
    if v is None:
        return ""
    return "ok" if v.ok else "FAILED" if v.failure else "OVER"


def text(report: Report) -> str:
    """A row per node (and per whole graph), then the first divergence and where its repro is."""
    rows = []
    for n in report.nodes:
        source = _source(n)
        v = n.engine
        ulps = _fmt(v.worst("max_ulps")) if any(o.max_ulps is not None for o in v.outputs) else "-"
        rows.append(
            (str(n.index), n.label, n.kind, source, _fmt(v.worst("max_abs")), _fmt(v.worst("max_rel")), ulps,
             f"{v.mismatches}/{v.elements}", _state(v), _state(n.cpu))
        )  # fmt: skip
    for g in report.graphs:
        v = g.verdict
        rows.append(
            ("", f"{g.dispatch} (whole)", "the graph compiled", "", _fmt(v.worst("max_abs")), _fmt(v.worst("max_rel")),
             _fmt(v.worst("max_ulps")), f"{v.mismatches}/{v.elements}", _state(v), "")
        )  # fmt: skip
    head = ("#", "node", "type", "ONNX", "max abs", "max rel", "ULPs", "over tol.", report.engine, "CPU EP")
    if report.ep == "cpu":  # the engine is the CPU EP: no second column of it
        head, rows = head[:-1], [r[:-1] for r in rows]
    widths = [max(len(r[i]) for r in (head, *rows)) for i in range(len(head))]
    right = {0, 4, 5, 6, 7}
    lines = [
        "  ".join(c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths, strict=True))).rstrip()
        for r in (head, *rows)
    ]
    failed = [(n.label, report.engine, n.engine) for n in report.nodes] + [(n.label, "the CPU EP", n.cpu) for n in report.nodes]
    failed += [(f"{g.dispatch} (whole)", report.engine, g.verdict) for g in report.graphs]
    lines += [f"{label}: {engine} failed: {v.failure}" for label, engine, v in failed if v is not None and v.failure]
    for name in report.skipped:
        lines.append(f"{name}: an ONNX graph, no DirectML desc: run on the CPU EP in the reference chain, not compared")
    first = report.first_divergence
    if first is None:
        lines.append(
            f"no node differs from the numpy reference beyond its tolerance on {report.engine} ({len(report.nodes)} nodes)"
        )
    lowering_off = [n.label for n in report.nodes if n.cpu is not None and not n.cpu.ok]
    if lowering_off:  # the lowering, not DirectML: a dml2onnx bug, or a reference to question
        lines.append(
            f"the CPU EP's lowering differs from the reference at {len(lowering_off)} node(s): {', '.join(lowering_off[:5])}"
        )
    graphs_off = [g.dispatch for g in report.graphs if not g.verdict.ok]
    if graphs_off:
        lines.append(f"whole graphs over tolerance on {report.engine} (errors compound there): {', '.join(graphs_off)}")
    if first is None:
        return "\n".join(lines) + "\n"
    worst = next((o for o in first.engine.outputs if not o.ok), None)
    why = (
        f"{first.engine.failure}"
        if first.engine.failure or worst is None
        else f"{worst.mismatches} of {worst.elements} elements of {worst.field} beyond atol {worst.atol:.3g} + rtol "
        f"{worst.rtol:.3g}, max abs {_fmt(worst.max_abs)}"
    )
    source = f", from the ONNX node {_source(first)}" if first.onnx_value else ""
    lines.append(f"first divergence: {first.label} ({first.kind}{source}): {why}")
    lines.append(f"repro: dml2onnx run --ep {report.ep} {first.repro}")
    over = sum(not n.engine.ok for n in report.nodes)
    lines.append(f"{over} of {len(report.nodes)} nodes over tolerance on {report.engine}; repros in {report.folder}")
    return "\n".join(lines) + "\n"
