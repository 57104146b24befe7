"""graph/views.fold: the Identities and Reshapes a whole model's buffers pass through fold away,
every value read (by nodes, If branches and as graph outputs) keeping its contents."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

from dml2onnx.graph import views


def _shape(name: str, dims: list[int]) -> onnx.TensorProto:
    return numpy_helper.from_array(np.array(dims, np.int64), name)


def _model() -> onnx.ModelProto:
    then = helper.make_graph(
        [helper.make_node("Neg", ["same"], ["negated"])],
        "then",
        [],
        [helper.make_tensor_value_info("negated", TensorProto.FLOAT, [2, 6])],
    )
    other = helper.make_graph(
        [helper.make_node("Abs", ["same"], ["absolute"])],
        "else",
        [],
        [helper.make_tensor_value_info("absolute", TensorProto.FLOAT, [2, 6])],
    )
    nodes = [
        helper.make_node("Reshape", ["x", "flat"], ["x_flat"], name="to_flat"),  # [2,6] -> [12]
        helper.make_node("Reshape", ["x_flat", "as_3x4"], ["x_3x4"], name="to_3x4"),  # chain: [2,6] -> [3,4]
        helper.make_node("Reshape", ["x_3x4", "as_2x6"], ["back"], name="back"),  # ... -> [2,6]: the value itself
        helper.make_node("Identity", ["back"], ["same"], name="identity"),
        helper.make_node("Relu", ["same"], ["relu"], name="relu"),
        helper.make_node("Identity", ["relu"], ["y"], name="output_identity"),  # a graph output: kept
        helper.make_node("Reshape", ["same", "flat"], ["seen_flat"], name="also_flat"),  # read twice: not merged
        helper.make_node("Reshape", ["seen_flat", "as_3x4"], ["z"], name="z"),
        helper.make_node("Sigmoid", ["seen_flat"], ["w"], name="w"),
        helper.make_node("Constant", [], ["yes"], value=helper.make_tensor("t", TensorProto.BOOL, [], [True])),
        helper.make_node("If", ["yes"], ["branch"], name="branch", then_branch=then, else_branch=other),
        helper.make_node("Reshape", ["x", "flat"], ["f2"], name="f2"),  # a chain to another shape: one Reshape
        helper.make_node("Reshape", ["f2", "as_4x3"], ["q"], name="q"),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 6])],
        [
            helper.make_tensor_value_info(n, TensorProto.FLOAT, s)
            for n, s in (("y", [2, 6]), ("z", [3, 4]), ("w", [12]), ("branch", [2, 6]), ("q", [4, 3]))
        ],
        [
            _shape("flat", [12]),
            _shape("as_3x4", [3, 4]),
            _shape("as_2x6", [2, 6]),
            _shape("as_4x3", [4, 3]),
            _shape("unused", [1]),
        ],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def _run(model: onnx.ModelProto, x: np.ndarray) -> list[np.ndarray]:
    return ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})


def test_views_fold_and_every_value_keeps_its_contents() -> None:
    x = np.arange(-6, 6, dtype=np.float32).reshape(2, 6)
    model = _model()
    want = _run(model, x)
    folded = views.fold(onnx.shape_inference.infer_shapes(model))
    onnx.checker.check_model(folded, full_check=True)
    ops = [n.name for n in folded.graph.node]
    # the chain to [3,4] and back is the value itself; the Identity before Relu goes; the output's stays;
    # seen_flat is read twice, so its Reshape stays; the If branches read x itself now
    assert ops == ["relu", "output_identity", "also_flat", "z", "w", "", "branch", "q"], ops
    assert [i.name for i in folded.graph.initializer] == ["flat", "as_3x4", "q (merged view)"]  # the others unused
    q = next(n for n in folded.graph.node if n.name == "q")
    assert list(q.input) == ["x", "q (merged view)"]
    for got, expected in zip(_run(folded, x), want, strict=True):
        np.testing.assert_array_equal(got, expected)
    branch = next(n for n in folded.graph.node if n.op_type == "If")
    assert [n.input[0] for a in branch.attribute for n in a.g.node] == ["x", "x"]
