"""graph/leading_ones: a transformer's hidden states between GEMMs lose their leading dimensions of
1, the Reshapes between become the identity and go, and every value stays the same bit for bit."""

from __future__ import annotations

import numpy as np
import onnx
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper

from dml2onnx.graph import inference, leading_ones
from support import rewritten, run_as_written


def _layer(
    tokens: int, width: int, ones: tuple[int, int, int], op: str, axis: int = -1, output_norm: bool = False
) -> onnx.ModelProto:
    """a @ W + b, viewed with ones[0] leading ones; + the residual (viewed with the same); `op`;
    viewed with ones[1]; LayerNormalization over `axis`; viewed with ones[2]; @ W2 (DirectML's
    graph as the lowering left it)."""
    rng = np.random.default_rng(5)
    consts = {
        "w": rng.standard_normal((width, width)).astype(np.float32),
        "b": rng.standard_normal(width).astype(np.float32),
        "w2": rng.standard_normal((width, 3)).astype(np.float32),
        "gamma": rng.standard_normal(width).astype(np.float32),
        "beta": rng.standard_normal(width).astype(np.float32),
        "k": np.full([1] * (ones[0] + 2), 1.5, np.float32),  # a constant with leading ones of its own
    }

    def view(name: str, extra: int) -> list[int]:
        consts[name] = np.array([1] * extra + [tokens, width], np.int64)
        return [1] * extra + [tokens, width]

    view("v0", ones[0])
    view("v1", ones[1])
    consts["v2"] = np.array([tokens, width], np.int64)
    nodes = [
        helper.make_node("Gemm", ["a", "w", "b"], ["g"]),
        helper.make_node("Reshape", ["g", "v0"], ["g4"]),
        helper.make_node("Reshape", ["res", "v0"], ["r4"]),
        helper.make_node("Add", ["g4", "r4"], ["s4"]),
        helper.make_node(op, ["s4", "k"] if op in ("Mul", "Max") else ["s4"], ["t4"]),
        helper.make_node("Reshape", ["t4", "v1"], ["t3"]),
        helper.make_node("LayerNormalization", ["t3", "gamma", "beta"], ["n3"], axis=axis),
        helper.make_node("Reshape", ["n3", "v2"], ["n2"]),
        helper.make_node("Gemm", ["n2", "w2"], ["y"]),
    ]
    inputs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [tokens, width]) for n in ("a", "res")]
    outputs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)]
    if output_norm:
        outputs.append(helper.make_tensor_value_info("n3", TensorProto.FLOAT, None))
    graph = helper.make_graph(nodes, "g", inputs, outputs, [numpy_helper.from_array(v, k) for k, v in consts.items()])
    return inference.infer_shapes(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8))


@settings(max_examples=25, deadline=None)
@given(
    tokens=st.integers(1, 5),
    width=st.integers(2, 6),
    ones=st.tuples(st.integers(0, 2), st.integers(0, 2), st.integers(0, 0)),
    op=st.sampled_from(["Relu", "Mul", "Max", "Erf"]),
    seed=st.integers(0, 2**16),
)
def test_the_reshapes_between_gemms_go_and_the_values_stay(
    tokens: int, width: int, ones: tuple[int, int, int], op: str, seed: int
) -> None:
    model = _layer(tokens, width, ones, op)
    dropped = rewritten(model, leading_ones.drop)
    ops = [n.op_type for n in dropped.graph.node]
    # with one token the Gemm's [1, width] loses its leading one too: its Reshape stays
    assert ops.count("Reshape") == (0 if tokens > 1 else ops.count("Reshape")), ops
    assert ops.count("Reshape") <= [n.op_type for n in model.graph.node].count("Reshape")
    rng = np.random.default_rng(seed)
    feeds = {n: (rng.standard_normal((tokens, width)) * 3).astype(np.float32) for n in ("a", "res")}
    feeds["res"].reshape(-1)[::4] = rng.choice(np.array([np.nan, np.inf, -np.inf, -0.0], np.float32), feeds["res"][:, ::1].size)[
        ::4
    ]
    got, want = run_as_written(dropped, feeds), run_as_written(model, feeds)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g.view(np.uint32), w.view(np.uint32))


def test_a_normalization_over_a_leading_one_keeps_its_shapes() -> None:
    """LayerNormalization over axis 0 of [1, tokens, width] takes the leading one in: it reads what it
    read (the Add and Relu before its Reshape may still lose theirs)."""
    model = _layer(4, 3, (1, 1, 0), "Relu", axis=0)
    dropped = inference.infer_shapes(rewritten(model, leading_ones.drop))
    shapes = {vi.name: [d.dim_value for d in vi.type.tensor_type.shape.dim] for vi in dropped.graph.value_info}
    norm = next(n for n in dropped.graph.node if n.op_type == "LayerNormalization")
    assert shapes[norm.input[0]] == [1, 4, 3] and norm.attribute[0].i == 0
    feeds = {n: np.arange(12, dtype=np.float32).reshape(4, 3) * k for n, k in (("a", 1.0), ("res", -0.5))}
    np.testing.assert_array_equal(run_as_written(dropped, feeds)[0], run_as_written(model, feeds)[0])


def test_a_graph_output_keeps_its_shape() -> None:
    model = _layer(4, 3, (1, 1, 0), "Relu", output_norm=True)
    dropped = rewritten(model, leading_ones.drop)
    shapes = {
        vi.name: [d.dim_value for d in vi.type.tensor_type.shape.dim] for vi in inference.infer_shapes(dropped).graph.output
    }
    assert shapes["n3"] == [1, 4, 3]


def test_a_view_into_a_graph_output_goes_and_its_producer_writes_the_output() -> None:
    """Gemm -> [1, 4, 3] -> Relu -> [4, 3] as the output: Relu writes the output (a Reshape into a
    graph output is a copy on the CUDA EP)."""
    consts = {"w": np.eye(3, dtype=np.float32), "v": np.array([1, 4, 3], np.int64), "t": np.array([4, 3], np.int64)}
    nodes = [
        helper.make_node("Gemm", ["a", "w"], ["g"]),
        helper.make_node("Reshape", ["g", "v"], ["g3"]),
        helper.make_node("Relu", ["g3"], ["r3"]),
        helper.make_node("Reshape", ["r3", "t"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("a", TensorProto.FLOAT, [4, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 3])],
        [numpy_helper.from_array(v, k) for k, v in consts.items()],
    )
    model = inference.infer_shapes(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8))
    dropped = rewritten(model, leading_ones.drop)
    assert [(n.op_type, list(n.output)) for n in dropped.graph.node] == [("Gemm", ["g"]), ("Relu", ["y"])]
    a = np.array([[-1, 2, np.nan], [0, -0.0, 3], [np.inf, -np.inf, 1], [5, 6, -7]], np.float32)
    np.testing.assert_array_equal(run_as_written(dropped, {"a": a})[0], run_as_written(model, {"a": a})[0])
