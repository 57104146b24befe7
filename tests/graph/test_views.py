"""graph/views.fold: the Identities and Reshapes a whole model's buffers pass through fold away,
every value read (by nodes, If branches and as graph outputs) keeping its contents."""

from __future__ import annotations

import tempfile
from pathlib import Path

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
    # seen_flat is read twice, so its Reshape stays (z, like it, reads x itself); the If branches read x itself now
    assert ops == ["relu", "output_identity", "also_flat", "z", "w", "", "branch", "q"], ops
    kept = ["seen_flat (merged view)", "z (merged view)", "q (merged view)"]
    assert [i.name for i in folded.graph.initializer] == kept, [i.name for i in folded.graph.initializer]  # the others unused
    for name in ("q", "z"):
        assert list(next(n for n in folded.graph.node if n.name == name).input) == ["x", f"{name} (merged view)"]
    for got, expected in zip(_run(folded, x), want, strict=True):
        np.testing.assert_array_equal(got, expected)
    branch = next(n for n in folded.graph.node if n.op_type == "If")
    assert [n.input[0] for a in branch.attribute for n in a.g.node] == ["x", "x"]


def _residual_layer_norm() -> onnx.ModelProto:
    """DirectML's residual + MVN as a captured BERT lowers it: two [1, 4, 8] values seen as [1, 4, 8, 1],
    added, then LayerNormalization over [8, 1] with Scale and Bias reshaped to [8, 1]."""
    rng = np.random.default_rng(3)
    scale = numpy_helper.from_array(rng.standard_normal(8).astype(np.float32), "scale")
    bias = numpy_helper.from_array(rng.standard_normal(8).astype(np.float32), "bias")
    nodes = [
        helper.make_node("Reshape", ["a", "as_4d"], ["a4"], name="a4"),
        helper.make_node("Reshape", ["b", "as_4d"], ["b4"], name="b4"),
        helper.make_node("Add", ["a4", "b4"], ["sum"], name="residual"),
        helper.make_node("Reshape", ["scale", "as_8x1"], ["scale_8x1"], name="scale_8x1"),
        helper.make_node("Reshape", ["bias", "as_8x1"], ["bias_8x1"], name="bias_8x1"),
        helper.make_node("LayerNormalization", ["sum", "scale_8x1", "bias_8x1"], ["normed"], name="ln", axis=2, epsilon=1e-5),
        helper.make_node("Reshape", ["normed", "as_3d"], ["y"], name="y"),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, [1, 4, 8]) for n in ("a", "b")],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8])],
        [scale, bias, _shape("as_4d", [1, 4, 8, 1]), _shape("as_8x1", [8, 1]), _shape("as_3d", [1, 4, 8])],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def test_a_layer_norm_loses_directmls_trailing_ones_so_onnx_runtime_fuses_the_residual_add() -> None:
    model = _residual_layer_norm()
    feeds = {n: np.random.default_rng(i).standard_normal((1, 4, 8)).astype(np.float32) for i, n in enumerate("ab")}
    plain = ort.SessionOptions()
    plain.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    want = ort.InferenceSession(model.SerializeToString(), plain, providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    folded = views.fold(onnx.shape_inference.infer_shapes(model))
    onnx.checker.check_model(folded, full_check=True)
    inferred = onnx.shape_inference.infer_shapes(folded).graph.value_info
    shapes = {v.name: [d.dim_value for d in v.type.tensor_type.shape.dim] for v in inferred}
    ln = next(n for n in folded.graph.node if n.op_type == "LayerNormalization")
    add = next(n for n in folded.graph.node if n.op_type == "Add")
    assert list(add.input) == ["a", "b"] and ln.input[0] == add.output[0] and shapes[ln.input[0]] == [1, 4, 8]
    assert list(ln.input[1:]) == ["scale", "bias"]  # [8, 1] and back to [8]: the initializers themselves
    options = ort.SessionOptions()
    options.optimized_model_filepath = str(Path(tempfile.mkdtemp()) / "optimized.onnx")
    session = ort.InferenceSession(folded.SerializeToString(), options, providers=["CPUExecutionProvider"])
    unfused = ort.InferenceSession(folded.SerializeToString(), plain, providers=["CPUExecutionProvider"])
    np.testing.assert_array_equal(unfused.run(None, feeds)[0], want)  # the same nodes on other shapes
    np.testing.assert_allclose(session.run(None, feeds)[0], want, rtol=1e-5, atol=1e-6)  # ONNX Runtime's own kernel
    fused = [n.op_type for n in onnx.load(options.optimized_model_filepath).graph.node]
    assert "SkipLayerNormalization" in fused and "Add" not in fused, fused


def test_an_expand_before_an_operator_that_broadcasts_itself_goes() -> None:
    """A mask [1, 1, 4] expanded to [2, 3, 4] and added to scores [2, 3, 4]: Add broadcasts it itself.
    Kept: the Expand a Cast reads (Cast does not broadcast; it moves after the Cast, which then
    converts the small mask), and one whose Add's other input is as small (without it the sum would
    be [1, 1, 4])."""
    nodes = [
        helper.make_node("Expand", ["mask", "full"], ["mask_full"], name="expand"),
        helper.make_node("Add", ["scores", "mask_full"], ["y"], name="add"),
        helper.make_node("Expand", ["mask", "full"], ["mask_cast_in"], name="expand_for_cast"),
        helper.make_node("Cast", ["mask_cast_in"], ["c"], name="cast", to=TensorProto.DOUBLE),
        helper.make_node("Expand", ["mask", "full"], ["mask_small_add"], name="expand_for_small"),
        helper.make_node("Add", ["mask_small_add", "mask"], ["z"], name="small_add"),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [
            helper.make_tensor_value_info("scores", TensorProto.FLOAT, [2, 3, 4]),
            helper.make_tensor_value_info("mask", TensorProto.FLOAT, [1, 1, 4]),
        ],
        [
            helper.make_tensor_value_info(n, t, [2, 3, 4])
            for n, t in (("y", TensorProto.FLOAT), ("c", TensorProto.DOUBLE), ("z", TensorProto.FLOAT))
        ],
        [_shape("full", [2, 3, 4])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    feeds = {"scores": np.arange(24, dtype=np.float32).reshape(2, 3, 4), "mask": np.array([[[0, -1e4, 0, -1e4]]], np.float32)}
    want = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)
    folded = views.fold(onnx.shape_inference.infer_shapes(model))
    assert [n.name for n in folded.graph.node] == ["add", "cast", "expand_for_cast", "expand_for_small", "small_add"]
    assert list(folded.graph.node[0].input) == ["scores", "mask"]
    assert list(folded.graph.node[1].input) == ["mask"]  # the Cast on the small mask, then the Expand
    got = ort.InferenceSession(folded.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w)


def test_a_softmax_between_views_reads_the_gemms_result_itself() -> None:
    """DirectML's classifier head: Gemm [1, 10] -> a 4-D view [1, 1, 1, 10] -> Softmax on its last
    axis -> the buffer [10] -> the model's output [1, 10]. The Reshapes move before the Softmax and
    fold away. Kept: a Softmax whose last axis a Reshape splits ([2, 5]), one over another axis, and
    a Relu whose result another node reads too."""
    nodes = [
        helper.make_node("Reshape", ["x", "as_4d"], ["x4"], name="view"),
        helper.make_node("Softmax", ["x4"], ["p4"], name="softmax", axis=3),
        helper.make_node("Reshape", ["p4", "flat"], ["p_flat"], name="to_buffer"),
        helper.make_node("Reshape", ["p_flat", "as_2d"], ["p"], name="to_output"),
        helper.make_node("Softmax", ["x4"], ["q4"], name="softmax_split", axis=-1),
        helper.make_node("Reshape", ["q4", "as_2x5"], ["q"], name="split_rows"),
        helper.make_node("Softmax", ["x4"], ["r4"], name="softmax_outer", axis=1),
        helper.make_node("Reshape", ["r4", "as_2d"], ["r"], name="outer_view"),
        helper.make_node("Relu", ["x4"], ["s4"], name="relu"),
        helper.make_node("Reshape", ["s4", "as_2d"], ["s"], name="relu_view"),
        helper.make_node("Neg", ["s4"], ["t"], name="other_reader"),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 10])],
        [
            *(helper.make_tensor_value_info(n, TensorProto.FLOAT, d) for n, d in (("p", [1, 10]), ("q", [2, 5]), ("r", [1, 10]))),
            *(helper.make_tensor_value_info(n, TensorProto.FLOAT, d) for n, d in (("s", [1, 10]), ("t", [1, 1, 1, 10]))),
        ],
        [_shape("as_4d", [1, 1, 1, 10]), _shape("flat", [10]), _shape("as_2d", [1, 10]), _shape("as_2x5", [2, 5])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    feeds = {"x": np.linspace(-3, 4, 10, dtype=np.float32).reshape(1, 10)}
    want = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)
    folded = views.fold(onnx.shape_inference.infer_shapes(model))
    onnx.checker.check_model(folded, full_check=True)
    made = {n.output[0]: n for n in folded.graph.node}
    assert made["p"].op_type == "Softmax" and list(made["p"].input) == ["x"]
    assert [made[v].op_type for v in "qrs"] == ["Reshape"] * 3
    got = ort.InferenceSession(folded.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w)


def test_a_boolean_mask_keeps_no_expand_and_no_cast_round_trip() -> None:
    """DirectML's attention mask: a BOOL [1, 1, 1, 4] held as UINT8, broadcast to [1, 1, 4, 4] (an
    Expand) and read as BOOL by a LOGICAL_AND, whose UINT8 result a Where reads as BOOL. The Expand
    moves after its Cast and goes (And broadcasts), each BOOL -> UINT8 -> BOOL pair of Casts goes."""
    nodes = [
        helper.make_node("Cast", ["mask"], ["held"], name="held", to=TensorProto.UINT8),
        helper.make_node("Expand", ["held", "full"], ["held_full"], name="broadcast"),
        helper.make_node("Cast", ["held_full"], ["truth"], name="truth", to=TensorProto.BOOL),
        helper.make_node("And", ["truth", "causal"], ["both"], name="and"),
        helper.make_node("Cast", ["both"], ["both_held"], name="both_held", to=TensorProto.UINT8),
        helper.make_node("Cast", ["both_held"], ["condition"], name="condition", to=TensorProto.BOOL),
        helper.make_node("Where", ["condition", "scores", "lowest"], ["y"], name="where"),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [
            helper.make_tensor_value_info("mask", TensorProto.BOOL, [1, 1, 1, 4]),
            helper.make_tensor_value_info("scores", TensorProto.FLOAT, [1, 1, 4, 4]),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 1, 4, 4])],
        [
            _shape("full", [1, 1, 4, 4]),
            numpy_helper.from_array(np.tril(np.ones((4, 4), bool)).reshape(1, 1, 4, 4), "causal"),
            numpy_helper.from_array(np.array(-3.0e38, np.float32), "lowest"),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    feeds = {
        "mask": np.array([True, False, True, True]).reshape(1, 1, 1, 4),
        "scores": np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4),
    }
    want = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    folded = views.fold(onnx.shape_inference.infer_shapes(model))
    onnx.checker.check_model(folded, full_check=True)
    assert [(n.op_type, list(n.input)) for n in folded.graph.node] == [
        ("And", ["mask", "causal"]),
        ("Where", ["both", "scores", "lowest"]),
    ]
    got = ort.InferenceSession(folded.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    np.testing.assert_array_equal(got, want)


def test_a_softmax_before_opset_13_keeps_its_views() -> None:
    """Softmax-11 flattens from its axis (1 by default): a Reshape after it does not move before it."""
    nodes = [
        helper.make_node("Reshape", ["x", "as_4d"], ["x4"], name="view"),
        helper.make_node("Softmax", ["x4"], ["p4"], name="softmax"),
        helper.make_node("Reshape", ["p4", "as_2d"], ["p"], name="to_output"),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 6])],
        [helper.make_tensor_value_info("p", TensorProto.FLOAT, [2, 6])],
        [_shape("as_4d", [2, 1, 2, 3]), _shape("as_2d", [2, 6])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 11)], ir_version=6)
    folded = views.fold(onnx.shape_inference.infer_shapes(model))
    assert [n.name for n in folded.graph.node] == ["view", "softmax", "to_output"]


def test_nodes_nothing_reads_go_and_so_do_their_constants() -> None:
    """A value viewed flat for a DirectML output the model does not return: the view and what only it
    fed go (an LSTM's last state in the captured LSTM/GRU network)."""
    nodes = [
        helper.make_node("Relu", ["x"], ["r"]),
        helper.make_node("Reshape", ["r", "flat"], ["dead1"]),
        helper.make_node("Neg", ["dead1"], ["dead2"]),
        helper.make_node("Abs", ["x"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])],
        [numpy_helper.from_array(np.array([-1], np.int64), "flat")],
    )
    views.drop_dead_nodes(graph)
    views.drop_unread_constants(graph)
    assert [n.op_type for n in graph.node] == ["Abs"] and list(graph.initializer) == []


def test_a_constant_only_an_if_branch_reads_stays() -> None:
    """An If's branches may read the outer graph's constants (GraphBuilder.branch): they count as read."""
    branch = helper.make_graph(
        [helper.make_node("Identity", ["table"], ["picked"])],
        "then",
        [],
        [helper.make_tensor_value_info("picked", TensorProto.FLOAT, [2])],
    )
    graph = helper.make_graph(
        [helper.make_node("If", ["c"], ["y"], then_branch=branch, else_branch=branch)],
        "g",
        [helper.make_tensor_value_info("c", TensorProto.BOOL, [])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])],
        [
            numpy_helper.from_array(np.array([1, 2], np.float32), "table"),
            numpy_helper.from_array(np.array([3], np.float32), "unread"),
        ],
    )
    views.drop_unread_constants(graph)
    assert [t.name for t in graph.initializer] == ["table"]
