"""Many small ONNX models run as one session: their graphs merged side by side into one model.

A DirectML EP session under Wine costs 0.6-4 s to load and about 1.5 GB of lavapipe memory
whatever its size, so running thousands of one-operator graphs one session each takes hours;
merged by the hundred, the fixed cost is paid once per batch. The merged graphs share nothing:
each member's names (inputs, outputs, initializers, nodes, value_info) get a prefix of their own.

One member that the EP cannot take (a kernel the stack cannot build) would sink its whole batch,
so a failing batch is split in halves, recursively, until each failure is one member with its
own error message; the members of every half that works get their outputs."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import onnx
from onnx import compose, helper

from dml2onnx.backends.runtime import Session
from dml2onnx.core.errors import RuntimeFailure


@dataclass(frozen=True)
class Member:
    """One model to run: `key` names it in the results, `feeds` are its inputs by its own names."""

    key: str
    model: onnx.ModelProto
    feeds: dict[str, np.ndarray]


@dataclass
class Outcome:
    """What a run of members gave: each member's outputs (by its own output names) or the error
    that its session, alone, failed with; `sessions` counts the sessions made, failed ones included."""

    outputs: dict[str, dict[str, np.ndarray]] = field(default_factory=dict)
    failures: dict[str, str] = field(default_factory=dict)
    sessions: int = 0


def prefix(index: int) -> str:
    # Short and unlike any name the lowerings write: the merged graph's names stay readable.
    return f"m{index}/"


def merge(models: Sequence[onnx.ModelProto], name: str = "batch") -> onnx.ModelProto:
    """The models' graphs side by side in one model, member i's names prefixed by prefix(i).
    Every model must import the same opsets (a node's meaning depends on its opset) and have no
    local functions; the merged model takes the highest IR version among them."""
    if not models:
        raise ValueError("nothing to merge")
    opsets = {(o.domain, o.version) for o in models[0].opset_import}
    for m in models:
        if {(o.domain, o.version) for o in m.opset_import} != opsets or m.functions:
            raise ValueError("models to merge must share their opset imports and have no local functions")
    graphs = [compose.add_prefix_graph(m.graph, prefix(i)) for i, m in enumerate(models)]
    merged = helper.make_graph(
        [n for g in graphs for n in g.node],
        name,
        [v for g in graphs for v in g.input],
        [v for g in graphs for v in g.output],
        [t for g in graphs for t in g.initializer],
        value_info=[v for g in graphs for v in g.value_info],
    )
    return helper.make_model(merged, opset_imports=list(models[0].opset_import), ir_version=max(m.ir_version for m in models))


# create(model, name) -> a session; check(session) runs on each session before its outputs are
# trusted (the test's `nodes_off_ep() == []`).
Create = Callable[[onnx.ModelProto, str], Session]


def run_merged(members: Sequence[Member], create: Create, name: str) -> tuple[Session, dict[str, dict[str, np.ndarray]]]:
    """One session for all `members`, run once: each member's outputs by its own output names."""
    session = create(merge([m.model for m in members], name), name)
    feeds = {prefix(i) + k: v for i, m in enumerate(members) for k, v in m.feeds.items()}
    names = [[o.name for o in m.model.graph.output] for m in members]
    fetched = session.run_all(feeds, [prefix(i) + o for i, outs in enumerate(names) for o in outs])
    return session, {
        m.key: {o: fetched[prefix(i) + o] for o in outs} for i, (m, outs) in enumerate(zip(members, names, strict=True))
    }


def run_bisecting(
    members: Sequence[Member], create: Create, name: str, check: Callable[[Session], None] | None = None
) -> Outcome:
    """Runs `members` in one session; where that fails (RuntimeFailure: at load or at run), runs
    each half the same way, down to single members, whose errors are their failures."""
    outcome = Outcome()

    def attempt(part: Sequence[Member], label: str) -> None:
        outcome.sessions += 1
        try:
            session, outputs = run_merged(part, create, label)
            if check is not None:
                check(session)
        except RuntimeFailure as e:
            if len(part) == 1:
                outcome.failures[part[0].key] = str(e)
                return
            half = len(part) // 2
            attempt(part[:half], f"{label}a")
            attempt(part[half:], f"{label}b")
            return
        del session  # its lavapipe memory goes back at the host's next request
        outcome.outputs.update(outputs)

    attempt(members, name)
    return outcome


def value_types(model: onnx.ModelProto) -> dict[str, onnx.TypeProto]:
    """Every typed value of a shape-inferred model by name (inputs, intermediates, outputs)."""
    g = model.graph
    return {v.name: v.type for v in [*g.input, *g.value_info, *g.output]}


def node_probe(model: onnx.ModelProto, index: int, key: str) -> Member:
    """Node `index` of a shape-inferred `model` alone in a model of its own: its initializers kept
    (ONNX Runtime folds or binds them as in the whole graph), every other input a graph input fed
    with ones. Session creation compiles the node's kernel as in the whole graph."""
    node = model.graph.node[index]
    types = value_types(model)
    inits = {t.name: t for t in model.graph.initializer}
    inputs = [n for n in dict.fromkeys(node.input) if n and n not in inits]
    graph = helper.make_graph(
        [node],
        key,
        [helper.make_value_info(n, types[n]) for n in inputs],
        [helper.make_value_info(n, types[n]) for n in node.output if n],
        [inits[n] for n in dict.fromkeys(node.input) if n in inits],
    )
    probe = helper.make_model(graph, opset_imports=list(model.opset_import), ir_version=model.ir_version)
    feeds = {n: _ones(types[n]) for n in inputs}
    return Member(key, probe, feeds)


def _ones(t: onnx.TypeProto) -> np.ndarray:
    tensor = t.tensor_type
    dtype = helper.tensor_dtype_to_np_dtype(tensor.elem_type)
    return np.ones([d.dim_value for d in tensor.shape.dim], dtype=dtype)
