"""DxDispatch's own element-wise examples (microsoft/DirectML DxDispatch/models: dml_element_wise_add,
_add1, _add_npy, _clip, _identity, dml_owned_tensors, dml_scalar_union_fp16), written here as
equivalent models (the same descs, bindings and values; their files are not copied): dml2onnx runs
them and prints what DxDispatch prints, on the CPU EP and through DirectML's own API."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from dml2onnx.backends import dmlapi
from support import run_cli, write_model

_NO_DIRECTML = pytest.mark.skipif(dmlapi.missing() is not None, reason="no DirectML under Wine: make dml-setup")
ENGINES = ["cpu", pytest.param("directml", marks=_NO_DIRECTML)]


def _t(sizes: list[int], data_type: str = "FLOAT32", **more: Any) -> dict[str, Any]:
    return {"DataType": data_type, "Sizes": sizes, **more}


def _values(values: Any, data_type: str = "FLOAT32") -> dict[str, Any]:
    return {"initialValuesDataType": data_type, "initialValues": values}


def _model(op: str, desc: dict[str, Any], resources: dict[str, Any], bindings: dict[str, str], out: str) -> dict[str, Any]:
    return {
        "resources": resources,
        "dispatchables": {"op": {"type": op, "desc": desc}},
        "commands": [{"type": "dispatch", "dispatchable": "op", "bindings": bindings}, {"type": "print", "resource": out}],
    }


ZEROS3 = {"valueCount": 3, "value": 0}
ADD_RESOURCES = {"A": _values([1, 2, 3]), "B": _values([5, 8, -5]), "Out": _values(ZEROS3)}
ADD_BINDINGS = {"ATensor": "A", "BTensor": "B", "OutputTensor": "Out"}

MODELS = {
    "dml_element_wise_add": (
        _model("DML_OPERATOR_ELEMENT_WISE_ADD", {n: _t([3]) for n in ADD_BINDINGS}, ADD_RESOURCES, ADD_BINDINGS, "Out"),
        "Resource 'Out': 6, 10, -2\n",
    ),
    "dml_element_wise_add1": (
        _model(
            "DML_OPERATOR_ELEMENT_WISE_ADD1",
            {**{n: _t([3]) for n in ADD_BINDINGS}, "FusedActivation": {"Type": "ACTIVATION_ELU", "Alpha": 0.5}},
            ADD_RESOURCES,
            ADD_BINDINGS,
            "Out",
        ),
        "Resource 'Out': 6, 10, -0.432332\n",
    ),
    "dml_owned_tensors": (  # A is owned by DirectML: bound at initialization
        _model(
            "DML_OPERATOR_ELEMENT_WISE_ADD",
            {"ATensor": _t([3], Flags="OWNED_BY_DML"), "BTensor": _t([3]), "OutputTensor": _t([3])},
            ADD_RESOURCES,
            ADD_BINDINGS,
            "Out",
        ),
        "Resource 'Out': 6, 10, -2\n",
    ),
    "dml_element_wise_clip": (  # in place: the output is bound to the input's resource
        _model(
            "DML_OPERATOR_ELEMENT_WISE_CLIP",
            {"InputTensor": _t([9]), "OutputTensor": _t([9]), "Min": -2.5, "Max": 2.5},
            {"A": _values([-4, -3, -2, -1, 0, 1, 2, 3, 4])},
            {"InputTensor": "A", "OutputTensor": "A"},
            "A",
        ),
        "Resource 'A': -2.5, -2.5, -2, -1, 0, 1, 2, 2.5, 2.5\n",
    ),
    "dml_element_wise_identity": (
        _model(
            "DML_OPERATOR_ELEMENT_WISE_IDENTITY",
            {"InputTensor": _t([3]), "OutputTensor": _t([3]), "ScaleBias": {"Scale": 2, "Bias": 10}},
            {"A": _values([1, 2, 3]), "Out": _values(ZEROS3)},
            {"InputTensor": "A", "OutputTensor": "Out"},
            "Out",
        ),
        "Resource 'Out': 12, 14, 16\n",
    ),
    "dml_scalar_union_fp16": (
        _model(
            "DML_OPERATOR_ELEMENT_WISE_CLIP1",
            {"InputTensor": _t([5], "FLOAT16"), "OutputTensor": _t([5], "FLOAT16")}
            | {"MinMaxDataType": "FLOAT16", "Min": 2, "Max": 4},
            {
                "input": _values({"valueCount": 5, "valueStart": 1, "valueDelta": 1}, "FLOAT16"),
                "output": _values({"valueCount": 5, "value": 0}, "FLOAT16"),
            },
            {"InputTensor": "input", "OutputTensor": "output"},
            "output",
        ),
        "Resource 'output': 2, 2, 3, 4, 4\n",
    ),
}


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("name", sorted(MODELS))
def test_dxdispatch_example(tmp_path: Path, name: str, engine: str) -> None:
    model, printed = MODELS[name]
    status, out, err = run_cli("run", write_model(tmp_path, model), "--ep", engine, "-q")
    assert (status, out) == (0, printed), err


@pytest.mark.parametrize("engine", ENGINES)
def test_dml_element_wise_add_npy(tmp_path: Path, engine: str) -> None:
    """Inputs from an .npy file and a raw .dat file, the result written as .npy (as DxDispatch's)."""
    np.save(tmp_path / "input.npy", np.arange(1, 7, dtype=np.float32).reshape(2, 3))
    (tmp_path / "input.dat").write_bytes(np.arange(1, 7, dtype=np.float32).tobytes())
    t = _t([2, 3])
    model = {
        "resources": {
            "A": _values({"sourcePath": "input.npy"}),
            "B": _values({"sourcePath": "input.dat"}),
            "Out": _values({"valueCount": 6, "value": 0}),
        },
        "dispatchables": {"add": {"type": "DML_OPERATOR_ELEMENT_WISE_ADD", "desc": dict.fromkeys(ADD_BINDINGS, t)}},
        "commands": [
            {"type": "dispatch", "dispatchable": "add", "bindings": ADD_BINDINGS},
            {"type": "print", "resource": "Out"},
            {"type": "writeFile", "resource": "Out", "targetPath": str(tmp_path / "output.npy"), "dimensions": [2, 3]},
        ],
    }
    status, out, err = run_cli("run", write_model(tmp_path, model), "--ep", engine, "-q", "--allow-any-path")
    assert (status, out) == (0, "Resource 'Out': 2, 4, 6, 8, 10, 12\n"), err
    np.testing.assert_array_equal(np.load(tmp_path / "output.npy"), np.arange(2, 13, 2, dtype=np.float32).reshape(2, 3))
