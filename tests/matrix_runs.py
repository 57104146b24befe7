"""Matrix cases run on an ONNX Runtime EP in batches: the lowered graphs of many cases merged side by
side into one session (batched_sessions.py), each case's outputs then compared with the numpy reference.

One session per case cost more than everything else a case does on the CPU EP (about 2.4 ms to
create against 1.1 ms to lower, 0.2 ms to run and 0.2 ms for the reference, measured on the 2-core
machine), and one test per case added pytest's own bookkeeping to each of some 60,000 items; the
matrix tests now take one item per operator and one session per BATCH_SIZE cases. A case whose
graph the EP refuses, or whose nodes leave a GPU EP, is isolated by bisection and reported with
ONNX Runtime's error."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import onnx

from batched_sessions import Member, Outcome, run_bisecting
from dml2onnx import lowering
from dml2onnx.backends import runtime
from dml2onnx.backends.runtime import Session
from dml2onnx.cases.common import Case
from dml2onnx.core.errors import RuntimeFailure
from dml2onnx.ops import registry
from support import make_desc, mismatches

# Cases per session: a few hundred nodes, created in tens of milliseconds on the CPU EP.
BATCH_SIZE = 100


def graph_digest(model: onnx.ModelProto) -> str:
    """The graph and its opset imports (not the metadata, which names the target): two models of one
    digest give one verdict on one EP."""
    opsets = sorted((o.domain, o.version) for o in model.opset_import)
    return hashlib.sha256(model.graph.SerializeToString() + repr(opsets).encode()).hexdigest()


@dataclass(frozen=True)
class Lowered:
    """A case's graph to run: `key` names it in the report (the case id, with its variant)."""

    key: str
    case: Case
    model: onnx.ModelProto


def _on_ep_only(session: Session) -> None:
    # A RuntimeFailure, not an assertion: a batch with a node off the EP is bisected down to its case.
    if off := session.nodes_off_ep():
        raise RuntimeFailure(f"nodes off {session.ep}: {off}")


def _alone(model: onnx.ModelProto) -> bool:
    """Local functions, or a node with a subgraph (If, Loop, Scan), whose reads of outer names
    onnx.compose's prefixing does not follow: such a graph runs in a session of its own."""
    subgraphs = (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS)
    return bool(model.functions) or any(a.type in subgraphs for n in model.graph.node for a in n.attribute)


def _batches(items: Sequence[Lowered]) -> Iterable[list[Lowered]]:
    """Items in runs of BATCH_SIZE that share their opset imports (merging needs that); _alone()
    graphs one by one."""
    groups: dict[object, list[Lowered]] = {}
    for n, item in enumerate(items):
        opsets = tuple(sorted((o.domain, o.version) for o in item.model.opset_import))
        groups.setdefault(n if _alone(item.model) else opsets, []).append(item)
    for group in groups.values():
        for start in range(0, len(group), BATCH_SIZE):
            yield group[start : start + BATCH_SIZE]


def _difference(case: Case, outputs: dict[str, np.ndarray], ep: str) -> str:
    """'' where each output has its tensor's type and sizes and matches the reference, else what differs."""
    desc = make_desc(case.op, case.fields)
    got = lowering.by_field(desc, outputs)
    for field, value in got.items():
        t = desc.tensor(field)
        if (value.dtype, value.shape) != (t.data_type.numpy, t.sizes):
            return f"{field}: {value.dtype} {list(value.shape)}, the desc says {t.data_type.name} {list(t.sizes)}"
    return mismatches(desc, got, registry.reference_outputs(desc, case.inputs), ep)


def _unmerged(member: Member, create: Callable[[onnx.ModelProto, str], Session], check: Callable[[Session], None]) -> Outcome:
    """An _alone() graph in a session of its own, its names as they are."""
    outcome = Outcome(sessions=1)
    try:
        session = create(member.model, member.key)
        if session.ep != "cpu":
            check(session)
        outcome.outputs[member.key] = session.run_all(member.feeds)
    except RuntimeFailure as e:
        outcome.failures[member.key] = str(e)
    return outcome


def differences(items: Sequence[Lowered], ep: str) -> dict[str, str]:
    """key -> why that case's graph does not give the reference's outputs on `ep` (no entry: it does).
    On a GPU EP every node must run there (CPU fallback is off as well)."""
    out: dict[str, str] = {}

    def create(model: onnx.ModelProto, name: str) -> Session:
        return runtime.create(model, name, ep)

    position = {id(x): str(i) for i, x in enumerate(items)}  # members' keys: case ids need not be unique
    for n, batch in enumerate(_batches(items)):
        members = [Member(position[id(x)], x.model, x.case.inputs) for x in batch]
        if _alone(batch[0].model):
            outcome = _unmerged(members[0], create, _on_ep_only)
        else:
            outcome = run_bisecting(members, create, f"batch{n}", None if ep == "cpu" else _on_ep_only)
        for x in batch:
            key = position[id(x)]
            if key in outcome.failures:
                out[x.key] = f"session failed: {outcome.failures[key]}"
            elif why := _difference(x.case, outcome.outputs[key], ep):
                out[x.key] = why
    return out


def report(found: dict[str, str], total: int, shown: int = 20) -> str:
    """The assertion message: how many of `total` differ, the first `shown` with what differs."""
    lines = [f"{key}: {why[:600]}" for key, why in list(found.items())[:shown]]
    more = f"\n... and {len(found) - shown} more" if len(found) > shown else ""
    return f"{len(found)} of {total} case(s) differ:\n" + "\n".join(lines) + more
