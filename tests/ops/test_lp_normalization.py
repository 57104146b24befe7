"""DML_OPERATOR_LP_NORMALIZATION: values by hand (the page has no example), Epsilon at zero and
tiny norms, the dml target's LpNormalization, refusals, and properties over ranks 1-8, every
axis, P 1 and 2, against the numpy reference."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dml2onnx import lowering
from dml2onnx.backends import runtime
from dml2onnx.core.errors import format_path
from strategies import SEEDS, shapes
from support import EPS, assert_matches_reference, make_desc, refusal, run_lowered, tensor

OP = "LP_NORMALIZATION"
SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def fields(dtype: str, shape: tuple[int, ...], axis: int, p: int, epsilon: float = 1e-5) -> dict[str, Any]:
    return {"InputTensor": tensor(dtype, shape), "OutputTensor": tensor(dtype, shape), "Axis": axis, "Epsilon": epsilon, "P": p}


@pytest.mark.parametrize(("p", "row"), [(1, [3 / 7, -4 / 7, 0]), (2, [0.6, -0.8, 0])])
def test_by_hand(p: int, row: list[float]) -> None:
    x = np.array([[3, -4, 0], [0, 0, 0]], np.float32).reshape(1, 1, 2, 3)
    got = run_lowered(make_desc(OP, fields("FLOAT32", x.shape, 3, p, epsilon=0.0)), {"InputTensor": x})
    np.testing.assert_allclose(got.reshape(2, 3)[0], row, rtol=1e-6)
    assert np.isnan(got.reshape(2, 3)[1]).all()  # 0 / 0 without Epsilon (DirectML too)
    got = run_lowered(make_desc(OP, fields("FLOAT32", x.shape, 3, p, epsilon=0.5)), {"InputTensor": x})
    norm = 7 if p == 1 else 5
    np.testing.assert_allclose(got.reshape(2, 3), [np.array([3, -4, 0]) / np.sqrt(norm**2 + 0.5), [0, 0, 0]], rtol=1e-6)


def test_epsilon_guards_small_norms() -> None:
    x = np.array([1e-3, 0, 0], np.float32)
    got = run_lowered(make_desc(OP, fields("FLOAT32", x.shape, 0, 1, epsilon=0.5)), {"InputTensor": x})
    want = make_desc(OP, fields("FLOAT32", x.shape, 0, 1, epsilon=0.5))
    from dml2onnx.ops import lp_normalization

    np.testing.assert_allclose(got, lp_normalization.reference(want, {"InputTensor": x}), rtol=1e-6)
    # DirectML: x / sqrt(norm^2 + Epsilon), not x / max(norm, Epsilon) (2e-3) nor x / (norm + Epsilon)
    assert got[0] == pytest.approx(1e-3 / np.sqrt(1e-6 + 0.5), rel=1e-6)


def test_dml_target_emits_lp_normalization_at_its_epsilon() -> None:
    at = lowering.lower(make_desc(OP, fields("FLOAT16", (2, 3), 1, 2)), "t", target="dml")
    assert [n.op_type for n in at.graph.node] == ["LpNormalization"]
    other = lowering.lower(make_desc(OP, fields("FLOAT32", (2, 3), 1, 2, epsilon=0.5)), "t", target="dml")
    assert "LpNormalization" not in [n.op_type for n in other.graph.node]
    portable = lowering.lower(make_desc(OP, fields("FLOAT32", (2, 3), 1, 2)), "t")
    assert "LpNormalization" not in [n.op_type for n in portable.graph.node]
    x = np.array([[3, 4, 0], [1, 1, 1]], np.float32)
    runtime.create(portable, "t", "cpu").run({"InputTensor": x})


@pytest.mark.parametrize(
    ("change", "path", "message"),
    [
        ({"P": 3}, "desc.P", "must be 1 or 2"),
        ({"P": 0}, "desc.P", "must be 1 or 2"),
        ({"Axis": 4}, "desc.Axis", "less than InputTensor's DimensionCount (4)"),
        ({"OutputTensor": tensor("FLOAT16", (1, 2, 3, 4))}, "desc.OutputTensor.DataType", "same DataType"),
        ({"OutputTensor": tensor("FLOAT32", (1, 2, 3, 5))}, "desc.OutputTensor.Sizes", "same Sizes"),
    ],
)
def test_refusals(change: dict[str, Any], path: str, message: str) -> None:
    e = refusal(OP, fields("FLOAT32", (1, 2, 3, 4), 3, 2) | change)
    assert format_path(e.path) == path, str(e)
    assert message in e.rule


@EPS
@SETTINGS
@given(
    shape=shapes(),
    dtype=st.sampled_from(["FLOAT32", "FLOAT16"]),
    data=st.data(),
    p=st.sampled_from([1, 2]),
    epsilon=st.sampled_from([1e-5, 0.5, 0.0]),
    seed=SEEDS,
)
def test_matches_reference(
    ep: str, shape: tuple[int, ...], dtype: str, data: st.DataObject, p: int, epsilon: float, seed: int
) -> None:
    axis = data.draw(st.integers(0, len(shape) - 1))
    x = np.random.default_rng(seed).standard_normal(shape) * 3
    if epsilon == 0.0:  # no line of zeros: 0 / 0
        x = np.where(x == 0, 1.0, x)
    feeds = {"InputTensor": x.astype(np.float16 if dtype == "FLOAT16" else np.float32)}
    assert_matches_reference(ep, OP, fields(dtype, shape, axis, p, epsilon), feeds)
