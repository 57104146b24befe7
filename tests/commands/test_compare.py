"""`dml2onnx compare`: models built to hold one known DirectML difference (tests/dml_findings.py) in
the middle of a longer chain; compare names exactly that node first, and its repro reproduces it."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from dml2onnx.backends import dmlapi, winhost
from dml2onnx.commands import divergence
from dml2onnx.lowering.tolerances import Tolerance
from dml2onnx.ops import registry
from support import printed, run_cli, write_model

api = pytest.mark.skipif(dmlapi.missing() is not None, reason=f"DirectML's API under Wine is not set up ({dmlapi.missing()})")
wine_ep = pytest.mark.skipif(not winhost.available(), reason=f"the DirectML EP under Wine is not set up ({winhost.missing()})")

F32 = "FLOAT32"


def _t(dtype: str, sizes: list[int]) -> dict[str, Any]:
    return {"DataType": dtype, "Sizes": sizes}


def _resource(dtype: str, values: list[float] | int) -> dict[str, Any]:
    initial = {"valueCount": values, "value": 0} if isinstance(values, int) else values
    return {"initialValuesDataType": dtype, "initialValues": initial}


def _int64_argmax_chain() -> dict[str, Any]:
    """INT64 values through IDENTITY, then ARGMAX (DirectML compares INT64 by their low halves as
    signed under lavapipe: 4294967293 ranks below 0, the finding "INT64 order"), CAST of the index
    to FLOAT32, and LINEAR: ARGMAX is the second of four nodes."""
    four = [1, 1, 1, 4]
    return {
        "resources": {
            "x": _resource("INT64", [0, 4294967293, 2147483649, 5]),
            "copy": _resource("INT64", 4),
            "index": _resource("UINT32", 1),
            "as_float": _resource(F32, 1),
            "y": _resource(F32, 1),
        },
        "dispatchables": {
            "copy": {
                "type": "ELEMENT_WISE_IDENTITY",
                "desc": {"InputTensor": _t("INT64", four), "OutputTensor": _t("INT64", four)},
            },
            "argmax": {
                "type": "ARGMAX",
                "desc": {
                    "InputTensor": _t("INT64", four),
                    "OutputTensor": _t("UINT32", [1, 1, 1, 1]),
                    "AxisCount": 1,
                    "Axes": [3],
                    "AxisDirection": "INCREASING",
                },
            },
            "to_float": {"type": "CAST", "desc": {"InputTensor": _t("UINT32", [1]), "OutputTensor": _t(F32, [1])}},
            "scale": {
                "type": "ACTIVATION_LINEAR",
                "desc": {"InputTensor": _t(F32, [1]), "OutputTensor": _t(F32, [1]), "Alpha": 10.0, "Beta": 1.0},
            },
        },
        "commands": [
            {"type": "dispatch", "dispatchable": "copy", "bindings": {"InputTensor": "x", "OutputTensor": "copy"}},
            {"type": "dispatch", "dispatchable": "argmax", "bindings": {"InputTensor": "copy", "OutputTensor": "index"}},
            {"type": "dispatch", "dispatchable": "to_float", "bindings": {"InputTensor": "index", "OutputTensor": "as_float"}},
            {"type": "dispatch", "dispatchable": "scale", "bindings": {"InputTensor": "as_float", "OutputTensor": "y"}},
            {"type": "print", "resource": "y"},
        ],
    }


def _float16_sum_chain() -> dict[str, Any]:
    """FLOAT16 through ABS, REDUCE SUM over the last axis (DirectML saturates 60000 + 60000 at 65504
    where IEEE rounding gives inf, the finding "FLOAT16 overflow saturates"), then LINEAR and ABS:
    the reduction is the second of four nodes."""
    row, one = [1, 1, 2, 2], [1, 1, 2, 1]
    return {
        "resources": {
            "x": _resource("FLOAT16", [60000, 60000, 1, -2]),
            "abs": _resource("FLOAT16", 4),
            "sum": _resource("FLOAT16", 2),
            "half": _resource("FLOAT16", 2),
            "y": _resource("FLOAT16", 2),
        },
        "dispatchables": {
            "abs": {"type": "ELEMENT_WISE_ABS", "desc": {"InputTensor": _t("FLOAT16", row), "OutputTensor": _t("FLOAT16", row)}},
            "sum": {
                "type": "REDUCE",
                "desc": {
                    "Function": "SUM",
                    "InputTensor": _t("FLOAT16", row),
                    "OutputTensor": _t("FLOAT16", one),
                    "AxisCount": 1,
                    "Axes": [3],
                },
            },
            "half": {
                "type": "ACTIVATION_LINEAR",
                "desc": {"InputTensor": _t("FLOAT16", one), "OutputTensor": _t("FLOAT16", one), "Alpha": 0.5, "Beta": 0.0},
            },
            "abs_again": {
                "type": "ELEMENT_WISE_ABS",
                "desc": {"InputTensor": _t("FLOAT16", one), "OutputTensor": _t("FLOAT16", one)},
            },
        },
        "commands": [
            {"type": "dispatch", "dispatchable": "abs", "bindings": {"InputTensor": "x", "OutputTensor": "abs"}},
            {"type": "dispatch", "dispatchable": "sum", "bindings": {"InputTensor": "abs", "OutputTensor": "sum"}},
            {"type": "dispatch", "dispatchable": "half", "bindings": {"InputTensor": "sum", "OutputTensor": "half"}},
            {"type": "dispatch", "dispatchable": "abs_again", "bindings": {"InputTensor": "half", "OutputTensor": "y"}},
            {"type": "print", "resource": "y"},
        ],
    }


def _log_sum_exp_onnx(path: Path) -> Path:
    """x * 100, Relu, ReduceLogSumExp (DirectML's is not stabilized: exp(200) overflows to inf, the
    finding "LOG_SUM_EXP not stabilized"), x - lse, Neg: five DirectML nodes, the reduction third."""
    nodes = [
        helper.make_node("Mul", ["x", "s"], ["a"], name="scale_up"),
        helper.make_node("Relu", ["a"], ["r"], name="relu0"),
        helper.make_node("ReduceLogSumExp", ["r", "axes"], ["l"], name="logsumexp", keepdims=1),
        helper.make_node("Sub", ["r", "l"], ["d"], name="minus_lse"),
        helper.make_node("Neg", ["d"], ["y"], name="neg1"),
    ]
    constants = [
        numpy_helper.from_array(np.array(100, np.float32), "s"),
        numpy_helper.from_array(np.array([1], np.int64), "axes"),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 8])],
        constants,
    )
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)], ir_version=8), str(path))
    return path


def _compare(*args: str) -> tuple[int, dict[str, Any], str]:
    status, out, err = run_cli("compare", *args, "--json")
    return status, json.loads(out) if out else {}, err


def _reproduced(repro: Path, ep: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The repro run again by `dml2onnx run --ep EP`: what it prints, the reference's outputs and
    the engine's as compare saved them (the first output)."""
    status, out, err = run_cli("run", str(repro), "--ep", ep, "-q")
    assert status == 0, err
    (values,) = printed(out).values()
    expected = sorted((repro.parent / "expected").glob("*.npy"))[0]
    engine = repro.parent / ep / expected.name
    return np.array(values), np.load(expected).ravel(), np.load(engine).ravel() if engine.exists() else np.array([])


# -- without Wine ------------------------------------------------------------------------------------


def test_ulps_and_mismatches_of_floats_and_integers() -> None:
    one = np.float32(1)
    got = np.array([np.nextafter(one, np.float32(2)), -0.0, np.nan, 5], np.float32)
    want = np.array([1, 0.0, np.nan, 5], np.float32)
    assert divergence.measure(got, want, Tolerance(0, 0)) == (1, 1.0)  # -0 and +0 are 0 ULPs apart, NaN matches NaN
    assert divergence.measure(got, want, Tolerance(1e-6, 0)) == (0, 1.0)
    half = np.array([1, 2], np.float16)
    assert divergence.measure(half + np.float16(2**-10), half, Tolerance(0, 0)) == (1, 1.0)  # 2 + 2**-10 ties to 2
    assert divergence.measure(np.array([1, np.nan], np.float32), np.array([1, 2], np.float32), Tolerance(1, 1))[1] == float("inf")
    assert divergence.measure(np.array([3, 4], np.int64), np.array([3, 5], np.int64), Tolerance(1, 1)) == (1, None)


def test_on_the_cpu_the_node_whose_reference_differs_is_named_and_reproduced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With a CAST reference made wrong (x + 1), compare --ep cpu names the CAST node first, feeds
    LINEAR after it the (wrong) reference's value, so LINEAR matches, and writes a repro whose run
    on the CPU EP prints what the CPU EP gave."""
    model = _int64_argmax_chain()
    cast = registry.family("CAST")
    wrong = dataclasses.replace(cast, reference=lambda desc, inputs: cast.reference(desc, inputs) + 1)
    monkeypatch.setitem(registry.BY_OPERATOR, "CAST", wrong)
    status, got, err = _compare(write_model(tmp_path, model), "--ep", "cpu", "-o", str(tmp_path / "out"))
    assert status == 1, err
    assert got["first_divergence"]["node"] == "to_float" and got["first_divergence"]["type"] == "CAST"
    assert [(n["node"], n["over_tolerance"]) for n in got["nodes"]] == [
        ("copy", False),
        ("argmax", False),
        ("to_float", True),
        ("scale", False),
    ]
    assert all(n["cpu"] is None for n in got["nodes"])  # the engine is the CPU EP already
    node = got["nodes"][2]
    assert (node["max_abs"], node["mismatches"], node["elements"], node["max_ulps"]) == (1.0, 1, 1, 8388608.0)
    repro = Path(got["first_divergence"]["repro"])
    assert repro == tmp_path / "out" / "002_to_float" / "repro.json" and got["repros"] == str(tmp_path / "out")
    monkeypatch.undo()
    values, expected, engine = _reproduced(repro, "cpu")
    assert values.tolist() == engine.tolist() == [1.0] and expected.tolist() == [2.0]
    assert [p.name for p in (tmp_path / "out").iterdir()] == ["002_to_float"]  # nothing staged is left


def test_nothing_diverges_and_nothing_is_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    status, got, err = _compare(write_model(tmp_path, _int64_argmax_chain()), "--ep", "cpu")
    assert status == 0 and got["first_divergence"] is None and got["repros"] is None, err
    assert [p.name for p in tmp_path.iterdir()] == ["model.json"]  # the default folder is made only for repros
    status, out, err = run_cli("compare", "model.json", "--ep", "cpu")
    assert status == 0 and "no node differs from the numpy reference beyond its tolerance on CPUExecutionProvider" in out
    assert "compare: copy: each node on CPUExecutionProvider\n" in err


def test_a_serialized_graph_node_is_reproduced_with_its_constants_bound_at_initialization(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """DxDispatch's serialized-graph model: one GEMM whose B and C are constant files, so OWNED_BY_DML
    (bound on the dispatchable in the repro, as DirectML binds them at initialization). With GEMM's
    reference made wrong, the node and the whole graph are over tolerance, and the repro runs."""
    model = str(Path(__file__).parents[1] / "dxdispatch" / "dmlSerializedGraph_matmul_add.json")
    status, got, err = _compare(model, "--ep", "cpu", "-q", "-o", str(tmp_path / "none"))
    assert status == 0 and err == "" and [n["type"] for n in got["nodes"]] == ["GEMM"] and not got["graphs"][0]["over_tolerance"]
    assert not (tmp_path / "none").exists()
    gemm = registry.family("GEMM")
    wrong = dataclasses.replace(gemm, reference=lambda desc, inputs: gemm.reference(desc, inputs) + 1)
    monkeypatch.setitem(registry.BY_OPERATOR, "GEMM", wrong)
    status, got, _ = _compare(model, "--ep", "cpu", "-q", "-o", str(tmp_path / "out"))
    monkeypatch.undo()
    assert status == 1 and got["first_divergence"]["node"] == "model_output_dmlEp_0" and got["graphs"][0]["over_tolerance"]
    assert got["nodes"][0]["onnx_value"] == "model_output" and got["nodes"][0]["max_abs"] == 1.0
    repro = Path(got["first_divergence"]["repro"])
    (dispatchable,) = json.loads(repro.read_text())["dispatchables"].values()
    assert sorted(dispatchable["bindings"]) == ["BTensor", "CTensor"]
    values, expected, engine = _reproduced(repro, "cpu")
    assert np.allclose(values, engine, rtol=1e-5) and np.allclose(expected, engine + 1)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (("--atol", "-1"), "--atol must be a finite number of at least 0, got -1.0"),
        (("--rtol", "nan"), "--rtol must be a finite number of at least 0, got nan"),
        (("-o", "{full}"), "exists and is not an empty folder"),
        (("--static",), "(--static is an option of check)"),
        (("--input", "x=x.npy"), "--input gives an ONNX model's inputs; "),
    ],
)
def test_invalid_input_is_one_line_and_exit_2(tmp_path: Path, extra: tuple[str, ...], message: str) -> None:
    model = write_model(tmp_path, _int64_argmax_chain())
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("")
    args = [a.replace("{full}", str(tmp_path / "full")) for a in extra]
    status, out, err = run_cli("compare", model, "--ep", "cpu", *args)
    assert status == 2 and message in err and "Traceback" not in err and out == "", err


def test_a_folder_without_a_capture_and_a_missing_model_are_exit_2(tmp_path: Path) -> None:
    status, _, err = run_cli("compare", str(tmp_path), "--ep", "cpu")
    assert status == 2 and "holds no capture model" in err and len(err.strip().splitlines()) == 1
    status, _, err = run_cli("compare", str(tmp_path / "missing.json"), "--ep", "cpu")
    assert status == 2 and err.startswith("dml2onnx: error: ") and len(err.strip().splitlines()) == 1


# -- DirectML's API ------------------------------------------------------------------------------------


@api
def test_int64_argmax_is_the_first_divergence_and_its_repro_reproduces_it(tmp_path: Path) -> None:
    status, got, err = _compare(write_model(tmp_path, _int64_argmax_chain()), "-o", str(tmp_path / "out"))
    assert status == 1, err
    assert got["engine"] == "DirectML API"
    assert got["first_divergence"] == {
        "node": "argmax",
        "type": "ARGMAX",
        "dispatch": "argmax",
        "index": 1,
        "repro": str(tmp_path / "out" / "001_argmax" / "repro.json"),
    }
    # the nodes after it are fed the reference's index (1), so they match: errors do not compound
    assert [n["over_tolerance"] for n in got["nodes"]] == [False, True, False, False]
    assert all(not n["cpu"]["over_tolerance"] for n in got["nodes"])  # the lowering agrees with the reference
    values, expected, engine = _reproduced(Path(got["first_divergence"]["repro"]), "dml-api")
    assert expected.tolist() == [1] and values.tolist() == engine.tolist() == [3]  # low halves as signed: 5 wins
    values, _, _ = _reproduced(Path(got["first_divergence"]["repro"]), "cpu")
    assert values.tolist() == [1]


@api
def test_float16_saturation_is_the_first_divergence_and_its_repro_reproduces_it(tmp_path: Path) -> None:
    status, got, err = _compare(write_model(tmp_path, _float16_sum_chain()), "-o", str(tmp_path / "out"))
    assert status == 1, err
    first = got["first_divergence"]
    assert (first["node"], first["type"], first["index"]) == ("sum", "REDUCE", 1)
    assert [n["over_tolerance"] for n in got["nodes"]] == [False, True, False, False]
    node = got["nodes"][1]
    # 65504 is FLOAT16's last finite value: one ULP below inf, and beyond any tolerance all the same
    assert (node["function"], node["mismatches"], node["max_ulps"], node["max_abs"]) == ("SUM", 1, 1.0, "inf")
    values, expected, engine = _reproduced(Path(first["repro"]), "dml-api")
    assert expected.tolist() == [np.inf, 3] and values.tolist() == engine.tolist() == [65504, 3]


@wine_ep
def test_a_captured_log_sum_exp_is_named_by_its_onnx_node(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An ONNX model, captured first: the DirectML node of ReduceLogSumExp is the first divergence,
    named after the ONNX node; the nodes after it match (fed the reference), the graph DirectML
    compiles whole does not; the capture folder itself gives the same answer."""
    monkeypatch.chdir(tmp_path)
    model = _log_sum_exp_onnx(tmp_path / "lse.onnx")
    status, got, err = _compare(str(model), "-q")
    assert status == 1 and err == "", err
    first = got["first_divergence"]
    assert (first["node"], first["type"], first["dispatch"]) == ("l_dmlEp_0", "REDUCE", "Partition_0")
    assert [(n["onnx_nodes"], n["over_tolerance"]) for n in got["nodes"]] == [
        (["scale_up"], False),
        (["relu0"], False),
        (["logsumexp"], True),
        (["minus_lse"], False),
        (["neg1"], False),
    ]
    lse = got["nodes"][2]
    assert lse["function"] == "LOG_SUM_EXP" and lse["max_abs"] == "inf" and not lse["cpu"]["over_tolerance"]
    assert got["graphs"][0]["dispatch"] == "Partition_0" and got["graphs"][0]["over_tolerance"]
    assert Path(got["repros"]) == Path("compare-lse")
    values, expected, engine = _reproduced(Path(first["repro"]), "dml-api")
    assert np.isinf(values).any() and np.isfinite(expected).all()
    assert np.allclose(values, engine, rtol=1e-5, atol=0)  # print's 6 digits of what compare saw DirectML give
    np.save(tmp_path / "small.npy", np.full((2, 8), -1, np.float32))  # Relu makes it 0: log(8), no overflow
    status, small, _ = _compare(str(model), "-q", "--input", f"x={tmp_path / 'small.npy'}", "-o", "small")
    assert status == 0 and small["first_divergence"] is None and not small["graphs"][0]["over_tolerance"]
    status, out, _ = run_cli("capture", str(model), "-o", "cap", "-q")
    assert status == 0, out
    status, again, _ = _compare("cap", "-q", "-o", "again")
    assert status == 1 and again["first_divergence"]["node"] == "l_dmlEp_0" and again["nodes"][2]["onnx_value"] == "l"
    assert again["nodes"][2]["onnx_nodes"] == []  # a capture folder does not hold the ONNX model
