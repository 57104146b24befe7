"""GraphBuilder.branch: an ONNX If whose branches read the outer graph's values, named in the
outer graph's namespace, run on the CPU EP with real values."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import helper

from dml2onnx.backends import runtime
from dml2onnx.core import dtypes
from dml2onnx.graph.builder import GraphBuilder


def guarded_double() -> onnx.ModelProto:
    """x * 2 where sum(x) > 0, else x itself (an outer value passed through)."""
    b = GraphBuilder("t")
    x = b.add_input("x", dtypes.FLOAT32, [4])
    total = b.reduce("ReduceSum", x, [0], "sum", "sum(x)", keepdims=False)
    positive = b.node("Greater", [total, b.scalar(0.0, dtypes.FLOAT32, "zero")], "positive", "sum(x) > 0")
    y = b.branch(
        positive,
        lambda t: t.node("Mul", [x, t.scalar(2.0, dtypes.FLOAT32, "two")], "doubled", "x * 2"),
        lambda t: x,
        dtypes.FLOAT32,
        "guard",
        "x * 2 when sum(x) > 0",
    )
    b.set_output(y, "OutputTensor", dtypes.FLOAT32, [4])
    return helper.make_model(b.graph("g", "branch"), opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def test_each_branch_runs_on_its_condition() -> None:
    model = guarded_double()
    onnx.checker.check_model(model, full_check=True)
    session = runtime.create(model, "t", "cpu")
    up = np.array([1, 2, 3, -4], np.float32)
    down = np.array([1, 2, 3, -7], np.float32)
    np.testing.assert_array_equal(session.run({"x": up}), up * 2)
    np.testing.assert_array_equal(session.run({"x": down}), down)


def test_branch_names_share_the_outer_namespace() -> None:
    model = guarded_double()
    (node,) = [n for n in model.graph.node if n.op_type == "If"]
    branches = {a.name: a.g for a in node.attribute}
    inner = [n.name for g in branches.values() for n in g.node] + [i.name for g in branches.values() for i in g.initializer]
    outer = [n.name for n in model.graph.node] + [i.name for i in model.graph.initializer]
    assert sorted(inner) == ["t/guard_else/result", "t/guard_then/doubled", "t/guard_then/two"]
    assert not set(inner) & set(outer)
    assert [n.op_type for n in branches["else_branch"].node] == ["Identity"]  # x passed through
