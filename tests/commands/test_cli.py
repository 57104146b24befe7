"""The command line: run, export, print, writeFile, --help, EP selection."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import numpy as np
import onnx
import pytest

from dml2onnx.backends import runtime
from dml2onnx.ops import registry
from support import printed, run_cli, write_model

MODELS = Path(__file__).resolve().parents[2] / "models"


def onehot_model(commands: list[dict]) -> dict:
    return {
        "resources": {
            "indices": {"initialValuesDataType": "INT64", "initialValues": [2, -1, 7]},
            "values": {"initialValuesDataType": "FLOAT16", "initialValues": [0.5, -2]},
            "out": {"initialValuesDataType": "FLOAT16", "initialValues": {"valueCount": 12, "value": 0}},
        },
        "dispatchables": {
            "oh": {
                "type": "ONE_HOT",
                "desc": {
                    "IndicesTensor": {"DataType": "INT64", "Sizes": [3, 1]},
                    "ValuesTensor": {"DataType": "FLOAT16", "Sizes": [1, 2]},
                    "OutputTensor": {"DataType": "FLOAT16", "Sizes": [3, 4]},
                    "Axis": 1,
                },
            }
        },
        "commands": [
            {
                "type": "dispatch",
                "dispatchable": "oh",
                "bindings": {"IndicesTensor": "indices", "ValuesTensor": "values", "OutputTensor": "out"},
            },
            *commands,
        ],
    }


def test_help_for_every_command() -> None:
    for args in (["--help"], ["run", "--help"], ["export", "--help"]):
        status, out, _ = run_cli(*args)
        assert status == 0 and "usage: dml2onnx" in out
    status, out, _ = run_cli("--version")
    assert status == 0 and out.startswith("dml2onnx ")


def test_usage_error_is_exit_2() -> None:
    status, _, err = run_cli("run")
    assert status == 2 and "MODEL.json" in err
    status, _, err = run_cli("export", "--allow-any-path", "x.json", "-o", "d", "--opset", "9")
    assert status == 2 and "--opset" in err


def test_run_prints_and_writes_npy_and_raw(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    model = onehot_model(
        [
            {"type": "print", "resource": "out"},
            {"type": "writeFile", "resource": "out", "targetPath": "sub/out.npy", "dimensions": [3, 4]},
            {"type": "writeFile", "resource": "out", "targetPath": "flat.npy"},
            {"type": "writeFile", "resource": "out", "targetPath": "out.bin"},
        ]
    )
    status, out, err = run_cli("run", write_model(tmp_path, model))
    assert status == 0, err
    expected = np.array([[0.5, 0.5, -2, 0.5], [0.5, 0.5, 0.5, -2], [0.5] * 4], np.float16)
    assert printed(out)["out"] == expected.reshape(-1).tolist()
    got = np.load(tmp_path / "sub" / "out.npy")
    assert got.dtype == np.float16 and got.shape == (3, 4) and np.array_equal(got, expected)
    assert np.load(tmp_path / "flat.npy").shape == (12,)
    assert (tmp_path / "out.bin").read_bytes() == expected.tobytes()
    assert "written to" in err
    assert re.search(r"^Dispatch '\w+': 1 iteration, [\d.]+ ms \(", err, re.M), err  # one, not "1 iterations"


def test_print_verbose_format(tmp_path: Path) -> None:
    model = onehot_model([{"type": "print", "resource": "indices", "verbose": True}])
    status, out, _ = run_cli("run", write_model(tmp_path, model))
    assert status == 0
    assert out == ("Resource 'indices':\n[0] 2 (0x               2)\n[1] -1 (0xFFFFFFFFFFFFFFFF)\n[2] 7 (0x               7)\n\n")


def test_print_float_formatting(tmp_path: Path) -> None:
    model = {
        "resources": {
            "r": {"initialValuesDataType": "FLOAT32", "initialValues": [1, 3.5, -5, 0.1, 1e6, 1234567, "inf", "-inf", "nan"]}
        },
        "dispatchables": {},
        "commands": [{"type": "print", "resource": "r"}],
    }
    status, out, _ = run_cli("run", write_model(tmp_path, model))
    assert status == 0
    assert out == "Resource 'r': 1, 3.5, -5, 0.1, 1e+06, 1.23457e+06, inf, -inf, nan\n"


def test_export_writes_checked_models(tmp_path: Path) -> None:
    status, _, err = run_cli("export", "--allow-any-path", str(MODELS / "argmax.json"), "-o", str(tmp_path))
    assert status == 0, err
    files = sorted(p.name for p in tmp_path.iterdir())
    assert files == ["argmax_all.onnx", "argmax_columns.onnx", "argmax_rows.onnx"]
    m = onnx.load(tmp_path / "argmax_all.onnx")
    onnx.checker.check_model(m, full_check=True)
    assert [i.name for i in m.graph.input] == ["InputTensor"]
    assert [o.name for o in m.graph.output] == ["OutputTensor"]
    out_type = m.graph.output[0].type.tensor_type
    assert out_type.elem_type == onnx.TensorProto.UINT32
    assert [d.dim_value for d in out_type.shape.dim] == [1, 1]
    assert all(n.name.startswith("argmax_all/") and n.doc_string for n in m.graph.node)
    props = {p.key: p.value for p in m.metadata_props}
    assert props["dml2onnx.operator"] == "DML_OPERATOR_ARGMAX" and props["dml2onnx.target"] == "portable"
    assert json.loads(props["dml2onnx.desc"])["Axes"] == [0, 1]


@pytest.mark.parametrize("opset", [13, 17, 18, 21])
def test_every_model_runs_at_every_supported_opset(opset: int) -> None:
    for model in sorted(MODELS.glob("*.json")):
        status, _, err = run_cli("run", str(model), "--opset", str(opset), "-q")
        assert status == 0, (model, err)


def test_export_all_inputs_named_after_desc_fields(tmp_path: Path) -> None:
    status, _, err = run_cli("export", "--allow-any-path", str(MODELS / "mean_variance_normalization.json"), "-o", str(tmp_path))
    assert status == 0, err
    m = onnx.load(tmp_path / "mvn_cross_channel_scaled_relu.onnx")
    assert [i.name for i in m.graph.input] == ["InputTensor", "ScaleTensor", "BiasTensor"]
    assert "Relu" in [n.op_type for n in m.graph.node]


def test_committed_onnx_files_match_a_fresh_export(tmp_path: Path) -> None:
    committed = MODELS / "onnx"
    for model in sorted(MODELS.glob("*.json")):
        out = tmp_path / model.stem
        assert run_cli("export", "--allow-any-path", str(model), "-o", str(out))[0] == 0
        assert run_cli("export", "--allow-any-path", str(model), "-o", str(tmp_path), "--single-graph", "--functions")[0] == 0
        fresh_files = [*out.iterdir(), tmp_path / f"{model.stem}.onnx"]
        for fresh in fresh_files:
            kept = committed / fresh.relative_to(tmp_path)
            assert kept.read_bytes() == fresh.read_bytes(), fresh.name


def test_missing_gpu_ep_is_one_line_exit_1(tmp_path: Path) -> None:
    if "cuda" in runtime.available():
        pytest.skip("the CUDA EP is installed here")
    status, out, err = run_cli("run", str(MODELS / "argmax.json"), "--ep", "cuda")
    assert status == 1 and out == ""
    assert err.count("\n") == 1 and "onnxruntime-gpu" in err


def test_auto_ep_says_which_it_chose() -> None:
    status, _, err = run_cli("run", str(MODELS / "argmax.json"), "--ep", "auto")
    assert status == 0 and runtime.PROVIDERS[runtime.available()[0]] in err


def test_same_resource_in_and_out(tmp_path: Path) -> None:
    """In-place dispatch, as DirectML allows: inputs are read before the output is written."""
    model = {
        "resources": {"x": {"initialValuesDataType": "FLOAT32", "initialValues": [1, 5, 2, 5]}},
        "dispatchables": {
            "h": {
                "type": "ACTIVATION_HARDMAX1",
                "InputTensor": {"DataType": "FLOAT32", "Sizes": [4]},
                "OutputTensor": {"DataType": "FLOAT32", "Sizes": [4]},
                "AxisCount": 1,
                "Axes": [0],
            }
        },
        "commands": [
            {"type": "dispatch", "dispatchable": "h", "bindings": {"InputTensor": "x", "OutputTensor": "x"}},
            {"type": "print", "resource": "x"},
        ],
    }
    status, out, err = run_cli("run", write_model(tmp_path, model))
    assert status == 0, err
    assert out == "Resource 'x': 0, 1, 0, 0\n"  # inline desc form, first of the tied maxima


def test_comments_trailing_commas_and_binding_objects(tmp_path: Path) -> None:
    text = """{
      // DxDispatch accepts comments and trailing commas
      "resources": {
        "buf": { "initialValuesDataType": "FLOAT32", "initialValues": [9, 9, 1, 3, 2], },
        "out": { "initialValuesDataType": "INT32", "initialValues": [0] },
      },
      "dispatchables": {
        "am": { "type": "DML_OPERATOR_ARGMAX", "desc": {
          "InputTensor": { "Type": "DML_TENSOR_TYPE_BUFFER", "Desc": { "DataType": "FLOAT32", "Sizes": [3] } },
          "OutputTensor": { "DataType": "INT32", "Sizes": [1] },
          "AxisCount": 1, "Axes": [0], "AxisDirection": "INCREASING" /* first max */ } },
      },
      "commands": [
        { "type": "dispatch", "dispatchable": "am",
          "bindings": { "InputTensor": [{ "name": "buf", "elementOffset": 2 }], "OutputTensor": "out" } },
        { "type": "print", "resource": "out" },
      ],
    }"""
    path = tmp_path / "m.json"
    path.write_text(text)
    status, out, err = run_cli("run", str(path))
    assert status == 0, err
    assert out == "Resource 'out': 1\n"  # argmax of [1, 3, 2], read from element 2 on


def test_check_every_model_against_the_reference() -> None:
    """On every engine present but the DirectML EP under Wine (seconds per session: make test-dml)."""
    eps = [arg for ep in runtime.engines() if not (ep == "dml" and runtime.wine_dml()) for arg in ("--ep", ep)]
    for model in sorted(MODELS.glob("*.json")):
        status, out, err = run_cli("check", str(model), *eps)
        assert status == 0, (model, out, err)
        assert "all match, every node on its EP" in out and "MISMATCH" not in out


def test_check_reports_a_mismatch_with_exit_1(monkeypatch: pytest.MonkeyPatch) -> None:
    wrong = dataclasses.replace(
        registry.family("ARGMAX"), reference=lambda desc, inputs: np.zeros(desc.tensor("OutputTensor").sizes, np.uint32)
    )
    monkeypatch.setitem(registry.BY_OPERATOR, "ARGMAX", wrong)
    status, out, _ = run_cli("check", str(MODELS / "argmax.json"), "--ep", "cpu")
    assert status == 1 and "MISMATCH" in out and "failed" in out


def test_static_dml_check_of_every_model_and_target() -> None:
    for model in sorted(MODELS.glob("*.json")):
        for target in ("portable", "dml"):
            status, out, err = run_cli("check", str(model), "--ep", "dml", "--static", "--target", target)
            assert status == 0 and out.rstrip().endswith("passed"), (model, target, out, err)


def test_export_for_dml_refuses_a_graph_that_would_fall_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from dml2onnx.graph import dml_ep

    status, _, err = run_cli(
        "export", "--allow-any-path", str(MODELS / "hardmax1.json"), "-o", str(tmp_path / "ok"), "--target", "dml"
    )
    assert status == 0, err
    assert {n.op_type for n in onnx.load(tmp_path / "ok" / "hardmax_axes_1.onnx").graph.node} == {"Hardmax"}
    monkeypatch.setattr(dml_ep, "check", lambda model: ["x (Foo): not registered"])
    status, _, err = run_cli(
        "export", "--allow-any-path", str(MODELS / "hardmax1.json"), "-o", str(tmp_path / "no"), "--target", "dml"
    )
    assert status == 1 and "would not run on the DirectML EP" in err and not (tmp_path / "no").exists()
    status, _, _ = run_cli(
        "export", "--allow-any-path", str(MODELS / "hardmax1.json"), "-o", str(tmp_path / "cpu"), "--target", "cpu"
    )
    assert status == 0  # the cpu target is not bound for DirectML


def test_run_with_each_target_prints_the_same() -> None:
    outputs = {t: run_cli("run", str(MODELS / "argmax.json"), "--target", t)[1] for t in ("portable", "cpu")}
    assert outputs["portable"] == outputs["cpu"] != ""
