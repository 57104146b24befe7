"""ACTIVATION_SOFTMAX1, the single-axis ACTIVATION_SOFTMAX / LOG_SOFTMAX / HARDMAX, and ARGMIN:
the ARGMIN page's examples, hand-computed softmax values, properties against the float64 numpy
references over every candidate lowering and target, the effective-rank rule, the relational
rules and the feature-level gates."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dml2onnx import lowering
from dml2onnx.backends import runtime
from dml2onnx.core.desc import OperatorDesc, parse_operator_desc
from dml2onnx.core.errors import ModelError
from dml2onnx.graph.builder import DEFAULT_OPSET
from dml2onnx.lowering import choices
from dml2onnx.ops import argmax, registry
from strategies import DATA_MODES, SEEDS, axis_subsets, float_data, int_data, shapes
from support import EPS, make_desc, tensor

SETTINGS = settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
FLOAT_TYPES = st.sampled_from(["FLOAT32", "FLOAT16"])
OLD_FORMS = ("ACTIVATION_SOFTMAX", "ACTIVATION_LOG_SOFTMAX", "ACTIVATION_HARDMAX")
# the targets whose graphs run on each EP
TARGETS = {"cpu": ("portable", "cpu"), "cuda": ("portable", "cuda")}


def run_all(ep: str, desc: OperatorDesc, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The output of every candidate lowering for every target that runs on `ep`, by name."""
    results = {}
    for target in TARGETS[ep]:
        for variant in choices.available(desc, DEFAULT_OPSET):
            session = runtime.create(lowering.lower(desc, "t", target=target, variant=variant), "t", ep)
            assert session.nodes_off_ep() == []
            got = session.run(inputs)
            out = desc.tensor("OutputTensor")
            assert got.dtype == out.data_type.numpy and got.shape == out.sizes
            results[f"{target}-{variant}"] = got
    return results


def reference(desc: OperatorDesc, inputs: dict[str, np.ndarray]) -> np.ndarray:
    return registry.family(desc.schema.name).reference(desc, inputs)


def with_axes(dtype: str, shape: list[int] | tuple[int, ...], axes: list[int]) -> dict[str, Any]:
    return {"InputTensor": tensor(dtype, shape), "OutputTensor": tensor(dtype, shape), "AxisCount": len(axes), "Axes": axes}


def single_axis(dtype: str, shape: list[int] | tuple[int, ...]) -> dict[str, Any]:
    return {"InputTensor": tensor(dtype, shape), "OutputTensor": tensor(dtype, shape)}


def arg_fields(in_type: str, shape: list[int], axes: list[int], direction: str, out_type: str = "UINT32") -> dict[str, Any]:
    return {
        "InputTensor": tensor(in_type, shape),
        "OutputTensor": tensor(out_type, [1 if i in axes else s for i, s in enumerate(shape)]),
        "AxisCount": len(axes),
        "Axes": axes,
        "AxisDirection": direction,
    }


# -- the ARGMIN page's examples ------------------------------------------------------------

DOC_INPUT = np.array([[1, 2, 3], [3, 0, 4], [2, 5, 2]], dtype=np.float32)


@EPS
@pytest.mark.parametrize(
    ("axes", "expected"),
    [([0], [[0, 1, 2]]), ([1], [[0], [1], [0]]), ([0, 1], [[4]])],
    ids=["columns", "rows", "all"],
)
def test_argmin_page_examples(ep: str, axes: list[int], expected: list[list[int]]) -> None:
    desc = make_desc("ARGMIN", arg_fields("FLOAT32", [3, 3], axes, "INCREASING"))
    for name, got in run_all(ep, desc, {"InputTensor": DOC_INPUT}).items():
        assert got.tolist() == expected, name
    assert reference(desc, {"InputTensor": DOC_INPUT}).tolist() == expected


@EPS
@pytest.mark.parametrize("in_type", [t.name for t in argmax.INPUT_TYPES])
def test_argmin_page_tie_example_every_type(ep: str, in_type: str) -> None:
    """argmin({1,2,3,2,1}) = 0 (INCREASING) and 4 (DECREASING)."""
    x = np.array([1, 2, 3, 2, 1]).astype(in_type.lower())
    for direction, expected in (("INCREASING", 0), ("DECREASING", 4)):
        desc = make_desc("ARGMIN", arg_fields(in_type, [5], [0], direction, "INT64"))
        for name, got in run_all(ep, desc, {"InputTensor": x}).items():
            assert got.tolist() == [expected], (name, direction)
        assert reference(desc, {"InputTensor": x}).tolist() == [expected]


@EPS
@pytest.mark.parametrize(
    ("in_type", "x", "first", "last"),
    [
        ("INT64", [2**62 + 3, 2**62 + 1, 2**62 + 2, 2**62 + 1, 2**62 + 5], 1, 3),  # beyond 2**53: merged by a float cast
        ("INT64", [-(2**63) + 1, -(2**63), 2**63 - 1, -(2**63), 0], 1, 3),
        ("UINT64", [2**64 - 1, 2**63, 0, 2**63 - 1, 0], 2, 4),
        ("INT32", [-(2**31) + 1, -(2**31), 2**31 - 1, -(2**31)], 1, 3),
        ("UINT32", [2**32 - 1, 2**31 + 1, 2**31, 2**32 - 2, 2**31], 2, 4),  # beyond 2**24
    ],
)
def test_argmin_wide_integers_are_exact(ep: str, in_type: str, x: list[int], first: int, last: int) -> None:
    values = np.array(x, dtype=in_type.lower())
    for direction, expected in (("INCREASING", first), ("DECREASING", last)):
        desc = make_desc("ARGMIN", arg_fields(in_type, [len(x)], [0], direction))
        for name, got in run_all(ep, desc, {"InputTensor": values}).items():
            assert got.tolist() == [expected], (name, direction)


def test_argmin_wide_integers_never_go_through_float32() -> None:
    for in_type in ("INT64", "UINT64", "INT32", "UINT32"):
        desc = make_desc("ARGMIN", arg_fields(in_type, [4, 6], [1], "DECREASING"))
        graph = lowering.lower(desc, "t").graph
        casts_to_float = [n for n in graph.node if n.op_type == "Cast" and n.attribute[0].i == 1]
        digits = [n for n in casts_to_float if "digit" in n.input[0] or "high" in n.input[0]]  # 22-bit digits only
        assert casts_to_float and digits == casts_to_float, in_type
        assert "ArgMin" not in {n.op_type for n in graph.node}
    cuda = lowering.lower(make_desc("ARGMIN", arg_fields("INT32", [4, 6], [1], "INCREASING")), "t", target="cuda").graph
    assert [n.op_type for n in cuda.node][:2] == ["Cast", "ArgMin"] and cuda.node[0].attribute[0].i == 11  # DOUBLE
    dml = lowering.lower(make_desc("ARGMIN", arg_fields("INT64", [4, 6], [1], "DECREASING")), "t", target="dml").graph
    (arg,) = [n for n in dml.node if n.op_type == "ArgMin"]
    assert {a.name: a.i for a in arg.attribute}["select_last_index"] == 1


# -- hand-computed softmax values ----------------------------------------------------------

SOFTMAX_123 = [0.09003057, 0.24472847, 0.66524096]
LOG_SOFTMAX_123 = [-2.40760596, -1.40760596, -0.40760596]
SOFTMAX_1234 = [0.0320586, 0.08714432, 0.23688282, 0.64391426]


def hand_cases() -> list[tuple[str, str, dict[str, Any], np.ndarray, list[float]]]:
    one23 = np.array([1, 2, 3], np.float32)
    grid = np.array([[1, 2], [3, 4]], np.float32)
    column = [1 / (1 + math.e**2), math.e**2 / (1 + math.e**2)]
    rows = np.array([[1, 2, 3], [0, 0, 0]], np.float32).reshape(1, 1, 2, 3)
    ties = np.float32([3, 1, 3, 0, 5, 5]).reshape(1, 1, 2, 3)
    s1, s, ls, h = "ACTIVATION_SOFTMAX1", "ACTIVATION_SOFTMAX", "ACTIVATION_LOG_SOFTMAX", "ACTIVATION_HARDMAX"
    return [
        ("softmax1-1d", s1, with_axes("FLOAT32", [3], [0]), one23, SOFTMAX_123),
        ("softmax1-both-axes", s1, with_axes("FLOAT32", [2, 2], [1, 0]), grid, SOFTMAX_1234),
        ("softmax1-columns", s1, with_axes("FLOAT32", [2, 2], [0]), grid, [column[0]] * 2 + [column[1]] * 2),
        ("softmax1-large", s1, with_axes("FLOAT32", [3], [0]), np.float32([1e4, 1e4, -5e4]), [0.5, 0.5, 0]),
        ("softmax1-float16", s1, with_axes("FLOAT16", [3], [0]), one23.astype(np.float16), SOFTMAX_123),
        ("softmax-rows", s, single_axis("FLOAT32", [1, 1, 2, 3]), rows, SOFTMAX_123 + [1 / 3] * 3),
        ("softmax-1d", s, single_axis("FLOAT32", [3]), one23 + 1000, SOFTMAX_123),
        ("log_softmax-rows", ls, single_axis("FLOAT32", [1, 2, 3]), rows[0], LOG_SOFTMAX_123 + [-math.log(3)] * 3),
        ("log_softmax-large", ls, single_axis("FLOAT32", [1, 3]), one23.reshape(1, 3) - 5e4, LOG_SOFTMAX_123),
        ("hardmax-first", h, single_axis("FLOAT32", [1, 1, 2, 3]), ties, [1, 0, 0, 0, 1, 0]),
        ("hardmax-float16", h, single_axis("FLOAT16", [2, 2]), np.float16([[-1, -1], [2, 7]]), [1, 0, 0, 1]),
    ]


HAND = hand_cases()


@EPS
@pytest.mark.parametrize(("op", "fields", "x", "expected"), [h[1:] for h in HAND], ids=[h[0] for h in HAND])
def test_hand_computed_values(ep: str, op: str, fields: dict[str, Any], x: np.ndarray, expected: list[float]) -> None:
    desc = make_desc(op, fields)
    tol = 1e-3 if x.dtype == np.float16 else 1e-6
    np.testing.assert_allclose(reference(desc, {"InputTensor": x}).ravel(), expected, rtol=tol, atol=tol)
    for name, got in run_all(ep, desc, {"InputTensor": x}).items():
        np.testing.assert_allclose(got.ravel().astype(np.float64), expected, rtol=tol, atol=tol, err_msg=name)


# -- properties ----------------------------------------------------------------------------


def float_input(seed: int, shape: tuple[int, ...], dtype: str, mode: str, op: str) -> np.ndarray:
    x = float_data(np.random.default_rng(seed), shape, np.dtype(dtype.lower()), mode)
    if mode == "extreme" and "LOG_SOFTMAX" in op:  # keep the true results representable
        bound = 30000 if dtype == "FLOAT16" else 50000
        x = np.clip(x, -bound, bound).astype(x.dtype)
    return x


def check_softmax_like(ep: str, op: str, desc: OperatorDesc, x: np.ndarray, axes: tuple[int, ...]) -> None:
    want = reference(desc, {"InputTensor": x})
    half = x.dtype == np.float16
    for name, got in run_all(ep, desc, {"InputTensor": x}).items():
        if op.endswith("HARDMAX"):
            np.testing.assert_array_equal(got, want, err_msg=name)
            continue
        assert np.all(np.isfinite(got)), name
        tol = 4e-3 if half else (2e-6 if ep == "cpu" else 5e-5)  # the CUDA EP's kernels: tolerances.py
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=tol, atol=tol, err_msg=name)
        if "LOG" not in op:  # every reduced group sums to 1
            sums = got.astype(np.float64).sum(axis=axes)
            np.testing.assert_allclose(sums, 1, atol=4e-3 if half else 1e-5, err_msg=name)


@EPS
@SETTINGS
@given(shape=shapes(), data=st.data(), dtype=FLOAT_TYPES, mode=DATA_MODES, seed=SEEDS)
def test_softmax1(ep: str, shape: tuple[int, ...], data: st.DataObject, dtype: str, mode: str, seed: int) -> None:
    axes = data.draw(axis_subsets(len(shape)))
    desc = make_desc("ACTIVATION_SOFTMAX1", with_axes(dtype, shape, axes))
    check_softmax_like(ep, "ACTIVATION_SOFTMAX1", desc, float_input(seed, shape, dtype, mode, ""), tuple(axes))


@st.composite
def effective_rank_2_shapes(draw: st.DrawFn) -> tuple[int, ...]:
    """Leading ones, then one or two dimensions of any size: ranks 1-8, effective rank <= 2."""
    tail = (*draw(st.lists(st.integers(1, 40), max_size=1)), draw(st.integers(1, 60)))
    return (1,) * draw(st.integers(0, 8 - len(tail))) + tail


@EPS
@SETTINGS
@given(shape=effective_rank_2_shapes(), op=st.sampled_from(OLD_FORMS), dtype=FLOAT_TYPES, mode=DATA_MODES, seed=SEEDS)
def test_single_axis_forms(ep: str, shape: tuple[int, ...], op: str, dtype: str, mode: str, seed: int) -> None:
    desc = make_desc(op, single_axis(dtype, shape))
    x = float_input(seed, shape, dtype, mode, op)
    check_softmax_like(ep, op, desc, x, (len(shape) - 1,))
    # the same as the *1 form with Axes {DimensionCount - 1}
    newer = make_desc(op + "1", with_axes(dtype, shape, [len(shape) - 1]))
    np.testing.assert_array_equal(reference(desc, {"InputTensor": x}), reference(newer, {"InputTensor": x}))


@EPS
@SETTINGS
@given(
    shape=shapes(),
    data=st.data(),
    in_type=st.sampled_from([t.name for t in argmax.INPUT_TYPES]),
    out_type=st.sampled_from([t.name for t in argmax.OUTPUT_TYPES]),
    mode=st.sampled_from(["ties", "extreme", "random", "bottom"]),
    seed=SEEDS,
    direction=st.sampled_from(["INCREASING", "DECREASING", "DML_AXIS_DIRECTION_DECREASING"]),
)
def test_argmin(
    ep: str, shape: tuple[int, ...], data: st.DataObject, in_type: str, out_type: str, mode: str, seed: int, direction: str
) -> None:
    axes = data.draw(axis_subsets(len(shape)))
    rng = np.random.default_rng(seed)
    t = np.dtype(in_type.lower())
    if mode == "bottom":  # ties at the type's lowest value
        low = -60000 if t == np.float16 else (-3e38 if t.kind == "f" else int(np.iinfo(t).min))
        x = np.where(rng.integers(0, 2, size=shape) == 0, low, 0).astype(t)
    else:
        x = float_data(rng, shape, t, mode) if t.kind == "f" else int_data(rng, shape, t, mode)
    desc = make_desc("ARGMIN", arg_fields(in_type, list(shape), axes, direction, out_type))
    want = reference(desc, {"InputTensor": x})
    for name, got in run_all(ep, desc, {"InputTensor": x}).items():
        np.testing.assert_array_equal(got, want, err_msg=name)
    # the reference against a plain numpy: the chosen index holds the minimum of its group
    flat = np.moveaxis(x, sorted(axes), list(range(-len(axes), 0))).reshape(*want.ravel().shape, -1)
    picked = flat[np.arange(flat.shape[0]), want.ravel().astype(np.int64)]
    np.testing.assert_array_equal(picked, flat.min(axis=1))


# -- invalid descs -------------------------------------------------------------------------


def refusal(op: str, fields: dict[str, Any], level: str | None = None) -> ModelError:
    with pytest.raises(ModelError) as e:
        desc = parse_operator_desc(op, fields, ("desc",), ("type",), **({"level": level} if level else {}))
        lowering.validate(desc)
    return e.value


@pytest.mark.parametrize("op", OLD_FORMS)
@pytest.mark.parametrize(("sizes", "rank"), [([2, 3, 4], 3), ([2, 1, 3], 3), ([1, 2, 3, 4], 3), ([1, 1, 2, 2, 2, 2, 2, 2], 6)])
def test_single_axis_forms_refuse_an_effective_rank_above_2(op: str, sizes: list[int], rank: int) -> None:
    e = refusal(op, single_axis("FLOAT32", sizes))
    assert e.path == ("desc", "InputTensor", "Sizes")
    assert "effective rank no greater than 2" in e.rule and f"not {rank}" in e.rule and f"DML_{op}" in e.rule, e.rule


@pytest.mark.parametrize("op", OLD_FORMS)
def test_single_axis_forms_take_leading_ones(op: str) -> None:
    for sizes in ([7], [3, 5], [1, 1, 3, 5], [1] * 7 + [4], [1, 1, 1, 1]):
        make_desc(op, single_axis("FLOAT16", sizes))


@pytest.mark.parametrize("op", [*OLD_FORMS, "ACTIVATION_SOFTMAX1"])
def test_output_must_match_the_input(op: str) -> None:
    axes = {"AxisCount": 1, "Axes": [1]} if op.endswith("1") else {}
    e = refusal(op, {"InputTensor": tensor("FLOAT32", [2, 3]), "OutputTensor": tensor("FLOAT16", [2, 3]), **axes})
    assert e.path == ("desc", "OutputTensor", "DataType") and "same DataType" in e.rule
    e = refusal(op, {"InputTensor": tensor("FLOAT32", [2, 3]), "OutputTensor": tensor("FLOAT32", [3, 2]), **axes})
    assert e.path == ("desc", "OutputTensor", "Sizes") and "same Sizes" in e.rule
    e = refusal(op, {"InputTensor": tensor("INT32", [2, 3]), "OutputTensor": tensor("INT32", [2, 3]), **axes})
    assert e.path == ("desc", "InputTensor", "DataType") and "FLOAT32, FLOAT16" in e.rule


@pytest.mark.parametrize(
    ("axes", "path", "rule"),
    [([2], ("Axes", 0), "out of range [0, 1]"), ([1, 1], ("Axes", 1), "appears more than once"), ([], ("Axes",), "at least one")],
)
def test_softmax1_axes_rules(axes: list[int], path: tuple[Any, ...], rule: str) -> None:
    e = refusal("ACTIVATION_SOFTMAX1", with_axes("FLOAT32", [2, 3], axes))
    assert e.path == ("desc", *path) and rule in e.rule, e


def test_argmin_relational_rules() -> None:
    fields = arg_fields("FLOAT32", [2, 3], [1], "INCREASING")
    e = refusal("ARGMIN", {**fields, "OutputTensor": tensor("UINT32", [2, 3])})
    assert e.path == ("desc", "OutputTensor", "Sizes", 1) and "must be 1 (a reduced axis)" in e.rule
    e = refusal("ARGMIN", {**fields, "OutputTensor": tensor("UINT32", [2, 1, 1])})
    assert e.path == ("desc", "OutputTensor", "Sizes") and "same DimensionCount" in e.rule
    e = refusal("ARGMIN", {**fields, "AxisCount": 2, "Axes": [1, 1]})
    assert e.path == ("desc", "Axes", 1) and "appears more than once" in e.rule
    e = refusal("ARGMIN", {**fields, "OutputTensor": tensor("INT16", [2, 1])})
    assert e.path == ("desc", "OutputTensor", "DataType") and "INT64, INT32, UINT64, UINT32" in e.rule
    e = refusal("ARGMIN", {**fields, "AxisDirection": "SIDEWAYS"})
    assert e.path == ("desc", "AxisDirection")


# -- feature levels ------------------------------------------------------------------------


def test_softmax1_needs_level_5_1() -> None:
    fields = with_axes("FLOAT32", [2, 3], [1])
    e = refusal("ACTIVATION_SOFTMAX1", fields, level="5_0")
    assert e.path == ("type",) and "5_1" in e.rule, e
    lowering.validate(parse_operator_desc("ACTIVATION_SOFTMAX1", fields, ("desc",), ("type",), level="5_1"))


@pytest.mark.parametrize("op", OLD_FORMS)
def test_single_axis_forms_dimension_counts_by_level(op: str) -> None:
    e = refusal(op, single_axis("FLOAT32", [1, 2, 3]), level="2_0")
    assert e.path == ("desc", "InputTensor", "Sizes") and "4 to 5 dimensions" in e.rule and "3_0" in e.rule, e
    e = refusal(op, single_axis("FLOAT32", [1, 1, 1, 2, 3]), level="1_0")
    assert "must have 4 dimensions" in e.rule and "2_0" in e.rule, e
    for level, sizes in (("1_0", [1, 1, 2, 3]), ("2_0", [1, 1, 1, 2, 3]), ("3_0", [3])):
        lowering.validate(parse_operator_desc(op, single_axis("FLOAT32", sizes), ("desc",), ("type",), level=level))
    e = refusal(op, single_axis("FLOAT32", [1, 2, 2, 3]), level="1_0")  # the table allows 4 dims, the page rank <= 2
    assert "effective rank" in e.rule


def test_argmin_levels() -> None:
    e = refusal("ARGMIN", arg_fields("FLOAT32", [2, 3], [1], "INCREASING"), level="2_1")
    assert e.path == ("type",) and "3_0" in e.rule, e
    e = refusal("ARGMIN", arg_fields("INT64", [2, 3], [1], "INCREASING"), level="4_0")
    assert e.path == ("desc", "InputTensor", "DataType") and "4_1" in e.rule, e
    lowering.validate(
        parse_operator_desc("ARGMIN", arg_fields("INT64", [2, 3], [1], "INCREASING"), ("desc",), ("type",), level="4_1")
    )
