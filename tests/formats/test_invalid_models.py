"""A bad input per rule: exit status 2, one line naming the JSON path and the rule, no
traceback, nothing written."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import numpy as np
import pytest

from invalid_models import CASES, Mutation, base_models
from support import run_cli


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_invalid_model(case: tuple[str, str, Mutation, str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _, base, mutate, path, rule = case
    model = copy.deepcopy(base_models()[base])
    mutate(model)
    (tmp_path / "model.json").write_text(json.dumps(model))
    monkeypatch.chdir(tmp_path)
    status, out, err = run_cli("run", "model.json")
    assert status == 2, (out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    assert lines[0].startswith(f"dml2onnx: error: {path}: "), lines[0]
    assert rule in lines[0], lines[0]
    assert out == "" and not (tmp_path / "out.npy").exists()
    # export refuses the same model the same way, writing nothing
    status, _, err = run_cli("export", "--allow-any-path", "model.json", "-o", "exported")
    assert status == 2 and f"{path}: " in err and not (tmp_path / "exported").exists()


def test_thread_group_count_is_accepted_and_ignored(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """DirectML operators ignore a dispatch's threadGroupCount (HLSL's field; DxDispatch's Guide)."""
    model = copy.deepcopy(base_models()["argmax"])
    (tmp_path / "plain.json").write_text(json.dumps(model))
    model["commands"][0]["threadGroupCount"] = [8, 4, 1]
    (tmp_path / "model.json").write_text(json.dumps(model))
    monkeypatch.chdir(tmp_path)
    plain = run_cli("run", "plain.json")
    status, out, err = run_cli("run", "model.json")
    assert status == 0 and plain[0] == 0, err
    assert out == plain[1] and out.startswith("Resource 'OutputTensor': ")


@pytest.mark.parametrize("suffix", [".bmp", ".jpeg", ".GIF"])
def test_write_file_to_an_image_is_refused(suffix: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Raw bytes are never written under an image's name: DxDispatch encodes only .png and .jpg
    (tests/formats/test_images.py) and would write raw bytes under these."""
    model = copy.deepcopy(base_models()["argmax"])
    model["commands"][1]["targetPath"] = f"out{suffix}"
    (tmp_path / "model.json").write_text(json.dumps(model))
    monkeypatch.chdir(tmp_path)
    status, out, err = run_cli("run", "model.json")
    assert status == 2 and out == "", (out, err)
    assert err.strip() == (
        "dml2onnx: error: commands[1].targetPath: DxDispatch treats only .jpg and .png names as images "
        "(it would write raw bytes under this name): name a .png or .jpg, or a .npy or raw file"
    )
    assert list(tmp_path.iterdir()) == [tmp_path / "model.json"]


@pytest.mark.parametrize("base", sorted(base_models()))
def test_base_models_are_valid(base: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "model.json").write_text(json.dumps(base_models()[base]))
    monkeypatch.chdir(tmp_path)
    status, out, err = run_cli("run", "model.json")
    assert status == 0, err
    assert out.startswith("Resource 'OutputTensor': ")
    assert np.load(tmp_path / "out.npy").size >= 1


def test_malformed_json(tmp_path: Path) -> None:
    (tmp_path / "model.json").write_text('{"resources": {,}')
    status, _, err = run_cli("run", str(tmp_path / "model.json"))
    assert status == 2 and "invalid JSON at line 1" in err and "Traceback" not in err


def test_pickled_npy_refused(tmp_path: Path) -> None:
    np.save(tmp_path / "obj.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True)
    model = base_models()["argmax"]
    model["resources"]["InputTensor"] = {"initialValues": {"sourcePath": "obj.npy"}}
    (tmp_path / "model.json").write_text(json.dumps(model))
    status, _, err = run_cli("run", str(tmp_path / "model.json"))
    assert status == 2 and "pickles are refused" in err


def test_missing_model_file(tmp_path: Path) -> None:
    status, _, err = run_cli("run", str(tmp_path / "absent.json"))
    assert status == 2 and "cannot read" in err
