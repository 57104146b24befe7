"""One CLI: the options every command shares mean the same thing everywhere (-q, --ep and its
choices, --target following the engine unless given, -i/--iterations), and each invalid value is
exit 2 with one line."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from dml2onnx.backends import runtime
from dml2onnx.core.jsonvalues import load_jsonc
from dml2onnx.ops import registry
from support import run_cli, write_model

MODELS = Path(__file__).resolve().parents[2] / "models"
GEMM_ADD = str(MODELS / "gemm_add.json")
COMMANDS = ("run", "export", "check", "inspect", "bench", "capture", "compare", "ops")


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_takes_quiet(command: str) -> None:
    status, out, _ = run_cli(command, "--help")
    assert status == 0 and "-q, --quiet" in out, command


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_takes_json(command: str) -> None:
    status, out, _ = run_cli(command, "--help")
    assert status == 0 and "--json" in out and "print JSON instead of text" in " ".join(out.split()), command


def test_run_json_holds_the_engine_target_times_and_values(tmp_path: Path) -> None:
    status, out, err = run_cli("run", GEMM_ADD, "--json", "-i", "3")
    got = json.loads(out)
    assert status == 0 and (got["engine"], got["target"]) == ("CPUExecutionProvider", "cpu")
    assert got["prints"] == [{"resource": "y", "values": [22.5, 27.0, 49.5, 63.0]}] and got["files"] == []
    assert [(d["dispatchable"], d["iterations"]) for d in got["dispatches"]] == [("matmul", 3), ("add_bias", 3)]
    assert all(d["min_ms"] <= d["median_ms"] for d in got["dispatches"]) and "Dispatch 'matmul'" in err


def test_run_json_writes_non_finite_values_as_strings(tmp_path: Path) -> None:
    model = _relu("FLOAT32", [float("nan"), float("inf"), -1, 2])
    model["resources"]["x"]["initialValues"] = ["nan", "inf", -1, 2]
    model["commands"].append({"type": "print", "resource": "y"})
    status, out, err = run_cli("run", write_model(tmp_path, model), "--json", "-q")
    assert status == 0 and err == "", err
    assert json.loads(out)["prints"][0]["values"] == ["nan", "inf", 0.0, 2.0]


def test_export_inspect_json(tmp_path: Path) -> None:
    status, out, _ = run_cli("export", GEMM_ADD, "-o", str(tmp_path), "--json", "-q")
    got = json.loads(out)
    assert (
        status == 0
        and got["target"] == "portable"
        and [Path(f["file"]).name for f in got["files"]]
        == [
            "matmul.onnx",
            "add_bias.onnx",
        ]
    )
    assert all(Path(f["file"]).exists() and f["nodes"] >= 1 for f in got["files"])
    status, out, _ = run_cli("inspect", GEMM_ADD, "--json")
    table = json.loads(out)
    assert status == 0 and table["target"] == "portable" and [i["name"] for i in table["inputs"]] == ["x", "w", "bias"]
    assert table["nodes"] and all({"name", "op", "inputs", "outputs", "doc"} <= set(n) for n in table["nodes"])


@pytest.mark.parametrize("command", ("run", "check", "bench"))
def test_the_engines_are_the_same_everywhere(command: str) -> None:
    _, out, _ = run_cli(command, "--help")
    assert "{auto,cpu,cuda,dml,dml-api}" in out and "directml is the old spelling of dml-api" in " ".join(out.split())
    assert "--target {portable,cpu,cuda,dml}" in out and "use the EP's own" in " ".join(out.split())


def test_run_says_which_engine_and_target_ran() -> None:
    status, out, err = run_cli("run", GEMM_ADD)
    assert status == 0 and out == "Resource 'y': 22.5, 27, 49.5, 63\n"
    assert "on CPUExecutionProvider, target cpu\n" in err
    status, _, err = run_cli("run", GEMM_ADD, "--target", "portable")
    assert status == 0 and "on CPUExecutionProvider, target portable\n" in err


def test_iterations_report_the_first_run_apart() -> None:
    status, out, err = run_cli("run", GEMM_ADD, "-i", "4")
    assert status == 0 and out == "Resource 'y': 22.5, 27, 49.5, 63\n"  # the outputs once, from the first run
    line = next(x for x in err.splitlines() if x.startswith("Dispatch 'matmul'"))
    assert line.startswith("Dispatch 'matmul': 4 iterations, the first ") and " ms median, " in line


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("run", GEMM_ADD, "-i", "0"), "argument -i/--iterations: must be at least 1, got 0"),
        (("bench", GEMM_ADD, "-i", "x"), "argument -i/--iterations: expected a whole number, got 'x'"),
        (("check", GEMM_ADD, "--ep", "gpu"), "argument --ep: invalid choice: 'gpu'"),
        (("bench", GEMM_ADD, "--ep", "directml"), "bench times lowered ONNX graphs with device-bound I/O"),
    ],
)
def test_invalid_options_are_exit_2(args: tuple[str, ...], message: str) -> None:
    status, _, err = run_cli(*args)
    assert status == 2 and message in err and "Traceback" not in err


def test_the_old_spelling_of_dml_api_works_with_a_note() -> None:
    """`directml` (DirectML's own API) was too like `dml` (ONNX Runtime's DirectML EP): it is
    `dml-api` now; the old spelling runs the same engine and says so, but under -q."""
    if "dml-api" not in runtime.engines():
        pytest.skip("DirectML's API under Wine is not set up (make dml-setup)")
    status, out, err = run_cli("run", GEMM_ADD, "--ep", "directml")
    assert status == 0 and out == "Resource 'y': 22.5, 27, 49.5, 63\n"
    assert err.startswith("dml2onnx: note: --ep directml is spelled --ep dml-api now (DirectML's own API; --ep dml is")
    assert "on DirectML API" in err
    status, _, err = run_cli("run", GEMM_ADD, "--ep", "directml", "-q")
    assert status == 0 and err == ""


def test_check_names_auto_by_what_it_picked() -> None:
    status, out, _ = run_cli("check", GEMM_ADD, "--ep", "cpu", "--ep", "auto", "-q")
    assert status == 0 and " auto " not in out
    assert "targets cpu on CPUExecutionProvider" in out


def test_quiet_check_prints_no_progress() -> None:
    status, out, err = run_cli("check", GEMM_ADD, "--ep", "cpu", "-q")
    assert status == 0 and err == "" and "all match" in out
    status, out, err = run_cli("check", GEMM_ADD, "--ep", "cpu")
    assert status == 0 and "dml2onnx check: CPUExecutionProvider...\n" in err


def _relu(resource_type: str, values: list[float]) -> dict:
    t = {"DataType": "FLOAT32", "Sizes": [1, 1, 1, 4]}
    return {
        "resources": {
            "x": {"initialValuesDataType": resource_type, "initialValues": values},
            "y": {"initialValuesDataType": "FLOAT32", "initialValues": {"valueCount": 4, "value": 0}},
        },
        "dispatchables": {"relu": {"type": "DML_OPERATOR_ACTIVATION_RELU", "desc": {"InputTensor": t, "OutputTensor": t}}},
        "commands": [{"type": "dispatch", "dispatchable": "relu", "bindings": {"InputTensor": "x", "OutputTensor": "y"}}],
    }


def test_a_reinterpreted_resource_gets_a_note(tmp_path: Path) -> None:
    status, _, err = run_cli("run", write_model(tmp_path, _relu("UINT32", [1, 2, 3, 4])))
    assert status == 0
    assert (
        "dml2onnx: note: commands[0].bindings.InputTensor: relu's InputTensor is FLOAT32, but resource 'x' holds "
        "UINT32 values: their bytes are read as FLOAT32, as DirectML does\n"
    ) in err
    assert "note:" not in run_cli("run", write_model(tmp_path, _relu("FLOAT32", [1, 2, 3, 4])))[2]
    assert run_cli("run", write_model(tmp_path, _relu("UINT32", [1, 2, 3, 4])), "-q")[2] == ""


def test_a_short_resource_is_told_in_elements_too(tmp_path: Path) -> None:
    status, _, err = run_cli("run", write_model(tmp_path, _relu("FLOAT16", [1, 2, 3, 4])))
    assert status == 2
    assert err.strip().endswith(
        "resource 'x' has 8 bytes from offset 0 (4 FLOAT16 values), but InputTensor (FLOAT32[1, 1, 1, 4]) needs 16 "
        "(4 FLOAT32 elements)"
    ), err


def test_a_misspelt_field_gets_a_did_you_mean(tmp_path: Path) -> None:
    model = _relu("FLOAT32", [1, 2, 3, 4])
    desc = model["dispatchables"]["relu"]["desc"]
    desc["InputTensr"] = desc.pop("InputTensor")
    status, _, err = run_cli("run", write_model(tmp_path, model))
    assert status == 2
    assert (
        "dispatchables.relu.desc.InputTensr: unknown field of DML_ACTIVATION_RELU_OPERATOR_DESC (did you mean InputTensor?" in err
    )


def test_an_onnx_file_is_pointed_to_the_onnx_dispatchable() -> None:
    status, _, err = run_cli("run", str(MODELS / "onnx" / "gemm_add.onnx"))
    assert status == 2 and err.startswith("dml2onnx: error: '") and "(model)" not in err
    assert "is an ONNX model, not a DxDispatch JSON model: run it as an ONNX dispatchable (a model whose dispatchable" in err


def test_check_json(monkeypatch: pytest.MonkeyPatch) -> None:
    status, out, err = run_cli("check", GEMM_ADD, "--ep", "cpu", "--json", "-q")
    result = json.loads(out)
    assert status == 0 and err == ""
    assert result["engines"] == ["CPUExecutionProvider"] and result["targets"] == {"CPUExecutionProvider": "cpu"}
    assert [c["dispatch"] for c in result["checks"]] == ["0:matmul", "1:add_bias"] and result["failed"] == 0
    assert all(c["ok"] and c["max_abs"] == 0 for c in result["checks"])
    wrong = dataclasses.replace(registry.family("ELEMENT_WISE_ADD"), reference=lambda desc, inputs: inputs["ATensor"] * np.nan)
    monkeypatch.setitem(registry.BY_OPERATOR, "ELEMENT_WISE_ADD", wrong)
    status, out, _ = run_cli("check", GEMM_ADD, "--ep", "cpu", "--json", "-q")
    result = json.loads(out, parse_constant=_not_json)  # strict JSON: no NaN or Infinity tokens
    assert status == 1 and result["failed"] == 1 and result["checks"][1]["ok"] is False


def _not_json(token: str) -> None:
    raise ValueError(f"{token} is not JSON")


def test_check_iterations_fail_a_dispatch_whose_runs_differ(monkeypatch: pytest.MonkeyPatch) -> None:
    """check -i N runs each dispatch N times; outputs that change from run to run (bit for bit) fail it."""
    create = runtime.create

    def drifting(model: Any, name: str, ep: str, configure: Any = None) -> Any:
        session, calls = create(model, name, ep, configure), [0]
        run_all = session.run_all

        def run(feeds: dict[str, np.ndarray], names: Any = None) -> dict[str, np.ndarray]:
            calls[0] += 1
            got = run_all(feeds)
            return {k: v + (calls[0] - 1) if name == "add_bias" else v for k, v in got.items()}

        session.run_all = run
        return session

    status, out, _ = run_cli("check", GEMM_ADD, "--ep", "cpu", "-i", "3", "-q")
    assert status == 0 and "not deterministic" not in out
    monkeypatch.setattr(runtime, "create", drifting)
    status, out, _ = run_cli("check", GEMM_ADD, "--ep", "cpu", "-i", "3", "-q")
    assert status == 1 and "1:add_bias  CPUExecutionProvider" in out
    assert "ok (not deterministic" not in out and "MISMATCH (not deterministic: run 2 of 3 differs from the first in" in out
    status, out, _ = run_cli("check", GEMM_ADD, "--ep", "cpu", "-q")  # one run: nothing to compare
    assert status == 0


def test_the_readmes_first_screen_is_what_the_tool_prints() -> None:
    """README's first screen: the GEMM + ADD model's print, and check's table on every engine present
    (its rows for the engines this machine has, in the README's order)."""
    readme = (MODELS.parent / "README.md").read_text()
    screen = readme.split("```console\n", 1)[1].split("```", 1)[0].splitlines()
    status, out, _ = run_cli("run", GEMM_ADD)
    assert status == 0 and out.splitlines()[0] == screen[1]
    rows = [line for line in screen if line[:1].isdigit() and ":" in line.split()[0]]
    status, out, _ = run_cli("check", GEMM_ADD, "-q")
    got = [line for line in out.splitlines() if line[:1].isdigit() and ":" in line.split()[0]]
    labels = {line.split()[1] for line in got}
    assert status == 0 and got == [r for r in rows if r.split()[1] in labels], out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("ops", "CONVOLUTION", "--target", "cpu"), "dml2onnx ops: error: unrecognized arguments: --target cpu (--target is "
         "an option of run, export, check, bench, inspect, compare)"),
        (("capture", "m.onnx", "-o", "d", "-i", "3"), "dml2onnx capture: error: unrecognized arguments: -i 3 (-i is an option "
         "of run, check, bench)"),
        (("run", GEMM_ADD, "--bogus"), "dml2onnx run: error: unrecognized arguments: --bogus\n"),
    ],
)  # fmt: skip
def test_an_option_the_command_does_not_take_names_those_that_do(args: tuple[str, ...], message: str) -> None:
    status, out, err = run_cli(*args)
    assert status == 2 and out == "" and message in err and err.startswith(f"usage: dml2onnx {args[0]} "), err


def test_export_and_inspect_lower_for_the_engine_named(tmp_path: Path) -> None:
    for ep, target in (("cpu", "cpu"), ("dml", "dml"), ("cuda", "cuda")):
        status, out, _ = run_cli("export", GEMM_ADD, "-o", str(tmp_path / ep), "--ep", ep, "--json", "-q")
        assert status == 0 and json.loads(out)["target"] == target
        status, out, _ = run_cli("inspect", GEMM_ADD, "--ep", ep, "--json")
        assert status == 0 and json.loads(out)["target"] == target
    status, out, _ = run_cli("export", GEMM_ADD, "-o", str(tmp_path / "t"), "--ep", "dml", "--target", "portable", "--json")
    assert status == 0 and json.loads(out)["target"] == "portable"
    status, _, err = run_cli("export", GEMM_ADD, "-o", str(tmp_path / "api"), "--ep", "dml-api")
    assert status == 2 and "DirectML's API runs the descs themselves, no ONNX graph; use --ep dml" in err
    assert not (tmp_path / "api").exists()


@pytest.mark.parametrize("command", ["run", "check"])
def test_a_target_for_dml_api_alone_gets_a_note(command: str) -> None:
    if "dml-api" not in runtime.engines():
        pytest.skip("DirectML's API under Wine is not set up (make dml-setup)")
    status, _, err = run_cli(command, GEMM_ADD, "--ep", "dml-api", "--target", "cpu")
    assert status == 0 and "note: --target cpu does not apply: --ep dml-api runs the descs themselves" in err


def test_ops_suggests_and_shows_one_operator_at_a_level() -> None:
    status, _, err = run_cli("ops", "CONV")
    assert status == 2 and "did you mean CONVOLUTION or CONVOLUTION_INTEGER?" in err
    status, out, _ = run_cli("ops", "CONVOLUTION", "--feature-level", "1_0")
    assert status == 0 and "tensor support at feature level 1_0:\n  InputTensor: FLOAT32, FLOAT16; 4 to 5 dimensions" in out
    assert "CROSS_CORRELATION is what ONNX's Conv and PyTorch compute" in out
    status, _, err = run_cli("ops", "ARGMAX", "--feature-level", "2_1")
    assert status == 2 and "DML_OPERATOR_ARGMAX came with feature level 3_0; 2_1 has no such operator" in err
    status, out, _ = run_cli("ops", "CONVOLUTION", "--example")
    assert status == 0 and '"Mode": "CROSS_CORRELATION"' in out and '"StartPadding": [1, 1]' in out


def test_a_bug_is_one_line_not_a_traceback(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*_: Any, **__: Any) -> None:
        raise KeyError("the bug")

    monkeypatch.setattr(registry, "family", broken)
    status, out, err = run_cli("run", GEMM_ADD)
    assert status == 1 and out == "" and "Traceback" not in err
    assert err == "dml2onnx: internal error: KeyError: 'the bug' (a bug in dml2onnx; DML2ONNX_TRACEBACK=1 shows where)\n"
    monkeypatch.setenv("DML2ONNX_TRACEBACK", "1")
    with pytest.raises(KeyError):
        run_cli("run", GEMM_ADD)


def test_an_unknown_resource_gets_a_did_you_mean(tmp_path: Path) -> None:
    model = load_jsonc(Path(GEMM_ADD).read_text())  # the model has comments
    model["commands"][0]["bindings"]["OutputTensor"] = "xww"
    model["commands"].append({"type": "print", "resource": "Y"})
    status, _, err = run_cli("run", write_model(tmp_path, model))
    assert status == 2
    assert err == "dml2onnx: error: commands[0].bindings.OutputTensor: unknown resource 'xww' (did you mean xw?)\n"
    model["commands"][0]["bindings"]["OutputTensor"] = "xw"
    status, _, err = run_cli("run", write_model(tmp_path, model))
    assert status == 2 and "commands[3].resource: unknown resource 'Y' (did you mean y?)" in err, err
