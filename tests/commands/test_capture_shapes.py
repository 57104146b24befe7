"""`dml2onnx capture` of small models whose interface real exports have and the corpus does not:
outputs with free dimensions, constant outputs, an input that is an output, outputs of fewer bytes
than a 4-byte word, DirectML's UINT64 indices behind an INT64 output, models the EP runs node by
node with no partition, and models ONNX Runtime gives wholly to the CPU. Each capture's chain (on
the CPU EP and DirectML's API) and its whole lowered model are checked against the DirectML EP's
outputs and the original model."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

from dml2onnx.backends import winhost
from support import run_cli

live = pytest.mark.skipif(
    not winhost.available(),
    reason=f"the DirectML EP under Wine is not set up ({winhost.missing()}): `make dml-setup` installs it",
)
F, U8, H, I64 = TensorProto.FLOAT, TensorProto.UINT8, TensorProto.FLOAT16, TensorProto.INT64


def _model(nodes: list, inputs: list, outputs: list) -> onnx.ModelProto:
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info(*i) for i in inputs], [helper.make_tensor_value_info(*o) for o in outputs]
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


TOPK_K = helper.make_tensor("k", TensorProto.INT64, [1], [3])
MODELS = {
    # (the model, -f arguments): each names what real exports (swin_t, F.pad, dynamic axes, TopK, ...) write
    "free_output_dim": (_model([helper.make_node("Relu", ["x"], ["y"])], [("x", F, [2, 3])], [("y", F, ["N", 3])]), ()),
    "free_dims_given": (
        _model([helper.make_node("Relu", ["x"], ["y"])], [("x", F, ["batch", "seq", 8])], [("y", F, ["batch", "seq", 8])]),
        ("-f", "batch:2", "-f", "seq:5"),
    ),
    "constant_output": (
        _model(
            [
                helper.make_node("Relu", ["x"], ["y"]),
                helper.make_node("Constant", [], ["k"], value=helper.make_tensor("v", F, [2, 2], [1.5, -2, 3, 4])),
            ],
            [("x", F, [2, 3])],
            [("y", F, [2, 3]), ("k", F, [2, 2])],
        ),
        (),
    ),
    "input_is_output": (
        _model([helper.make_node("Relu", ["x"], ["y"])], [("x", F, [2, 3])], [("y", F, [2, 3]), ("x", F, [2, 3])]),
        (),
    ),
    "six_byte_output": (_model([helper.make_node("Cast", ["x"], ["y"], to=U8)], [("x", F, [2, 3])], [("y", U8, [2, 3])]), ()),
    "float16_odd_output": (_model([helper.make_node("Sigmoid", ["x"], ["y"])], [("x", H, [3])], [("y", H, [3])]), ()),
    "topk_indices": (
        helper.make_model(
            helper.make_graph(
                [helper.make_node("TopK", ["x", "k"], ["v", "i"], axis=-1)],
                "g",
                [helper.make_tensor_value_info("x", F, [1, 4, 6])],
                [helper.make_tensor_value_info("v", F, [1, 4, 3]), helper.make_tensor_value_info("i", I64, [1, 4, 3])],
                [TOPK_K],
            ),
            opset_imports=[helper.make_opsetid("", 17)],
            ir_version=8,
        ),
        (),
    ),
    "no_partition": (
        _model(
            [helper.make_node("Sum", ["a", "b", "c"], ["y"])],
            [("a", F, [3, 4]), ("b", F, [3, 4]), ("c", F, [3, 4])],
            [("y", F, [3, 4])],
        ),
        (),
    ),
}


@live
@pytest.mark.parametrize("name", list(MODELS))
def test_capture_runs_and_lowers_what_real_exports_write(name: str, tmp_path: Path) -> None:
    model, free = MODELS[name]
    path = tmp_path / f"{name}.onnx"
    onnx.save(model, str(path))
    folder = tmp_path / "cap"
    status, out, err = run_cli("capture", str(path), "-o", str(folder), "-q", *free)
    assert status == 0, err
    inputs = {p.stem: np.load(p) for p in (folder / "inputs").glob("*.npy")}
    expected = {p.stem: np.load(p) for p in (folder / "expected").glob("*.npy")}
    assert sorted(expected) == sorted(o.name for o in model.graph.output)
    here = os.getcwd()
    os.chdir(folder)
    try:
        for ep in ("cpu", "dml-api"):  # the chain writes each output at the shape the EP gave, DirectML's values
            status, _, err = run_cli("run", f"{name}.json", "--ep", ep, "-q")
            assert status == 0, (ep, err)
            for output, want in expected.items():
                got = np.load(f"{output}.npy")
                assert got.shape == want.shape, (ep, output, got.shape, want.shape)
                rtol = 1e-3 if want.dtype == np.float16 else 1e-6  # FLOAT16: a unit in the last place apart
                np.testing.assert_allclose(
                    got.astype(np.float64), want.astype(np.float64), rtol=rtol, atol=1e-6, err_msg=f"{ep}: {output}"
                )
    finally:
        os.chdir(here)
    lowered = folder / f"{name}.lowered.onnx"
    assert lowered.exists(), out
    sessions = [ort.InferenceSession(str(p), providers=["CPUExecutionProvider"]) for p in (lowered, path)]
    got, want = ({o.name: v for o, v in zip(s.get_outputs(), s.run(None, inputs), strict=True)} for s in sessions)
    for output, value in want.items():
        assert got[output].dtype == value.dtype and got[output].shape == value.shape, output
        np.testing.assert_allclose(got[output].astype(np.float64), value.astype(np.float64), rtol=1e-3, atol=1e-6, err_msg=output)
    if name == "constant_output":
        assert np.array_equal(got["k"], [[1.5, -2], [3, 4]])


@live
def test_a_model_the_cpu_ep_takes_whole_names_its_nodes(tmp_path: Path) -> None:
    """Cubic Resize: ONNX Runtime's log then says "All nodes placed on [CPUExecutionProvider]" and
    lists none; the message names the model's nodes itself."""
    scales = helper.make_tensor("scales", F, [4], [1, 1, 2, 2])
    graph = helper.make_graph(
        [helper.make_node("Resize", ["x", "", "scales"], ["y"], name="upscale", mode="cubic")],
        "g",
        [helper.make_tensor_value_info("x", F, [1, 1, 4, 4])],
        [helper.make_tensor_value_info("y", F, [1, 1, 8, 8])],
        [scales],
    )
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), str(tmp_path / "m.onnx"))
    status, _, err = run_cli("capture", str(tmp_path / "m.onnx"), "-o", str(tmp_path / "cap"))
    assert status == 1 and "ONNX Runtime gives upscale (Resize) to the CPU EP" in err, err
    assert not (tmp_path / "cap").exists()


@live
def test_a_graph_the_ep_cannot_read_back_is_told_apart_from_one_it_cannot_run(tmp_path: Path) -> None:
    """TopK whose indices nothing reads: ONNX Runtime 1.24's DirectML EP serializes the node with two
    output tensors and one name, then fails to read its own file back (DmlGraphFusionHelper.cpp,
    E_INVALIDARG); without serialization it runs. The message says which."""
    graph = helper.make_graph(
        [helper.make_node("TopK", ["x", "k"], ["v", "unused"], axis=-1), helper.make_node("Relu", ["v"], ["y"])],
        "g",
        [helper.make_tensor_value_info("x", F, [1, 4, 6])],
        [helper.make_tensor_value_info("y", F, [1, 4, 3])],
        [TOPK_K],
    )
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), str(tmp_path / "m.onnx"))
    status, _, err = run_cli("capture", str(tmp_path / "m.onnx"), "-o", str(tmp_path / "cap"))
    assert status == 1 and "without ep.dml.enable_graph_serialization the DirectML EP runs it" in err, err
    assert err.count("dml2onnx: error:") == 1 and not (tmp_path / "cap").exists()
