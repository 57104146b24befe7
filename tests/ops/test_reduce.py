"""DML_OPERATOR_REDUCE: the doc page's examples, hand-computed examples for every function
(integer wrap-around included), hypothesis properties per function on the CPU EP and the CUDA EP,
invalid descs and feature-level gating."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dml2onnx import lowering
from dml2onnx.backends import runtime
from dml2onnx.cases.reduce import float_input
from dml2onnx.core import dtypes
from dml2onnx.core.desc import parse_operator_desc
from dml2onnx.core.errors import ModelError
from dml2onnx.core.operator_table import OPERATORS
from dml2onnx.core.schema import ENUMS
from dml2onnx.graph.builder import DEFAULT_OPSET
from dml2onnx.lowering import choices
from dml2onnx.ops import reduce
from strategies import SEEDS, axis_subsets, int_data, shapes
from support import EPS, lowered_and_reference, make_desc, tensor

FUNCTIONS = tuple(ENUMS["DML_REDUCE_FUNCTION"])
SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
DOC_INPUT = np.array([[1, 2, 3], [3, 0, 4], [2, 4, 2]], np.float32)


def fields(function: str, in_type: str, shape: tuple[int, ...], axes: list[int], out_type: str | None = None) -> dict[str, Any]:
    out_shape = [1 if i in axes else s for i, s in enumerate(shape)]
    return {
        "Function": function,
        "InputTensor": tensor(in_type, shape),
        "OutputTensor": tensor(out_type or in_type, out_shape),
        "AxisCount": len(axes),
        "Axes": axes,
    }


def run(function: str, x: np.ndarray, axes: list[int], out_type: str | None = None, ep: str = "cpu") -> np.ndarray:
    in_type = _type_name(x.dtype)
    got, want = lowered_and_reference(ep, "REDUCE", fields(function, in_type, x.shape, axes, out_type), {"InputTensor": x})
    if got.dtype.kind == "f":
        np.testing.assert_allclose(got, want, rtol=1e-6)
    else:
        np.testing.assert_array_equal(got, want)
    return got


def _type_name(dtype: np.dtype) -> str:
    return next(t.name for t in (*dtypes.FLOATS, *dtypes.INTEGERS) if t.numpy == dtype)


# -- examples -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("axes", "expected"),
    [([0], [[6, 6, 9]]), ([1], [[6], [7], [8]]), ([0, 1], [[21]])],
    ids=["columns", "rows", "all"],
)
def test_doc_examples_sum(axes: list[int], expected: list[list[float]]) -> None:
    got = run("DML_REDUCE_FUNCTION_SUM", DOC_INPUT, axes)
    np.testing.assert_array_equal(got, np.array(expected, np.float32))


@pytest.mark.parametrize(
    ("function", "axes", "expected"),
    [
        ("AVERAGE", [1], [[2], [7 / 3], [8 / 3]]),
        ("L1", [0, 1], [[21]]),
        ("L2", [1], [[math.sqrt(14)], [5], [math.sqrt(24)]]),
        ("LOG_SUM", [0, 1], [[math.log(21)]]),
        (
            "LOG_SUM_EXP",
            [0],
            [
                [
                    math.log(math.e + math.e**3 + math.e**2),
                    math.log(math.e**2 + 1 + math.e**4),
                    4 + math.log(1 + math.e**-1 + math.e**-2),
                ]
            ],
        ),
        ("MAX", [0, 1], [[4]]),
        ("MIN", [1], [[1], [0], [2]]),
        ("MULTIPLY", [1], [[6], [0], [16]]),
        ("SUM_SQUARE", [0], [[14, 20, 29]]),
    ],
)
def test_examples_float(function: str, axes: list[int], expected: list[list[float]]) -> None:
    got = run(function, DOC_INPUT, axes)
    np.testing.assert_allclose(got, np.array(expected, np.float32), rtol=1e-6)


def test_l1_of_negative_values_and_average_of_float16() -> None:
    x = np.array([[-1.5, 2, -3], [0, -4, 1]], np.float32)
    np.testing.assert_array_equal(run("L1", x, [1]), [[6.5], [5]])
    np.testing.assert_array_equal(run("AVERAGE", x.astype(np.float16), [0]), np.array([[-0.75, -1, -1]], np.float16))


@pytest.mark.parametrize(
    ("function", "x", "axes", "expected"),
    [
        ("ARGMAX", [[1, 2, 3], [3, 0, 4], [2, 5, 2]], [0, 1], [[7]]),  # the ARGMAX page's example 3
        ("ARGMAX", [[1, 2, 3], [3, 0, 4], [2, 5, 2]], [0], [[1, 2, 1]]),
        ("ARGMAX", [[3, 2, 1, 2, 3]], [1], [[0]]),  # first maximum on ties
        ("ARGMIN", [[1, 2, 3], [3, 0, 4], [2, 4, 2]], [1], [[0], [1], [0]]),  # first minimum on ties
        ("ARGMIN", [[1, 2, 3], [3, 0, 4], [2, 4, 2]], [1, 0], [[4]]),
    ],
)
def test_examples_arg(function: str, x: list[list[int]], axes: list[int], expected: list[list[int]]) -> None:
    for out_type in ("UINT32", "INT64"):
        got = run(function, np.array(x, np.float32), axes, out_type)
        assert got.tolist() == expected


@pytest.mark.parametrize(
    ("function", "x", "expected"),
    [
        ("SUM", np.array([2**31 - 1, 1], np.int32), [-(2**31)]),  # wraps
        ("SUM", np.array([2**32 - 1, 2], np.uint32), [1]),
        ("SUM", np.array([2**63 - 1, 2**63 - 1, 3], np.int64), [1]),
        ("SUM", np.array([2**64 - 1, 2**63, 2**63, 5], np.uint64), [4]),
        ("MULTIPLY", np.array([2**16, 2**16, 7], np.uint32), [0]),
        ("MULTIPLY", np.array([-(2**31), -1], np.int32), [-(2**31)]),
        ("MULTIPLY", np.array([3, -5, 7], np.int64), [-105]),
        ("SUM_SQUARE", np.array([2**32, 3], np.int64), [9]),
        ("SUM_SQUARE", np.array([-3, 4], np.int32), [25]),
        ("L1", np.array([-(2**31), 5], np.int32), [-(2**31) + 5]),  # |INT_MIN| wraps to INT_MIN
        ("L1", np.array([-3, 4, -5], np.int64), [12]),
        ("L1", np.array([2**32 - 1, 1], np.uint32), [0]),  # unsigned L1 = SUM
        ("MAX", np.array([2**31, 2**32 - 1, 2**31 + 5, -1], np.int64), [2**32 - 1]),  # CPU ReduceMax gets these wrong
        ("MIN", np.array([2**32 - 1, 2**31, 2**31 + 5], np.int64), [2**31]),
        ("MIN", np.array([2**64 - 1, 2**63, 2**53 + 1, 2**53 + 2], np.uint64), [2**53 + 1]),
        ("MAX", np.array([-(2**31), 2**31 - 1, 2**31 - 2], np.int32), [2**31 - 1]),
        ("MIN", np.array([2**24 + 1, 2**24, 2**24 + 3], np.uint32), [2**24]),  # beyond FLOAT32
        ("MAX", np.array([-128, 127, 126], np.int8), [127]),
        ("MIN", np.array([65535, 0, 1], np.uint16), [0]),
        ("ARGMIN", np.array([2**62 + 3, 2**62 + 1, 2**62 + 1], np.int64), [1]),
        ("ARGMIN", np.array([2**64 - 1, 2**63, 2**63], np.uint64), [1]),
        ("ARGMIN", np.array([5, -(2**31), -(2**31)], np.int32), [1]),
        ("ARGMIN", np.array([-3, -128, 127, -128], np.int8), [1]),
        ("ARGMAX", np.array([2**24, 2**24 + 1, 2**24 + 1], np.uint32), [1]),
    ],
)
def test_examples_integer(function: str, x: np.ndarray, expected: list[int]) -> None:
    out = "UINT32" if function in reduce.ARG_FUNCTIONS else None
    assert run(function, x, [0], out).tolist() == expected


# -- properties ---------------------------------------------------------------------------------

_WELL_CONDITIONED = ("L1", "L2", "SUM_SQUARE", "MULTIPLY", "LOG_SUM")


def assert_float_close(got: np.ndarray, want: np.ndarray, x: np.ndarray, axes: list[int], function: str) -> None:
    """Within float32 rounding relative to the sum of magnitudes (cancellation) plus, for FLOAT16,
    the result's own rounding. Infinities and NaN must match exactly."""
    g, w = got.astype(np.float64), want.astype(np.float64)
    special = ~np.isfinite(g) | ~np.isfinite(w)
    np.testing.assert_array_equal(g[special], w[special])
    a = np.abs(x.astype(np.float64))
    n = math.prod(x.shape[i] for i in axes)
    with np.errstate(all="ignore"):
        if function in ("SUM", "AVERAGE"):
            scale = a.sum(axis=tuple(axes), keepdims=True) / (n if function == "AVERAGE" else 1)
        elif function == "LOG_SUM_EXP":
            scale = a.max(axis=tuple(axes), keepdims=True) + math.log(n)
        else:
            scale = np.abs(w)
    rtol = max(1e-5, 1.2e-7 * n) if function in _WELL_CONDITIONED else 1e-5
    out_rtol = 2e-3 if got.dtype == np.float16 else 0.0
    with np.errstate(all="ignore"):
        bound = rtol * scale + out_rtol * np.abs(w) + 1e-30
        err = np.abs(g - w)
    assert np.all(err[~special] <= bound[~special]), f"max err {err[~special].max()}\ngot  {g.ravel()[:8]}\nwant {w.ravel()[:8]}"


@EPS
@pytest.mark.parametrize("function", FUNCTIONS)
@SETTINGS
@given(shape=shapes(), data=st.data(), mode=st.sampled_from(["ties", "extreme", "random"]), seed=SEEDS)
def test_reduce_property(ep: str, function: str, shape: tuple[int, ...], data: st.DataObject, mode: str, seed: int) -> None:
    schema = OPERATORS["REDUCE"]
    in_type = data.draw(st.sampled_from(schema.types("InputTensor", function)))
    out_type = data.draw(st.sampled_from(schema.types("OutputTensor", function))) if function in reduce.ARG_FUNCTIONS else in_type
    axes = data.draw(axis_subsets(len(shape)))
    rng = np.random.default_rng(seed)
    t = in_type.numpy
    x = float_input(rng, shape, t, mode, function) if t.kind == "f" else int_data(rng, shape, t, mode)
    got, want = lowered_and_reference(
        ep, "REDUCE", fields(function, in_type.name, shape, axes, out_type.name), {"InputTensor": x}
    )
    if got.dtype.kind != "f" or function in ("MAX", "MIN"):
        np.testing.assert_array_equal(got, want)
    else:
        assert_float_close(got, want, x, axes, function)


def test_reference_integer_sum_wraps_like_numpy_modular_sum() -> None:
    x = np.random.default_rng(0).integers(-(2**63), 2**63 - 1, size=(5, 7), dtype=np.int64, endpoint=True)
    desc = make_desc("REDUCE", fields("SUM", "INT64", x.shape, [1]))
    want = reduce.reference(desc, {"InputTensor": x})
    np.testing.assert_array_equal(want, x.sum(axis=1, keepdims=True, dtype=np.int64))


def test_log_sum_of_negative_sum_is_nan() -> None:
    got = run("LOG_SUM", np.array([[-1, -2, 0.5]], np.float32), [1])
    assert np.isnan(got).all()


# -- variants -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("function", "axes", "expected"),
    [
        ("ARGMAX", [0], ("in_place", "last_axis")),
        ("ARGMIN", [1, 0], ("in_place", "last_axis")),
        ("ARGMIN", [2, 0], ("in_place",)),  # not contiguous: moved last either way
        ("ARGMAX", [2], ("in_place",)),
        ("ARGMIN", [1, 2], ("in_place",)),
        ("SUM", [0], ("in_place",)),
        ("MAX", [1], ("in_place",)),
    ],
)
def test_variants(function: str, axes: list[int], expected: tuple[str, ...]) -> None:
    in_type, out_type = "FLOAT32", ("INT32" if function in reduce.ARG_FUNCTIONS else "FLOAT32")
    desc = make_desc("REDUCE", fields(function, in_type, (2, 3, 4), axes, out_type))
    assert choices.available(desc, DEFAULT_OPSET) == expected


@pytest.mark.parametrize("function", ["ARGMAX", "ARGMIN"])
@pytest.mark.parametrize("in_type", ["FLOAT16", "INT64", "UINT32", "INT8"])
def test_arg_variants_agree(function: str, in_type: str) -> None:
    t = dtypes.BY_NAME[in_type].numpy
    x = int_data(np.random.default_rng(5), (3, 4, 2, 5), np.dtype(np.int8), "ties").astype(t)
    desc = make_desc("REDUCE", fields(function, in_type, x.shape, [2, 0], "UINT64"))
    want = reduce.reference(desc, {"InputTensor": x})
    for variant in ("in_place", "last_axis"):
        for target in ("portable", "cpu", "cuda", "dml"):
            model = lowering.lower(desc, "r", target=target, variant=variant)
            if target in ("portable", "cpu"):
                np.testing.assert_array_equal(runtime.create(model, "r", "cpu").run({"InputTensor": x}), want)


# -- invalid descs and feature levels -----------------------------------------------------------


def refusal(f: dict[str, Any], level: str | None = None) -> ModelError:
    with pytest.raises(ModelError) as e:
        desc = parse_operator_desc("REDUCE", f, ("desc",), ("type",), **({"level": level} if level else {}))
        lowering.validate(desc)
    return e.value


@pytest.mark.parametrize(
    ("change", "path", "rule"),
    [
        (
            lambda f: f["OutputTensor"].update(Sizes=[3, 3]),
            ("desc", "OutputTensor", "Sizes", 0),
            "must be 1 (a reduced axis), not 3",
        ),
        (
            lambda f: f["OutputTensor"].update(Sizes=[1, 2]),
            ("desc", "OutputTensor", "Sizes", 1),
            "must be 3 (InputTensor.Sizes[1])",
        ),
        (lambda f: f["OutputTensor"].update(Sizes=[1, 3, 1]), ("desc", "OutputTensor", "Sizes"), "same DimensionCount"),
        (lambda f: f["OutputTensor"].update(DataType="FLOAT16"), ("desc", "OutputTensor", "DataType"), "same DataType"),
        (lambda f: f.update(Axes=[0, 0], AxisCount=2), ("desc", "Axes", 1), "appears more than once"),
        (lambda f: f.update(Axes=[2], AxisCount=1), ("desc", "Axes", 0), "out of range [0, 1]"),
        (lambda f: f.update(Function="MEDIAN"), ("desc", "Function"), "MEDIAN"),
        (lambda f: f.update(Function="DML_REDUCE_FUNCTION_SUMM"), ("desc", "Function"), "SUMM"),
    ],
)
def test_invalid(change: Any, path: tuple[Any, ...], rule: str) -> None:
    f = fields("SUM", "FLOAT32", (3, 3), [0])
    change(f)
    e = refusal(f)
    assert e.path == path and rule in e.rule, (e.path, e.rule)


def test_output_type_of_non_arg_function_must_match_even_if_table_allows_it() -> None:
    e = refusal(fields("MAX", "INT32", (3, 3), [0], "UINT32"))
    assert e.path == ("desc", "OutputTensor", "DataType") and "same DataType" in e.rule


@pytest.mark.parametrize("function", ["AVERAGE", "L2", "LOG_SUM", "LOG_SUM_EXP"])
def test_integer_input_refused_for_float_only_functions(function: str) -> None:
    e = refusal(fields(function, "INT32", (3, 3), [0]))
    assert e.path == ("desc", "InputTensor", "DataType") and "FLOAT32" in e.rule and "not INT32" in e.rule
    assert "allows it" not in e.rule  # no level ever allows it


def test_arg_output_must_be_integral() -> None:
    e = refusal(fields("ARGMAX", "FLOAT32", (3, 3), [0], "FLOAT32"))
    assert e.path == ("desc", "OutputTensor", "DataType")


@pytest.mark.parametrize(
    ("f", "level", "path", "allowed_from"),
    [
        (fields("SUM", "INT64", (3, 3), [0]), "4_1", ("desc", "InputTensor", "DataType"), "5_0"),
        (fields("SUM_SQUARE", "INT32", (3, 3), [0]), "4_1", ("desc", "InputTensor", "DataType"), "5_0"),
        (fields("MIN", "UINT64", (3, 3), [0]), "3_0", ("desc", "InputTensor", "DataType"), "5_0"),
        (fields("ARGMIN", "INT64", (3, 3), [0], "UINT32"), "4_0", ("desc", "InputTensor", "DataType"), "4_1"),
        (fields("ARGMAX", "FLOAT32", (2,) * 8, [7], "UINT32"), "2_1", ("desc", "InputTensor", "Sizes"), "3_0"),
        (fields("SUM", "INT32", (2, 2, 2, 2), [0], "INT32"), "2_0", ("desc", "InputTensor", "DataType"), "2_1"),
        (fields("ARGMAX", "FLOAT32", (2, 2, 2, 2), [0], "INT64"), "2_1", ("desc", "OutputTensor", "DataType"), "3_0"),
        (fields("AVERAGE", "FLOAT32", (2, 3), [0]), "2_1", ("desc", "InputTensor", "Sizes"), "3_0"),
    ],
)
def test_feature_level_gating(f: dict[str, Any], level: str, path: tuple[Any, ...], allowed_from: str) -> None:
    e = refusal(f, level)
    assert e.path == path and f"feature level {allowed_from} allows it" in e.rule, e.rule
    parse = parse_operator_desc("REDUCE", f, ("desc",), ("type",), level=allowed_from)
    lowering.validate(parse)  # accepted from that level on


def test_every_function_has_a_module_entry() -> None:
    assert set(FUNCTIONS) == {*reduce.ARG_FUNCTIONS, *reduce._FLOAT_OPS}
