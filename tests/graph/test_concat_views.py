"""graph/concat_views: a Reshape after a Concat of Reshapes moves before it (the inputs reshaped
straight to the result's layout), with the same values; where the joined axis does not survive the
Reshape whole, nothing moves."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from dml2onnx.graph import concat_views, inference
from support import rewritten, run_as_written


def _model(target: list[int]) -> onnx.ModelProto:
    """[4, 8] and [2, 8] viewed as [1, 1, n, 8], joined on axis 2, viewed as `target` (the output)."""
    consts = {"v1": np.array([1, 1, 4, 8], np.int64), "v2": np.array([1, 1, 2, 8], np.int64), "t": np.array(target, np.int64)}
    nodes = [
        helper.make_node("Reshape", ["a", "v1"], ["a4"]),
        helper.make_node("Reshape", ["b", "v2"], ["b4"]),
        helper.make_node("Concat", ["a4", "b4"], ["j"], axis=2),
        helper.make_node("Reshape", ["j", "t"], ["y"]),
    ]
    inputs = [
        helper.make_tensor_value_info("a", TensorProto.FLOAT, [4, 8]),
        helper.make_tensor_value_info("b", TensorProto.FLOAT, [2, 8]),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        inputs,
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(v, k) for k, v in consts.items()],
    )
    return inference.infer_shapes(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8))


@pytest.mark.parametrize(("target", "moved"), [([1, 6, 8], True), ([6, 1, 8], True), ([1, 48], False), ([3, 2, 8], False)])
def test_the_reshape_moves_where_the_joined_axis_stays_whole(target: list[int], moved: bool) -> None:
    model = _model(target)
    changed = rewritten(model, concat_views.push)
    assert [n.op_type for n in changed.graph.node] == (
        ["Reshape", "Reshape", "Concat"] if moved else [n.op_type for n in model.graph.node]
    )
    rng = np.random.default_rng(2)
    feeds = {"a": rng.standard_normal((4, 8)).astype(np.float32), "b": rng.standard_normal((2, 8)).astype(np.float32)}
    got, want = run_as_written(changed, feeds)[0], run_as_written(model, feeds)[0]
    assert got.shape == want.shape == tuple(target)
    np.testing.assert_array_equal(got, want)
