"""graph/cuda_fusions: the `cuda` target's whole-model fusions into com.microsoft kernels, each with
the values of the nodes it replaces (run here on the CPU EP, which has the same nodes; the GPU's
checks: tools/gpu_probes.py)."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
from onnx import helper, numpy_helper

from dml2onnx import lowering
from dml2onnx.graph import cuda_fusions
from support import make_desc, tensor


def _model(
    nodes: list[onnx.NodeProto], inputs: list[onnx.ValueInfoProto], y: onnx.ValueInfoProto, consts: dict
) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "g", inputs, [y], [numpy_helper.from_array(v, k) for k, v in consts.items()])
    return onnx.shape_inference.infer_shapes(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8))


def _run(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> np.ndarray:
    return ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)[0]


def _fused(model: onnx.ModelProto) -> onnx.ModelProto:
    out = onnx.ModelProto()
    out.CopyFrom(model)
    out = cuda_fusions.fuse(out)
    onnx.checker.check_model(out, full_check=True)
    return out


def _lowered(op: str, fields: dict) -> onnx.ModelProto:
    """The `cuda` target's graph of a desc (as whole_model fuses them: shapes inferred)."""
    return onnx.shape_inference.infer_shapes(lowering.lower(make_desc(op, fields), "t", target="cuda"))


def test_a_half_gelu_is_one_float16_gelu_with_the_values_of_the_float32_steps() -> None:
    """Every finite FLOAT16 value through activations.py's GELU (in FLOAT32, rounded once) and through
    the fused FLOAT16 Gelu: on the CPU EP, whose FLOAT16 Gelu is not the CUDA EP's (module doc), the
    two differ by under 2**-8 of the value (or five of FLOAT16's smallest, near 0);
    tools/gpu_probes.py checks that the CUDA EP's are equal."""
    x = np.arange(65536, dtype=np.uint16).view(np.float16)
    x = x[np.isfinite(x)]
    model = _lowered("ACTIVATION_GELU", {"InputTensor": tensor("FLOAT16", [x.size]), "OutputTensor": tensor("FLOAT16", [x.size])})
    fused = _fused(model)
    assert [(n.op_type, n.domain) for n in fused.graph.node] == [("Gelu", "com.microsoft")]
    assert [t.name for t in fused.graph.initializer] == []
    feeds = {"InputTensor": x}
    got, want = _run(fused, feeds), _run(model, feeds)
    off = np.abs(got.astype(np.float64) - want.astype(np.float64))
    assert not np.isnan(want).any() and (off <= 2.0**-8 * np.abs(want.astype(np.float64)) + 2.0**-21).all()


def test_a_conv_with_a_fused_relu_stays_two_nodes() -> None:
    """cuDNN's fused activation gives 0 for NaN (module doc): Conv and Relu stay."""
    shapes = {"InputTensor": [1, 3, 9, 9], "FilterTensor": [4, 3, 3, 3], "OutputTensor": [1, 4, 7, 7]}
    fields = {name: tensor("FLOAT32", sizes) for name, sizes in shapes.items()}
    fields |= {"Mode": "CROSS_CORRELATION", "Direction": "FORWARD", "DimensionCount": 2, "GroupCount": 1}
    fields |= {name: [1, 1] for name in ("Strides", "Dilations")} | {
        name: [0, 0] for name in ("StartPadding", "EndPadding", "OutputPadding")
    }
    fields["FusedActivation"] = {"Type": "ACTIVATION_RELU"}
    fused = _fused(_lowered("CONVOLUTION", fields))
    assert [n.op_type for n in fused.graph.node if n.op_type in ("Conv", "Relu", "FusedConv")] == ["Conv", "Relu"]
    assert [o.domain for o in fused.opset_import] == [""]


def _half_gemm(alpha: float, k: int) -> onnx.ModelProto:
    """DirectML's FLOAT16 GEMM with Alpha over a batch of 2, as gemm.py lowers it for `cuda`: A and B
    in FLOAT32, MatMul, Mul by Alpha, Cast back."""
    fields = {
        "ATensor": tensor("FLOAT16", [1, 2, 3, k]),
        "BTensor": tensor("FLOAT16", [1, 2, k, 5]),
        "OutputTensor": tensor("FLOAT16", [1, 2, 3, 5]),
        "TransA": "DML_MATRIX_TRANSFORM_NONE",
        "TransB": "DML_MATRIX_TRANSFORM_NONE",
        "Alpha": alpha,
        "Beta": 1.0,
    }
    return _lowered("GEMM", fields)


def test_a_half_gemm_with_an_alpha_float16_holds_is_one_fused_matmul() -> None:
    """0.5 * (60000 + 60000): 60000 with the FLOAT32 sum scaled before the one rounding (inf in FLOAT16
    steps), as DirectML computes it."""
    model = _half_gemm(0.5, 2)
    rng = np.random.default_rng(1)
    a = rng.standard_normal((1, 2, 3, 2)).astype(np.float16)
    b = rng.standard_normal((1, 2, 2, 5)).astype(np.float16)
    a[0, 0, 0, :], b[0, 0, :, 0] = 60000, 1
    fused = _fused(model)
    assert [(n.op_type, n.domain) for n in fused.graph.node] == [("FusedMatMul", "com.microsoft")]
    assert [t.name for t in fused.graph.initializer] == []
    feeds = {"ATensor": a, "BTensor": b}
    got, want = _run(fused, feeds), _run(model, feeds)
    assert want[0, 0, 0, 0] == 60000
    np.testing.assert_array_equal(got, want)


def test_an_alpha_float16_rounds_keeps_the_float32_steps() -> None:
    """ONNX Runtime hands FusedMatMul's alpha to cuBLAS as FLOAT16: 0.1 would scale by 0.0999755859375."""
    model = _half_gemm(0.1, 4)
    fused = _fused(model)
    assert [n.op_type for n in fused.graph.node] == [n.op_type for n in model.graph.node]
    assert "FusedMatMul" not in [n.op_type for n in fused.graph.node]


def _add_norm(shape: list[int], read_twice: bool = False) -> onnx.ModelProto:
    rng = np.random.default_rng(3)
    consts = {
        "gamma": rng.standard_normal(shape[-1]).astype(np.float32),
        "beta": rng.standard_normal(shape[-1]).astype(np.float32),
    }
    nodes = [
        helper.make_node("Add", ["a", "b"], ["s"]),
        helper.make_node("LayerNormalization", ["s", "gamma", "beta"], ["y"], axis=-1, epsilon=1e-12),
    ]
    inputs = [helper.make_tensor_value_info(n, onnx.TensorProto.FLOAT, shape) for n in ("a", "b")]
    y = helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)
    model = _model(nodes, inputs, y, consts)
    if read_twice:
        model.graph.output.append(helper.make_tensor_value_info("s", onnx.TensorProto.FLOAT, shape))
    return model


def test_an_add_and_layer_normalization_of_matrices_are_one_skip_layer_normalization() -> None:
    """Its CPU kernel sums in another order than LayerNormalization's: equal to 1e-6 (on the GPU
    it is the kernel ONNX Runtime's own fusion picks for the 3-D pair)."""
    model = _add_norm([16, 64])
    fused = _fused(model)
    assert [(n.op_type, n.domain) for n in fused.graph.node] == [("SkipLayerNormalization", "com.microsoft")]
    rng = np.random.default_rng(4)
    feeds = {n: rng.standard_normal((16, 64)).astype(np.float32) * 5 for n in ("a", "b")}
    np.testing.assert_allclose(_run(fused, feeds), _run(model, feeds), rtol=1e-5, atol=1e-5)


def test_an_add_read_twice_keeps_its_layer_normalization() -> None:
    model = _add_norm([16, 64], read_twice=True)
    assert [n.op_type for n in _fused(model).graph.node] == ["Add", "LayerNormalization"]
