"""DxDispatch's own models (microsoft/DirectML, DxDispatch/models/), run unchanged.

tests/dxdispatch/ holds byte-identical copies of every model of that folder (and the files they
read); its README.md lists them and LICENSE is DirectML's MIT licence. Every `.json` there is run
with `dml2onnx run` in a temporary copy of the folder (so the files the models write land there)
and must print what DxDispatch prints: its Executor.cpp writes each `print` as
`Resource 'NAME': v1, v2, ...`, every element of the buffer through `std::ostream <<` at the
default precision (6 significant digits, `%g`; FLOAT16 through half's conversion to float).

The expected values are worked out here, independently of dml2onnx: each model's initial values are
read from its JSON by `Initial` below (DxDispatch's constant, sequence, array, `.npy` and `.dat`
initializers) and the operator is computed with numpy. Models that dml2onnx cannot run are
expected to be refused with exit status 2 and one line. EXPECTED must name every model of the
folder (test_every_model_is_expected), so a model added there is tested, not skipped.
"""

from __future__ import annotations

import io
import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from dml2onnx.formats import dxdispatch
from dml2onnx.run.executor import Executor
from support import run_cli

DXDISPATCH = Path(__file__).parents[1] / "dxdispatch"
MODELS = sorted(p.name for p in DXDISPATCH.glob("*.json"))
NUMPY_TYPES = {"FLOAT16": np.float16, "FLOAT32": np.float32}


class Initial:
    """A model's resources' initial values, read from its JSON as DxDispatch's Guide describes
    the initializers (not through dml2onnx's parser)."""

    def __init__(self, folder: Path, model: dict[str, Any]) -> None:
        self.folder, self.resources = folder, model["resources"]

    def __call__(self, name: str) -> np.ndarray:
        res = self.resources[name]
        init = res["initialValues"]
        dtype = NUMPY_TYPES.get(res.get("initialValuesDataType", ""))
        if isinstance(init, list):
            return np.array(init, dtype)
        if "sourcePath" in init:  # a .npy carries its own type; a .dat is raw bytes of the given one
            path = self.folder / init["sourcePath"]
            return np.load(path) if path.suffix == ".npy" else np.fromfile(path, dtype)
        if "value" in init:
            return np.full(init["valueCount"], init["value"], dtype)
        return sequence(init["valueStart"], init["valueDelta"], init["valueCount"], dtype)

    def file(self, path: str) -> np.ndarray:
        """A raw FLOAT32 file beside the model (a serialized graph's constants)."""
        return np.fromfile(self.folder / path, np.float32)


def sequence(start: float, delta: float, count: int, dtype: type[np.floating]) -> np.ndarray:
    """DxDispatch's JsonParsers.cpp builds a sequence as a running sum in the element type
    (`value += valueDelta`), so 1 + 0.4 + 0.4 ... rounds at each step, as here."""
    values, value, step = [], dtype(start), dtype(delta)
    for _ in range(count):
        values.append(value)
        value = dtype(value + step)
    return np.array(values, dtype)


Prints = list[tuple[str, np.ndarray]]  # (resource, its whole buffer) per print command, in order


@dataclass(frozen=True)
class Runs:
    """Exit 0, stdout exactly these prints; `files` checks what the model's writeFile commands wrote."""

    prints: Callable[[Initial], Prints]
    files: Callable[[Path, Initial], None] | None = None


@dataclass(frozen=True)
class Refused:
    """Exit 2 and one line on stderr starting with this."""

    message: str


def correlate(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """DML_CONVOLUTION's CROSS_CORRELATION, FORWARD, one input channel and one filter, strides and
    dilations 1, no padding: each output element is its window of `x` times `w`, summed."""
    windows = np.lib.stride_tricks.sliding_window_view(x, w.shape)
    return (windows * w).sum(axis=tuple(range(-w.ndim, 0)))


def upsample_linear(x: np.ndarray, scale: int) -> np.ndarray:
    """DML_UPSAMPLE_2D LINEAR on the last two axes: output pixel o reads the input at the pixel
    centre (o + 0.5) / scale - 0.5, clamped to the edges (np.interp clamps), interpolated axis by
    axis."""
    for axis in (-1, -2):
        n = x.shape[axis]
        at = (np.arange(n * scale) + 0.5) / scale - 0.5
        x = np.apply_along_axis(lambda v, at=at, n=n: np.interp(at, np.arange(n), v), axis, x)
    return x.astype(np.float32)


def elu(x: np.ndarray, alpha: float) -> np.ndarray:
    return np.where(x < 0, np.float32(alpha) * np.expm1(np.minimum(x, 0)), x).astype(np.float32)


def rnn_single_step(r: Initial) -> Prints:
    """DML_OPERATOR_RNN, bidirectional, one time step (InputTensor [1,1,8,4]), no bias, no initial
    hidden state (zeros): each direction d gives H = f_d(X W_d^T + H0 R_d^T) with its own weights and
    activation (ELU 0.5, then ELU 3.5). With one step the backward direction reads the same single
    input. OutputSingleTensor [1,2,8,5] holds both directions' last H. Every sum here is positive,
    so this model never reaches ELU's Alpha: tests/ of RNN itself must cover the activations."""
    x, w, rec = r("input").reshape(8, 4), r("weights").reshape(2, 5, 4), r("recurrence").reshape(2, 5, 5)
    h0 = np.zeros((8, 5), np.float32)
    return [("output", np.stack([elu(x @ w[d].T + h0 @ rec[d].T, alpha) for d, alpha in enumerate((0.5, 3.5))]))]


def onnx_dynamic_shapes(r: Initial) -> Prints:
    """Concat on axis 0 of `a` and `b` bound with shapes [1,2] (the output fills 4 of c's 12
    elements), then [3,2] (all 12), then into a deferred resource sized by the output."""
    a, b = r("a"), r("b")
    first = r("c").copy()
    first[:4] = np.concatenate([a[:2], b[:2]])
    whole = np.concatenate([a, b])
    return [("c", first), ("c", whole), ("deferredY", whole)]


def add_npy_files(folder: Path, r: Initial) -> None:
    """The .npy of shape [6] (FLOAT32, little-endian) and the raw .dat of A + B."""
    want = r("A") + r("B")
    npy = np.load(folder / "dml_element_wise_add_output.npy")
    assert (npy.dtype, npy.shape) == (np.float32, (6,))
    np.testing.assert_array_equal(npy, want)
    assert npy.dtype.byteorder in ("<", "=")
    assert (folder / "dml_element_wise_add_output.dat").read_bytes() == want.astype("<f4").tobytes()


def grayscale_png(folder: Path, r: Initial) -> None:
    """image_io: a 1x1 convolution with weights 0.2989, 0.5870, 0.1140 over the RGB image scaled
    bicubically to 512 x 512, written as an 8-bit gray PNG. Pillow's own RGB-to-L conversion uses
    the same weights to three decimals and rounds where DxDispatch truncates: one level apart at
    most (tests/formats/test_images.py checks the exact bytes)."""
    from PIL import Image  # the images extra, as tests/formats/test_images.py

    written = Image.open(folder / "output.png")
    assert (written.format, written.mode, written.size) == ("PNG", "L", (512, 512))
    rgb = Image.open(folder / "chihuahua.jpg").convert("RGB").resize((512, 512), Image.Resampling.BICUBIC)
    diff = np.asarray(rgb.convert("L")).astype(int) - np.asarray(written).astype(int)
    assert diff.min() >= 0 and diff.max() <= 1, (diff.min(), diff.max())


HLSL = (
    "dispatchables.add.type: 'hlsl' dispatchables are compute shaders, which cannot be lowered to ONNX: run them "
    "with DxDispatch, or describe the computation with DirectML operators (dml2onnx ops lists them)"
)

EXPECTED: dict[str, Runs | Refused] = {
    "dmlSerializedGraph_matmul_add.json": Runs(
        lambda r: [
            (
                "model_output",
                (r("model_input") @ r.file("matmul_add/matmul_b_tensor.bin").reshape(5, 5))
                + r.file("matmul_add/add_b_tensor.bin"),
            )
        ]
    ),
    "dml_convolution_2d.json": Runs(lambda r: [("output", correlate(r("input").reshape(3, 3), r("filter").reshape(2, 2)))]),
    "dml_convolution_3d.json": Runs(lambda r: [("output", correlate(r("input").reshape(3, 3, 3), r("filter").reshape(2, 2, 2)))]),
    "dml_cumulative_product.json": Runs(lambda r: [("Out", np.cumprod(r("A")))]),
    "dml_element_wise_add.json": Runs(lambda r: [("Out", r("A") + r("B"))]),
    "dml_element_wise_add1.json": Runs(lambda r: [("Out", elu(r("A") + r("B"), 0.5))]),
    "dml_element_wise_add_npy.json": Runs(lambda r: [("Out", r("A") + r("B"))], add_npy_files),
    # InputTensor and OutputTensor both bound to A: clipped in place
    "dml_element_wise_clip.json": Runs(lambda r: [("A", np.clip(r("A"), -2.5, 2.5))]),
    "dml_element_wise_identity.json": Runs(lambda r: [("Out", r("A") * 2 + 10)]),
    "dml_fill_value_sequence.json": Runs(lambda r: [("Out", np.float32(3.2) + np.float32(1.5) * np.arange(5, dtype=np.float32))]),
    "dml_gemm.json": Runs(lambda r: [("output", r("A").reshape(3, 1) @ r("B").reshape(1, 3) + r("C").reshape(3, 3))]),
    # BTensor OWNED_BY_DML, bound at initialization; no CTensor, so Beta has nothing to scale
    "dml_gemm_graph.json": Runs(lambda r: [("output", r("A").reshape(32, 32) @ r("B").reshape(32, 32))]),
    # three windows: A's elements 0-2, B's first 2, A's elements 4-8
    "dml_join.json": Runs(lambda r: [("Out", np.concatenate([r("A")[:3], r("B")[:2], r("A")[4:9]]))]),
    "dml_owned_tensors.json": Runs(lambda r: [("Out", r("A") + r("B"))]),
    "dml_reduce.json": Runs(lambda r: [("input", r("input")), ("output", r("input").reshape(3, 3).sum(axis=1))]),
    "dml_rnn.json": Runs(rnn_single_step),
    "dml_scalar_union_fp16.json": Runs(lambda r: [("output", np.clip(r("input"), 2, 4))]),
    # rows 1-3, columns 1 and 3 of the 5 x 5 input
    "dml_slice.json": Runs(lambda r: [("output", r("input").reshape(5, 5)[1:4, 1:5:2])]),
    "dml_split.json": Runs(lambda r: list(zip(("Out1", "Out2", "Out3"), np.split(r("A"), 3), strict=True))),
    "dml_upsample_2d.json": Runs(lambda r: [("output", upsample_linear(r("input").reshape(2, 2), 2))]),
    "hlsl_add_fp16.json": Refused(HLSL),
    "hlsl_add_fp32.json": Refused(HLSL),
    "image_io.json": Runs(lambda r: [], grayscale_png),
    # the graph: Gemm(A0 [3,2], B0 [2,4]) + Gemm(A1, B1)
    "onnx_gemm.json": Runs(
        lambda r: [("Out", r("A0").reshape(3, 2) @ r("B0").reshape(2, 4) + r("A1").reshape(3, 2) @ r("B1").reshape(2, 4))]
    ),
    "onnx_dynamic_shapes.json": Runs(onnx_dynamic_shapes),
}


def dxdispatch_prints(prints: Prints) -> str:
    """What DxDispatch's print commands write: every element at `std::ostream`'s default precision."""
    return "".join(f"Resource '{name}': " + ", ".join(f"{float(v):g}" for v in values.ravel()) + "\n" for name, values in prints)


def load(name: str) -> dict[str, Any]:
    return json.loads((DXDISPATCH / name).read_text())


def only_operator_descs(model: dict[str, Any]) -> bool:
    """Every dispatchable is a DirectML operator desc (dml2onnx's numpy references cover those)."""
    return all(d["type"].startswith("DML_OPERATOR_") for d in model["dispatchables"].values())


def copy_of_the_models(tmp_path: Path) -> Path:
    """The folder copied, less any file its models write, so each written file is known to come
    from this run."""
    folder = tmp_path / "models"
    shutil.copytree(DXDISPATCH, folder)
    for name in MODELS:
        for cmd in load(name)["commands"]:
            if cmd["type"] == "writeFile":
                (folder / cmd["targetPath"]).unlink(missing_ok=True)
    return folder


def test_every_model_is_expected() -> None:
    assert set(MODELS) == set(EXPECTED), "add each model of tests/dxdispatch/ to EXPECTED (and only those)"


def test_readme_lists_every_file() -> None:
    """README.md beside the copies names each of them (the licence note's list)."""
    readme = (DXDISPATCH / "README.md").read_text()
    named = [p.relative_to(DXDISPATCH).as_posix() for p in DXDISPATCH.rglob("*") if p.is_file()]
    assert not [n for n in named if n not in ("README.md", "LICENSE") and f"`{n}`" not in readme]


@pytest.mark.parametrize("name", MODELS)
def test_runs_unchanged_and_prints_what_dxdispatch_prints(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    expected = EXPECTED.get(name)
    assert expected is not None, f"{name}: add its expected output to EXPECTED"
    folder = copy_of_the_models(tmp_path)
    monkeypatch.chdir(folder)
    before = sorted(folder.rglob("*"))
    status, out, err = run_cli("run", name)
    if isinstance(expected, Refused):
        assert (status, out) == (2, ""), (status, out, err)
        assert err.startswith(f"dml2onnx: error: {expected.message}") and err.count("\n") == 1, err
        assert sorted(folder.rglob("*")) == before  # nothing written
        return
    assert status == 0, err
    r = Initial(folder, load(name))
    want = dxdispatch_prints(expected.prints(r))
    assert out == want
    for cmd in load(name)["commands"]:  # as DxDispatch, each writeFile says so (here on stderr)
        if cmd["type"] == "writeFile":
            assert f"Resource '{cmd['resource']}' written to '" in err and f"{cmd['targetPath']}'\n" in err, err
    if expected.files:
        expected.files(folder, r)
    if only_operator_descs(load(name)):  # dml2onnx's numpy references, no ONNX: the same prints
        reference = io.StringIO()
        Executor(dxdispatch.load(folder / name), "reference", out=reference, log=io.StringIO(), write_files=False).run()
        assert reference.getvalue() == want


@pytest.mark.parametrize("name", [n for n in MODELS if isinstance(EXPECTED.get(n), Runs)])
def test_check_passes_on_the_cpu_ep(name: str) -> None:
    status, out, err = run_cli("check", str(DXDISPATCH / name), "--ep", "cpu")
    assert status == 0, (out, err)
