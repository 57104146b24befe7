"""Property-based: lowered graphs on ONNX Runtime's CPU EP against the numpy references, over
random ranks 1-8, sizes, axis subsets (unsorted), data types, ties and extreme values."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dml2onnx import lowering
from dml2onnx.backends import runtime
from dml2onnx.cases.common import ACTIVATIONS
from dml2onnx.core import dtypes
from dml2onnx.graph.builder import DEFAULT_OPSET
from dml2onnx.lowering import choices, tolerances
from dml2onnx.ops import activations, argmax, one_hot, registry
from strategies import DATA_MODES, SEEDS, axis_subsets, float_data, int_data, shapes
from support import EPS, lowered_and_reference, make_desc, tensor

SETTINGS = settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
FLOAT_TYPES = st.sampled_from(["FLOAT32", "FLOAT16"])


def np_type(name: str) -> np.dtype:
    return dtypes.BY_NAME[name].numpy


@EPS
@SETTINGS
@given(shape=shapes(), data=st.data(), dtype=FLOAT_TYPES, mode=DATA_MODES, seed=SEEDS)
def test_hardmax1(ep: str, shape: tuple[int, ...], data: st.DataObject, dtype: str, mode: str, seed: int) -> None:
    axes = data.draw(axis_subsets(len(shape)))
    x = float_data(np.random.default_rng(seed), shape, np_type(dtype), mode)
    got, want = lowered_and_reference(
        ep,
        "ACTIVATION_HARDMAX1",
        {"InputTensor": tensor(dtype, shape), "OutputTensor": tensor(dtype, shape), "AxisCount": len(axes), "Axes": axes},
        {"InputTensor": x},
    )
    np.testing.assert_array_equal(got, want)
    # exactly one 1 per reduced group
    assert got.sum(axis=tuple(axes)).min() == 1 and got.sum(axis=tuple(axes)).max() == 1


@EPS
@SETTINGS
@given(shape=shapes(), data=st.data(), dtype=FLOAT_TYPES, mode=DATA_MODES, seed=SEEDS)
def test_log_softmax1(ep: str, shape: tuple[int, ...], data: st.DataObject, dtype: str, mode: str, seed: int) -> None:
    axes = data.draw(axis_subsets(len(shape)))
    x = float_data(np.random.default_rng(seed), shape, np_type(dtype), mode)
    if mode == "extreme":  # keep the true results representable (FLOAT16 ends at 65504)
        bound = 30000 if dtype == "FLOAT16" else 50000
        x = np.clip(x, -bound, bound).astype(x.dtype)
    got, want = lowered_and_reference(
        ep,
        "ACTIVATION_LOG_SOFTMAX1",
        {"InputTensor": tensor(dtype, shape), "OutputTensor": tensor(dtype, shape), "AxisCount": len(axes), "Axes": axes},
        {"InputTensor": x},
    )
    assert np.all(np.isfinite(got))
    # The CUDA EP's LogSoftmax kernel is less exact than the CPU's: 2e-5 off for log(3) (H200).
    tol = 2e-3 if dtype == "FLOAT16" else (2e-6 if ep == "cpu" else 5e-5)
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=tol, atol=tol)


ARGMAX_IN = st.sampled_from([t.name for t in argmax.INPUT_TYPES])
ARGMAX_OUT = st.sampled_from([t.name for t in argmax.OUTPUT_TYPES])


@EPS
@SETTINGS
@given(
    shape=shapes(),
    data=st.data(),
    in_type=ARGMAX_IN,
    out_type=ARGMAX_OUT,
    mode=DATA_MODES,
    seed=SEEDS,
    direction=st.sampled_from(["INCREASING", "DECREASING", "DML_AXIS_DIRECTION_DECREASING"]),
)
def test_argmax(
    ep: str, shape: tuple[int, ...], data: st.DataObject, in_type: str, out_type: str, mode: str, seed: int, direction: str
) -> None:
    axes = data.draw(axis_subsets(len(shape)))
    rng = np.random.default_rng(seed)
    t = np_type(in_type)
    x = float_data(rng, shape, t, mode) if t.kind == "f" else int_data(rng, shape, t, mode)
    out_shape = [1 if i in axes else s for i, s in enumerate(shape)]
    got, want = lowered_and_reference(
        ep,
        "ARGMAX",
        {
            "InputTensor": tensor(in_type, shape),
            "OutputTensor": tensor(out_type, out_shape),
            "AxisCount": len(axes),
            "Axes": axes,
            "AxisDirection": direction,
        },
        {"InputTensor": x},
    )
    np.testing.assert_array_equal(got, want)


@EPS
def test_argmax_int64_beyond_2_53_exact(ep: str) -> None:
    base = 2**62
    x = np.array([base + 1, base + 3, base + 2, base + 3, base], dtype=np.int64)
    for direction, expected in (("INCREASING", 1), ("DECREASING", 3)):
        got, want = lowered_and_reference(
            ep,
            "ARGMAX",
            {
                "InputTensor": tensor("INT64", [5]),
                "OutputTensor": tensor("UINT64", [1]),
                "AxisCount": 1,
                "Axes": [0],
                "AxisDirection": direction,
            },
            {"InputTensor": x},
        )
        assert got.tolist() == want.tolist() == [expected]


@EPS
def test_argmax_uint64_above_2_63_and_uint32_top(ep: str) -> None:
    x = np.array([2**63 - 1, 2**64 - 1, 2**63, 0], dtype=np.uint64)
    got, _ = lowered_and_reference(
        ep,
        "ARGMAX",
        {
            "InputTensor": tensor("UINT64", [4]),
            "OutputTensor": tensor("UINT32", [1]),
            "AxisCount": 1,
            "Axes": [0],
            "AxisDirection": "INCREASING",
        },
        {"InputTensor": x},
    )
    assert got.tolist() == [1]
    x32 = np.array([0x7FFFFFFF, 0xFFFFFFFF, 0xFFFFFFFE], dtype=np.uint32)
    got, _ = lowered_and_reference(
        ep,
        "ARGMAX",
        {
            "InputTensor": tensor("UINT32", [3]),
            "OutputTensor": tensor("INT32", [1]),
            "AxisCount": 1,
            "Axes": [0],
            "AxisDirection": "INCREASING",
        },
        {"InputTensor": x32},
    )
    assert got.tolist() == [1]


INDEX_TYPES = st.sampled_from([t.name for t in one_hot.INDEX_TYPES])
VALUE_TYPES = st.sampled_from([t.name for t in one_hot.VALUE_TYPES])


@st.composite
def index_values(draw: st.DrawFn, dtype: np.dtype, depth: int, count: int) -> np.ndarray:
    info = np.iinfo(dtype)
    special = [int(info.max), int(info.min), depth, depth - 1, 0]
    if info.min < 0:
        special += [-1, -depth, -depth - 1]
    near = st.integers(max(int(info.min), -depth - 2), depth + 2)
    values = draw(st.lists(st.one_of(near, st.sampled_from(special)), min_size=count, max_size=count))
    return np.array(values, dtype=object).astype(dtype)


@EPS
@SETTINGS
@given(shape=shapes(), data=st.data(), index_type=INDEX_TYPES, value_type=VALUE_TYPES, seed=SEEDS)
def test_one_hot(ep: str, shape: tuple[int, ...], data: st.DataObject, index_type: str, value_type: str, seed: int) -> None:
    rank = len(shape)
    axis = data.draw(st.integers(0, rank - 1))
    index_shape = [1 if i == axis else s for i, s in enumerate(shape)]
    values_shape = data.draw(shapes(rank, rank).filter(lambda s: int(np.prod(s)) >= 2))
    rng = np.random.default_rng(seed)
    vt = np_type(value_type)
    values = float_data(rng, values_shape, vt, "random") if vt.kind == "f" else int_data(rng, values_shape, vt, "random")
    indices = data.draw(index_values(np_type(index_type), shape[axis], int(np.prod(index_shape)))).reshape(index_shape)
    got, want = lowered_and_reference(
        ep,
        "ONE_HOT",
        {
            "IndicesTensor": tensor(index_type, index_shape),
            "ValuesTensor": tensor(value_type, values_shape),
            "OutputTensor": tensor(value_type, shape),
            "Axis": axis,
        },
        {"IndicesTensor": indices, "ValuesTensor": values},
    )
    np.testing.assert_array_equal(got, want)


ACTIVATION_PARAMS = ACTIVATIONS


def test_every_fusable_activation_has_params_listed() -> None:
    assert set(ACTIVATION_PARAMS) == set(activations.ACTIVATIONS)


@EPS
@SETTINGS
@given(
    shape=st.tuples(*[st.integers(1, 5)] * 4),
    dtype=FLOAT_TYPES,
    seed=SEEDS,
    cross=st.booleans(),
    normalize=st.booleans(),
    data=st.data(),
    activation=st.sampled_from([None, *ACTIVATION_PARAMS]),
    epsilon=st.sampled_from([1e-5, 1e-3, 0.5]),
)
def test_mean_variance_normalization(
    ep: str,
    shape: tuple[int, ...],
    dtype: str,
    seed: int,
    cross: bool,
    normalize: bool,
    data: st.DataObject,
    activation: str | None,
    epsilon: float,
) -> None:
    rng = np.random.default_rng(seed)
    t = np_type(dtype)
    fields = {
        "InputTensor": tensor(dtype, shape),
        "OutputTensor": tensor(dtype, shape),
        "CrossChannel": cross,
        "NormalizeVariance": normalize,
        "Epsilon": epsilon,
    }
    inputs = {"InputTensor": (rng.standard_normal(shape) * 3 + rng.integers(-5, 5)).astype(t)}
    for name in data.draw(st.sampled_from([(), ("ScaleTensor",), ("BiasTensor",), ("ScaleTensor", "BiasTensor")])):
        sizes = [data.draw(st.sampled_from([1, s])) for s in shape]
        fields[name] = tensor(dtype, sizes)
        inputs[name] = rng.uniform(-2, 2, sizes).astype(t)
    if activation:
        fields["FusedActivation"] = {"Type": activation, **ACTIVATION_PARAMS[activation]}
    got, want = lowered_and_reference(ep, "MEAN_VARIANCE_NORMALIZATION", fields, inputs)
    tol = 4e-3 if dtype == "FLOAT16" else 5e-5
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=tol, atol=tol)


CANDIDATE_OPS = st.sampled_from(["ARGMAX", "ARGMIN", "ACTIVATION_HARDMAX1", "ACTIVATION_LOG_SOFTMAX1"])


@EPS
@SETTINGS
@given(shape=shapes(), data=st.data(), op=CANDIDATE_OPS, dtype=FLOAT_TYPES, mode=DATA_MODES, seed=SEEDS)
def test_every_candidate_lowering(
    ep: str, shape: tuple[int, ...], data: st.DataObject, op: str, dtype: str, mode: str, seed: int
) -> None:
    """Every candidate of choices.py (not only the one chosen) for the `portable` target and the
    EP's own, against the reference: ties, extreme values, DECREASING."""
    axes = data.draw(axis_subsets(len(shape)))
    fields = {"InputTensor": tensor(dtype, shape), "AxisCount": len(axes), "Axes": axes}
    if op in ("ARGMAX", "ARGMIN"):
        out = [1 if i in axes else s for i, s in enumerate(shape)]
        direction = data.draw(st.sampled_from(["INCREASING", "DECREASING"]))
        fields |= {"OutputTensor": tensor("INT64", out), "AxisDirection": direction}
    else:
        fields |= {"OutputTensor": tensor(dtype, shape)}
    desc = make_desc(op, fields)
    target = data.draw(st.sampled_from(["portable", ep]))
    variant = data.draw(st.sampled_from(choices.available(desc, DEFAULT_OPSET)))
    x = float_data(np.random.default_rng(seed), shape, np_type(dtype), mode)
    if op == "ACTIVATION_LOG_SOFTMAX1" and mode == "extreme":
        x = np.clip(x, -30000 if dtype == "FLOAT16" else -50000, 30000 if dtype == "FLOAT16" else 50000).astype(x.dtype)
    got = runtime.create(lowering.lower(desc, "t", target=target, variant=variant), "t", ep).run({"InputTensor": x})
    want = registry.family(op).reference(desc, {"InputTensor": x})
    result = tolerances.compare(got, want, tolerances.tolerance(op, desc.tensor("OutputTensor").data_type, ep))
    assert result.ok, (target, variant, result)
