"""graph/axis_gather: a Reshape that splits one axis, a Transpose within the split and a Reshape back
(ShuffleNet's channel shuffle), with element-wise operators of one input anywhere between them,
become those operators and one Gather along the axis, bit for bit (NaN, inf and -0.0 included);
a view that moves entries across axes, or whose middle values something else reads, stays."""

from __future__ import annotations

import math

import numpy as np
import onnx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper

from dml2onnx.graph import axis_gather, inference
from support import rewritten, run_as_written

SPECIAL = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0, -1.5, 2.5], np.float32)


def _model(
    shape: list[int], split: list[int], perm: list[int], unaries: list[tuple[str, int]], extra_read: bool = False
) -> onnx.ModelProto:
    """x viewed as `split`, transposed by `perm`, viewed back as `shape` (y); `unaries` are
    (operator, position) with position 0 before the Transpose and 1 after it; `extra_read` makes the
    transposed value a second output too."""
    nodes = [helper.make_node("Reshape", ["x", "split"], ["v0"])]
    value, k = "v0", 0
    for where in (0, 1):
        if where == 1:
            nodes.append(helper.make_node("Transpose", [value], ["t"], perm=perm))
            value = "t"
        for op, at in unaries:
            if at == where:
                k += 1
                nodes.append(helper.make_node(op, [value], [f"u{k}"], **({"alpha": 0.25} if op == "LeakyRelu" else {})))
                value = f"u{k}"
    nodes.append(helper.make_node("Reshape", [value, "back"], ["y"]))
    outputs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)]
    if extra_read:
        outputs.append(helper.make_tensor_value_info("t", TensorProto.FLOAT, None))
    consts = [
        numpy_helper.from_array(np.array(split, np.int64), "split"),
        numpy_helper.from_array(np.array(shape, np.int64), "back"),
    ]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)], outputs, consts)
    return inference.infer_shapes(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8))


def _data(shape: list[int], seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape).astype(np.float32)
    where = rng.random(shape) < 0.3
    x[where] = rng.choice(SPECIAL, size=int(where.sum()))
    return x


def _same_bits(model: onnx.ModelProto, changed: onnx.ModelProto, x: np.ndarray) -> None:
    want, got = run_as_written(model, {"x": x}), run_as_written(changed, {"x": x})
    assert [w.shape for w in want] == [g.shape for g in got]
    for w, g in zip(want, got, strict=True):
        assert w.tobytes() == g.tobytes()


def test_the_channel_shuffle_is_one_gather() -> None:
    """ShuffleNet's shuffle of 12 channels in 3 groups, DirectML's Relu between the views."""
    model = _model([1, 12, 5, 5], [3, 4, 5, 5], [1, 0, 2, 3], [("Relu", 0)])
    changed = rewritten(model, axis_gather.rewrite)
    assert [n.op_type for n in changed.graph.node] == ["Relu", "Gather"]
    order = numpy_helper.to_array(next(t for t in changed.graph.initializer if "order" in t.name))
    assert order.tolist() == [0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11]  # channel j of group g goes to 3 * j + g
    _same_bits(model, changed, _data([1, 12, 5, 5], 0))


@st.composite
def _views(draw: st.DrawFn) -> tuple[list[int], list[int], list[int], list[tuple[str, int]]]:
    rank = draw(st.integers(1, 4))
    shape = [draw(st.integers(1, 5)) for _ in range(rank)]
    axis = draw(st.integers(0, rank - 1))
    factors = draw(st.lists(st.integers(2, 4), min_size=2, max_size=3))
    shape[axis] = math.prod(factors)
    order = draw(st.permutations(range(len(factors))))
    split = shape[:axis] + factors + shape[axis + 1 :]
    perm = list(range(axis)) + [axis + i for i in order] + list(range(axis + len(factors), len(split)))
    if draw(st.booleans()):  # DirectML's views often drop the leading ones
        while split and split[0] == 1 and len(split) > 1:
            split, perm = split[1:], [p - 1 for p in perm[1:]]
    ops = st.sampled_from(["Relu", "Sigmoid", "Neg", "Abs", "LeakyRelu", "Exp"])
    unaries = draw(st.lists(st.tuples(ops, st.integers(0, 1)), max_size=3))
    return shape, split, perm, unaries


@settings(max_examples=40, deadline=None)
@given(_views(), st.integers(0, 2**16))
def test_any_reorder_within_one_axis_is_one_gather(view: tuple, seed: int) -> None:
    shape, split, perm, unaries = view
    model = _model(shape, split, perm, unaries)
    changed = rewritten(model, axis_gather.rewrite)
    reorders = perm != sorted(perm)
    assert [n.op_type for n in changed.graph.node].count("Gather") == int(reorders)
    if reorders:
        assert len(changed.graph.node) == len(unaries) + 1
    _same_bits(model, changed, _data(shape, seed))


@pytest.mark.parametrize(
    ("shape", "split", "perm", "extra_read"),
    [
        ([4, 6], [4, 6], [1, 0], False),  # a true transpose: entries move across axes
        ([2, 6], [2, 2, 3], [1, 0, 2], False),  # the split's first factor trades places with the other axis
        ([12], [3, 4], [1, 0], True),  # a reorder of one axis, but the transposed value is read twice
    ],
)
def test_views_that_are_no_reorder_of_one_private_axis_stay(
    shape: list[int], split: list[int], perm: list[int], extra_read: bool
) -> None:
    model = _model(shape, split, perm, [("Relu", 1)], extra_read=extra_read)
    changed = rewritten(model, axis_gather.rewrite)
    assert [n.op_type for n in changed.graph.node] == [n.op_type for n in model.graph.node]
    _same_bits(model, changed, _data(shape, 1))


@pytest.mark.parametrize(
    ("source", "split", "perm", "expected"),
    [
        ((1, 8, 2), (2, 4, 2), [1, 0, 2], (1, [0, 4, 1, 5, 2, 6, 3, 7])),
        ((8, 3), (2, 2, 2, 3), [2, 1, 0, 3], (0, [0, 4, 2, 6, 1, 5, 3, 7])),
        ((8, 3), (2, 2, 2, 3), [0, 1, 2, 3], None),  # nothing reordered
        ((8, 3), (4, 6), [1, 0], None),  # merges the axes
        ((8, 3), (2, 4, 3), [0, 2, 1], None),  # across axes
        ((6, 6), (2, 3, 3, 2), [1, 0, 3, 2], None),  # two axes reordered: two Gathers, not taken
    ],
)
def test_one_axis_order(source: tuple, split: tuple, perm: list[int], expected: tuple | None) -> None:
    found = axis_gather.one_axis_order(source, split, perm, source)
    if expected is None:
        assert found is None
    else:
        assert found is not None
        assert (found[0], found[1].tolist()) == expected
        x = np.arange(math.prod(source)).reshape(source)
        np.testing.assert_array_equal(np.take(x, found[1], axis=found[0]), x.reshape(split).transpose(perm).reshape(source))
