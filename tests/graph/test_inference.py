"""graph/inference.py: shape inference and the checker on a model's skeleton give what onnx's own
give on the whole model, without its large initializers' bytes."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from dml2onnx.graph import inference


def _model(weight_rows: int) -> onnx.ModelProto:
    """x [1, 64] x W [64, rows], reshaped by a small INT64 initializer (read by value by inference)."""
    w = numpy_helper.from_array(np.arange(64 * weight_rows, dtype=np.float32).reshape(64, weight_rows), "w")
    shape = numpy_helper.from_array(np.array([weight_rows, 1], np.int64), "shape")
    nodes = [helper.make_node("MatMul", ["x", "w"], ["xw"]), helper.make_node("Reshape", ["xw", "shape"], ["y"])]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 64])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [w, shape],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def test_a_large_initializer_is_an_input_of_the_skeleton_and_a_small_one_stays() -> None:
    model = _model(1024)  # 65,536 elements: over LARGE_ELEMENTS
    light = inference.skeleton(model)
    assert [t.name for t in light.graph.initializer] == ["shape"]
    assert [i.name for i in light.graph.input] == ["x", "w"]
    small = _model(4)
    assert inference.skeleton(small) is small  # nothing to take out: the model itself


@pytest.mark.parametrize("rows", [4, 1024])
def test_inferred_types_equal_onnx_inference_on_the_whole_model(rows: int) -> None:
    want = onnx.shape_inference.infer_shapes(_model(rows), strict_mode=True)
    got = inference.infer_shapes(_model(rows), strict_mode=True)
    assert got.graph.value_info == want.graph.value_info and got.graph.output == want.graph.output
    assert [d.dim_value for d in got.graph.output[0].type.tensor_type.shape.dim] == [rows, 1]
    assert numpy_helper.to_array(got.graph.initializer[0]).shape == (64, rows)  # the weights kept


def test_the_checker_still_refuses_an_invalid_graph_with_large_weights() -> None:
    model = _model(1024)
    model.graph.node[0].input[1] = "nowhere"
    with pytest.raises(onnx.checker.ValidationError):
        inference.check_model(model, full_check=True)
