"""dml2onnx/graph/output_views.py: a Reshape that makes a graph's output (or an If branch's result) is
dropped where its input already has the shape, or moved onto the inputs of the node before it
where that node's output follows its inputs element for element; left alone elsewhere. The values
stay the same (run on the CPU EP before and after)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from dml2onnx import lowering
from dml2onnx.backends import runtime
from dml2onnx.graph import output_views
from support import make_desc

RNG = np.random.default_rng(5)


def _model(
    nodes: list[onnx.NodeProto],
    inputs: dict[str, np.ndarray],
    consts: dict[str, np.ndarray],
    out: str,
    shape: tuple[int, ...] = (2, 3, 4),
) -> onnx.ModelProto:
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info(k, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape) for k, v in inputs.items()],
        [helper.make_tensor_value_info(out, TensorProto.FLOAT, list(shape))],
        [numpy_helper.from_array(v, k) for k, v in consts.items()],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def _run(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> np.ndarray:
    session = runtime.ort().InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, feeds)[0]


def _moved(build: Callable[[], onnx.ModelProto], feeds: dict[str, np.ndarray]) -> onnx.ModelProto:
    """The model after the pass, checked to compute what it computed before."""
    before = _run(build(), feeds)
    after_model = output_views.apply(build())
    onnx.checker.check_model(after_model)
    after = _run(after_model, feeds)
    assert after.shape == before.shape
    np.testing.assert_array_equal(after, before)
    return after_model


def _producer(graph: onnx.GraphProto, value: str) -> str:
    return next(n.op_type for n in graph.node if value in n.output)


X = RNG.standard_normal((2, 3, 4)).astype(np.float32)
SHAPE = {"shape": np.array([2, 3, 4], np.int64), "flat": np.array([24], np.int64)}


def test_a_reshape_to_the_same_shape_is_dropped() -> None:
    def build() -> onnx.ModelProto:
        nodes = [
            helper.make_node("Gather", ["x", "i"], ["g"], axis=1),
            helper.make_node("Reshape", ["g", "shape"], ["y"]),
        ]
        return _model(nodes, {"x": X, "i": np.array([2, 0, 1], np.int64)}, SHAPE, "y")

    m = _moved(build, {"x": X, "i": np.array([2, 0, 1], np.int64)})
    assert [n.op_type for n in m.graph.node] == ["Gather"] and _producer(m.graph, "y") == "Gather"


def test_an_element_wise_node_makes_the_shape_itself() -> None:
    """Add of a flat value and a scalar, then a Reshape to 3-D: the flat value is reshaped (a view)
    and Add makes the output."""

    def build() -> onnx.ModelProto:
        nodes = [
            helper.make_node("Reshape", ["x", "flat"], ["f"]),
            helper.make_node("Neg", ["f"], ["n"]),
            helper.make_node("Add", ["n", "one"], ["a"]),
            helper.make_node("Reshape", ["a", "shape"], ["y"]),
        ]
        return _model(nodes, {"x": X}, SHAPE | {"one": np.array([1.0], np.float32)}, "y")

    m = _moved(build, {"x": X})
    assert _producer(m.graph, "y") == "Add"
    assert [n.op_type for n in m.graph.node].count("Reshape") == 2  # the flat view and its view back


def test_gather_on_a_flat_input_takes_reshaped_indices() -> None:
    offsets = RNG.integers(0, 24, size=(24,)).astype(np.int64)

    def build() -> onnx.ModelProto:
        nodes = [
            helper.make_node("Reshape", ["x", "flat"], ["f"]),
            helper.make_node("Gather", ["f", "i"], ["g"], axis=0),
            helper.make_node("Reshape", ["g", "shape"], ["y"]),
        ]
        return _model(nodes, {"x": X, "i": offsets}, SHAPE, "y")

    m = _moved(build, {"x": X, "i": offsets})
    assert _producer(m.graph, "y") == "Gather"


def test_left_alone_where_the_shape_cannot_move() -> None:
    """A value another node also reads, a graph input, a broadcasting Add, and a Transpose."""
    col, row = RNG.standard_normal((4, 1)).astype(np.float32), RNG.standard_normal((1, 6)).astype(np.float32)
    cases = [
        (
            [
                helper.make_node("Neg", ["x"], ["n"]),
                helper.make_node("Reshape", ["n", "flat"], ["y"]),
                helper.make_node("Abs", ["n"], ["unused"]),
            ],
            {"x": X},
        ),
        ([helper.make_node("Reshape", ["x", "flat"], ["y"])], {"x": X}),
        (
            [helper.make_node("Add", ["c", "r"], ["a"]), helper.make_node("Reshape", ["a", "flat"], ["y"])],
            {"c": col, "r": row},
        ),
        (
            [helper.make_node("Transpose", ["x"], ["t"], perm=[2, 1, 0]), helper.make_node("Reshape", ["t", "flat"], ["y"])],
            {"x": X},
        ),
    ]
    for nodes, feeds in cases:
        m = _moved(lambda nodes=nodes, feeds=feeds: _model(list(nodes), feeds, SHAPE, "y", (24,)), feeds)
        assert _producer(m.graph, "y") == "Reshape"


def test_an_if_branch_result_is_made_by_its_node() -> None:
    def build() -> onnx.ModelProto:
        then_nodes = [helper.make_node("Neg", ["x"], ["t"]), helper.make_node("Reshape", ["t", "then_shape"], ["t_out"])]
        then = helper.make_graph(  # its own shape constant, as GraphBuilder.branch makes them
            then_nodes,
            "then",
            [],
            [helper.make_tensor_value_info("t_out", TensorProto.FLOAT, None)],
            [numpy_helper.from_array(SHAPE["shape"], "then_shape")],
        )
        other = helper.make_graph(
            [helper.make_node("Abs", ["x"], ["e_out"])],
            "else",
            [],
            [helper.make_tensor_value_info("e_out", TensorProto.FLOAT, None)],
        )
        nodes = [helper.make_node("If", ["c"], ["y"], then_branch=then, else_branch=other)]
        return _model(nodes, {"x": X, "c": np.array(True)}, {}, "y")

    m = _moved(build, {"x": X, "c": np.array(True)})
    then = next(a.g for a in m.graph.node[0].attribute if a.name == "then_branch")
    assert [n.op_type for n in then.node] == ["Neg"] and then.node[0].output[0] == "t_out"


def test_the_guarded_gather_branch_ends_in_its_gather() -> None:
    """GATHER's `guarded` (the `cuda` target): both branches of its If make the output themselves."""
    desc = make_desc(
        "GATHER",
        {
            "InputTensor": {"DataType": "FLOAT32", "Sizes": [2, 8, 3, 5]},
            "IndicesTensor": {"DataType": "INT32", "Sizes": [1, 1, 1, 4]},
            "OutputTensor": {"DataType": "FLOAT32", "Sizes": [2, 4, 3, 5]},
            "Axis": 1,
            "IndexDimensions": 1,
        },
    )
    model = lowering.lower(desc, "g", target="cuda")
    (branch,) = [n for n in model.graph.node if n.op_type == "If"]
    for attr in branch.attribute:
        assert _producer(attr.g, attr.g.output[0].name) == "Gather", attr.name
