"""dml2onnx.dmlx: output descs computed as DirectMLX computes them, the JSON path's validation
(same ModelError rules, the path naming the call), and the compiled graph equal to the chained
numpy references and to the exported DxDispatch model run through the command line."""

from __future__ import annotations

import contextlib
import inspect
import io
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest

from dml2onnx import dmlx
from dml2onnx.backends import dmlapi, runtime
from dml2onnx.core.errors import ModelError, RuntimeFailure
from dml2onnx.dmlx.activations import ACTIVATION_FUNCTIONS, DEFAULTS
from dml2onnx.formats import dxdispatch
from dml2onnx.graph import dml_ep
from dml2onnx.lowering import tolerances
from dml2onnx.ops import registry
from support import make_desc, printed, run_cli, write_model

RNG = np.random.default_rng(7)


def assert_close(g: dmlx.Graph, inputs: dict[str, np.ndarray], outputs: list[dmlx.Expression]) -> list[np.ndarray]:
    """CPU EP against the chained references, with each output's operator tolerance."""
    got, want = g.run(inputs, outputs), g.reference(inputs, outputs)
    for e, a, b in zip(outputs, got, want, strict=True):
        assert a.dtype == b.dtype == e.tensor_desc.data_type.numpy and a.shape == b.shape == e.sizes
        assert e.node is not None
        tol = tolerances.tolerance(e.node.desc.schema.name, e.tensor_desc.data_type, "cpu")
        assert tolerances.compare(a, b, tol).ok, (e, a, b)
    return list(got)


def cli_printed(tmp_path: Path, model: dict[str, Any], *args: str) -> dict[str, list[float]]:
    status, out, err = run_cli("run", write_model(tmp_path, model), "-q", *args)
    assert status == 0, err
    return printed(out)


# -- output descs ---------------------------------------------------------------------------------


def test_argmax_output_desc() -> None:
    g = dmlx.Graph()
    x = g.input("x", "FLOAT32", [2, 3, 4])
    assert (dmlx.ArgMax(x, [2, 0]).data_type, dmlx.ArgMax(x, [2, 0]).sizes) == ("UINT32", (1, 3, 1))
    y = dmlx.ArgMin(x, [1], "DECREASING", output_type="INT64")
    assert (y.data_type, y.sizes, y.name) == ("INT64", (2, 1, 4), "ArgMin_1")
    assert y.node is not None and y.node.desc.source["AxisCount"] == 1


def test_reduce_output_desc() -> None:
    g = dmlx.Graph()
    x = g.input("x", "INT32", [2, 3, 4])
    total = dmlx.Reduce(x, "SUM")  # every axis, rank kept, the input's type
    assert (total.data_type, total.sizes) == ("INT32", (1, 1, 1))
    arg = dmlx.Reduce(x, "DML_REDUCE_FUNCTION_ARGMIN", [1])  # UINT32 for ARGMAX/ARGMIN
    assert (arg.data_type, arg.sizes) == ("UINT32", (2, 1, 4))
    assert dmlx.Reduce(x, "ARGMAX", [0], output_type="INT64").data_type == "INT64"


def test_one_hot_output_desc() -> None:
    g = dmlx.Graph()
    indices = g.input("i", "INT32", [3, 1, 2])
    values = g.input("v", "FLOAT16", [1, 1, 2])
    y = dmlx.OneHot(indices, values, 7, 1)
    assert (y.data_type, y.sizes) == ("FLOAT16", (3, 7, 2))


def test_activation_defaults_are_directmlx() -> None:
    g = dmlx.Graph()
    x = g.input("x", "FLOAT32", [4])
    assert dmlx.ActivationLeakyRelu(x).node.desc["Alpha"] == pytest.approx(0.01)  # type: ignore[union-attr]
    selu = dmlx.ActivationScaledElu(x).node.desc  # type: ignore[union-attr]
    assert (selu["Alpha"], selu["Gamma"]) == (1.67326319217681884765625, 1.05070102214813232421875)
    shrink = dmlx.ActivationShrink(x, threshold=2.0).node.desc  # type: ignore[union-attr]
    assert (shrink["Bias"], shrink["Threshold"]) == (0.0, 2.0)
    assert list(inspect.signature(dmlx.ActivationLinear).parameters) == ["x", "alpha", "beta"]
    with pytest.raises(TypeError):
        dmlx.ActivationLinear(x)  # no defaults in DirectMLX either
    assert dmlx.FusedActivation.ScaledTanh() == dmlx.FusedActivation("ACTIVATION_SCALED_TANH", 1.0, 0.5)
    softplus = {"type": "DML_OPERATOR_ACTIVATION_SOFTPLUS", "desc": {"Steepness": 2.0}}
    assert dmlx.FusedActivation.Softplus(2.0).to_json() == softplus


# -- the worked example of docs/python-api.md: ArgMax -> OneHot ---------------------------------


def build_chain() -> tuple[dmlx.Graph, dmlx.Expression, dmlx.Expression]:
    g = dmlx.Graph()
    scores = g.input("scores", "FLOAT32", [2, 5])
    on_off = g.input("on_off", "FLOAT32", [1, 2])
    best = dmlx.ArgMax(scores, axes=[1])  # UINT32 [2, 1]
    one_hot = dmlx.OneHot(best, on_off, output_length=5, axis=1)  # FLOAT32 [2, 5]
    return g, best, one_hot


CHAIN_INPUTS = {
    "scores": np.array([[0.5, 3, -1, 3, 2], [7, 7, 1, 0, -4]], np.float32),
    "on_off": np.array([[0, 1]], np.float32),
}


def test_chain_matches_reference_and_cli(tmp_path: Path) -> None:
    g, best, one_hot = build_chain()
    got = g.run(CHAIN_INPUTS, {"best": best, "one_hot": one_hot})
    assert isinstance(got, dict)
    np.testing.assert_array_equal(got["best"], [[1], [0]])  # the first maximum
    np.testing.assert_array_equal(got["one_hot"], [[0, 1, 0, 0, 0], [1, 0, 0, 0, 0]])
    assert_close(g, CHAIN_INPUTS, [best, one_hot])
    model = g.to_dxdispatch({"best": best, "one_hot": one_hot}, CHAIN_INPUTS)
    assert list(model["dispatchables"]) == ["ArgMax_1", "OneHot_1"]
    assert cli_printed(tmp_path, model) == {"best": [1, 0], "one_hot": got["one_hot"].reshape(-1).tolist()}


ENGINES = [
    "cpu",
    "reference",
    pytest.param("directml", marks=pytest.mark.skipif(dmlapi.missing() is not None, reason="make dml-setup: DirectML's API")),
    pytest.param("dml", marks=pytest.mark.dml),  # the DirectML EP under Wine: seconds to start
    pytest.param("auto", marks=pytest.mark.dml),  # the best EP present (here: the DirectML EP under Wine)
]


@pytest.mark.parametrize("ep", ENGINES)
def test_chain_runs_on_every_engine(ep: str) -> None:
    """The same chain from Python on each engine (`dml` and `auto` once crashed: the Wine host's
    session has no ONNX Runtime `run`; `directml` raised a bare KeyError)."""
    g, best, one_hot = build_chain()
    got = g.run(CHAIN_INPUTS, {"best": best, "one_hot": one_hot}, ep=ep)
    assert isinstance(got, dict)
    np.testing.assert_array_equal(got["best"], [[1], [0]])
    np.testing.assert_array_equal(got["one_hot"], [[0, 1, 0, 0, 0], [1, 0, 0, 0, 0]])


def test_unknown_engine_is_a_clear_error() -> None:
    g, best, _ = build_chain()
    with pytest.raises(RuntimeFailure, match=r"unknown execution provider 'gpu' \(auto, cpu, cuda, dml, dml-api\)"):
        g.run(CHAIN_INPUTS, [best], ep="gpu")


def test_to_onnx_passes_the_checker() -> None:
    g, best, one_hot = build_chain()
    model = g.to_onnx([one_hot, best, one_hot], opset=21)
    onnx.checker.check_model(model, full_check=True)
    assert [i.name for i in model.graph.input] == ["scores", "on_off"]
    assert [o.name for o in model.graph.output] == ["OneHot_1", "ArgMax_1", "OneHot_1_2"]
    names = [n.name for n in model.graph.node]
    assert len(names) == len(set(names)) and all(n.split("/")[0] in ("ArgMax_1", "OneHot_1", "outputs") for n in names)
    assert dml_ep.check(model) == []  # the portable lowerings stay on the DirectML EP
    only_argmax = g.to_onnx([best])  # calls the outputs do not need are left out
    assert [i.name for i in only_argmax.graph.input] == ["scores"]


def test_strided_input_through_dxdispatch(tmp_path: Path) -> None:
    g = dmlx.Graph(feature_level="5_1")
    x = g.input("x", "FLOAT32", [2, 3], strides=[1, 2])  # column-major
    y = dmlx.ActivationHardmax(x, axes=[1])
    values = {"x": np.array([[1, 5, 2], [9, 0, 3]], np.float32)}
    model = g.to_dxdispatch([y], values)
    assert model["resources"]["x"]["initialValues"] == [1, 9, 5, 0, 2, 3]
    dxdispatch.parse(model, tmp_path, level="5_1")
    got = assert_close(g, values, [y])[0]
    assert cli_printed(tmp_path, model, "--feature-level", "5_1") == {"ActivationHardmax_1": got.reshape(-1).tolist()}


# -- validation: the JSON path's ModelError, naming the call --------------------------------------


def json_rule(op: str, fields: dict[str, Any]) -> str:
    with pytest.raises(ModelError) as e:
        make_desc(op, fields)
    return e.value.rule


def test_axis_out_of_range_is_the_json_error() -> None:
    g = dmlx.Graph()
    x = g.input("x", "FLOAT32", [3, 3])
    dmlx.ArgMax(x, [0])
    with pytest.raises(ModelError) as e:
        dmlx.ArgMax(x, [1, 2])
    assert e.value.path == ("ArgMax_2", "Axes", 1)
    assert str(e.value) == "ArgMax_2.Axes[1]: axis 2 is out of range [0, 1]"
    fields = {"InputTensor": {"DataType": "FLOAT32", "Sizes": [3, 3]}, "OutputTensor": {"DataType": "UINT32", "Sizes": [3, 1]}}
    assert e.value.rule == json_rule("ARGMAX", fields | {"AxisCount": 2, "Axes": [1, 2], "AxisDirection": "INCREASING"})
    assert dmlx.ArgMax(x, [1]).name == "ArgMax_2"  # a refused call takes no name


def test_wrong_type_is_the_json_error() -> None:
    g = dmlx.Graph()
    x = g.input("x", "INT32", [4])
    with pytest.raises(ModelError) as e:
        dmlx.ActivationLogSoftmax(x, [0])
    assert e.value.path == ("ActivationLogSoftmax_1", "InputTensor", "DataType")
    assert "must be FLOAT32, FLOAT16, not INT32" in e.value.rule
    with pytest.raises(ModelError, match=r"^ArgMax_1\.OutputTensor\.DataType: OutputTensor of DML_ARGMAX must be"):
        dmlx.ArgMax(g.input("f", "FLOAT32", [4]), [0], output_type="FLOAT32")
    with pytest.raises(ModelError, match=r"^ArgMax_1\.AxisDirection: 'UP' is not a DML_AXIS_DIRECTION value"):
        dmlx.ArgMax(x, [0], "UP")


def test_feature_level_too_old() -> None:
    g = dmlx.Graph(feature_level="5_0")
    x = g.input("x", "FLOAT32", [2, 3])
    with pytest.raises(ModelError) as e:
        dmlx.ActivationHardmax1(x, [1])
    assert e.value.path == ("ActivationHardmax1_1",)
    assert e.value.rule.startswith("DML_OPERATOR_ACTIVATION_HARDMAX1 needs feature level 5_1 or newer (this is 5_0")
    old = dmlx.Graph(feature_level="DML_FEATURE_LEVEL_2_0")
    with pytest.raises(ModelError, match=r"^ArgMax_1: DML_OPERATOR_ARGMAX needs feature level 3_0"):
        dmlx.ArgMax(old.input("x", "FLOAT32", [1, 1, 2, 3]), [3])


def test_one_hot_and_input_errors() -> None:
    g = dmlx.Graph()
    i, v = g.input("i", "UINT32", [2, 1]), g.input("v", "FLOAT32", [1, 2])
    with pytest.raises(ModelError, match=r"^OneHot_1\.Axis: Axis 2 must be less than IndicesTensor's DimensionCount \(2\)"):
        dmlx.OneHot(i, v, 4, 2)
    with pytest.raises(ModelError, match=r"^y\.Sizes\[1\]: sizes must be at least 1"):
        g.input("y", "FLOAT32", [2, 0])
    with pytest.raises(ValueError, match="already used"):
        g.input("i", "FLOAT32", [2])
    with pytest.raises(ValueError, match="another Graph"):
        dmlx.OneHot(i, dmlx.Graph().input("w", "FLOAT32", [1, 2]), 4, 1)


def test_fused_activation_errors() -> None:
    g = dmlx.Graph(feature_level="6_3")
    x = g.input("x", "FLOAT32", [1, 2, 3, 4])
    with pytest.raises(ModelError, match=r"^MeanVarianceNormalization_1\.FusedActivation\.type: DML_OPERATOR_ARGMAX cannot be"):
        dmlx.MeanVarianceNormalization(x, cross_channel=False, fused_activation=dmlx.FusedActivation("ARGMAX"))
    softplus = dmlx.FusedActivation.Softplus(0.5)
    rule = r"^MeanVarianceNormalization_1\.FusedActivation\.desc\.Steepness: Steepness 0\.5 \(less than 1\) needs"
    with pytest.raises(ModelError, match=rule):
        dmlx.MeanVarianceNormalization(x, cross_channel=True, fused_activation=softplus)
    newest = dmlx.Graph()
    dmlx.MeanVarianceNormalization(newest.input("x", "FLOAT32", [1, 2, 3, 4]), cross_channel=True, fused_activation=softplus)
    with pytest.raises(TypeError, match="needs axes"):
        dmlx.MeanVarianceNormalization(x)


# -- every function builds, runs and matches its reference -----------------------------------------

# Parameters for the activations DirectMLX gives no defaults.
REQUIRED = {"ActivationLinear": (2.0, -0.5), "ActivationParametricSoftplus": (1.5, 0.5)}


@pytest.mark.parametrize("function", sorted(ACTIVATION_FUNCTIONS))
def test_every_activation(function: str) -> None:
    g = dmlx.Graph()
    x = g.input("x", "FLOAT32", [2, 3, 4])
    y = getattr(dmlx, function)(x, *REQUIRED.get(function, ()))
    assert (y.data_type, y.sizes) == ("FLOAT32", (2, 3, 4))
    assert_close(g, {"x": RNG.normal(0, 2, (2, 3, 4)).astype(np.float32)}, [y])


def test_activation_defaults_cover_the_schema() -> None:
    assert len(ACTIVATION_FUNCTIONS) == 17
    assert set(DEFAULTS) < {op for op in registry.BY_OPERATOR if op.startswith("ACTIVATION_")}


def test_softmax_family_both_forms() -> None:
    g = dmlx.Graph()
    x = g.input("x", "FLOAT16", [2, 3, 4, 5])
    rows = g.input("rows", "FLOAT32", [1, 1, 4, 5])  # the old forms: effective rank 2 at most
    outputs = [
        dmlx.ActivationSoftmax(rows),
        dmlx.ActivationSoftmax(x, [1, 3]),
        dmlx.ActivationSoftmax1(x, [0]),
        dmlx.ActivationLogSoftmax(rows),
        dmlx.ActivationLogSoftmax1(x, [2, 3]),
        dmlx.ActivationHardmax(rows),
        dmlx.ActivationHardmax1(x, [0, 2]),
    ]
    ops_used = [e.node.desc.schema.name for e in outputs]  # type: ignore[union-attr]
    assert ops_used[:3] == ["ACTIVATION_SOFTMAX", "ACTIVATION_SOFTMAX1", "ACTIVATION_SOFTMAX1"]
    inputs = {"x": RNG.normal(0, 3, (2, 3, 4, 5)).astype(np.float16), "rows": RNG.normal(0, 3, (1, 1, 4, 5)).astype(np.float32)}
    assert_close(g, inputs, outputs)


def test_reductions() -> None:
    g = dmlx.Graph()
    x = g.input("x", "FLOAT32", [3, 4, 2])
    outputs = [
        dmlx.Reduce(x, "SUM", [0, 2]),
        dmlx.Reduce(x, "MAX"),
        dmlx.Reduce(x, "L2", [1]),
        dmlx.Reduce(x, "ARGMAX", [1]),
        dmlx.ArgMin(x, [0, 1], "DECREASING", "INT32"),
    ]
    assert_close(g, {"x": RNG.integers(-3, 4, (3, 4, 2)).astype(np.float32)}, outputs)  # ties


def test_mean_variance_normalization_forms() -> None:
    g = dmlx.Graph()
    x = g.input("x", "FLOAT32", [2, 3, 4, 5])
    scale, bias = g.input("scale", "FLOAT32", [1, 3, 1, 1]), g.input("bias", "FLOAT32", [1, 3, 1, 1])
    mvn1 = dmlx.MeanVarianceNormalization(x, scale, bias, [2, 3], True, 1e-3, dmlx.FusedActivation.LeakyRelu(0.2))
    mvn2 = dmlx.MeanVarianceNormalization(x, None, bias, [1, 2, 3], normalize_mean=False)
    mvn = dmlx.MeanVarianceNormalization(x, scale, None, cross_channel=True, fused_activation=dmlx.FusedActivation.Relu())
    names = [e.node.desc.schema.name for e in (mvn1, mvn2, mvn)]  # type: ignore[union-attr]
    assert names == ["MEAN_VARIANCE_NORMALIZATION1", "MEAN_VARIANCE_NORMALIZATION2", "MEAN_VARIANCE_NORMALIZATION"]
    assert mvn2.node is not None and (mvn2.node.desc["UseMean"], mvn2.node.desc["UseVariance"]) == (False, True)
    inputs = {n: RNG.normal(1, 2, t.sizes).astype(np.float32) for n, t in g.inputs.items()}
    assert_close(g, inputs, [mvn1, mvn2, mvn])


def test_long_chain_through_the_cli(tmp_path: Path) -> None:
    """Activations, MVN with a fused activation, ArgMax and OneHot in one graph, as ONNX and as DxDispatch."""
    g = dmlx.Graph()
    x = g.input("x", "FLOAT32", [2, 6])
    v = g.input("v", "INT32", [1, 2])
    h = dmlx.ActivationScaledTanh(dmlx.ActivationLinear(x, 0.5, 1.0))
    n = dmlx.MeanVarianceNormalization(h, axes=[1], fused_activation=dmlx.FusedActivation.Elu())
    y = dmlx.OneHot(dmlx.ArgMax(n, [1], output_type="INT64"), v, 6, 1)
    inputs = {"x": RNG.normal(0, 1, (2, 6)).astype(np.float32), "v": np.array([[-1, 5]], np.int32)}
    got = assert_close(g, inputs, [n, y])
    model = g.to_dxdispatch({"normalized": n, "picked": y}, inputs)
    assert len(model["dispatchables"]) == 5
    result = cli_printed(tmp_path, model)
    assert result["picked"] == got[1].reshape(-1).tolist()
    np.testing.assert_allclose(result["normalized"], got[0].reshape(-1), rtol=1e-5, atol=1e-5)  # printed with 6 digits


def test_the_docs_convolution_block_runs_on_the_engines_present() -> None:
    """docs/python-api.md's first block, as written, on the engines this machine has; each the reference's."""
    text = (Path(__file__).resolve().parents[2] / "docs" / "python-api.md").read_text()
    block = text.split("## Your own convolution, from Python")[1].split("```python\n")[1].split("```")[0]
    engines = ("cpu", "dml-api", "dml")
    loop = 'for ep in ("cpu", "dml-api", "dml"):'
    assert loop in block
    present = tuple(e for e in engines if e in runtime.available() or (e == "dml-api" and dmlapi.missing() is None))
    scope: dict[str, Any] = {}
    with contextlib.redirect_stdout(io.StringIO()) as shown:
        exec(block.replace(loop, f"for ep in {present}:"), scope)
    want = scope["g"].reference(scope["inputs"], scope["outputs"])
    assert shown.getvalue().splitlines() == [f"{ep} {want['indices'].ravel()[:6]}" for ep in present]
    got = scope["g"].run(scope["inputs"], scope["outputs"])
    np.testing.assert_allclose(got["y"], want["y"], rtol=1e-5, atol=1e-5)
