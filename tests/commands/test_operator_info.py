"""`dml2onnx ops NAME`: one operator's fields, kinds, enum values, data types and doc page, and
`--example`: a DxDispatch model that runs it, for every one of the 177 operators; a desc missing
several required fields names them all in one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dml2onnx.commands import operator_info
from dml2onnx.core import operator_table
from support import run_cli, write_model

NAMES = list(operator_table.OPERATORS)


def test_convolution_page() -> None:
    status, out, _ = run_cli("ops", "convolution")
    assert status == 0
    assert out.startswith("DML_OPERATOR_CONVOLUTION  (DML_CONVOLUTION_OPERATOR_DESC, feature level 1_0")
    assert "  Mode             enum DML_CONVOLUTION_MODE: CONVOLUTION, CROSS_CORRELATION (CROSS_CORRELATION is what ONNX" in out
    assert "  BiasTensor       input tensor, optional\n" in out
    assert "  InputTensor: FLOAT32, FLOAT16; 3 to 5 dimensions\n" in out
    assert "ns-directml-dml_convolution_operator_desc" in out and "Conv" in out


def test_json_facts() -> None:
    status, out, _ = run_cli("ops", "DML_OPERATOR_ARGMAX", "--json")
    info = json.loads(out)
    assert status == 0 and info["name"] == "DML_OPERATOR_ARGMAX" and info["introduced"] == "3_0"
    direction = next(f for f in info["fields"] if f["name"] == "AxisDirection")
    assert direction == {
        "name": "AxisDirection",
        "kind": "enum DML_AXIS_DIRECTION: INCREASING, DECREASING",
        "optional": False,
        "enum": "DML_AXIS_DIRECTION",
    }
    assert "INT64" in info["tensor_support"]["InputTensor"]["data_types"]
    assert info["tensor_support"]["OutputTensor"]["data_types"] == ["INT64", "INT32", "UINT64", "UINT32"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("CONVOLUTON",), "unknown operator 'CONVOLUTON'; did you mean CONVOLUTION or CONVOLUTION_INTEGER?"),
        (("--example",), "--example needs an operator NAME"),
        (("GEMM", "--example", "--json"), "--example prints a model"),
        (("GEMM", "--markdown"), "leave NAME out"),
    ],
)
def test_ops_usage_errors(args: tuple[str, ...], message: str) -> None:
    status, out, err = run_cli("ops", *args)
    assert status == 2 and out == "" and message in err and "Traceback" not in err


def test_every_example_runs_and_matches_the_reference(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each operator's example model through `run` and, every seventh, `check` against the numpy reference."""
    monkeypatch.chdir(tmp_path)
    for i, name in enumerate(NAMES):
        model = tmp_path / "m.json"
        model.write_text(operator_info.example_json(name))
        status, out, err = run_cli("run", str(model), "-q")
        assert status == 0, (name, err)
        assert "Resource 'OutputTensor'" in out or "Resource '" in out, name
        if i % 7 == 0:
            status, out, err = run_cli("check", str(model), "--ep", "cpu")
            assert status == 0 and "all match" in out, (name, out, err)


def test_example_is_a_dxdispatch_model_of_that_operator() -> None:
    model = json.loads(operator_info.example_json("join"))
    (d,) = model["dispatchables"].values()
    assert d["type"] == "DML_OPERATOR_JOIN"
    (dispatch,) = [c for c in model["commands"] if c["type"] == "dispatch"]
    assert isinstance(dispatch["bindings"]["InputTensors"], list) and len(dispatch["bindings"]["InputTensors"]) >= 2
    assert set(model["resources"]) >= {"OutputTensor", *dispatch["bindings"]["InputTensors"]}


def test_every_missing_required_field_is_named_at_once(tmp_path: Path) -> None:
    model = {
        "resources": {"x": {"initialValuesDataType": "FLOAT32", "initialValues": [1, 2, 3, 4]}},
        "dispatchables": {
            "c": {"type": "DML_OPERATOR_GEMM", "desc": {"ATensor": {"DataType": "FLOAT32", "Sizes": [1, 1, 2, 2]}}}
        },
        "commands": [],
    }
    status, _, err = run_cli("run", write_model(tmp_path, model))
    assert status == 2
    assert err.strip() == (
        "dml2onnx: error: dispatchables.c.desc: required fields are missing: BTensor, OutputTensor, TransA, TransB, "
        "Alpha, Beta (DML_GEMM_OPERATOR_DESC)"
    )


def test_operators_page_is_current() -> None:
    page = Path(__file__).resolve().parents[2] / "docs" / "operators.md"
    assert page.read_text(encoding="utf-8") == operator_info.markdown_page(), "run python tools/make_operator_docs.py"
    assert page.read_text(encoding="utf-8").count("\n## ") == len(NAMES)
