"""ONNX dispatchables (`"type": "onnx"`): DxDispatch's own two models run unchanged, dynamic
shapes, deferred resources, free dimension overrides, every refusal, and export, check,
inspect, bench and --single-graph on them. Expected values are worked out with numpy here."""

from __future__ import annotations

import copy
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

from dml2onnx.backends import dmlapi, winhost
from support import printed, run_cli, write_model

MODELS = Path(__file__).parents[1] / "dxdispatch"
GEMM = str(MODELS / "onnx_gemm.json")
DYNAMIC = str(MODELS / "onnx_dynamic_shapes.json")

A = np.arange(1, 7, dtype=np.float32).reshape(3, 2)
B = np.arange(1, 9, dtype=np.float32).reshape(2, 4)
GEMM_OUT = (A @ B + A @ B).ravel()  # onnx_gemm.onnx: Gemm(A0, B0) + Gemm(A1, B1), each pair A and B
X0 = np.arange(1, 7, dtype=np.float32)  # resource 'a' of onnx_dynamic_shapes.json
X1 = np.arange(7, 13, dtype=np.float32)  # resource 'b'


def concat(n: int) -> np.ndarray:
    """onnx_dynamic_shapes.onnx's y: x0 and x1 of shape [n, 2] joined on axis 0."""
    return np.concatenate([X0[: 2 * n].reshape(n, 2), X1[: 2 * n].reshape(n, 2)]).ravel()


def dynamic_model(tmp_path: Path, extra: dict[str, Any] | None = None, bindings: dict[str, Any] | None = None) -> dict[str, Any]:
    """onnx_dynamic_shapes.json's resources and graph (copied beside it) with one dispatch of
    `bindings` (default: x0, x1 unshaped, y deferred) and a print of deferredY."""
    shutil.copy(MODELS / "onnx_dynamic_shapes.onnx", tmp_path / "onnx_dynamic_shapes.onnx")
    model = json.loads((MODELS / "onnx_dynamic_shapes.json").read_text())
    model["dispatchables"]["concat"].update(extra or {})
    model["commands"] = [
        {"type": "dispatch", "dispatchable": "concat", "bindings": bindings or {"x0": "a", "x1": "b", "y": "deferredY"}},
        {"type": "print", "resource": "deferredY"},
    ]
    return model


def gemm_model(tmp_path: Path) -> dict[str, Any]:
    shutil.copy(MODELS / "onnx_gemm.onnx", tmp_path / "onnx_gemm.onnx")
    return json.loads((MODELS / "onnx_gemm.json").read_text())


def run(tmp_path: Path, model: dict[str, Any], *args: str) -> tuple[int, str, str]:
    return run_cli("run", write_model(tmp_path, model), *args)


def refused(tmp_path: Path, model: dict[str, Any], *args: str) -> str:
    """The one-line error of an exit-2 run."""
    status, out, err = run(tmp_path, model, *args)
    assert status == 2, (status, out, err)
    assert out == "" and err.count("\n") == 1 and "Traceback" not in err, err
    return err


def test_onnx_gemm_runs_unchanged() -> None:
    status, out, err = run_cli("run", GEMM)
    assert status == 0, err
    assert out == "Resource 'Out': 22, 28, 34, 40, 46, 60, 74, 88, 70, 92, 114, 136\n"
    assert printed(out)["Out"] == GEMM_OUT.tolist()
    assert "Dispatch 'gemm': 1 iteration, " in err and "(CPUExecutionProvider)" in err


def test_onnx_dynamic_shapes_runs_unchanged() -> None:
    """Binding shapes [1,2] then [3,2] into 'c' (12 values, only the first 4 written the first
    time), then a deferred resource sized by the output."""
    status, out, err = run_cli("run", DYNAMIC)
    assert status == 0, err
    lines = out.splitlines()
    assert len(lines) == 3 and err.count("Dispatch 'concat': 1 iteration, ") == 3
    first = np.zeros(12, np.float32)
    first[:4] = concat(1)
    assert lines[0] == "Resource 'c': 1, 2, 7, 8, 0, 0, 0, 0, 0, 0, 0, 0"
    assert printed(lines[0])["c"] == first.tolist()
    assert printed(lines[1])["c"] == concat(3).tolist()
    assert printed(lines[2])["deferredY"] == concat(3).tolist()


def test_free_dimensions_default_to_1(tmp_path: Path) -> None:
    """No binding shape, no override: N is 1 (the Guide), so y is [2, 2]."""
    status, out, err = run(tmp_path, dynamic_model(tmp_path))
    assert status == 0, err
    assert printed(out)["deferredY"] == concat(1).tolist()


def test_free_dimension_overrides_json_and_command_line(tmp_path: Path) -> None:
    model = dynamic_model(tmp_path, {"freeDimensionNameOverrides": {"N": 2}})
    status, out, err = run(tmp_path, model)
    assert (status, printed(out)["deferredY"]) == (0, concat(2).tolist()), err
    status, out, err = run(tmp_path, model, "-f", "N:3")  # the command line takes priority
    assert (status, printed(out)["deferredY"]) == (0, concat(3).tolist()), err
    status, out, err = run(tmp_path, dynamic_model(tmp_path), "--free-dim-name", "N:3")
    assert (status, printed(out)["deferredY"]) == (0, concat(3).tolist()), err


def denoted_model(tmp_path: Path) -> dict[str, Any]:
    """A Relu over a [B, 2] input whose dimensions have the denotations DATA_BATCH, DATA_CHANNEL."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["B", 2])
    x.type.tensor_type.shape.dim[0].denotation = "DATA_BATCH"
    x.type.tensor_type.shape.dim[1].denotation = "DATA_CHANNEL"
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["B", 2])
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "relu", [x], [y])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)], ir_version=8), tmp_path / "relu.onnx")
    return {
        "resources": {
            "x": {"initialValuesDataType": "FLOAT32", "initialValues": [-1, 2, -3, 4, 5, -6]},
            "y": {"initialValuesDataType": "FLOAT32", "initialValues": "deferred"},
        },
        "dispatchables": {"relu": {"type": "onnx", "sourcePath": "relu.onnx"}},
        "commands": [
            {"type": "dispatch", "dispatchable": "relu", "bindings": {"x": "x", "y": "y"}},
            {"type": "print", "resource": "y"},
        ],
    }


def test_free_dimension_override_by_denotation(tmp_path: Path) -> None:
    """Denotations compare case-insensitively (ONNX Runtime's FreeDimensionOverrideTransformer)."""
    model = denoted_model(tmp_path)
    status, out, err = run(tmp_path, model, "-F", "data_batch:3")
    assert (status, printed(out)["y"]) == (0, [0, 2, 0, 4, 5, 0]), err
    model["dispatchables"]["relu"]["freeDimensionDenotationOverrides"] = {"DATA_BATCH": 2}
    status, out, err = run(tmp_path, model)
    assert (status, printed(out)["y"]) == (0, [0, 2, 0, 4]), err
    model["dispatchables"]["relu"]["freeDimensionNameOverrides"] = {"B": 1}
    assert "conflict" in refused(tmp_path, model)


def test_session_options_are_accepted(tmp_path: Path) -> None:
    model = dynamic_model(
        tmp_path,
        {
            "graphOptimizationLevel": 0,
            "loggingLevel": 3,
            "sessionOptionsConfigEntries": {"session.intra_op.allow_spinning": "0"},
        },
    )
    status, out, err = run(tmp_path, model)
    assert (status, printed(out)["deferredY"]) == (0, concat(1).tolist()), err


def test_deferred_resource_written_as_npy_with_the_output_shape(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    model = dynamic_model(tmp_path, bindings={"x0": {"name": "a", "shape": [3, 2]}, "x1": "b", "y": "deferredY"})
    model["dispatchables"]["concat"]["freeDimensionNameOverrides"] = {"N": 3}
    model["commands"].append({"type": "writeFile", "resource": "deferredY", "targetPath": "y.npy"})
    status, _, err = run(tmp_path, model)
    assert status == 0, err
    np.testing.assert_array_equal(np.load(tmp_path / "y.npy"), concat(3).reshape(6, 2))


def test_unbound_output_is_computed_and_dropped(tmp_path: Path) -> None:
    model = dynamic_model(tmp_path, bindings={"x0": "a", "x1": "b"})
    model["commands"][1] = {"type": "print", "resource": "a"}
    status, out, err = run(tmp_path, model)
    assert (status, printed(out)["a"]) == (0, X0.tolist()), err


def test_a_desc_dispatch_reads_what_an_onnx_dispatch_wrote(tmp_path: Path) -> None:
    model = gemm_model(tmp_path)
    model["resources"]["Twice"] = {"initialValuesDataType": "FLOAT32", "initialValues": {"valueCount": 12, "value": 0}}
    t = {"DataType": "FLOAT32", "Sizes": [12]}
    model["dispatchables"]["add"] = {"type": "ELEMENT_WISE_ADD", "desc": {"ATensor": t, "BTensor": t, "OutputTensor": t}}
    model["commands"] += [
        {"type": "dispatch", "dispatchable": "add", "bindings": {"ATensor": "Out", "BTensor": "Out", "OutputTensor": "Twice"}},
        {"type": "print", "resource": "Twice"},
    ]
    status, out, err = run(tmp_path, model)
    assert status == 0, err
    assert printed(out) == {"Out": GEMM_OUT.tolist(), "Twice": (2 * GEMM_OUT).tolist()}
    path = write_model(tmp_path, model)
    status, out, err = run_cli("export", path, "-o", str(tmp_path / "sg"), "--single-graph", "--allow-any-path")
    assert status == 0, err
    got = single_graph_outputs(tmp_path / "sg" / "model.onnx", {"A0": A, "B0": B, "A1": A, "B1": B})
    np.testing.assert_array_equal(got["Twice"], 2 * GEMM_OUT)


# Refusals: exit 2, one line, the JSON path and the rule.


def _edit(model: dict[str, Any], path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    model = copy.deepcopy(model)
    target = model
    for key in path[:-1]:
        target = target[key]
    if value is None:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return model


GEMM_REFUSALS = [
    (("dispatchables", "gemm", "sourcePath"), "nope.onnx", "dispatchables.gemm.sourcePath: cannot read 'nope.onnx'"),
    (("dispatchables", "gemm", "sourcePath"), "/dev/zero", "dispatchables.gemm.sourcePath: "),
    (("dispatchables", "gemm", "sourcePath"), "model.json", "sourcePath: 'model.json' is not an ONNX model"),
    (("dispatchables", "gemm", "sourcePath"), None, "dispatchables.gemm.sourcePath: required field is missing"),
    (("dispatchables", "gemm", "batchSize"), 2, "dispatchables.gemm"),
    (("dispatchables", "gemm", "graphOptimizationLevel"), 5, "dispatchables.gemm.graphOptimizationLevel: must be 0"),
    (("dispatchables", "gemm", "loggingLevel"), 7, "dispatchables.gemm.loggingLevel"),
    (("dispatchables", "gemm", "freeDimensionNameOverrides"), {"N": -1}, "dispatchables.gemm.freeDimensionNameOverrides.N"),
    (
        ("dispatchables", "gemm", "sessionOptionsConfigEntries"),
        {"session.disable_cpu_ep_fallback": "0"},
        'sessionOptionsConfigEntries["session.disable_cpu_ep_fallback"]: dml2onnx sets this itself',
    ),
    (("commands", 0, "bindings", "Z"), "A0", "commands[0].bindings.Z: the graph of 'gemm' has no input or output 'Z'"),
    (("commands", 0, "bindings", "B1"), None, "commands[0].bindings.B1: graph input 'B1' of 'gemm' is not bound"),
    (("commands", 0, "bindings", "A0"), "nope", "commands[0].bindings.A0: unknown resource 'nope'"),
    (("commands", 0, "bindings", "A0"), ["A0", "A1"], "commands[0].bindings.A0: 'A0' takes one resource, but 2"),
    (("commands", 0, "bindings", "A0"), {"name": "A0", "elementOffset": 1}, "bindings.A0.elementOffset: ONNX dispatchables"),
    (("commands", 0, "bindings", "A0"), {"name": "A0", "counter": "B0"}, "bindings.A0.counter: ONNX dispatchables"),
    (("commands", 0, "bindings", "A0"), {"name": "A0", "shape": [6]}, "bindings.A0.shape: 'A0' is FLOAT[3,2]: 2 dimensions"),
    (("commands", 0, "bindings", "A0"), {"name": "A0", "shape": [2, 3]}, "bindings.A0.shape[0]: 'A0' is FLOAT[3,2]: dimension 0"),
    (("resources", "A0", "initialValues"), [1, 2, 3, 4], "commands[0].bindings.A0: resource 'A0' has 16 bytes, but 'A0'"),
    (("resources", "A0", "initialValuesDataType"), "INT32", "commands[0].bindings.A0: resource 'A0' holds INT32, but 'A0' is"),
    (("resources", "Out", "initialValues"), {"valueCount": 11, "value": 0}, "bindings.add: resource 'Out' has 44 bytes"),
]


@pytest.mark.parametrize(("path", "value", "message"), GEMM_REFUSALS)
def test_refusals_name_the_path(tmp_path: Path, path: tuple[Any, ...], value: Any, message: str) -> None:
    assert message in refused(tmp_path, _edit(gemm_model(tmp_path), path, value))


def test_invalid_onnx_model_is_refused_at_source_path(tmp_path: Path) -> None:
    """A graph whose node reads a value nothing defines: onnx.checker's rule, exit 2."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])
    graph = helper.make_graph([helper.make_node("Relu", ["missing"], ["y"])], "g", [x], [x])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)]), tmp_path / "bad.onnx")
    model = _edit(gemm_model(tmp_path), ("dispatchables", "gemm", "sourcePath"), "bad.onnx")
    assert "dispatchables.gemm.sourcePath: 'bad.onnx' is not a valid ONNX model" in refused(tmp_path, model)


DYNAMIC_REFUSALS = [
    ({"x0": "a", "x1": "b", "y": "c"}, "commands[0].bindings.y: output 'y' is FLOAT[?,?], not a static shape"),
    ({"x0": "deferredY", "x1": "b", "y": "c"}, "commands[0].bindings.x0: resource 'deferredY' is deferred"),
    # the run's output is [2, 2]: the binding's shape is not what the graph computes
    ({"x0": "a", "x1": "b", "y": {"name": "c", "shape": [3, 2]}}, "commands[0].bindings.y: output 'y' has shape [2, 2] when run"),
]


@pytest.mark.parametrize(("bindings", "message"), DYNAMIC_REFUSALS)
def test_dynamic_shape_refusals(tmp_path: Path, bindings: dict[str, Any], message: str) -> None:
    model = dynamic_model(tmp_path, bindings=bindings)
    model["commands"][1] = {"type": "print", "resource": "c"}
    assert message in refused(tmp_path, model, "-q")  # the last one is found running: no progress lines


def test_deferred_resource_rules(tmp_path: Path) -> None:
    model = dynamic_model(tmp_path)
    model["commands"].insert(0, {"type": "print", "resource": "deferredY"})
    assert "commands[0].resource: resource 'deferredY' is deferred and no dispatch before" in refused(tmp_path, model)
    model = _edit(dynamic_model(tmp_path), ("resources", "deferredY", "sizeInBytes"), 16)
    assert "resources.deferredY.sizeInBytes: a deferred resource takes its size" in refused(tmp_path, model)
    model = _edit(dynamic_model(tmp_path), ("resources", "deferredY", "initialValuesDataType"), "FLOAT16")
    assert "commands[0].bindings.y: resource 'deferredY' holds FLOAT16, but 'y' is FLOAT[?,?]" in refused(tmp_path, model)
    t = {"DataType": "FLOAT32", "Sizes": [2]}
    model = dynamic_model(tmp_path)
    model["dispatchables"]["id"] = {"type": "ELEMENT_WISE_IDENTITY", "desc": {"InputTensor": t, "OutputTensor": t}}
    model["commands"].append(
        {"type": "dispatch", "dispatchable": "id", "bindings": {"InputTensor": "a", "OutputTensor": "deferredY"}}
    )
    assert "commands[2].bindings.OutputTensor: resource 'deferredY' is deferred" in refused(tmp_path, model)


def test_override_of_a_fixed_dimension_is_refused(tmp_path: Path) -> None:
    """ONNX Runtime's rule: an override may not change a fixed size (x's second is 2)."""
    model = denoted_model(tmp_path)
    message = refused(tmp_path, model, "-F", "DATA_CHANNEL:3")
    assert "dispatchables.relu: input 'x' dimension 1 is fixed at 2, but an override sets it to 3" in message
    status, out, err = run(tmp_path, model, "-F", "DATA_CHANNEL:2", "-f", "B:1")  # the same size: fine
    assert (status, printed(out)["y"]) == (0, [0, 2]), err


@pytest.mark.parametrize("arg", ["N", "N:", ":3", "N:-1", "N:x", "N:4294967296"])
def test_bad_free_dimension_argument(arg: str) -> None:
    status, out, err = run_cli("run", DYNAMIC, "-f", arg)
    assert (status, out) == (2, "") and "dml2onnx: error: -f " in err and err.count("\n") == 1, err


@pytest.mark.skipif(dmlapi.missing() is not None or winhost.missing() is not None, reason="Wine is not set up (make dml-setup)")
def test_directml_api_runs_an_onnx_graph_on_the_directml_ep_as_dxdispatch_does() -> None:
    status, out, err = run_cli("run", GEMM, "--ep", "dml-api")
    assert status == 0, err
    assert "'gemm' is an ONNX graph: it runs on DmlExecutionProvider, as in DxDispatch" in err
    assert printed(out)["Out"] == GEMM_OUT.tolist()


# The other verbs treat them as the graphs they are.


def test_export_writes_the_graph_as_it_is(tmp_path: Path) -> None:
    status, _, err = run_cli("export", GEMM, "-o", str(tmp_path / "out"), "--allow-any-path")
    assert status == 0, err
    written = onnx.load(tmp_path / "out" / "gemm.onnx")
    assert written.SerializeToString() == onnx.load(MODELS / "onnx_gemm.onnx").SerializeToString()
    status, _, err = run_cli("export", DYNAMIC, "-o", str(tmp_path / "dyn"), "--allow-any-path", "-f", "N:3")
    assert status == 0, err
    inputs = onnx.load(tmp_path / "dyn" / "concat.onnx").graph.input
    assert [[d.dim_value for d in i.type.tensor_type.shape.dim] for i in inputs] == [[3, 2], [3, 2]]
    status, _, err = run_cli("export", GEMM, "-o", str(tmp_path / "b"), "--allow-any-path", "--buffer-inputs")
    assert status == 2 and "--buffer-inputs is for DirectML operator descs: 'gemm' is an ONNX graph" in err
    assert not (tmp_path / "b").exists()


def test_check_compares_each_ep_with_the_cpu_ep() -> None:
    status, out, err = run_cli("check", DYNAMIC, "--ep", "cpu")
    assert status == 0, err
    rows = [line.split() for line in out.splitlines() if line.startswith(("0:", "1:", "2:"))]
    assert [r[0] for r in rows] == ["0:concat", "1:concat", "2:concat"]
    assert all(r[-1] == "ok" and r[-2] == "1/1" for r in rows)
    assert "ONNX dispatchables are compared with the CPUExecutionProvider" in out


def test_static_check_looks_at_the_graph_nodes() -> None:
    status, out, err = run_cli("check", GEMM, "--static")
    assert status == 0, err
    assert out.startswith("gemm: every node runs on the DirectML EP\n")


def test_inspect_text_shows_the_graph() -> None:
    status, out, err = run_cli("inspect", DYNAMIC, "--text", "-f", "N:2")
    assert status == 0, err
    assert "  inputs: x0 float[2,2], x1 float[2,2]\n  outputs: y float[4,2]\n" in out
    assert "Concat" in out


def test_bench_times_an_onnx_dispatchable() -> None:
    status, out, err = run_cli("bench", GEMM, "--ep", "cpu", "-i", "2")
    assert status == 0, err
    assert out.startswith("Dispatch 'gemm': 2 iterations, ")


def single_graph_outputs(path: Path, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The single graph run on the CPU EP, its resource inputs given flat."""
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    flat = {i.name: np.ascontiguousarray(feeds[i.name], np.float32).ravel() for i in session.get_inputs()}
    return dict(zip([o.name for o in session.get_outputs()], session.run(None, flat), strict=True))


def test_single_graph_inlines_the_onnx_graph(tmp_path: Path) -> None:
    """Nodes prefixed by the dispatchable's name, at --opset (converted from the file's 13)."""
    status, _, err = run_cli("export", GEMM, "-o", str(tmp_path), "--allow-any-path", "--single-graph")
    assert status == 0, err
    model = onnx.load(tmp_path / "onnx_gemm.onnx")
    assert model.opset_import[0].version == 17
    assert {n.op_type for n in model.graph.node} >= {"Gemm", "Add"}
    got = single_graph_outputs(tmp_path / "onnx_gemm.onnx", {"A0": A, "B0": B, "A1": A, "B1": B})
    np.testing.assert_array_equal(got["Out"], GEMM_OUT)


def test_single_graph_of_dynamic_shapes_uses_the_binding_shapes(tmp_path: Path) -> None:
    model = json.loads((MODELS / "onnx_dynamic_shapes.json").read_text())
    shutil.copy(MODELS / "onnx_dynamic_shapes.onnx", tmp_path)
    model["commands"] = model["commands"][:4]  # without the deferred resource
    path = write_model(tmp_path, model, "dyn.json")
    status, _, err = run_cli("export", path, "-o", str(tmp_path / "sg"), "--allow-any-path", "--single-graph")
    assert status == 0, err
    got = single_graph_outputs(tmp_path / "sg" / "dyn.onnx", {"a": X0, "b": X1, "c": np.zeros(12)})
    first = np.zeros(12, np.float32)
    first[:4] = concat(1)
    np.testing.assert_array_equal(got["c@1"], first)  # "c" is also an input
    np.testing.assert_array_equal(got["c@3"], concat(3))


def test_single_graph_refuses_a_deferred_resource(tmp_path: Path) -> None:
    status, out, err = run_cli("export", DYNAMIC, "-o", str(tmp_path / "sg"), "--allow-any-path", "--single-graph")
    assert (status, out) == (2, "")
    assert "commands[4].bindings.y: --single-graph cannot hold deferred resource 'deferredY'" in err
    assert not (tmp_path / "sg").exists()


def test_session_options_from_the_command_line() -> None:
    """DxDispatch's -e, -l and -L reach the session: ONNX Runtime's verbose log (-L 0) lists far
    fewer graph transformers with optimization disabled (-l 0) than at the default 99; the
    reserved fallback entry and bad forms are refused (exit 2)."""

    def log_lines(*extra: str) -> list[str]:
        cmd = [sys.executable, "-m", "dml2onnx", "run", GEMM, "-L", "0", *extra]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=True)
        assert printed(done.stdout)["Out"] == GEMM_OUT.tolist()
        return [line for line in done.stderr.splitlines() if "transformer" in line.lower() or "optimiz" in line.lower()]

    assert len(log_lines("-l", "0")) * 3 < len(log_lines("-e", "session.intra_op.allow_spinning:0"))
    for bad in (["-e", "session.disable_cpu_ep_fallback:0"], ["-e", "novalue"], ["-l", "5"], ["-L", "7"]):
        status, _, err = run_cli("run", GEMM, *bad)
        assert status == 2 and err.strip(), bad


def test_single_graph_renames_what_an_if_branch_reads_of_its_graph(tmp_path: Path) -> None:
    """An If branch reading the graph's initializer and input keeps reading them once the graph's
    names are prefixed (onnx's add_prefix had left the initializer's name behind: the cuda target's
    guarded Gather of a captured BERT's embedding table)."""
    table = helper.make_tensor("table", TensorProto.FLOAT, [4], [10, 20, 30, 40])
    then = helper.make_graph(
        [helper.make_node("Gather", ["table", "i"], ["picked"], name="pick")],
        "then",
        [],
        [helper.make_tensor_value_info("picked", TensorProto.FLOAT, [2])],
    )
    other = helper.make_graph(
        [helper.make_node("Neg", ["table"], ["negated"], name="neg")],
        "else",
        [],
        [helper.make_tensor_value_info("negated", TensorProto.FLOAT, [4])],
    )
    graph = helper.make_graph(
        [
            helper.make_node("Constant", [], ["yes"], value=helper.make_tensor("t", TensorProto.BOOL, [], [True])),
            helper.make_node("If", ["yes"], ["y"], name="branch", then_branch=then, else_branch=other),
        ],
        "g",
        [helper.make_tensor_value_info("i", TensorProto.INT64, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])],
        [table],
    )
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), tmp_path / "branch.onnx")
    model = {
        "resources": {
            "i": {"initialValuesDataType": "INT64", "initialValues": [3, 1]},
            "y": {"initialValuesDataType": "FLOAT32", "initialValues": {"valueCount": 2, "value": 0}},
        },
        "dispatchables": {"branch": {"type": "onnx", "sourcePath": "branch.onnx"}},
        "commands": [
            {"type": "dispatch", "dispatchable": "branch", "bindings": {"i": "i", "y": "y"}},
            {"type": "print", "resource": "y"},
        ],
    }
    path = write_model(tmp_path, model, "branch.json")
    status, _, err = run_cli("export", path, "-o", str(tmp_path / "sg"), "--single-graph", "-q")
    assert status == 0, err
    session = ort.InferenceSession(str(tmp_path / "sg" / "branch.onnx"), providers=["CPUExecutionProvider"])
    got = session.run(["y"], {"i": np.array([3, 1], np.int64)})[0]
    np.testing.assert_array_equal(got.ravel(), [40, 20])
