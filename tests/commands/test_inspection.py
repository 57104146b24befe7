"""Inspection: text tables, Netron over HTTP (and in headless Chromium), ONNX functions per DML
operator, and whole command lists as one graph."""

from __future__ import annotations

import subprocess
import sys
import urllib.request
from pathlib import Path

import numpy as np
import onnx
import pytest

from dml2onnx import lowering
from dml2onnx.backends import runtime
from dml2onnx.cases import all_cases
from dml2onnx.commands import screenshot as browser
from dml2onnx.formats import dxdispatch
from dml2onnx.run import compose
from dml2onnx.run.executor import Executor
from support import make_desc, reinterpreting_model, run_cli, write_model

ROOT = Path(__file__).resolve().parents[2]
MODELS = sorted((ROOT / "models").glob("*.json"))


@pytest.mark.parametrize("model", MODELS, ids=[m.stem for m in MODELS])
def test_inspect_text_on_every_model(model: Path) -> None:
    status, out, err = run_cli("inspect", str(model), "--text")
    assert status == 0, err
    loaded = dxdispatch.load(model)
    for name in loaded.dispatchables:  # every dispatch appears, each node with its types and its purpose
        assert f"  {name}/" in out
    assert " -> " in out and "[" in out  # every edge printed with its type and shape
    assert "outputs: " in out and "inputs: " in out


def test_inspect_text_of_an_onnx_file_and_of_functions(tmp_path: Path) -> None:
    assert run_cli("export", "--allow-any-path", str(ROOT / "models" / "argmax.json"), "-o", str(tmp_path))[0] == 0
    status, out, _ = run_cli("inspect", str(tmp_path / "argmax_all.onnx"), "--text")
    assert status == 0 and "argmax_all/merge_axes  Reshape" in out and "uint32[1,1]" in out
    status, out, _ = run_cli(
        "inspect", str(ROOT / "models" / "argmax.json"), "--dispatchable", "argmax_all", "--text", "--functions"
    )
    assert status == 0 and "dml.ARGMAX" in out and "function dml.ARGMAX(InputTensor) -> OutputTensor" in out
    status, _, err = run_cli("inspect", str(ROOT / "models" / "argmax.json"), "--dispatchable", "nope", "--text")
    assert status == 2 and "no dispatchable 'nope'" in err
    (tmp_path / "junk.onnx").write_bytes(b"not a model")
    status, _, err = run_cli("inspect", str(tmp_path / "junk.onnx"), "--text")
    assert status == 2 and "junk.onnx" in err and "Traceback" not in err


class Served:
    """`dml2onnx inspect --no-browser --port 0` in a child process."""

    def __init__(self, *args: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "dml2onnx", "inspect", *args, "--no-browser", "--port", "0"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=ROOT,
        )
        line = self.process.stdout.readline() if self.process.stdout else ""
        assert "Netron at http://localhost:" in line, (line, self.process.stderr.read() if self.process.stderr else "")
        self.url = line.split(" at ")[1].split()[0]

    def __enter__(self) -> Served:
        return self

    def __exit__(self, *exc: object) -> None:
        self.process.terminate()
        self.process.wait(timeout=10)


def test_inspect_serves_the_page_and_the_model_over_http() -> None:
    with Served(str(ROOT / "models" / "hardmax1.json"), "--dispatchable", "hardmax_axes_0_2") as served:
        page = urllib.request.urlopen(served.url + "/", timeout=10).read().decode()
        assert '<meta name="file" content="/data/hardmax_axes_0_2.onnx">' in page
        data = urllib.request.urlopen(served.url + "/data/hardmax_axes_0_2.onnx", timeout=10).read()
    model = onnx.load_from_string(data)
    onnx.checker.check_model(model, full_check=True)
    # one_hot_product: the index cut per run of axes (Div/Mul/Sub), a OneHot per run, their product
    assert {n.op_type for n in model.graph.node} == {"Transpose", "Reshape", "ArgMax", "Div", "Mul", "Sub", "Cast", "OneHot"}
    assert served.process.returncode is not None  # it stopped


@pytest.mark.skipif(not browser.available(), reason="needs Debian's chromium and chromium-driver, and selenium")
def test_netron_renders_the_graph_in_headless_chromium(tmp_path: Path) -> None:
    with Served(str(ROOT / "models" / "chain_argmax_one_hot.json"), "--functions") as served:
        html = browser.render(served.url + "/", ["ARGMAX", "ONE_HOT", "ACTIVATION_HARDMAX1"], tmp_path / "page.png")
    assert "ACTIVATION_LOG_SOFTMAX1" in html and (tmp_path / "page.png").stat().st_size > 10_000


def test_every_edge_has_a_type_and_shape() -> None:
    for case in all_cases()[::40]:
        m = lowering.lower(make_desc(case.op, case.fields), "case")
        typed = {v.name for v in [*m.graph.value_info, *m.graph.input, *m.graph.output]} | {i.name for i in m.graph.initializer}
        for n in m.graph.node:
            assert set(n.output) <= typed, (case.id, n.name)
            assert n.name.startswith("case/") and n.doc_string, (case.id, n.name)


# every 25th matrix case, and two with several outputs (MAX_POOLING2's indices)
FUNCTION_CASES = all_cases()[::25] + [c for c in all_cases() if c.op == "MAX_POOLING2" and "indices" in c.id][:2]


@pytest.mark.parametrize("case", FUNCTION_CASES, ids=lambda c: c.id)
def test_function_models_give_the_same_results(case: object) -> None:
    desc = make_desc(case.op, case.fields)  # type: ignore[attr-defined]
    plain = lowering.lower(desc, "case")
    wrapped = compose.as_function(plain)
    assert [(n.domain, n.op_type) for n in wrapped.graph.node] == [("dml", desc.schema.name)]
    assert wrapped.functions[0].name == desc.schema.name
    inputs = case.inputs  # type: ignore[attr-defined]
    a = runtime.create(plain, "case", "cpu").run_all(inputs)
    b = runtime.create(wrapped, "case", "cpu").run_all(inputs)
    assert list(a) == list(b) == [lowering.graph_output(desc, f) for f in desc.outputs]  # every output
    for name in a:
        np.testing.assert_array_equal(a[name], b[name])


@pytest.mark.parametrize("functions", [False, True])
@pytest.mark.parametrize("model_path", MODELS, ids=[m.stem for m in MODELS])
def test_single_graph_equals_run(model_path: Path, functions: bool, tmp_path: Path) -> None:
    status, _, err = run_cli(
        "export",
        "--allow-any-path",
        str(model_path),
        "-o",
        str(tmp_path),
        "--single-graph",
        *(["--functions"] if functions else []),
    )
    assert status == 0, err
    graph = onnx.load(tmp_path / f"{model_path.stem}.onnx")
    model = dxdispatch.load(model_path)
    # the graphs export writes (portable), run one by one
    ex = Executor(model, "cpu", log=open("/dev/null", "w"), out=open("/dev/null", "w"), target="portable")  # noqa: SIM115
    ex.run()
    feeds = {}
    for i in graph.graph.input:
        res = model.resources[i.name]
        feeds[i.name] = res.values()  # a 4-bit type's unpacked, one element a byte
    outputs = runtime.create(graph, "single", "cpu").session.run(None, feeds)
    assert len(outputs) == len(ex.emitted)
    for (name, want), got, info in zip(ex.emitted, outputs, graph.graph.output, strict=True):
        assert info.name.split("@")[0] == name
        np.testing.assert_array_equal(got, want)
    if functions:
        assert {n.op_type for n in graph.graph.node if n.domain == "dml"} == {
            d.desc.schema.name for d in model.dispatchables.values()
        }


def test_single_graph_refuses_reinterpreted_buffers(tmp_path: Path) -> None:
    model = reinterpreting_model()
    status, _, err = run_cli(
        "export", "--allow-any-path", write_model(tmp_path, model), "-o", str(tmp_path / "out"), "--single-graph"
    )
    assert status == 2 and "commands[0].bindings.InputTensor" in err and "bound as INT32" in err
    assert not (tmp_path / "out").exists()
