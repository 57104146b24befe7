"""Strided tensors: DMLCalcBufferTensorSize, `run` reading and writing bound buffers through
Strides, `export --buffer-inputs` applying them inside the graph, and `--single-graph`."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dml2onnx import lowering
from dml2onnx.backends import runtime
from dml2onnx.core import dtypes
from dml2onnx.core.tensor import TensorDesc
from dml2onnx.formats.dxdispatch import parse
from dml2onnx.graph import strided
from dml2onnx.graph.builder import GraphBuilder
from dml2onnx.ops import registry
from dml2onnx.run.executor import Executor
from support import argmax_model, make_desc, run_cli


def test_buffer_size_as_dml_calc_buffer_tensor_size() -> None:
    f32 = dtypes.FLOAT32
    assert TensorDesc(f32, (2, 3)).min_size_in_bytes == 24
    assert TensorDesc(f32, (2, 3), (4, 1)).min_size_in_bytes == 28  # last element 4 + 2 = 6: 7 elements
    assert TensorDesc(f32, (2, 3), (1, 2)).min_size_in_bytes == 24  # transposed: last 1 + 4 = 5
    assert TensorDesc(f32, (5, 3), (0, 1)).min_size_in_bytes == 12  # broadcast rows: one row
    assert TensorDesc(dtypes.UINT8, (3,)).min_size_in_bytes == 4  # rounded up to 4
    assert TensorDesc(dtypes.FLOAT16, (3,), (3,)).min_size_in_bytes == 16  # 7 halves: 14 bytes, rounded up
    assert TensorDesc(f32, (2, 2), (3, 1)).overlapping is False
    assert TensorDesc(f32, (3, 2), (1, 1)).overlapping is True  # windows
    assert TensorDesc(f32, (2, 2), (3, 2)).overlapping is False  # not nested, yet apart: 0, 2, 3, 5


def test_run_reads_a_padded_transposed_input_and_writes_a_padded_output(tmp_path: Path) -> None:
    # The logical 3x2 input is the transpose of rows [5, 1, 9] and [2, 8, 3] stored with padding 7:
    # element [i, j] at 7 * j + i. ArgMax over axis 1 picks, per row i, max(row0[i], row1[i]).
    buffer = [5, 1, 9, -1, -1, -1, -1, 2, 8, 3]
    model = argmax_model(
        {"DataType": "FLOAT32", "Sizes": [3, 2], "Strides": [1, 7]},
        buffer,
        {"DataType": "UINT32", "Sizes": [3, 1], "Strides": [2, 1]},  # every other element
        [77, 77, 77, 77, 77, 77],
    )
    ex = Executor(parse(model, tmp_path), "cpu", write_files=False)
    ex.run()
    assert ex.results[0][1]["OutputTensor"].ravel().tolist() == [0, 1, 0]  # [5, 2] -> 0, [1, 8] -> 1, [9, 3] -> 0
    assert ex.emitted[0][1].tolist() == [0, 77, 1, 77, 0, 77]  # the padding keeps its values


def test_run_broadcasts_a_stride_0_input(tmp_path: Path) -> None:
    model = argmax_model(
        {"DataType": "FLOAT32", "Sizes": [3, 4], "Strides": [0, 1]},
        [1, 7, 7, 2],
        {"DataType": "UINT32", "Sizes": [3, 1]},
        [9, 9, 9],
    )
    ex = Executor(parse(model, tmp_path), "cpu", write_files=False)
    ex.run()
    assert ex.emitted[0][1].tolist() == [1, 1, 1]


def _run_single_graph(path: str, feeds: dict[str, np.ndarray]) -> np.ndarray:
    """The first output of an exported single graph, fed only the inputs it declares."""
    import onnxruntime as ort

    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    names = {i.name for i in sess.get_inputs()}
    return sess.run(None, {k: v for k, v in feeds.items() if k in names})[0]


@pytest.mark.parametrize("layout", ["padded", "transposed", "broadcast", "windows"])
def test_export_buffer_inputs_and_single_graph_equal_run(layout: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    strides = {"padded": [6, 1], "transposed": [1, 3], "broadcast": [0, 1], "windows": [1, 1]}[layout]
    t = TensorDesc(dtypes.FLOAT32, (3, 4), tuple(strides))
    rng = np.random.default_rng(0)
    buffer = rng.integers(-5, 5, t.span).astype(np.float32).tolist()
    model = argmax_model(
        {"DataType": "FLOAT32", "Sizes": [3, 4], "Strides": strides}, buffer, {"DataType": "UINT32", "Sizes": [3, 1]}, [0, 0, 0]
    )
    monkeypatch.chdir(tmp_path)
    (tmp_path / "m.json").write_text(json.dumps(model))
    ex = Executor(parse(model, tmp_path), "cpu", write_files=False)
    ex.run()
    want = ex.results[0][1]["OutputTensor"]
    logical = np.asarray(buffer, np.float32)[t.offsets()]
    assert np.array_equal(want.ravel(), np.argmax(logical, axis=1))

    assert run_cli("export", "m.json", "-o", "out", "--buffer-inputs")[0] == 0
    flat_model = onnx.load("out/a.onnx")
    assert [d.dim_value for d in flat_model.graph.input[0].type.tensor_type.shape.dim] == [t.buffer_elements]
    got = runtime.create(flat_model, "a", "cpu").run({"InputTensor": np.asarray(buffer, np.float32)})
    assert np.array_equal(got, want)

    assert run_cli("export", "m.json", "-o", "out")[0] == 0  # default: the dense logical tensor
    got = runtime.create(onnx.load("out/a.onnx"), "a", "cpu").run({"InputTensor": logical})
    assert np.array_equal(got, want)

    assert run_cli("export", "m.json", "-o", "sg", "--single-graph")[0] == 0
    got = _run_single_graph("sg/m.onnx", {"x": np.asarray(buffer, np.float32)})
    assert np.array_equal(got.ravel(), want.ravel())


def test_single_graph_writes_through_output_strides(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    model = argmax_model(
        {"DataType": "FLOAT32", "Sizes": [3, 2]},
        [1, 2, 4, 3, 5, 6],
        {"DataType": "UINT32", "Sizes": [3, 1], "Strides": [2, 1]},
        [7] * 6,
    )
    monkeypatch.chdir(tmp_path)
    (tmp_path / "m.json").write_text(json.dumps(model))
    assert run_cli("export", "m.json", "-o", "sg", "--single-graph")[0] == 0
    got = _run_single_graph("sg/m.onnx", {"x": np.array([1, 2, 4, 3, 5, 6], np.float32), "y": np.full(6, 7, np.uint32)})
    assert got.tolist() == [1, 7, 0, 7, 1, 7]


def test_buffer_inputs_and_single_graph_refuse_each_other(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "m.json").write_text(
        json.dumps(argmax_model({"DataType": "FLOAT32", "Sizes": [1, 2]}, [1, 2], {"DataType": "UINT32", "Sizes": [1, 1]}, [0]))
    )
    status, _, err = run_cli("export", "m.json", "-o", "x", "--single-graph", "--buffer-inputs")
    assert status == 2 and "--buffer-inputs" in err and not (tmp_path / "x").exists()


@st.composite
def layouts(draw: st.DrawFn) -> tuple[tuple[int, ...], tuple[int, ...], int]:
    """Sizes, strides (padded, permuted, zero, overlapping) and extra buffer elements."""
    rank = draw(st.integers(1, 4))
    sizes = tuple(draw(st.integers(1, 4)) for _ in range(rank))
    kind = draw(st.sampled_from(["nested", "any"]))
    if kind == "nested":  # a permutation of a padded dense layout, some axes broadcast
        order = draw(st.permutations(range(rank)))
        strides, step = [0] * rank, draw(st.integers(1, 3))
        for axis in reversed(order):
            strides[axis] = step
            step *= sizes[axis] + draw(st.integers(0, 2))
        strides = [0 if draw(st.integers(0, 5)) == 0 else s for s in strides]
    else:
        strides = [draw(st.integers(0, 7)) for _ in range(rank)]
    return sizes, tuple(strides), draw(st.integers(0, 5))


@settings(max_examples=150, deadline=None)
@given(layout=layouts(), dtype=st.sampled_from(["FLOAT32", "FLOAT16", "INT8", "UINT64"]))
def test_strided_read_in_the_graph_equals_numpy(layout: tuple[tuple[int, ...], tuple[int, ...], int], dtype: str) -> None:
    sizes, strides, extra = layout
    dt = dtypes.BY_NAME[dtype]
    t = TensorDesc(dt, sizes, strides)
    length = t.span + extra
    b = GraphBuilder("t")
    y = strided.read(b, b.add_input("buffer", dt, [length]), t, length, "view")
    b.set_output(y, "OutputTensor", dt, sizes)
    model = onnx.helper.make_model(b.graph("g", ""), opset_imports=[onnx.helper.make_opsetid("", 17)], ir_version=8)
    onnx.checker.check_model(onnx.shape_inference.infer_shapes(model, strict_mode=True), full_check=True)
    buffer = (np.arange(length) % 120).astype(dt.numpy)
    got = runtime.create(model, "t", "cpu").run({"buffer": buffer})
    assert np.array_equal(got, buffer[t.offsets()])


def test_lowering_with_buffer_inputs_for_every_input_of_mvn() -> None:
    fields = {
        "InputTensor": {"DataType": "FLOAT32", "Sizes": [1, 2, 2, 2], "Strides": [0, 1, 4, 2]},
        "ScaleTensor": {"DataType": "FLOAT32", "Sizes": [1, 2, 1, 1], "Strides": [2, 1, 2, 2], "TotalTensorSizeInBytes": 16},
        "OutputTensor": {"DataType": "FLOAT32", "Sizes": [1, 2, 2, 2]},
        "CrossChannel": False,
        "NormalizeVariance": True,
        "Epsilon": 1e-5,
    }
    desc = make_desc("MEAN_VARIANCE_NORMALIZATION", fields)
    model = lowering.lower(desc, "m", buffer_inputs=True)
    x_buf = np.arange(8, dtype=np.float32) ** 2
    s_buf = np.array([2, -1, 9, 9], np.float32)
    got = runtime.create(model, "m", "cpu").run({"InputTensor": x_buf, "ScaleTensor": s_buf})
    x = x_buf[desc.tensor("InputTensor").offsets()]
    s = s_buf[desc.tensor("ScaleTensor").offsets()]
    want = registry.family("MEAN_VARIANCE_NORMALIZATION").reference(desc, {"InputTensor": x, "ScaleTensor": s})
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    assert {p.key: p.value for p in model.metadata_props}["dml2onnx.inputs"] == "buffers"
