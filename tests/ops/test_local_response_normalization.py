"""DML_OPERATOR_LOCAL_RESPONSE_NORMALIZATION: values by hand (the page has no example) across and
within channels, the window at the edges, every candidate lowering, refusals, and properties over
random shapes, LocalSize and parameters against the numpy reference."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dml2onnx import lowering
from dml2onnx.backends import runtime
from dml2onnx.core.errors import format_path
from dml2onnx.graph.builder import DEFAULT_OPSET
from dml2onnx.lowering import choices
from dml2onnx.ops import local_response_normalization as lrn
from strategies import SEEDS
from support import EPS, assert_matches_reference, make_desc, refusal, tensor

OP = "LOCAL_RESPONSE_NORMALIZATION"
SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def fields(
    dtype: str, shape: tuple[int, ...], cross: bool, size: int, alpha: float = 1.0, beta: float = 1.0, bias: float = 1.0
) -> dict[str, Any]:
    return {
        "InputTensor": tensor(dtype, shape),
        "OutputTensor": tensor(dtype, shape),
        "CrossChannel": cross,
        "LocalSize": size,
        "Alpha": alpha,
        "Beta": beta,
        "Bias": bias,
    }


def every_variant(f: dict[str, Any], x: np.ndarray) -> list[np.ndarray]:
    desc = make_desc(OP, f)
    return [
        runtime.create(lowering.lower(desc, "t", target=target, variant=v), "t", "cpu").run({"InputTensor": x})
        for target in ("portable", "dml")
        for v in choices.available(desc, DEFAULT_OPSET)
    ]


def test_window_halves() -> None:
    assert [lrn.window(n) for n in (1, 2, 3, 4, 5)] == [(0, 0), (0, 1), (1, 1), (1, 2), (2, 2)]


@pytest.mark.parametrize("size", [2, 3])
def test_across_channels_by_hand(size: int) -> None:
    x = np.array([1, 2, 3, 4], np.float32).reshape(1, 4, 1, 1)
    # squares 1 4 9 16; size 3 windows {0,1}, {0,1,2}, {1,2,3}, {2,3}; size 2: {c, c+1}
    sums = [5, 14, 29, 25] if size == 3 else [5, 13, 25, 16]
    want = np.array([v / (1 + 1 / size * s) for v, s in zip([1, 2, 3, 4], sums, strict=True)], np.float32).reshape(x.shape)
    for got in every_variant(fields("FLOAT32", x.shape, True, size), x):
        np.testing.assert_allclose(got, want, rtol=1e-6)


def test_within_channel_by_hand() -> None:
    x = np.array([1, 2, 3, 4], np.float32).reshape(1, 1, 2, 2)
    # a 3 x 3 window around each of the 2 x 2 elements covers all four: sum 30; Alpha / 3, not / 9
    want = x / (1 + 0.5 / 3 * 30)
    for got in every_variant(fields("FLOAT32", x.shape, False, 3, alpha=0.5), x):
        np.testing.assert_allclose(got, want, rtol=1e-6)


def test_lrn_applies_as_onnx_runtime_takes_it() -> None:
    shape = (1, 4, 2, 2)
    assert choices.available(make_desc(OP, fields("FLOAT32", shape, True, 3)), DEFAULT_OPSET) == ("arithmetic", "lrn")
    for f in (
        fields("FLOAT32", shape, True, 4),  # even: ONNX Runtime's kernels refuse it
        fields("FLOAT32", shape, True, 17),  # beyond cuDNN's 16
        fields("FLOAT32", shape, True, 3, beta=0.0),
        fields("FLOAT32", shape, True, 3, bias=0.0),
        fields("FLOAT32", shape, True, 3, alpha=0.0),
        fields("FLOAT32", shape, False, 3),
    ):
        assert choices.available(make_desc(OP, f), DEFAULT_OPSET) == ("arithmetic",), f


def test_dml_target_emits_lrn_in_float16() -> None:
    model = lowering.lower(make_desc(OP, fields("FLOAT16", (1, 4, 2, 2), True, 3)), "t", target="dml")
    assert [n.op_type for n in model.graph.node] == ["LRN"]


@pytest.mark.parametrize(
    ("change", "path", "message"),
    [
        ({"OutputTensor": tensor("FLOAT16", (1, 4, 2, 2))}, "desc.OutputTensor.DataType", "same DataType"),
        ({"OutputTensor": tensor("FLOAT32", (1, 4, 2, 1))}, "desc.OutputTensor.Sizes", "same Sizes"),
        ({"LocalSize": 0}, "desc.LocalSize", "at least 1"),
    ],
)
def test_refusals(change: dict[str, Any], path: str, message: str) -> None:
    e = refusal(OP, fields("FLOAT32", (1, 4, 2, 2), True, 3) | change)
    assert format_path(e.path) == path, str(e)
    assert message in e.rule


def test_three_dimensions_refused() -> None:
    e = refusal(OP, fields("FLOAT32", (4, 2, 2), True, 3))
    assert "InputTensor" in str(e)


@EPS
@SETTINGS
@given(
    shape=st.tuples(st.integers(1, 3), st.integers(1, 7), st.integers(1, 6), st.integers(1, 6)),
    dtype=st.sampled_from(["FLOAT32", "FLOAT16"]),
    cross=st.booleans(),
    size=st.integers(1, 9),
    alpha=st.sampled_from([1e-4, 0.5, 2.0]),
    beta=st.sampled_from([0.0, 0.5, 0.75, 1.5]),
    bias=st.sampled_from([0.5, 1.0, 2.0]),
    seed=SEEDS,
)
def test_matches_reference(
    ep: str, shape: tuple[int, ...], dtype: str, cross: bool, size: int, alpha: float, beta: float, bias: float, seed: int
) -> None:
    x = (np.random.default_rng(seed).standard_normal(shape) * 3).astype(np.float16 if dtype == "FLOAT16" else np.float32)
    assert_matches_reference(ep, OP, fields(dtype, shape, cross, size, alpha, beta, bias), {"InputTensor": x})
