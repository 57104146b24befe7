"""graph/slice_map_concat: slices of one tensor through their own element-wise chains and joined
again become each unary once, Wheres and one step per operation, with the same bits (NaN,
infinities, signed zeros), and stay wherever that would not hold."""

from __future__ import annotations

import itertools

import numpy as np
import onnx
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper

from dml2onnx.graph import inference, slice_map_concat
from support import rewritten, run_as_written

SPECIAL = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0, 88.0, -104.0, 1e-40], np.float32)
SHAPE = [1, 2, 3, 4, 8]


def _model(chains: list[tuple[int, int, str | None, list[str]]], shared_output: bool = False) -> onnx.ModelProto:
    """x[..., start:end] -> unary -> each step with a constant of its own -> Concat on the last axis."""
    rng = np.random.default_rng(11)
    nodes, consts, parts = [], {}, []
    for i, (start, end, unary, steps) in enumerate(chains):
        for k, v in (("s", start), ("e", end), ("a", -1)):
            consts[f"{k}{i}"] = np.array([v], np.int64)
        value = f"slice{i}"
        nodes.append(helper.make_node("Slice", ["x", f"s{i}", f"e{i}", f"a{i}"], [value]))
        if unary:
            nodes.append(helper.make_node(unary, [value], [f"u{i}"]))
            value = f"u{i}"
        for j, op in enumerate(steps):
            shape = [1, 2, 1, 4, end - start] if j % 2 == 0 else [1]  # per-element and scalar operands
            consts[f"k{i}_{j}"] = (rng.standard_normal(shape) * 3).astype(np.float32)
            nodes.append(helper.make_node(op, [value, f"k{i}_{j}"], [f"v{i}_{j}"]))
            value = f"v{i}_{j}"
        parts.append(value)
    nodes.append(helper.make_node("Concat", parts, ["y"], axis=-1))
    outputs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)]
    if shared_output:
        outputs.append(helper.make_tensor_value_info(parts[0], TensorProto.FLOAT, None))
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, SHAPE)],
        outputs,
        [numpy_helper.from_array(v, k) for k, v in consts.items()],
    )
    return inference.infer_shapes(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8))


def _data(seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(SHAPE) * 6).astype(np.float32)
    x.reshape(-1)[::3] = rng.choice(SPECIAL, x.size)[::3]
    return x


def test_a_detection_heads_box_decoding_is_two_unaries_two_wheres_and_two_steps() -> None:
    """sigmoid(xy) + grid, * stride; exp(wh) * anchor; sigmoid(scores): 12 nodes -> 6."""
    model = _model([(0, 2, "Sigmoid", ["Add", "Mul"]), (2, 4, "Exp", ["Mul"]), (4, 8, "Sigmoid", [])])
    changed = rewritten(model, slice_map_concat.rewrite)
    assert sorted(n.op_type for n in changed.graph.node) == ["Add", "Exp", "Mul", "Sigmoid", "Where"]
    for seed in range(4):
        x = _data(seed)
        np.testing.assert_array_equal(
            run_as_written(changed, {"x": x})[0].view(np.uint32), run_as_written(model, {"x": x})[0].view(np.uint32)
        )


@settings(max_examples=30, deadline=None)
@given(
    cuts=st.lists(st.integers(1, 7), min_size=1, max_size=3, unique=True),
    unaries=st.lists(st.sampled_from([None, "Sigmoid", "Exp", "Tanh", "Abs"]), min_size=4, max_size=4),
    steps=st.lists(st.lists(st.sampled_from(["Add", "Mul"]), max_size=3), min_size=4, max_size=4),
    seed=st.integers(0, 2**16),
)
def test_any_chains_give_the_same_bits(cuts: list[int], unaries: list, steps: list[list[str]], seed: int) -> None:
    bounds = [0, *sorted(cuts), 8]
    chains = [(a, b, unaries[i], steps[i]) for i, (a, b) in enumerate(itertools.pairwise(bounds))]
    chains = [(a, b, u, s if u or s else ["Mul"]) for a, b, u, s in chains]  # a chain does something
    model = _model(chains)
    changed = rewritten(model, slice_map_concat.rewrite)
    assert len(changed.graph.node) <= len(model.graph.node)
    x = _data(seed)
    np.testing.assert_array_equal(
        run_as_written(changed, {"x": x})[0].view(np.uint32), run_as_written(model, {"x": x})[0].view(np.uint32)
    )


def test_chains_that_stay() -> None:
    kept = [
        _model([(0, 2, "Sigmoid", ["Add"]), (3, 8, "Exp", [])]),  # the slices leave a gap (and the Concat is smaller)
        _model([(0, 4, "Sigmoid", ["Add"]), (4, 8, "Exp", ["Mul"])], shared_output=True),  # a chain read elsewhere
        _model([(0, 4, "Tanh", ["Add"]), (4, 8, "Exp", ["Mul"])]),  # tanh(-0.0) is -0.0, which the CPU EP's Where loses
        _model([(0, 4, None, ["Add"]), (4, 8, "Exp", ["Mul"])]),  # so would an identity's
    ]
    for model in kept:
        assert [n.op_type for n in rewritten(model, slice_map_concat.rewrite).graph.node] == [n.op_type for n in model.graph.node]
