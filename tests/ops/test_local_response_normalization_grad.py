"""DML_OPERATOR_LOCAL_RESPONSE_NORMALIZATION_GRAD (dml2onnx/ops/local_response_normalization_grad.py):
a value by hand, DxDispatch's model, what DirectML's API computed where the page is silent (the
second sum over the unmirrored window for an even LocalSize, D = 0), DirectML's refusals, and
properties: for an odd LocalSize the reference is the derivative of LOCAL_RESPONSE_NORMALIZATION's
reference (central differences), and the graph computes the reference. The matrix (tests/
matrix_local_response_normalization_grad.py) runs it on every EP present and through DirectML's API."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dml2onnx.backends import dmlapi
from dml2onnx.core.errors import format_path
from dml2onnx.ops import local_response_normalization_grad as lrn_grad
from dml2onnx.ops import registry
from strategies import SEEDS
from support import assert_matches_reference, make_desc, refusal, run_cli, tensor

ROOT = Path(__file__).resolve().parents[2]
OP = "LOCAL_RESPONSE_NORMALIZATION_GRAD"
live = pytest.mark.skipif(dmlapi.missing() is not None, reason="DirectML's API under Wine is not set up (make dml-setup)")
ENGINES = ["cpu", pytest.param("directml", marks=live), pytest.param("dml", marks=live)]


def fields(
    sizes: list[int], cross: bool, size: int, alpha: float, beta: float, bias: float, dtype: str = "FLOAT32"
) -> dict[str, Any]:
    return {name: tensor(dtype, sizes) for name in ("InputTensor", "InputGradientTensor", "OutputGradientTensor")} | {
        "CrossChannel": cross,
        "LocalSize": size,
        "Alpha": alpha,
        "Beta": beta,
        "Bias": bias,
    }


def grad(f: dict[str, Any], x: Any, g: Any) -> np.ndarray:
    """The reference's output, after checking the graph's on the CPU EP."""
    sizes = f["InputTensor"]["Sizes"]
    feeds = {
        "InputTensor": np.asarray(x, np.float32).reshape(sizes),
        "InputGradientTensor": np.asarray(g, np.float32).reshape(sizes),
    }
    assert_matches_reference("cpu", OP, f, feeds)
    return lrn_grad.reference(make_desc(OP, f), feeds).ravel()


def test_value_by_hand() -> None:
    # across 3 channels, LocalSize 3, Alpha = Beta = Bias = 1: D = 1 + S / 3 = [8/3, 17/3, 16/3];
    # the shares g x / D^2 summed over each window; g / D - 2 / 3 * x * R
    d = [8 / 3, 17 / 3, 16 / 3]
    t = [(i + 1) / d[i] ** 2 for i in range(3)]
    r = [t[0] + t[1], t[0] + t[1] + t[2], t[1] + t[2]]
    want = [1 / d[i] - 2 / 3 * (i + 1) * r[i] for i in range(3)]
    np.testing.assert_allclose(grad(fields([1, 3, 1, 1], True, 3, 1, 1, 1), [1, 2, 3], [1, 1, 1]), want, rtol=1e-6)


@pytest.mark.parametrize("engine", ENGINES)
def test_model_runs(engine: str) -> None:
    status, out, err = run_cli("run", str(ROOT / "models" / "local_response_normalization_grad.json"), "--ep", engine)
    assert status == 0, err
    assert "Resource 'across_output': 0.239728, -0.234699, -0.148005\n" in out
    got = [float(v) for v in out.strip().splitlines()[-1].split(": ")[1].split(", ")]
    np.testing.assert_allclose(got, [0.109497, -0.285156, 0.1073, -0.029892], rtol=2e-3)  # DirectML's FLOAT16


def test_even_window_sums_the_shares_over_the_forward_window() -> None:
    """Measured: LocalSize 2 within channels, x = [1, 2, 3, 4], g = [1, -1, 2, 0.5], Alpha = Beta =
    Bias = 1: DirectML's output (to FLOAT32 rounding) is the formula with R over the forward's window
    (the element and the next), not over the mirrored one (the previous and the element) that the
    exact derivative takes."""
    f = fields([1, 1, 1, 4], False, 2, 1, 1, 1)
    got = grad(f, [1, 2, 3, 4], [1, -1, 2, 0.5])
    np.testing.assert_allclose(got, [0.23963717, -0.1280659, -0.02469139, -0.04320987], rtol=1e-6, atol=1e-7)
    x = np.array([1, 2, 3, 4], np.float64)
    exact = _derivative(f, x.reshape(1, 1, 1, 4), np.array([1, -1, 2, 0.5]).reshape(1, 1, 1, 4)).ravel()
    assert not np.allclose(got, exact, rtol=1e-3)


@pytest.mark.parametrize(
    ("x", "g", "change", "want"),
    [
        # Bias 0 over zeros (D = [0, 0, 16/3, 16/3]): 0 there, and no share from them
        ([0, 0, 0, 4], [1, -1, 2, 0.5], {}, [0, 0, 0.375, -0.09375]),
        # Bias -1.25 with Alpha / LocalSize = 1 cancels at elements 0 and 2 (D = [0, 1, 0]): their
        # outputs are the second term alone, Beta 0 too
        ([1, 0.5, 1], [1, 1, 1], {"Alpha": 3.0, "Bias": -1.25}, [-1, 0.5, -1]),
        ([1, 0.5, 1], [1, 1, 1], {"Alpha": 3.0, "Bias": -1.25, "Beta": 0.5}, [-0.5, 0.75, -0.5]),
        ([1, 0.5, 1], [1, 1, 1], {"Alpha": 3.0, "Bias": -1.25, "Beta": 0.0}, [0, 1, 0]),
    ],
)
def test_d_zero_takes_d_to_minus_beta_as_zero(
    x: list[float], g: list[float], change: dict[str, float], want: list[float]
) -> None:
    """Measured (LocalSize 3 within channels, Alpha = Beta = 1, Bias 0 unless changed)."""
    f = fields([1, 1, 1, len(x)], False, 3, 1, 1, 0) | change
    np.testing.assert_allclose(grad(f, x, g), want, rtol=1e-6, atol=1e-7)


@live
def test_directml_pins() -> None:
    """The even window and D = 0 again through DirectML's API, with FLOAT16 across channels."""
    rng = np.random.default_rng(9)
    for f, x in (
        (fields([1, 1, 1, 4], False, 2, 1, 1, 1), np.array([1, 2, 3, 4], np.float32)),
        (fields([1, 1, 1, 3], False, 3, 3, 0.5, -1.25), np.array([1, 0.5, 1], np.float32)),
        (fields([1, 1, 1, 4], False, 3, 1, 1, 0), np.array([0, 0, 0, 4], np.float32)),
        (fields([2, 6, 2, 3], True, 4, 0.5, 0.9, 0.5, "FLOAT16"), rng.uniform(-2, 2, [2, 6, 2, 3]).astype(np.float16)),
    ):
        sizes = f["InputTensor"]["Sizes"]
        feeds = {"InputTensor": x.reshape(sizes), "InputGradientTensor": rng.uniform(-1, 1, sizes).astype(x.dtype)}
        desc = make_desc(OP, f)
        got = dmlapi.execute(desc, feeds).output.astype(np.float64)
        np.testing.assert_allclose(
            got, lrn_grad.reference(desc, feeds).astype(np.float64), rtol=2e-3, atol=1e-2 if x.dtype == np.float16 else 1e-6
        )


# -- refusals -------------------------------------------------------------------------------------

BASE = fields([1, 2, 3, 4], True, 3, 1e-4, 0.75, 1)


@pytest.mark.parametrize(
    ("change", "path", "text"),
    [
        ({"OutputGradientTensor": tensor("FLOAT16", [1, 2, 3, 4])}, "desc.OutputGradientTensor.DataType", "same DataType"),
        ({"InputGradientTensor": tensor("FLOAT32", [1, 2, 4, 3])}, "desc.InputGradientTensor.Sizes", ""),
        ({"LocalSize": 0}, "desc.LocalSize", "at least 1"),
    ],
)
def test_refusals(change: dict[str, Any], path: str, text: str) -> None:
    e = refusal(OP, BASE | change)
    assert format_path(e.path) == path and text in e.rule, (format_path(e.path), e.rule)


@live
def test_directml_refuses_what_is_refused() -> None:
    from dml2onnx.core.desc import parse_operator_desc

    for change in (
        {"OutputGradientTensor": tensor("FLOAT16", [1, 2, 3, 4])},
        {"LocalSize": 0},
        {"OutputGradientTensor": tensor("FLOAT32", [1, 2, 4, 3])},
    ):
        desc = parse_operator_desc(OP, BASE | change, ("desc",), ("type",))
        feeds = {k: np.ones([1, 2, 3, 4], np.float32) for k in ("InputTensor", "InputGradientTensor")}
        with pytest.raises(dmlapi.DmlApiError) as e:
            dmlapi.execute(desc, feeds)
        assert e.value.hresult == 0x80070057, change


# -- properties ---------------------------------------------------------------------------------------


def _derivative(f: dict[str, Any], x: np.ndarray, g: np.ndarray) -> np.ndarray:
    """d<LRN(x), g>/dx by central differences of the forward's reference (the same fields), in FLOAT64."""
    forward = {k: v for k, v in f.items() if k not in ("InputGradientTensor", "OutputGradientTensor")}
    forward["OutputTensor"] = f["InputTensor"]
    fwd = make_desc("LOCAL_RESPONSE_NORMALIZATION", forward)
    module = registry.family("LOCAL_RESPONSE_NORMALIZATION")
    out = np.zeros(x.size)
    h = 1e-6
    for i in range(x.size):
        e = np.zeros(x.size)
        e[i] = h
        up = module.reference(fwd, {"InputTensor": x + e.reshape(x.shape)})
        down = module.reference(fwd, {"InputTensor": x - e.reshape(x.shape)})
        out[i] = np.vdot(up - down, g) / (2 * h)
    return out.reshape(x.shape)


@st.composite
def cases(draw: st.DrawFn) -> dict[str, Any]:
    sizes = [draw(st.integers(1, 2)), draw(st.integers(1, 5)), draw(st.integers(1, 3)), draw(st.integers(1, 4))]
    constants = draw(st.sampled_from([(1e-4, 0.75, 1.0), (0.5, 0.9, 0.5), (2.0, -0.5, 2.0), (1.0, 1.0, 1.0)]))
    return fields(sizes, draw(st.booleans()), draw(st.integers(1, 6)), *constants, draw(st.sampled_from(["FLOAT32", "FLOAT16"])))


def _feeds(f: dict[str, Any], seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    t = np.float16 if f["InputTensor"]["DataType"] == "FLOAT16" else np.float32
    sizes = f["InputTensor"]["Sizes"]
    return {"InputTensor": rng.uniform(-2, 2, sizes).astype(t), "InputGradientTensor": rng.uniform(-1, 1, sizes).astype(t)}


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases(), SEEDS)
def test_odd_windows_give_the_derivative(f: dict[str, Any], seed: int) -> None:
    if f["LocalSize"] % 2 == 0:
        f = f | {"LocalSize": f["LocalSize"] - 1}
    f = f | {k: tensor("FLOAT32", f[k]["Sizes"]) for k in ("InputTensor", "InputGradientTensor", "OutputGradientTensor")}
    feeds = _feeds(f, seed)
    desc = make_desc(OP, f)
    want = _derivative(f, feeds["InputTensor"].astype(np.float64), feeds["InputGradientTensor"].astype(np.float64))
    np.testing.assert_allclose(lrn_grad.reference(desc, feeds), want, rtol=1e-4, atol=1e-5)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases(), SEEDS)
def test_graph_matches_reference(f: dict[str, Any], seed: int) -> None:
    assert_matches_reference("cpu", OP, f, _feeds(f, seed))
