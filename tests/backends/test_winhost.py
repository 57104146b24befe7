"""ONNX Runtime's DirectML EP under Wine (dml2onnx.backends.winhost): the host program's protocol, data
types, errors, and a real model end to end. Skipped where `make dml-setup` has not been run.

One Wine process serves the whole file (started once, ~1-2 s); each DirectML session costs about
1 s to load and ~1.5 GB of lavapipe memory until it is freed, so the tests keep few alive."""

from __future__ import annotations

import gc
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from onnx import TensorProto, helper

from dml2onnx.backends import runtime, winhost
from dml2onnx.core.errors import RuntimeFailure
from support import assert_prints_match, printed, run_cli

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(
    not winhost.available(),
    reason=f"the DirectML EP under Wine is not set up ({winhost.missing()}): `make dml-setup` installs it",
)


def model(nodes: list, inputs: list, output_type: int, output_shape: list[int], initializers: list | None = None):
    graph = helper.make_graph(
        nodes,
        "test",
        inputs,
        [helper.make_tensor_value_info("OutputTensor", output_type, output_shape)],
        initializers or [],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


@pytest.fixture(scope="module")
def host() -> Iterator[winhost.Host]:
    h = winhost.host()
    yield h
    gc.collect()  # sessions of this file go back at the next request


def test_host_reports_onnxruntime_and_directml(host: winhost.Host) -> None:
    assert host.version == winhost.ORT_VERSION
    assert host.ep == "DmlExecutionProvider"


def test_known_answer(host: winhost.Host) -> None:
    m = model(
        [helper.make_node("Mul", ["x", "two"], ["y"]), helper.make_node("Add", ["y", "one"], ["OutputTensor"])],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        TensorProto.FLOAT,
        [2, 3],
        [helper.make_tensor("two", TensorProto.FLOAT, [], [2.0]), helper.make_tensor("one", TensorProto.FLOAT, [], [1.0])],
    )
    session = runtime.create(m, "known_answer", "dml")
    assert isinstance(session, runtime.Session)
    assert session.nodes_off_ep() == [] and len(session.assignment()["DmlExecutionProvider"]) == 2
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(session.run({"x": x}), x * 2 + 1)


# Every element type the lowered graphs use, through Identity on DirectML: bytes come back as sent.
DTYPES = [np.float32, np.float16, np.float64, np.int8, np.int16, np.int32, np.int64]
DTYPES += [np.uint8, np.uint16, np.uint32, np.uint64, np.bool_]


def onnx_type(t: type) -> int:
    return winhost.ONNX_TYPES[np.dtype(t)]


def test_every_dtype_round_trips_exactly(host: winhost.Host) -> None:
    rng = np.random.default_rng(0)
    # One session with an Identity per type (one load instead of twelve).
    names = [np.dtype(t).name for t in DTYPES]
    nodes = [helper.make_node("Identity", [f"x_{n}"], [f"y_{n}"]) for n in names]
    graph = helper.make_graph(
        nodes,
        "dtypes",
        [
            helper.make_tensor_value_info(f"x_{n}", winhost.ONNX_TYPES[np.dtype(t)], [3, 5])
            for n, t in zip(names, DTYPES, strict=True)
        ],
        [
            helper.make_tensor_value_info(f"y_{n}", winhost.ONNX_TYPES[np.dtype(t)], [3, 5])
            for n, t in zip(names, DTYPES, strict=True)
        ],
    )
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    sid = host.load(m.SerializeToString(), winhost.flags())
    feeds = {}
    for n, t in zip(names, DTYPES, strict=True):
        dt = np.dtype(t)
        if dt.kind == "f":
            feeds[f"x_{n}"] = rng.standard_normal((3, 5)).astype(dt)
        elif dt.kind == "b":
            feeds[f"x_{n}"] = rng.integers(0, 2, (3, 5)).astype(dt)
        else:
            info = np.iinfo(dt)
            feeds[f"x_{n}"] = rng.integers(info.min, info.max, (3, 5), dtype=dt, endpoint=True)
    try:
        outs = host.run(sid, feeds, [f"y_{n}" for n in names])
    finally:
        host.free(sid)
    for n, got in zip(names, outs, strict=True):
        want = feeds[f"x_{n}"]
        assert got.dtype == want.dtype and got.shape == want.shape, n
        assert got.tobytes() == want.tobytes(), n


def test_cast_to_int64_works_on_the_hooked_device(host: winhost.Host) -> None:
    """DirectML's INT64 Cast kernel is DXIL-only while vkd3d reports Int64ShaderOps; the host's
    own D3D12 device hides that feature (the default, DML2ONNX_DML_DEVICE=hooked)."""
    m = model(
        [helper.make_node("Cast", ["x"], ["OutputTensor"], to=TensorProto.INT64)],
        [helper.make_tensor_value_info("x", TensorProto.INT32, [8])],
        TensorProto.INT64,
        [8],
    )
    x = np.array([1, -2, 3, 4, 5, 6, 7, 2**31 - 1], np.int32)
    got = winhost.create(m, "cast").run({"x": x})
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, x.astype(np.int64))


def test_onnxruntime_errors_come_back_and_the_host_survives(host: winhost.Host) -> None:
    m = model(
        [helper.make_node("Neg", ["x"], ["OutputTensor"])],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
        TensorProto.FLOAT,
        [4],
    )
    session = winhost.create(m, "neg")
    with pytest.raises(RuntimeFailure, match="dispatchable 'neg' failed on DmlExecutionProvider"):
        session.run({"wrong_name": np.zeros(4, np.float32)})
    with pytest.raises(RuntimeFailure, match="cannot run the lowered graph"):
        winhost.create(m.__class__.FromString(b"\x08\x07"), "broken")  # a model with no graph
    with pytest.raises(RuntimeFailure, match=r"dispatchable 'neg' failed on DmlExecutionProvider.*dimensions"):
        session.run({"x": np.zeros(3, np.float32)})  # wrong shape: ORT's message
    with pytest.raises(RuntimeFailure, match="no session"):
        host.free(999_999)
    assert host.alive()
    np.testing.assert_array_equal(session.run({"x": np.arange(4, dtype=np.float32)}), -np.arange(4, dtype=np.float32))


def test_a_kernel_vkd3d_cannot_compile_fails_loudly(host: winhost.Host, monkeypatch: pytest.MonkeyPatch) -> None:
    """Add of two runtime [2, 4] inputs: DirectML picks a DXIL-only kernel, vkd3d 1.6 (Wine 8)
    cannot build its pipeline and says so on stderr only. With the pinned stack this must be a
    RuntimeFailure, never numbers. Through vkd3d-dxil.dll (vkd3d 1.14, DXIL front end) it runs;
    then a second host with DML2ONNX_VKD3D_DXIL=0 (Wine's d3d12.dll) checks the failure."""
    m = model(
        [helper.make_node("Add", ["a", "b"], ["OutputTensor"])],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, [2, 4]) for n in ("a", "b")],
        TensorProto.FLOAT,
        [2, 4],
    )
    feeds = {"a": np.ones((2, 4), np.float32), "b": np.arange(8, dtype=np.float32).reshape(2, 4)}
    if winhost.dxil_vkd3d() is None:
        with pytest.raises(RuntimeFailure, match=r"Vulkan compute pipeline|cannot run the lowered graph"):
            winhost.create(m, "add").run(feeds)
        assert host.alive()
        return
    np.testing.assert_array_equal(winhost.create(m, "add").run(feeds), feeds["a"] + feeds["b"])
    monkeypatch.setenv("DML2ONNX_VKD3D_DXIL", "0")
    wine_d3d12 = winhost.Host()
    try:
        with pytest.raises(RuntimeFailure, match=r"Vulkan compute pipeline|cannot run the lowered graph"):
            sid = wine_d3d12.load(m.SerializeToString(), winhost.flags(), "add")
            wine_d3d12.run(sid, feeds, ["OutputTensor"])
        assert wine_d3d12.alive()
    finally:
        wine_d3d12.close()


def test_runtime_lists_and_resolves_dml() -> None:
    assert "dml" in runtime.available()
    assert runtime.resolve("dml") == "dml"


def test_missing_setup_is_one_line(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("DML2ONNX_DML_HOME", str(tmp_path))
    assert "dml" not in runtime.available()
    with pytest.raises(RuntimeFailure) as e:
        runtime.resolve("dml")
    assert "make dml-setup" in str(e.value) and "\n" not in str(e.value)


def test_bench_keeps_off_the_wine_host() -> None:
    """bench binds inputs and outputs on the device, which the Wine host cannot: `auto` passes it
    by, and `--ep dml` is refused in one line before anything is measured."""
    assert "dml" in runtime.available() and "dml" not in runtime.available(bound_io=True)
    model = str(ROOT / "models" / "argmax.json")
    status, out, err = run_cli("bench", model, "-i", "2")
    assert status == 0 and "[CPUExecutionProvider]" in out, err
    status, out, err = run_cli("bench", model, "--ep", "dml")
    assert status == 2 and out == ""  # an engine bench cannot time, as dml-api: a usage error
    assert err == (
        "dml2onnx: error: bench binds inputs and outputs on the EP's device, which the DirectML EP under Wine cannot: "
        "time it with dml2onnx run --ep dml -i N\n"
    )
    status, _, err = run_cli("bench", model, "-i", "2")
    assert "dml2onnx bench: auto picked CPUExecutionProvider, the best engine present that binds device memory" in err


def test_run_argmax_matches_the_cpu_ep() -> None:
    """The command line end to end in fresh processes (each starts its own Wine host)."""

    def run(ep: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "dml2onnx", "run", "models/argmax.json", "--ep", ep],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=300,
        )

    dml, cpu = run("dml"), run("cpu")
    assert dml.returncode == 0, dml.stderr
    assert "DmlExecutionProvider" in dml.stderr
    assert dml.stdout == cpu.stdout and dml.stdout


# The model whose `portable` graph holds a kernel DirectML has only as DXIL, which Wine's vkd3d 1.6
# cannot compile: MVN's two-input Mul of 8 elements (DIRECTML-ON-LINUX.md). It must fail loudly,
# unless the hosts use vkd3d-dxil.dll (vkd3d 1.14 with its DXIL front end), where it runs.
# Its `dml` graph (LayerNormalization / InstanceNormalization, which the DirectML EP turns back into
# one MEAN_VARIANCE_NORMALIZATION1) runs.
DXIL_ONLY_MODELS = (
    {} if winhost.dxil_vkd3d() else {("mean_variance_normalization", "portable"): "Failed to create Vulkan compute pipeline"}
)


@pytest.mark.dml
@pytest.mark.parametrize("target", ["portable", "dml"])
@pytest.mark.parametrize("model", sorted(p.stem for p in (ROOT / "models").glob("*.json")))
def test_every_model_on_the_directml_ep(model: str, target: str) -> None:
    """`run --ep dml` prints what `--ep cpu` prints, for every model in models/ and both targets
    (in-process, one Wine host for all), or fails with the reason where a DXIL-only kernel is
    known. The sign of a zero may differ (README: signed zeros are not compared)."""
    path = str(ROOT / "models" / f"{model}.json")
    status, out, err = run_cli("run", path, "--ep", "dml", "--target", target, "-q")
    if (model, target) in DXIL_ONLY_MODELS:
        assert status == 1 and DXIL_ONLY_MODELS[model, target] in err and err.count("\n") == 1, err
        return
    assert status == 0, err
    cpu = run_cli("run", path, "--ep", "cpu", "-q")[1]
    _prints_match(model, out, cpu)


# Resources that DirectML (its API, and the DirectML EP under Wine) computes with FLOAT16
# intermediates: up to this far from the graphs' one rounding from FLOAT32 (README: LRN_GRAD keeps
# its FLOAT16 intermediates in FLOAT16; one FLOAT16 step at 0.28 is 2**-12)
FLOAT16_STEPS = {"local_response_normalization_grad": {"within_output": 2**-12}}


def _prints_match(model: str, out: str, cpu: str) -> None:
    steps = FLOAT16_STEPS.get(model, {})
    if not steps:
        assert_prints_match(out, cpu)
        return
    a, b = printed(out), printed(cpu)
    assert a.keys() == b.keys(), (out, cpu)
    for name in b:
        rtol, atol = (0, steps[name]) if name in steps else (1e-4, 1e-4)
        np.testing.assert_allclose(a[name], b[name], rtol=rtol, atol=atol, err_msg=name)


@pytest.mark.parametrize("model", sorted(p.stem for p in (ROOT / "models").glob("*.json")))
def test_every_model_through_directml_api(model: str) -> None:
    """`run --ep directml` (DirectML's own API executes each desc) prints what `--ep cpu` prints."""
    path = str(ROOT / "models" / f"{model}.json")
    status, out, err = run_cli("run", path, "--ep", "directml", "-q")
    assert status == 0, err
    cpu = run_cli("run", path, "--ep", "cpu", "-q")[1]
    if model == "mean_variance_normalization":
        # A finding (README): MVN's fused RELU gives -0 for negative values through DirectML's
        # API, where the lowered graph's Relu gives +0. Equal as numbers, not as printed.
        assert printed(out) == printed(cpu) and "-0," in out and "-0," not in cpu
        return
    _prints_match(model, out, cpu)
