"""`dml2onnx check`: every dispatch of a model on each execution provider against the numpy
reference (max abs/rel error, nodes that left the EP), or the static DirectML EP check."""

from __future__ import annotations

import io
import json
from dataclasses import dataclass
from typing import Any, TextIO

import numpy as np

from dml2onnx import lowering
from dml2onnx.backends import runtime, winhost
from dml2onnx.core.errors import RuntimeFailure
from dml2onnx.core.jsonvalues import json_number
from dml2onnx.formats import onnx_dispatchable
from dml2onnx.formats.dxdispatch import Dispatchable, Model
from dml2onnx.graph import dml_ep, targets
from dml2onnx.graph.builder import DEFAULT_OPSET
from dml2onnx.lowering.tolerances import Comparison, compare, compare_outputs
from dml2onnx.run.executor import Executor


@dataclass
class Row:
    dispatch: str
    ep: str
    max_abs: float
    max_rel: float
    nodes_on_ep: int
    nodes: int
    ok: bool
    failure: str = ""  # the EP could not run the model at all
    ran: str = "the desc"  # what DirectML's API ran, where no graph's nodes are counted
    unstable: str = ""  # how a repeated run's outputs differed from the first's (check -i N)


def _fmt(x: float) -> str:
    return "0" if x == 0 else f"{x:.3g}"


def dynamic(
    model: Model,
    eps: list[str],
    out: TextIO,
    opset: int = DEFAULT_OPSET,
    target: str | None = None,
    log: TextIO | None = None,
    as_json: bool = False,
    iterations: int = 1,
) -> bool:
    """Runs the model on the reference and on each EP; prints one row per dispatch and EP (`as_json`:
    one JSON object). `target`: the graphs every EP runs (None: each EP its own, graph/targets.py's
    for_engine); progress to `log`. `iterations`: each dispatch runs that many times on each EP,
    and a run whose outputs differ from the first's, bit for bit, fails the check."""
    quiet = io.StringIO()
    reference = Executor(model, "reference", opset, quiet, quiet, write_files=False)
    reference.run()
    rows: list[Row] = []
    for ep in eps:
        if log is not None:
            log.write(f"dml2onnx check: {runtime.label(ep)}...\n")
            log.flush()
        ex = Executor(model, ep, opset, quiet, quiet, target, write_files=False, iterations=iterations)
        try:
            ex.run()
        except RuntimeFailure as e:  # this EP cannot run the model: say why, check the others
            rows.append(Row("(model)", runtime.label(ep), 0, 0, 0, 0, False, f"cannot run: {e}"))
            continue
        for i, ((name, got), (_, want)) in enumerate(zip(ex.results, reference.results, strict=True)):
            d = model.dispatchables[name]
            session = ex.sessions[name]
            if isinstance(session, runtime.Session):
                total = sum(len(v) for v in session.assignment().values())
                off = len(session.nodes_off_ep())
            else:  # DirectML's API executed the desc itself: no graph, no nodes
                total = off = 0
            for field, c in _comparisons(d, got, want, ep).items():  # a row per output
                first = d.desc.output if isinstance(d, Dispatchable) else next(iter(d.outputs))
                label = f"{i}:{name}" if field == first else f"{i}:{name}.{field}"
                ran = "the desc" if isinstance(d, Dispatchable) else "the graph"
                unstable = ex.unstable.get(name) if field == first else None
                ok = c.ok and off == 0 and unstable is None
                rows.append(
                    Row(label, runtime.label(ep), c.max_abs, c.max_rel, total - off, total, ok, ran=ran, unstable=unstable or "")
                )
    if as_json:
        _write_json(out, rows, eps, target)
        return all(r.ok for r in rows)
    width = max([len(r.dispatch) for r in rows] + [8])
    out.write(f"{'dispatch':<{width}}  {'EP':<22} {'max abs':>9} {'max rel':>9}  {'nodes on EP':>11}  result\n")
    for r in rows:
        if r.failure:
            out.write(f"{r.dispatch:<{width}}  {r.ep:<22} {'':>9} {'':>9}  {'':>11}  {r.failure}\n")
            continue
        nodes = f"{r.nodes_on_ep}/{r.nodes}" if r.nodes else r.ran
        out.write(
            f"{r.dispatch:<{width}}  {r.ep:<22} {_fmt(r.max_abs):>9} {_fmt(r.max_rel):>9}  {nodes:>11}  "
            f"{'ok' if r.ok else 'MISMATCH'}{f' (not deterministic: {r.unstable})' if r.unstable else ''}\n"
        )
    if any(not isinstance(d, Dispatchable) and d.reference is None for d in model.dispatchables.values()):
        out.write("ONNX dispatchables are compared with the CPUExecutionProvider: an ONNX file has no numpy reference\n")
    bad = [r for r in rows if not r.ok]
    checks = f"{len(rows)} check{'s' if len(rows) != 1 else ''}"
    out.write(
        f"{checks} on {', '.join(runtime.label(e) for e in eps)} against the numpy reference "
        f"({_versions(eps)}, {_targets(eps, target)}): "
        + ("all match, every node on its EP\n" if not bad else f"{len(bad)} failed\n")
    )
    return not bad


def _write_json(out: TextIO, rows: list[Row], eps: list[str], target: str | None) -> None:
    """`check --json`: the engines, the targets their graphs were built for, a row per dispatch, output
    and engine, and how many failed."""
    checks = [
        {
            "dispatch": r.dispatch,
            "engine": r.ep,
            "max_abs": json_number(r.max_abs),
            "max_rel": json_number(r.max_rel),
            "nodes_on_engine": r.nodes_on_ep if r.nodes else None,
            "nodes": r.nodes if r.nodes else None,
            "ok": r.ok,
            **({"failure": r.failure} if r.failure else {}),
            **({"not_deterministic": r.unstable} if r.unstable else {}),
        }
        for r in rows
    ]
    targets_used = {runtime.label(ep): target or targets.for_engine(ep) for ep in eps if ep in runtime.PROVIDERS}
    result = {
        "engines": [runtime.label(ep) for ep in eps],
        "targets": targets_used,
        "versions": _versions(eps),
        "checks": checks,
        "failed": sum(not r.ok for r in rows),
    }
    out.write(json.dumps(result, indent=1) + "\n")


def _targets(eps: list[str], target: str | None) -> str:
    """Which graphs ran: the one target asked for, or each ONNX Runtime EP's own."""
    if target is not None:
        return f"target {target}"
    own = [f"{targets.for_engine(ep)} on {runtime.label(ep)}" for ep in eps if ep in runtime.PROVIDERS]
    return "targets " + ", ".join(own) if own else "no lowered graphs: DirectML's API ran the descs"


def _comparisons(d: Any, got: dict[str, np.ndarray], want: dict[str, np.ndarray], ep: str) -> dict[str, Comparison]:
    """Each output against the reference's: a desc's within tolerances.py, an ONNX graph's
    within onnx_dispatchable.tolerance (exactly for integers)."""
    if isinstance(d, Dispatchable):
        return compare_outputs(d.desc, got, want, ep)
    return {name: compare(got[name], want[name], onnx_dispatchable.tolerance(want[name])) for name in want}


def _versions(eps: list[str]) -> str:
    """The builds behind the EPs checked: this Python's onnxruntime, and the onnxruntime-directml
    DLLs that run under Wine for `dml-api` and (on Linux) `dml`."""
    under_wine = [ep for ep in eps if ep == runtime.DIRECTML or (ep == "dml" and runtime.wine_dml())]
    parts = [f"onnxruntime {runtime.version()}"] if len(under_wine) < len(eps) else []
    if under_wine:
        parts.append(f"onnxruntime-directml {winhost.ORT_VERSION}'s DLLs under Wine")
    return ", ".join(parts)


def static_dml(model: Model, out: TextIO, opset: int = DEFAULT_OPSET, target: str = "portable") -> bool:
    """Lowers each dispatchable and lists every node the DirectML EP would not take."""
    refused = 0
    for name, d in model.dispatchables.items():  # an ONNX graph as it is
        graph = lowering.lower(d.desc, name, opset, target) if isinstance(d, Dispatchable) else d.model(opset, target)
        problems = dml_ep.check(graph)
        refused += len(problems)
        verdict = "every node runs on the DirectML EP" if not problems else f"{len(problems)} node(s) refused"
        out.write(f"{name}: {verdict}\n")
        for p in problems:
            out.write(f"  {p}\n")
    out.write(
        f"static DirectML EP check (registrations of onnxruntime {dml_ep.SOURCE_VERSION}), target {target}: "
        + ("passed\n" if not refused else f"{refused} node(s) would not run on the DirectML EP\n")
    )
    return refused == 0
