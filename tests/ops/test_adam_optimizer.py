"""DML_OPERATOR_ADAM_OPTIMIZER (dml2onnx/ops/adam_optimizer.py): values by hand (the page has no
example), what DirectML's API computes where the page is silent or contradicts itself (a UINT32
step, Alpha 1 at step 0, NaN powers of a negative Beta), refusals, the model, and properties
against the numpy reference (all three outputs)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_batch_normalization_grad import ENGINES, run_model
from test_batch_normalization_grad import every_target as every_target_of

from dml2onnx.backends import dmlapi
from dml2onnx.cases.adam_optimizer import feeds_for, fields_for
from dml2onnx.core import dtypes, operator_table
from dml2onnx.core.desc import parse_operator_desc
from dml2onnx.core.errors import format_path
from dml2onnx.lowering import tolerances
from dml2onnx.ops.adam_optimizer import STEP
from strategies import SEEDS
from support import EPS, assert_matches_reference, make_desc, refusal, tensor

OP = "ADAM_OPTIMIZER"
F32 = dtypes.FLOAT32
SETTINGS = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
_why = dmlapi.missing()
live = pytest.mark.skipif(_why is not None, reason=f"DirectML's API under Wine is not set up ({_why})")
pytestmark = pytest.mark.skipif(
    OP not in operator_table.OPERATORS, reason="ADAM_OPTIMIZER waits for tools/directml_docs.txt's UINT32 TrainingStepTensor row"
)
SHAPE = (1, 1, 1, 2)


def every_target(f: dict[str, Any], feeds: dict[str, np.ndarray]) -> list[dict[str, np.ndarray]]:
    return every_target_of(OP, f, feeds)


def by_hand(step: int) -> tuple[dict[str, Any], dict[str, np.ndarray], dict[str, np.ndarray]]:
    """X = 1, 2; M = 0, 0.5; V = 0, 1; G = 1, -1; Beta1 0.5, Beta2 0.75, LearningRate 0.5, Epsilon
    0: M' = 0.5, -0.25 and V' = 0.25, 1; Alpha = sqrt(1 - 0.75^T) / (1 - 0.5^T): 1 at T = 1 (and
    at T = 0), sqrt(7) / 3 at T = 2; X' = X - 0.5 Alpha M' / sqrt(V') = 1 - 0.5 Alpha, 2 + Alpha / 8."""
    f = fields_for(F32, SHAPE, beta1=0.5, beta2=0.75, rate=0.5, epsilon=0.0)
    feeds = {
        "InputParametersTensor": np.array([1, 2], np.float32).reshape(SHAPE),
        "InputFirstMomentTensor": np.array([0, 0.5], np.float32).reshape(SHAPE),
        "InputSecondMomentTensor": np.array([0, 1], np.float32).reshape(SHAPE),
        "GradientTensor": np.array([1, -1], np.float32).reshape(SHAPE),
        STEP: np.full((1, 1, 1, 1), step, np.uint32),
    }
    alpha = np.sqrt(7) / 3 if step == 2 else 1.0
    want = {
        "OutputParametersTensor": np.array([1 - 0.5 * alpha, 2 + alpha / 8], np.float32).reshape(SHAPE),
        "OutputFirstMomentTensor": np.array([0.5, -0.25], np.float32).reshape(SHAPE),
        "OutputSecondMomentTensor": np.array([0.25, 1], np.float32).reshape(SHAPE),
    }
    return f, feeds, want


@pytest.mark.parametrize("step", [0, 1, 2])
def test_by_hand(step: int) -> None:
    f, feeds, want = by_hand(step)
    for got in every_target(f, feeds):
        for k, v in want.items():
            np.testing.assert_allclose(got[k], v, rtol=1e-6, atol=1e-6, err_msg=k)


def unit_betas(step: int) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """Beta1 = Beta2 = 1: the moments stay (M' = 1, -1; V' = 4, 4); X = 0, LearningRate 1."""
    f = fields_for(F32, SHAPE, beta1=1.0, beta2=1.0, rate=1.0, epsilon=0.0)
    feeds = {
        "InputParametersTensor": np.zeros(SHAPE, np.float32),
        "InputFirstMomentTensor": np.array([1, -1], np.float32).reshape(SHAPE),
        "InputSecondMomentTensor": np.full(SHAPE, 4, np.float32),
        "GradientTensor": np.full(SHAPE, 3, np.float32),
        STEP: np.full((1, 1, 1, 1), step, np.uint32),
    }
    return f, feeds


def test_step_zero_gives_alpha_one() -> None:
    """At T = 0 the formula's Alpha is 0 / 0; DirectML takes 1 (no bias correction), whatever the
    Betas: X' = -M' / sqrt(V') = -0.5, 0.5. At T = 3 with the same Betas: 0 / 0, NaN."""
    for step, want in ((0, [-0.5, 0.5]), (3, [np.nan, np.nan])):
        for got in every_target(*unit_betas(step)):
            np.testing.assert_array_equal(got["OutputParametersTensor"].ravel(), want)


def test_negative_beta_powers_are_nan() -> None:
    """Beta^T of a negative Beta is NaN for every T >= 1 (DirectML's exp(T ln Beta)), even T
    included; at T = 0 Alpha is 1."""
    for step in (0, 2, 3):
        f, feeds, _ = by_hand(step)
        f["Beta1"] = -0.5
        for got in every_target(f, feeds):
            assert np.isnan(got["OutputParametersTensor"]).all() == (step > 0)
            np.testing.assert_array_equal(got["OutputFirstMomentTensor"].ravel(), [1.5, -1.75])


@live
def test_directml_computes_so() -> None:
    """The by-hand values, Alpha 1 at step 0 with Beta1 = Beta2 = 1, NaN for a negative Beta at an
    even step, and a FLOAT32 step refused (CreateOperator's E_INVALIDARG), as the field text's UINT32."""
    for step in (0, 1, 2):
        f, feeds, want = by_hand(step)
        got = dmlapi.execute(make_desc(OP, f), feeds).outputs
        for k, v in want.items():
            np.testing.assert_allclose(got[k], v, rtol=1e-6, atol=1e-6, err_msg=k)
    got = dmlapi.execute(make_desc(OP, unit_betas(0)[0]), unit_betas(0)[1]).outputs
    np.testing.assert_array_equal(got["OutputParametersTensor"].ravel(), [-0.5, 0.5])
    f, feeds, _ = by_hand(2)
    got = dmlapi.execute(make_desc(OP, f | {"Beta1": -0.5}), feeds).outputs
    assert np.isnan(got["OutputParametersTensor"]).all()
    unchecked = parse_operator_desc(OP, f | {STEP: tensor("FLOAT32", (1, 1, 1, 1))}, ("desc",), ("type",))
    with pytest.raises(dmlapi.DmlApiError) as e:
        dmlapi.execute(unchecked, dict(feeds, **{STEP: np.full((1, 1, 1, 1), 2, np.float32)}))
    assert e.value.hresult == 0x80070057


BASE = fields_for(F32, (2, 3, 4, 5))


@pytest.mark.parametrize(
    ("change", "path", "message"),
    [
        ({STEP: tensor("FLOAT32", (1, 1, 1, 1))}, "desc.TrainingStepTensor.DataType", "UINT32"),
        ({STEP: tensor("UINT32", (1, 1, 1, 2))}, "desc.TrainingStepTensor.Sizes[3]", "every size 1"),
        ({STEP: tensor("UINT32", (1,))}, "desc.TrainingStepTensor.Sizes", "4 dimensions"),
        ({"GradientTensor": tensor("FLOAT32", (2, 3, 4, 4))}, "desc.GradientTensor.Sizes", "same Sizes"),
        ({"InputFirstMomentTensor": tensor("FLOAT16", (2, 3, 4, 5))}, "desc.InputFirstMomentTensor.DataType", "same DataType"),
        ({"OutputSecondMomentTensor": tensor("FLOAT32", (2, 3, 5, 4))}, "desc.OutputSecondMomentTensor.Sizes", "same Sizes"),
        ({"OutputParametersTensor": tensor("FLOAT16", (2, 3, 4, 5))}, "desc.OutputParametersTensor.DataType", "same DataType"),
        ({"InputParametersTensor": tensor("FLOAT32", (3, 4, 5))}, "desc.InputParametersTensor.Sizes", "4 dimensions"),
        ({"Beta1": "inf"}, "desc.Beta1", "finite"),
        ({"Beta2": "nan"}, "desc.Beta2", "finite"),
    ],
)
def test_refusals(change: dict[str, Any], path: str, message: str) -> None:
    e = refusal(OP, BASE | change)
    assert format_path(e.path) == path, str(e)
    assert message in e.rule


def test_feature_level() -> None:
    assert "3_0" in str(refusal(OP, BASE, level="2_1"))


@pytest.mark.parametrize("engine", ENGINES)
def test_model_runs(engine: str) -> None:
    rows = ("0.5, 2.125, 0.5, 2.125", "0.5, -0.25, 0.5, -0.25", "0.25, 1, 0.25, 1") * 2  # FLOAT32 in place, FLOAT16
    names = ("parameters", "first_moment", "second_moment", "parameters16", "first_moment16", "second_moment16")
    assert run_model("adam_optimizer", engine) == "".join(f"Resource '{n}': {r}\n" for n, r in zip(names, rows, strict=True))


@EPS
@SETTINGS
@given(
    n=st.integers(1, 3),
    c=st.integers(1, 4),
    dtype=st.sampled_from([dtypes.FLOAT32, dtypes.FLOAT16]),
    step=st.sampled_from([0, 1, 2, 3, 7, 100, 10**6, 2**32 - 1]),
    beta1=st.floats(0, tolerances.ADAM_BETA1),
    beta2=st.floats(0.5, tolerances.ADAM_BETA2),
    rate=st.floats(-tolerances.ADAM_RATE, tolerances.ADAM_RATE),
    epsilon=st.sampled_from([0.0, 1e-8, 1e-4]),
    seed=SEEDS,
)
def test_matches_reference(
    ep: str,
    n: int,
    c: int,
    dtype: dtypes.DataType,
    step: int,
    beta1: float,
    beta2: float,
    rate: float,
    epsilon: float,
    seed: int,
) -> None:
    """Hyperparameters and inputs within tolerances.adam's bounds."""
    shape = (n, c, 2, 3)
    f = fields_for(dtype, shape, beta1=beta1, beta2=beta2, rate=rate, epsilon=epsilon)
    assert_matches_reference(ep, OP, f, feeds_for(np.random.default_rng(seed), dtype, shape, step))
