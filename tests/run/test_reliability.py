"""Limits before allocation, writes that stay in the current folder, nothing half-written, and
runtime failures reported with the dispatchable's name."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from dml2onnx.backends import runtime
from dml2onnx.core.jsonvalues import load_jsonc
from support import run_cli, write_model

ROOT = Path(__file__).resolve().parents[2]
MODELS = ROOT / "models"


def argmax_model(sizes: list[int], out_sizes: list[int], resource: dict | None = None) -> dict:
    return {
        "resources": {
            "x": resource or {"initialValuesDataType": "FLOAT32", "initialValues": [1, 2, 3, 4]},
            "y": {"initialValuesDataType": "UINT32", "initialValues": [0]},
        },
        "dispatchables": {
            "a": {
                "type": "ARGMAX",
                "desc": {
                    "InputTensor": {"DataType": "FLOAT32", "Sizes": sizes},
                    "OutputTensor": {"DataType": "UINT32", "Sizes": out_sizes},
                    "AxisCount": 1,
                    "Axes": [0],
                    "AxisDirection": "INCREASING",
                },
            }
        },
        "commands": [{"type": "print", "resource": "y"}],
    }


def run_limited(args: list[str], cwd: Path, address_space: int = 3 * 2**30) -> subprocess.CompletedProcess[str]:
    """dml2onnx in a child process that cannot map more than `address_space` bytes: a model that
    made it allocate its huge sizes would die with MemoryError instead of exiting 2."""
    code = (
        "import resource, sys; "
        f"resource.setrlimit(resource.RLIMIT_AS, ({address_space}, {address_space})); "
        "from dml2onnx.commands.cli import main; sys.exit(main(sys.argv[1:]))"
    )
    env = {"PYTHONPATH": str(ROOT), "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "OMP_NUM_THREADS": "1"}
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, cwd=cwd, env=env, check=False)


@pytest.mark.parametrize(
    ("label", "model", "path", "rule"),
    [
        (
            "huge tensor",
            argmax_model([65536, 65535], [1, 65535]),
            "dispatchables.a.desc.InputTensor.Sizes",
            "exceed the tensor limit of 4 GiB",
        ),
        (
            "too many elements",
            argmax_model([65536, 65536, 2], [1, 65536, 2]),
            "dispatchables.a.desc.InputTensor.Sizes",
            "do not fit in UINT32",
        ),
        (
            "huge constant",
            argmax_model([4], [1], {"initialValuesDataType": "FLOAT64", "initialValues": {"valueCount": 4294967295, "value": 1}}),
            "resources.x.initialValues.valueCount",
            "exceed the buffer limit of 4 GiB",
        ),
        (
            "huge sizeInBytes",
            argmax_model([4], [1], {"initialValuesDataType": "FLOAT32", "initialValues": [1, 2, 3, 4], "sizeInBytes": 2**40}),
            "resources.x.sizeInBytes",
            "exceed the buffer limit",
        ),
        (
            "huge sequence",
            argmax_model(
                [4],
                [1],
                {
                    "initialValuesDataType": "FLOAT16",
                    "initialValues": {"valueCount": 4000000000, "valueStart": 0, "valueDelta": 1},
                },
            ),
            "resources.x.initialValues.valueCount",
            "exceed the buffer limit",
        ),
    ],
)
def test_hostile_sizes_are_refused_before_allocation(label: str, model: dict, path: str, rule: str, tmp_path: Path) -> None:
    done = run_limited(["run", write_model(tmp_path, model)], tmp_path)
    assert done.returncode == 2, (label, done.stderr[-500:])
    assert done.stderr.startswith(f"dml2onnx: error: {path}: ") and rule in done.stderr, done.stderr


def test_max_bytes_is_configurable(tmp_path: Path) -> None:
    model = argmax_model([4], [1], {"initialValuesDataType": "FLOAT32", "initialValues": {"valueCount": 1024, "value": 1}})
    path = write_model(tmp_path, model)
    assert run_cli("run", path)[0] == 0
    status, _, err = run_cli("run", path, "--max-bytes", "1K")
    assert status == 2 and "resources.x.initialValues.valueCount" in err and "1 KiB" in err
    status, _, err = run_cli("run", path, "--max-bytes", "lots")
    assert status == 2 and "--max-bytes" in err


def write_model_with(tmp_path: Path, target: str) -> str:
    model = load_jsonc((MODELS / "argmax.json").read_text())
    model["commands"].append({"type": "writeFile", "resource": "all", "targetPath": target})
    return write_model(tmp_path, model)


@pytest.mark.parametrize("target", ["/tmp/dml2onnx-escape.npy", "../escape.npy", "sub/../../escape.npy"])
def test_write_file_outside_the_folder_is_refused(target: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    status, out, err = run_cli("run", write_model_with(tmp_path, target))
    assert status == 2 and "commands[7].targetPath" in err and "--allow-any-path" in err
    assert out == "" and not (tmp_path / "escape.npy").exists() and not Path("/tmp/dml2onnx-escape.npy").exists()


def test_write_file_through_a_link_out_of_the_folder_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    work, elsewhere = tmp_path / "work", tmp_path / "elsewhere"
    work.mkdir()
    elsewhere.mkdir()
    (work / "link").symlink_to(elsewhere)
    monkeypatch.chdir(work)
    status, _, err = run_cli("run", write_model_with(tmp_path, "link/out.npy"))
    assert status == 2 and "outside the current folder" in err and not (elsewhere / "out.npy").exists()


def test_allow_any_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    status, _, err = run_cli("run", write_model_with(tmp_path, "../out.npy"), "--allow-any-path")
    assert status == 0, err
    assert np.load(tmp_path / "out.npy").tolist() == [7]
    # the user's own -o may name any folder (the rule is for what a model writes)
    status, _, err = run_cli("export", str(MODELS / "argmax.json"), "-o", str(tmp_path / "onnx"))
    assert status == 0 and (tmp_path / "onnx" / "argmax_rows.onnx").exists(), err
    assert run_cli("export", str(MODELS / "argmax.json"), "-o", str(tmp_path / "onnx2"), "--allow-any-path")[0] == 0


def test_failed_export_leaves_existing_files_untouched(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert run_cli("export", str(MODELS / "argmax.json"), "-o", "out")[0] == 0
    before = {p.name: p.read_bytes() for p in (tmp_path / "out").iterdir()}
    from dml2onnx import lowering

    real = lowering.lower

    def failing(desc, name, *args, **kwargs):  # type: ignore[no-untyped-def]
        if name == "argmax_all":
            raise OSError("disk full")
        return real(desc, name, *args, **kwargs)

    monkeypatch.setattr(lowering, "lower", failing)
    status, _, err = run_cli("export", str(MODELS / "argmax.json"), "-o", "out")
    assert status == 1 and err == "dml2onnx: error: disk full\n"
    assert {p.name: p.read_bytes() for p in (tmp_path / "out").iterdir()} == before  # no temporary file either


def test_write_file_is_atomic(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from dml2onnx.core import files

    monkeypatch.chdir(tmp_path)
    (tmp_path / "out.bin").write_bytes(b"old")

    def broken_replace(src: str, dst: str) -> None:
        raise OSError("rename failed")

    monkeypatch.setattr(files.os, "replace", broken_replace)
    with pytest.raises(OSError):
        files.write_atomic(tmp_path / "out.bin", b"new contents")
    assert (tmp_path / "out.bin").read_bytes() == b"old" and sorted(p.name for p in tmp_path.iterdir()) == ["out.bin"]


def test_runtime_failure_names_the_dispatchable(monkeypatch: pytest.MonkeyPatch) -> None:
    real_create = runtime.create

    def create(model, name, ep):  # type: ignore[no-untyped-def]
        session = real_create(model, name, ep)
        inner = session.session

        class Failing:
            def run(self, *args, **kwargs):  # type: ignore[no-untyped-def]
                raise RuntimeError("CUDA failure 2: out of memory")

            def __getattr__(self, attr: str):  # type: ignore[no-untyped-def]
                return getattr(inner, attr)

        session.session = Failing()
        return session

    monkeypatch.setattr(runtime, "create", create)
    status, _, err = run_cli("run", str(MODELS / "argmax.json"))
    assert status == 1 and err.strip().splitlines()[-1].startswith("dml2onnx: error: dispatchable 'argmax_columns' failed")
    assert "out of memory" in err and "Traceback" not in err


@pytest.mark.parametrize(
    ("mutate", "path", "rule"),
    [
        (lambda m: m.update(resources=[]), "resources", "expected an object"),
        (lambda m: m.update(commands={}), "commands", "expected an array"),
        (lambda m: m["dispatchables"]["argmax_all"].update(desc=[]), "dispatchables.argmax_all.desc", "expected an object"),
        (lambda m: m["dispatchables"]["argmax_all"].update(type=7), "dispatchables.argmax_all.type", "expected a string"),
        (
            lambda m: m["dispatchables"]["argmax_all"]["desc"]["InputTensor"].update(Flags="FROZEN"),
            "dispatchables.argmax_all.desc.InputTensor.Flags",
            "DML_TENSOR_FLAGS",
        ),
        (
            lambda m: m["commands"][0]["bindings"].update(InputTensor={"name": "input", "stride": 4}),
            "commands[0].bindings.InputTensor.stride",
            "unknown field",
        ),
        (lambda m: m["commands"].append({"type": "writeFile", "resource": "all"}), "commands[7].targetPath", "required"),
        (
            lambda m: m["resources"]["input"].update(initialValues={"sourcePath": "."}),
            "resources.input.initialValues.sourcePath",
            "is a directory, not a regular file",
        ),
        (
            lambda m: m["resources"]["input"].update(initialValuesDataType="BFLOAT16"),
            "resources.input.initialValuesDataType",
            "DML_TENSOR_DATA_TYPE",
        ),
        (
            lambda m: m["dispatchables"]["argmax_all"].update(executionFlags=["FAST"]),
            "dispatchables.argmax_all.executionFlags[0]",
            "DML_EXECUTION_FLAGS",
        ),
    ],
)
def test_more_invalid_models(mutate, path: str, rule: str, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    model = load_jsonc((MODELS / "argmax.json").read_text())
    mutate(model)
    status, out, err = run_cli("run", write_model(tmp_path, model))
    assert status == 2 and out == "", err
    assert err.startswith(f"dml2onnx: error: {path}: ") and rule in err and err.count("\n") == 1, err


def test_corrupt_and_truncated_npy(tmp_path: Path) -> None:
    np.save(tmp_path / "ok.npy", np.arange(4, dtype=np.float32))
    raw = (tmp_path / "ok.npy").read_bytes()
    cases = {
        "truncated_header.npy": raw[:20],
        "bad_magic.npy": b"NOTNUMPY" + raw[8:],
        "v9.npy": raw[:6] + b"\x09" + raw[7:],
        "header_code.npy": raw[:10] + b"{'descr': __import__('os').getcwd()}".ljust(len(raw) - 10),
    }
    for name, data in cases.items():
        (tmp_path / name).write_bytes(data)
        model = argmax_model([4], [1], {"initialValues": {"sourcePath": name}})
        status, _, err = run_cli("run", write_model(tmp_path, model))
        assert status == 2 and "not a valid .npy file" in err, (name, err)


def test_inspect_refuses_onnx_files_over_the_limit() -> None:
    status, _, err = run_cli("inspect", str(MODELS / "onnx" / "argmax.onnx"), "--text", "--max-bytes", "100")
    assert status == 2 and "larger than the limit of 100 bytes" in err
    status, _, err = run_cli("inspect", "no-such-file.onnx", "--text")
    assert status == 2 and "cannot read 'no-such-file.onnx'" in err
