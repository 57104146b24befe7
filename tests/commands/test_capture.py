"""`dml2onnx capture`: what ONNX Runtime's DirectML EP writes for real networks (dml2onnx/cases/corpus.py),
read back, run as the DxDispatch model capture writes, and compared with the original model."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

from dml2onnx.backends import dmlapi, winhost
from dml2onnx.cases import corpus as networks
from dml2onnx.commands import capture, whole_model
from dml2onnx.formats import serialized_graph
from support import run_cli

live = pytest.mark.skipif(
    not winhost.available(),
    reason=f"the DirectML EP under Wine is not set up ({winhost.missing()}): `make dml-setup` installs it",
)


def _small_model(path: Path, dims: list[int | str], extra: list | None = None) -> Path:
    """Relu, then `extra`, then Neg: a model the DirectML EP compiles into one partition (or more)."""
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="relu0"), *(extra or [])]
    last = nodes[-1].output[0]
    nodes.append(helper.make_node("Neg", [last], ["y"], name="neg1"))
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, dims)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n"] if extra else dims)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    onnx.save(model, str(path))
    return path


def _original(model: Path, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    session = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    return dict(zip(names, session.run(names, inputs), strict=True))


def _chain(folder: Path, json_name: str, ep: str) -> None:
    """Runs the capture's DxDispatch model in its folder (its writeFile targets land there)."""
    here = os.getcwd()
    os.chdir(folder)
    try:
        status, _, err = run_cli(*["run", json_name, "--ep", ep, "-q"])
    finally:
        os.chdir(here)
    assert status == 0, err


def _assert_matches(got: np.ndarray, want: np.ndarray, what: str) -> None:
    """Whole networks through different kernels: within 1e-4 of the output's scale in FLOAT32,
    1e-2 in FLOAT16 (a few FLOAT16 ulps at 1), and the same non-finite values."""
    assert got.dtype == want.dtype and got.shape == want.shape, (what, got.dtype, got.shape, want.dtype, want.shape)
    g, w = got.astype(np.float64), want.astype(np.float64)
    assert np.array_equal(np.isnan(g), np.isnan(w)), what
    finite = np.isfinite(w)
    assert np.array_equal(g[~finite], w[~finite]), what
    scale = max(1.0, float(np.max(np.abs(w[finite]), initial=0)))
    limit = (1e-2 if want.dtype == np.float16 else 1e-4) * scale if want.dtype.kind == "f" else 0
    err = float(np.max(np.abs(g[finite] - w[finite]), initial=0))
    assert err <= limit, f"{what}: max abs error {err} over {limit}"


# -- without Wine ---------------------------------------------------------------------------------------


def test_outside_nodes_are_those_no_partition_walks_back_to() -> None:
    a = helper.make_node("Relu", ["x"], ["a"], name="first")
    lstm = helper.make_node("LSTM", ["a", "w", "r"], ["h"], name="lstm", hidden_size=2)
    b = helper.make_node("Tanh", ["h"], ["b"], name="tanh")
    c = helper.make_node("Add", ["b", "k"], ["y"], name="add")
    graph = helper.make_graph([a, lstm, b, c], "g", [], [])
    model = helper.make_model(graph)
    parts = [
        capture.Partition(0, Path("p0"), ("x",), ("a",)),
        capture.Partition(1, Path("p1"), ("h",), ("y",)),
    ]
    assert [n.name for n in capture.outside_nodes(model, parts)] == ["lstm"]
    assert [n.name for n in capture.outside_nodes(model, parts[:1])] == ["lstm", "tanh", "add"]


def test_file_names_of_values() -> None:
    assert capture.file_names(["a/b", "a_b", "A_B", "c"]) == {"a/b": "a_b", "a_b": "a_b#2", "A_B": "A_B#3", "c": "c"}
    assert capture.file_name("/lstm/LSTM_output_0") == "_lstm_LSTM_output_0"
    assert capture.file_name("..hidden") == "hidden"
    assert capture.file_name("a b:c") == "a_b_c"


def test_refusals_before_anything_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(winhost, "missing", lambda: None)  # the checks below come first
    dynamic = _small_model(tmp_path / "dynamic.onnx", ["batch", 3])
    status, _, err = run_cli(*["capture", str(dynamic), "-o", str(tmp_path / "out")])
    assert status == 2 and "input 'x' is FLOAT[batch,3]: capture needs static shapes (-f batch:N" in err, err
    not_onnx = tmp_path / "not.onnx"
    not_onnx.write_bytes(b"\x00\x01garbage")
    status, _, err = run_cli(*["capture", str(not_onnx), "-o", str(tmp_path / "out")])
    assert status == 2 and "is not an ONNX model" in err, err
    fixed = _small_model(tmp_path / "fixed.onnx", [2, 3])
    np.save(tmp_path / "wrong.npy", np.zeros((3, 3), np.float32))
    status, _, err = run_cli(*["capture", str(fixed), "-o", str(tmp_path / "out"), "--input", f"x={tmp_path / 'wrong.npy'}"])
    assert status == 2 and "float32[3, 3], the model wants float32[2, 3]" in err, err
    status, _, err = run_cli(*["capture", str(fixed), "-o", str(tmp_path / "out"), "--input", "z=a.npy"])
    assert status == 2 and "--input z: the model has no such input (it has: x)" in err, err
    status, _, err = run_cli(*["capture", str(fixed), "-o", str(tmp_path / "out"), "--input", "x"])
    assert status == 2 and "expected NAME=FILE.npy" in err, err
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "keep.txt").write_text("mine")
    status, _, err = run_cli(*["capture", str(fixed), "-o", str(tmp_path / "full")])
    assert status == 2 and "exists and is not an empty folder" in err, err
    assert not (tmp_path / "out").exists() and os.listdir(tmp_path / "full") == ["keep.txt"]


def test_without_wine_the_error_says_how_to_set_it_up(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(winhost, "missing", lambda: "'wine' is not installed")
    status, _, err = run_cli(*["capture", str(_small_model(tmp_path / "m.onnx", [2])), "-o", str(tmp_path / "out")])
    assert status == 1 and "'wine' is not installed" in err and "make dml-setup" in err, err
    assert not (tmp_path / "out").exists()


# -- the DirectML EP under Wine --------------------------------------------------------------------------


@live
def test_lstm_and_gru_run_outside_the_partitions_and_the_chain_matches(tmp_path: Path) -> None:
    model = networks.EXPORTED / "lstm_gru.onnx"
    status, out, err = run_cli(*["capture", str(model), "-o", str(tmp_path / "cap")])
    assert status == 0, err
    folder = tmp_path / "cap"
    assert sorted(p.name for p in (folder / "lstm_gru").glob("Partition_*.bin")) == [f"Partition_{i}.bin" for i in range(3)]
    assert "outside any partition: /lstm/LSTM (LSTM)" in out and "outside any partition: /gru/GRU (GRU)" in out
    assert sorted(p.name for p in (folder / "outside").iterdir()) == ["_gru_GRU.onnx", "_lstm_LSTM.onnx"]
    assert "capture: Partition_2: 1 inputs, 1 outputs, 8 nodes" in err
    inputs = {"sequence": np.load(folder / "inputs" / "sequence.npy")}
    want = _original(model, inputs)["scores"]
    _assert_matches(np.load(folder / "expected" / "scores.npy"), want, "the DirectML EP's own output")
    for ep in ("cpu", "dml-api"):  # dml-api: DirectML compiles the partitions, the DirectML EP runs LSTM and GRU
        _chain(folder, "lstm_gru.json", ep)
        _assert_matches(np.load(folder / "scores.npy"), want, f"the captured chain on {ep}")
    assert f"{folder / 'lstm_gru.lowered.onnx'}: the whole model as DirectML runs it" in out
    rng = np.random.default_rng(4)
    for p in sorted((folder / "lstm_gru").glob("Partition_*.bin")):  # DirectML compiling each, beside the reference
        graph = serialized_graph.load(p)
        feeds = {n: rng.standard_normal(t.sizes).astype(np.float32) for n, t in graph.inputs.items()}
        got, ref = dmlapi.execute_graph(graph, feeds), serialized_graph.reference(graph, feeds)
        for name, value in ref.items():
            np.testing.assert_allclose(got[name], value, rtol=1e-5, atol=1e-6, err_msg=f"{p.name}: {name}")
    _assert_matches(_original(folder / "lstm_gru.lowered.onnx", inputs)["scores"], want, "the whole lowered model")


@live
def test_given_inputs_are_used_and_written(tmp_path: Path) -> None:
    model = _small_model(tmp_path / "small.onnx", [2, 3])
    x = np.array([[1.5, -2, 3], [-4, 5, -6]], np.float32)
    np.save(tmp_path / "x.npy", x)
    args = ["capture", str(model), "-o", str(tmp_path / "cap"), "--input", f"x={tmp_path / 'x.npy'}", "-q", "--json"]
    status, out, err = run_cli(*args)
    assert status == 0 and err == "", err
    got = json.loads(out)
    assert got["partitions"] and all(p["nodes"] >= 1 for p in got["partitions"]) and got["outside"] == []
    assert Path(got["model"]).exists() and got["lowered"] is not None and Path(got["lowered"]).exists()
    assert np.array_equal(np.load(tmp_path / "cap" / "inputs" / "x.npy"), x)
    assert np.array_equal(np.load(tmp_path / "cap" / "expected" / "y.npy"), -np.maximum(x, 0))


@live
def test_bench_times_the_capture_lowered_against_its_original(tmp_path: Path) -> None:
    model = _small_model(tmp_path / "small.onnx", [2, 3, 8, 8])
    assert run_cli("capture", str(model), "-o", str(tmp_path / "cap"), "-q")[0] == 0
    status, out, err = run_cli("bench", str(tmp_path / "cap"), "--original", str(model), "--ep", "cpu", "-i", "5", "--json")
    got = json.loads(out)
    assert status == 0 and got["engine"] == "CPUExecutionProvider" and got["iterations"] == 5, err
    assert [g["graph"] for g in got["graphs"]] == ["original", "lowered, target portable", "lowered, target cpu"]
    assert got["graphs"][0]["nodes"] == 2 and got["graphs"][0]["ratio"] == 1.0
    assert all(g["max_abs_vs_original"] == 0 and g["median_ms"] > 0 and g["ratio"] > 0 for g in got["graphs"])
    status, out, _ = run_cli("bench", str(tmp_path / "cap"), "--original", str(model), "--ep", "cpu", "-i", "3", "-q")
    lines = out.splitlines()
    assert status == 0 and lines[0].split() == [
        "graph",
        "nodes",
        "median",
        "ms",
        "min",
        "ms",
        "ratio",
        "max",
        "abs",
        "vs",
        "original",
    ]
    assert lines[1].startswith("original ") and " 1.00x  0" in lines[1] and "ratio: the original's median over the graph's" in out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("bench", "{tmp}"), "is a folder: bench of a capture needs --original MODEL.onnx"),
        (("bench", "{tmp}", "--original", "{tmp}/m.onnx"), "is not a dml2onnx capture folder"),
        (("bench", "{models}/gemm_add.json", "--original", "m.onnx"), "--original is for a capture folder"),
    ],
)
def test_bench_of_a_capture_refuses_in_one_line(tmp_path: Path, args: tuple[str, ...], message: str) -> None:
    models = Path(__file__).resolve().parents[2] / "models"
    status, _, err = run_cli(*(a.format(tmp=tmp_path, models=models) for a in args))
    assert status == 2 and message in err and err.count("\n") == 1, err


@live
def test_a_node_the_directml_ep_does_not_take_is_named_and_nothing_is_written(tmp_path: Path) -> None:
    unique = helper.make_node("Unique", ["r"], ["u"], name="my_unique", sorted=1)
    model = _small_model(tmp_path / "cpu_node.onnx", [6], extra=[unique])
    status, _, err = run_cli(*["capture", str(model), "-o", str(tmp_path / "cap")])
    assert status == 1 and "ONNX Runtime gives my_unique (Unique) to the CPU EP" in err, err
    assert not (tmp_path / "cap").exists() and [p.name for p in tmp_path.iterdir()] == ["cpu_node.onnx"]


# -- the corpus ----------------------------------------------------------------------------------------------


# Networks of over a GFLOP at their fixed 224x224 input (about 2 minutes each on the 2-core machine
# with every chain): AlexNet, VGG-19, ZFNet-512.
COMPUTE_BOUND = ("bvlc_alexnet", "vgg19", "zfnet512")


@pytest.mark.dml
@live
@pytest.mark.parametrize("name", networks.NAMES)
def test_corpus_network_captured_read_and_matched(name: str, tmp_path: Path) -> None:
    model = networks.network(name, tmp_path / "model")
    result = capture.capture(model, tmp_path / "cap", {}, 0, capture.SessionSettings(), io.StringIO())
    unread = [f"{p.name}: {p.problem}" for p in result.partitions if p.graph is None]
    assert not unread, unread
    want = _original(model, result.inputs)
    for output, value in want.items():
        _assert_matches(result.outputs[output], value, f"{name}: {output} on the DirectML EP")
    assert result.lowered is not None
    lowered = _original(result.lowered, result.inputs)
    for output, value in want.items():
        _assert_matches(lowered[output], value, f"{name}: {output} of the whole lowered model on the CPU EP")
    for target in ("cpu", "cuda"):  # the graphs bench builds for those engines, run on the CPU EP
        path = tmp_path / f"{target}.onnx"
        onnx.save(whole_model.whole_model(result.model_json, onnx.load(model), target), str(path))
        got = _original(path, result.inputs)
        for output, value in want.items():
            _assert_matches(got[output], value, f"{name}: {output} of the model lowered for {target}")
    # dml-api: DirectML's API compiles each partition itself; the nodes outside run on the DirectML EP.
    # The lowered graphs of the heaviest networks skip the DirectML EP: their Conv/Gemm/pooling nodes
    # are the other CNNs' (which run there), and each of their runs costs about a minute under lavapipe.
    for ep in ("cpu", "dml-api") if name in COMPUTE_BOUND else ("cpu", "dml", "dml-api"):
        _chain(result.folder, result.model_json.name, ep)
        for output, value in want.items():
            got = np.load(result.folder / f"{capture.file_name(output)}.npy")
            _assert_matches(got.astype(value.dtype) if value.dtype == np.bool_ else got, value, f"{name}: {output} on {ep}")


# -- ConvTranspose with output_padding / output_shape (DML_OPERATOR_CONVOLUTION's OutputTensor sizes) -------


def _conv_transpose_model(path: Path, x: list[int], w: list[int], y: list[int], bias: bool, **attrs: object) -> Path:
    rng = np.random.default_rng(7)
    inits = [helper.make_tensor("w", TensorProto.FLOAT, w, (rng.integers(-8, 9, w) / 8).ravel().tolist())]
    if bias:
        inits.append(helper.make_tensor("b", TensorProto.FLOAT, [w[1]], [100.0 * (i + 1) for i in range(w[1])]))
    node = helper.make_node("ConvTranspose", ["x", "w", "b"] if bias else ["x", "w"], ["y"], kernel_shape=w[2:], **attrs)
    graph = helper.make_graph(
        [node],
        path.stem,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, x)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, y)],
        inits,
    )
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), str(path))
    return path


@live
@pytest.mark.parametrize(
    ("name", "x", "w", "y", "bias", "attrs"),
    [
        # PyTorch's ConvTranspose2d(k3, s2, p1, output_padding 1) on 4x4 (/tmp/stress/repros/convtranspose_outpad.onnx):
        # the DirectML EP writes OutputPadding 0 and an OutputTensor of 8 (the formula: 7)
        (
            "convtranspose_outpad",
            [1, 1, 4, 4],
            [1, 1, 3, 3],
            [1, 1, 8, 8],
            False,
            {"strides": [2, 2], "pads": [1, 1, 1, 1], "output_padding": [1, 1]},
        ),
        # output_shape 10 past the full transposed result (9): the last row and column are the Bias alone
        (
            "convtranspose_output_shape",
            [1, 2, 4, 4],
            [2, 3, 3, 3],
            [1, 3, 10, 10],
            True,
            {"strides": [2, 2], "output_shape": [10, 10]},
        ),
    ],
)
def test_conv_transpose_with_output_padding_is_captured_read_and_matched(
    name: str, x: list[int], w: list[int], y: list[int], bias: bool, attrs: dict[str, object], tmp_path: Path
) -> None:
    model = _conv_transpose_model(tmp_path / f"{name}.onnx", x, w, y, bias, **attrs)
    folder = tmp_path / "cap"
    status, _, err = run_cli("capture", str(model), "-o", str(folder))
    assert status == 0 and "not read" not in err and "cannot read" not in err, err  # every partition read
    lowered = folder / f"{name}.lowered.onnx"
    assert lowered.is_file(), err
    inputs = {"x": np.load(folder / "inputs" / "x.npy")}
    want = _original(model, inputs)["y"]
    expected = np.load(folder / "expected" / "y.npy")  # the DirectML EP's output
    _assert_matches(expected, want, f"{name}: the DirectML EP vs the CPU EP")
    assert list(want.shape) == y
    if bias:  # nothing reaches the last row and column: the Bias alone, on the DirectML EP too
        for m in range(3):
            assert (
                expected[0, m, 9, :].tolist() == [100.0 * (m + 1)] * 10
                and expected[0, m, :, 9].tolist() == [100.0 * (m + 1)] * 10
            )
    _assert_matches(_original(lowered, inputs)["y"], want, f"{name}: the lowered model on the CPU EP")
    for ep in ("cpu", "dml-api"):
        _chain(folder, f"{name}.json", ep)
        _assert_matches(np.load(folder / "y.npy"), expected, f"{name}: y on {ep}")


# -- descs the DirectML EP writes past the pages' rules: ceil_mode pooling, REDUCE without Axes, ONE_HOT's
# ValuesTensor of another rank (/tmp/stress/repros: maxpool_ceil, avgpool_ceil, einsum_*, reducesum_noop, onehot)


def _one_node(path: Path, node: onnx.NodeProto, x: tuple[str, int, list[int]], y: list[int], inits: list | None = None) -> Path:
    """A model of `node` alone: input (name, ONNX type, dims), FLOAT32 output `y` of those dims."""
    graph = helper.make_graph(
        [node],
        path.stem,
        [helper.make_tensor_value_info(*x)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, y)],
        inits or [],
    )
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), str(path))
    return path


def _captured(model: Path, folder: Path) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Captures `model`: every partition read, its chain on the CPU EP and through DirectML's API
    and its lowered model (CPU EP) all give the DirectML EP's output (expected/y.npy), returned
    with the inputs the capture used."""
    status, _, err = run_cli("capture", str(model), "-o", str(folder))
    assert status == 0 and "not read" not in err and "cannot read" not in err, err
    lowered = folder / f"{model.stem}.lowered.onnx"
    assert lowered.is_file(), err
    inputs = {p.stem: np.load(p) for p in (folder / "inputs").glob("*.npy")}
    expected = np.load(folder / "expected" / "y.npy")
    for ep in ("cpu", "dml-api"):
        _chain(folder, f"{model.stem}.json", ep)
        _assert_matches(np.load(folder / "y.npy"), expected, f"{model.stem}: y on {ep}")
    _assert_matches(_original(lowered, inputs)["y"], expected, f"{model.stem}: the lowered model on the CPU EP")
    return expected, inputs


@live
def test_max_pool_with_ceil_mode_is_captured_read_and_matched(tmp_path: Path) -> None:
    """MaxPool k3 s2 p0 ceil_mode on 8x8: the DirectML EP writes OutputTensor [1, 1, 4, 4] (the
    pages' formula: 3) with EndPadding 0; the last window reads columns 6 and 7 only."""
    node = helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1)
    model = _one_node(tmp_path / "maxpool_ceil.onnx", node, ("x", TensorProto.FLOAT, [1, 1, 8, 8]), [1, 1, 4, 4])
    expected, inputs = _captured(model, tmp_path / "cap")
    x = inputs["x"][0, 0]
    want = [[x[max(0, 2 * i) : 2 * i + 3, 2 * j : 2 * j + 3].max() for j in range(4)] for i in range(4)]
    assert expected[0, 0].tolist() == want
    assert np.array_equal(_original(model, inputs)["y"], expected)  # ONNX's ceil_mode MaxPool agrees


@live
def test_average_pool_with_ceil_mode_and_padding_is_captured_read_and_matched(tmp_path: Path) -> None:
    """AveragePool k3 s2 p1 ceil_mode count_include_pad on 6x6 -> 4x4: DirectML divides the last
    window (one of its rows or columns past the padded input) by 9, the CPU EP by the 6 within it."""
    node = helper.make_node(
        "AveragePool", ["x"], ["y"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], ceil_mode=1, count_include_pad=1
    )
    model = _one_node(tmp_path / "avgpool_ceil.onnx", node, ("x", TensorProto.FLOAT, [1, 1, 6, 6]), [1, 1, 4, 4])
    expected, inputs = _captured(model, tmp_path / "cap")
    padded = np.pad(inputs["x"][0, 0].astype(np.float64), [(1, 2), (1, 2)])  # StartPadding 1, EndPadding 1 + 1
    want = np.array([[padded[2 * i : 2 * i + 3, 2 * j : 2 * j + 3].sum() / 9 for j in range(4)] for i in range(4)])
    np.testing.assert_allclose(expected[0, 0], want, rtol=1e-5, atol=1e-6)
    cpu = _original(model, inputs)["y"][0, 0]
    np.testing.assert_allclose(cpu[:3, :3], want[:3, :3], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(cpu[3, :3], want[3, :3] * 9 / 6, rtol=1e-5, atol=1e-6)  # ONNX Runtime: / 6


@live
@pytest.mark.parametrize(
    ("name", "node", "x", "y"),
    [
        ("einsum_diag", helper.make_node("Einsum", ["x"], ["y"], equation="ii->i"), [4, 4], [4]),
        ("einsum_transpose", helper.make_node("Einsum", ["x"], ["y"], equation="abc->cab"), [2, 3, 4], [4, 2, 3]),
        ("reducesum_noop", helper.make_node("ReduceSum", ["x"], ["y"], noop_with_empty_axes=1), [2, 3], [2, 3]),
    ],
)
def test_reduce_without_axes_is_captured_read_and_matched(
    name: str, node: onnx.NodeProto, x: list[int], y: list[int], tmp_path: Path
) -> None:
    """The DirectML EP writes these as REDUCE SUM with AxisCount 0 over a strided view (the
    diagonal: sizes [4], strides [5]); the transpose's graph output has Strides (3, 1, 6), which
    the chain writes through."""
    model = _one_node(tmp_path / f"{name}.onnx", node, ("x", TensorProto.FLOAT, x), y)
    expected, inputs = _captured(model, tmp_path / "cap")
    assert np.array_equal(expected, _original(model, inputs)["y"])
    v = inputs["x"]
    want = np.diagonal(v) if name == "einsum_diag" else np.transpose(v, (2, 0, 1)) if name == "einsum_transpose" else v
    assert np.array_equal(expected, want)


@live
def test_one_hot_with_values_of_another_rank_is_captured_read_and_matched(tmp_path: Path) -> None:
    """OneHot of [2, 5] INT64 indices, depth 7: the DirectML EP writes IndicesTensor [2, 5, 1] beside
    ValuesTensor [1, 1, 1, 2]."""
    inits = [
        helper.make_tensor("depth", TensorProto.INT64, [], [7]),
        helper.make_tensor("values", TensorProto.FLOAT, [2], [0.0, 1.0]),
    ]
    node = helper.make_node("OneHot", ["i", "depth", "values"], ["y"], axis=-1)
    model = _one_node(tmp_path / "onehot.onnx", node, ("i", TensorProto.INT64, [2, 5]), [2, 5, 7], inits)
    expected, inputs = _captured(model, tmp_path / "cap")
    assert np.array_equal(expected, _original(model, inputs)["y"])
    assert expected.sum() == np.count_nonzero((inputs["i"] >= -7) & (inputs["i"] < 7))
