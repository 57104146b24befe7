"""graph/concat_hoist: a Concat of one element-wise operator's results becomes that operator once
after the Concat, with the same values bit for bit (NaN, infinities and signed zeros among them),
and stays as it is wherever a result is read elsewhere or the operators differ."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper

from dml2onnx.graph import concat_hoist
from support import rewritten, run_as_written

SPECIAL = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0, 1e-45, -3.4e38, 3.4e38], np.float32)


def _model(ops: list[tuple[str, dict]], axis: int, shapes: list[list[int]], extra_output: bool = False) -> onnx.ModelProto:
    """x_i -> ops[i] -> Concat(axis) -> y; each op with a scalar constant where it takes two inputs."""
    nodes, inits = [], [numpy_helper.from_array(np.array(0.75, np.float32), "k")]
    for i, (op, attrs) in enumerate(ops):
        inputs = [f"x{i}", "k"] if op in ("Add", "Mul", "Pow", "Max") else [f"x{i}"]
        nodes.append(helper.make_node(op, inputs, [f"r{i}"], name=f"op{i}", **attrs))
    nodes.append(helper.make_node("Concat", [f"r{i}" for i in range(len(ops))], ["y"], name="cat", axis=axis))
    outputs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)]
    if extra_output:
        outputs.append(helper.make_tensor_value_info("r0", TensorProto.FLOAT, None))
    inputs = [helper.make_tensor_value_info(f"x{i}", TensorProto.FLOAT, s) for i, s in enumerate(shapes)]
    graph = helper.make_graph(nodes, "g", inputs, outputs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    return onnx.shape_inference.infer_shapes(model)


@settings(max_examples=30, deadline=None)
@given(
    op=st.sampled_from([("Relu", {}), ("LeakyRelu", {"alpha": 0.25}), ("Sigmoid", {}), ("Add", {}), ("Pow", {}), ("Max", {})]),
    parts=st.integers(2, 4),
    rank=st.integers(1, 4),
    seed=st.integers(0, 2**16),
)
def test_one_operator_after_the_concat_gives_the_same_bits(op: tuple[str, dict], parts: int, rank: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    axis = int(rng.integers(-rank, rank))
    base = [int(d) for d in rng.integers(1, 4, rank)]
    shapes = [[int(rng.integers(1, 4)) if d == axis % rank else base[d] for d in range(rank)] for _ in range(parts)]
    model = _model([op] * parts, axis, shapes)
    hoisted = rewritten(model, concat_hoist.hoist)
    assert [n.op_type for n in hoisted.graph.node] == ["Concat", op[0]]
    feeds = {}
    for i, s in enumerate(shapes):
        x = (rng.standard_normal(s) * 4).astype(np.float32)
        x.reshape(-1)[::3] = rng.choice(SPECIAL, x.size)[::3] if x.size else []
        feeds[f"x{i}"] = x
    got, want = run_as_written(hoisted, feeds)[0], run_as_written(model, feeds)[0]
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))


@pytest.mark.parametrize(
    ("ops", "extra_output"),
    [
        ([("Relu", {}), ("Sigmoid", {})], False),  # two operators
        ([("LeakyRelu", {"alpha": 0.1}), ("LeakyRelu", {"alpha": 0.2})], False),  # two slopes
        ([("Relu", {}), ("Relu", {})], True),  # a result read beside the Concat
    ],
)
def test_concats_that_stay(ops: list[tuple[str, dict]], extra_output: bool) -> None:
    model = _model(ops, 1, [[2, 3], [2, 2]], extra_output)
    assert [n.op_type for n in rewritten(model, concat_hoist.hoist).graph.node] == [n.op_type for n in model.graph.node]


def test_a_cast_hoists_only_from_one_input_type() -> None:
    """Cast(FLOAT16 -> FLOAT32) and Cast(FLOAT32 -> FLOAT32) give one type but read two."""
    nodes = [
        helper.make_node("Cast", ["a"], ["ra"], to=TensorProto.FLOAT),
        helper.make_node("Cast", ["b"], ["rb"], to=TensorProto.FLOAT),
        helper.make_node("Concat", ["ra", "rb"], ["y"], axis=0),
    ]
    inputs = [
        helper.make_tensor_value_info("a", TensorProto.FLOAT16, [2]),
        helper.make_tensor_value_info("b", TensorProto.FLOAT, [3]),
    ]
    graph = helper.make_graph(nodes, "g", inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = onnx.shape_inference.infer_shapes(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]))
    assert [n.op_type for n in rewritten(model, concat_hoist.hoist).graph.node] == ["Cast", "Cast", "Concat"]
