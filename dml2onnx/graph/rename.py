"""Renaming a lowered graph's values onto the edges of a bigger graph: how one desc's graph joins
a whole model (run/compose.py, --single-graph) or a serialized DirectML graph (formats/serialized_graph.py)."""

from __future__ import annotations

import onnx


def renamed_nodes(graph: onnx.GraphProto, renames: dict[str, str]) -> list[onnx.NodeProto]:
    """A lowered graph's nodes, their inputs and outputs renamed to the values bound to them,
    and so are the outer values their subgraphs (an If's branches) read."""
    for n in graph.node:
        n.input[:] = [renames.get(v, v) for v in n.input]
        n.output[:] = [renames.get(v, v) for v in n.output]
        for a in n.attribute:
            for sub in (*([a.g] if a.HasField("g") else []), *a.graphs):
                rename_outer(sub, renames)
    return list(graph.node)


def rename_outer(graph: onnx.GraphProto, renames: dict[str, str]) -> None:
    """Renames what a subgraph reads from its outer scope: names it does not define itself."""
    own = {v.name for v in graph.input} | {t.name for t in graph.initializer} | {o for n in graph.node for o in n.output}
    outer = {k: v for k, v in renames.items() if k not in own}
    for n in graph.node:
        n.input[:] = [outer.get(v, v) for v in n.input]
        for a in n.attribute:
            for sub in (*([a.g] if a.HasField("g") else []), *a.graphs):
                rename_outer(sub, outer)
    for o in graph.output:  # a branch may return an outer value as it is
        if o.name in outer and o.name not in own:
            o.name = outer[o.name]
