"""DML_OPERATOR_CUMULATIVE_SUMMATION and CUMULATIVE_PRODUCT: the product page's examples (both
directions, inclusive and exclusive, both axes), sums by hand, what DirectML computes where the
pages are silent (integers wrap, 64-bit beyond 2**53; FLOAT16 accumulated in FLOAT32), the dml
target's CumSum, refusals, and properties against the numpy reference."""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper

from dml2onnx import lowering
from dml2onnx.backends import dmlapi, runtime
from dml2onnx.cases.cumulative import _data
from dml2onnx.core import dtypes
from dml2onnx.core.errors import format_path
from dml2onnx.graph import dml_ep
from dml2onnx.graph.builder import DEFAULT_OPSET
from dml2onnx.graph.targets import DML_NODE_DOC
from dml2onnx.lowering import choices, tolerances
from dml2onnx.ops import cumulative, registry
from strategies import SEEDS, shapes
from support import EPS, assert_matches_reference, every_output, make_desc, mismatches, refusal, run_cli, tensor

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
FLAG = {"CUMULATIVE_SUMMATION": "HasExclusiveSum", "CUMULATIVE_PRODUCT": "HasExclusiveProduct"}
TYPES = ["FLOAT32", "FLOAT16", "INT64", "INT32", "UINT64", "UINT32"]


def fields(
    op: str, dtype: str, shape: tuple[int, ...], axis: int, direction: str = "INCREASING", excl: bool = False
) -> dict[str, Any]:
    t = tensor(dtype, shape)
    return {"InputTensor": t, "OutputTensor": dict(t), "Axis": axis, "AxisDirection": direction, FLAG[op]: excl}


def run(
    op: str, dtype: str, x: Any, axis: int = 0, direction: str = "INCREASING", excl: bool = False, target: str = "portable"
) -> np.ndarray:
    x = np.asarray(x, np.dtype(dtype.lower()))
    desc = make_desc(op, fields(op, dtype, x.shape, axis, direction, excl))

    return runtime.create(lowering.lower(desc, "t", target=target), "t", "cpu").run({"InputTensor": x})


PAGE_INPUT = np.array([[2, 1, 3, 5], [3, 8, 7, 3], [9, 6, 2, 4]], np.float32).reshape(1, 1, 3, 4)
# (Axis, AxisDirection, HasExclusiveProduct, the output): the page's four examples and their transposes
PAGE = [
    (3, "INCREASING", False, [[2, 2, 6, 30], [3, 24, 168, 504], [9, 54, 108, 432]]),
    (3, "INCREASING", True, [[1, 2, 2, 6], [1, 3, 24, 168], [1, 9, 54, 108]]),
    (3, "DECREASING", False, [[30, 15, 15, 5], [504, 168, 21, 3], [432, 48, 8, 4]]),
    (3, "DECREASING", True, [[15, 15, 5, 1], [168, 21, 3, 1], [48, 8, 4, 1]]),
    (2, "INCREASING", False, [[2, 1, 3, 5], [6, 8, 21, 15], [54, 48, 42, 60]]),
    (2, "DECREASING", True, [[27, 48, 14, 12], [9, 6, 2, 4], [1, 1, 1, 1]]),
]


@pytest.mark.parametrize(("axis", "direction", "excl", "want"), PAGE)
def test_product_page_examples(axis: int, direction: str, excl: bool, want: list[list[int]]) -> None:
    got = run("CUMULATIVE_PRODUCT", "FLOAT32", PAGE_INPUT, axis, direction, excl)
    np.testing.assert_array_equal(got.reshape(3, 4), np.array(want, np.float32))


def test_sums_by_hand() -> None:
    op = "CUMULATIVE_SUMMATION"
    np.testing.assert_array_equal(run(op, "INT32", [1, 2, 3, 4, 5]), [1, 3, 6, 10, 15])
    np.testing.assert_array_equal(run(op, "INT32", [1, 2, 3, 4, 5], excl=True), [0, 1, 3, 6, 10])
    np.testing.assert_array_equal(run(op, "INT32", [1, 2, 3, 4, 5], direction="DECREASING"), [15, 14, 12, 9, 5])
    np.testing.assert_array_equal(run(op, "INT32", [1, 2, 3, 4, 5], direction="DECREASING", excl=True), [14, 12, 9, 5, 0])
    np.testing.assert_array_equal(run(op, "FLOAT32", [[1, 2], [3, 4]], axis=1), [[1, 3], [3, 7]])
    np.testing.assert_array_equal(run(op, "UINT32", [7]), [7])
    np.testing.assert_array_equal(run(op, "UINT32", [7], excl=True), [0])


# (operator, type, input, direction, exclusive, DirectML's output): its API under Wine
SETTLED = [
    ("CUMULATIVE_SUMMATION", "INT32", [2**31 - 1, 1, 1, 2**31 - 1], "INCREASING", False, [2**31 - 1, -(2**31), -(2**31) + 1, 0]),
    ("CUMULATIVE_SUMMATION", "UINT32", [2**32 - 1, 1, 1, 2**32 - 1], "INCREASING", False, [2**32 - 1, 0, 1, 0]),
    (
        "CUMULATIVE_SUMMATION",
        "INT64",
        [-(2**63), -1, 3, -5, 7],
        "INCREASING",
        True,
        [0, -(2**63), 2**63 - 1, -(2**63) + 2, 2**63 - 3],
    ),
    (
        "CUMULATIVE_SUMMATION",
        "UINT64",
        [2**53 + 1, 2**53 + 3, 5, 2**62 + 1],
        "DECREASING",
        True,
        [2**62 + 2**53 + 9, 2**62 + 6, 2**62 + 1, 0],
    ),
    ("CUMULATIVE_PRODUCT", "INT32", [2**31 - 1, 3, 7, 11], "INCREASING", False, [2147483647, 2147483645, 2147483627, 2147483417]),
    ("CUMULATIVE_PRODUCT", "UINT32", [65536, 65536, 3], "INCREASING", False, [65536, 0, 0]),
    ("CUMULATIVE_PRODUCT", "INT32", [-(2**31), -1, 3, -5, 7], "DECREASING", False, [-(2**31), 105, -105, -35, 7]),
    (
        "CUMULATIVE_PRODUCT",
        "INT64",
        [2**33 + 1, 2**30 + 3, 5, -7],
        "INCREASING",
        False,
        [8589934593, -9223372010011230205, -9223371902637047793, 9223371097330679703],
    ),
    (
        "CUMULATIVE_PRODUCT",
        "UINT64",
        [2**64 - 1, 3, 2**20, 2**31 + 5],
        "INCREASING",
        False,
        [18446744073709551615, 18446744073709551613, 18446744073706405888, 18439988674252767232],
    ),
    # FLOAT32 in order; IEEE specials (inf * 0 is NaN)
    ("CUMULATIVE_PRODUCT", "FLOAT32", [0, np.inf, 2, -0.0, 3], "INCREASING", True, [1, 0, np.nan, np.nan, np.nan]),
    (
        "CUMULATIVE_SUMMATION",
        "FLOAT32",
        [np.nan, 1, np.inf, -np.inf, 2],
        "DECREASING",
        False,
        [np.nan, np.nan, np.nan, -np.inf, 2],
    ),
]


@pytest.mark.parametrize(("op", "dtype", "x", "direction", "excl", "want"), SETTLED)
def test_what_directml_computes(op: str, dtype: str, x: list[Any], direction: str, excl: bool, want: list[Any]) -> None:
    np.testing.assert_array_equal(run(op, dtype, x, 0, direction, excl), np.array(want, np.dtype(dtype.lower())))


_why = dmlapi.missing()
live = pytest.mark.skipif(_why is not None, reason=f"DirectML's API under Wine is not set up ({_why})")


def _directml(op: str, dtype: str, x: Any, direction: str = "INCREASING", excl: bool = False) -> np.ndarray:
    x = np.asarray(x, np.dtype(dtype.lower()))
    return dmlapi.execute(make_desc(op, fields(op, dtype, x.shape, 0, direction, excl)), {"InputTensor": x}).output


@live
def test_directml_computes_so() -> None:
    for op, dtype, x, direction, excl, want in SETTLED:
        got = _directml(op, dtype, x, direction, excl)
        np.testing.assert_array_equal(got, np.array(want, np.dtype(dtype.lower())), err_msg=f"{op} {dtype} {x}")


@live
def test_directml_accumulates_in_order() -> None:
    """FLOAT32: 2**24 + 0.1 + 0.1 + ... stays 2**24 (one element after the other; a tree would
    reach 2**24 + 2); FLOAT16 in FLOAT32, converted by truncation under lavapipe (2048 + 3 is
    2050), a sum past 65504 inf in its output only. The graphs are within tolerances.cumulative."""
    x = np.full(64, 0.1, np.float32)
    x[0] = 2**24
    assert np.all(_directml("CUMULATIVE_SUMMATION", "FLOAT32", x) == 2**24)
    h = np.ones(8, np.float16)
    h[0] = 2048
    np.testing.assert_array_equal(
        _directml("CUMULATIVE_SUMMATION", "FLOAT16", h), [2048, 2048, 2050, 2050, 2052, 2052, 2054, 2054]
    )
    got = _directml("CUMULATIVE_SUMMATION", "FLOAT16", [60000, 10000, -20000, 1])
    np.testing.assert_array_equal(got, np.array([6e4, np.inf, 5e4, 5e4], np.float16))


def test_dml_target_cumsum() -> None:
    """On the dml target CUMULATIVE_SUMMATION is ONNX CumSum (exclusive, reverse), every type of
    the page; CUMULATIVE_PRODUCT keeps its scan (ONNX has no CumProd before opset 26)."""
    for dtype in TYPES:
        desc = make_desc("CUMULATIVE_SUMMATION", fields("CUMULATIVE_SUMMATION", dtype, (2, 5), 1, "DECREASING", True))
        model = lowering.lower(desc, "t", target="dml")
        (node,) = [n for n in model.graph.node if n.op_type == "CumSum"]
        assert node.doc_string == DML_NODE_DOC
        assert {a.name: a.i for a in node.attribute} == {"exclusive": 1, "reverse": 1}
        assert dml_ep.check(model) == []
        for op in cumulative.ROWS:
            portable = lowering.lower(make_desc(op, fields(op, dtype, (2, 5), 1)), "t")
            assert dml_ep.check(portable) == []
            assert {n.op_type for n in portable.graph.node} <= {"Slice", "Concat", "ConstantOfShape", "Add", "Mul", "Cast"}


def test_scan_steps() -> None:
    """ceil(log2 n) Add steps along an axis of n elements."""
    for n, steps in ((1, 0), (2, 1), (5, 3), (64, 6)):
        model = lowering.lower(make_desc("CUMULATIVE_SUMMATION", fields("CUMULATIVE_SUMMATION", "INT32", (n,), 0)), "t")
        assert sum(node.op_type == "Add" for node in model.graph.node) == steps


REFUSALS = [
    ({"Axis": 2}, "desc.Axis", "must be less than InputTensor's DimensionCount (2)"),
    ({"OutputTensor": tensor("INT32", (2, 3))}, "desc.OutputTensor.DataType", "same DataType"),
    ({"OutputTensor": tensor("FLOAT32", (3, 2))}, "desc.OutputTensor.Sizes", "same Sizes"),
]


@pytest.mark.parametrize("op", list(FLAG))
@pytest.mark.parametrize(("change", "path", "message"), REFUSALS)
def test_refusals(op: str, change: dict[str, Any], path: str, message: str) -> None:
    """Each is refused by DirectML too (E_INVALIDARG, measured)."""

    e = refusal(op, fields(op, "FLOAT32", (2, 3), 1) | change)
    assert format_path(e.path) == path and message in e.rule, (e.path, e.rule)


def test_older_levels() -> None:
    e = refusal("CUMULATIVE_SUMMATION", fields("CUMULATIVE_SUMMATION", "INT64", (2, 3), 1), level="4_1")
    assert e.path == ("desc", "InputTensor", "DataType")
    e = refusal("CUMULATIVE_PRODUCT", fields("CUMULATIVE_PRODUCT", "FLOAT32", (2, 3), 1), level="3_1")
    assert e.path == ("desc", "InputTensor", "Sizes")


@EPS
@SETTINGS
@given(
    op=st.sampled_from(list(FLAG)),
    shape=shapes(),
    axis_pick=st.integers(0, 7),
    direction=st.sampled_from(["INCREASING", "DECREASING"]),
    excl=st.booleans(),
    dtype=st.sampled_from(TYPES),
    seed=SEEDS,
)
def test_matches_reference(
    ep: str, op: str, shape: tuple[int, ...], axis_pick: int, direction: str, excl: bool, dtype: str, seed: int
) -> None:
    """Integers over their whole range; floats as the tolerances' bounds ask (dml2onnx/cases/cumulative.py)."""

    rng = np.random.default_rng(seed)
    axis = axis_pick % len(shape)
    assert shape[axis] <= tolerances.CUMULATIVE_LENGTH
    x = _data(rng, op, dtypes.BY_NAME[dtype], shape)
    assert_matches_reference(ep, op, fields(op, dtype, shape, axis, direction, excl), {"InputTensor": x})


# DxDispatch's own example (microsoft/DirectML DxDispatch/models/dml_cumulative_product.json), its
# text as it is there ("$schema" included): dml2onnx runs it unchanged and prints what DxDispatch prints.
DXDISPATCH_MODEL = """{
    "$schema": "./_schema.json",
    "resources": {
        "A": { "initialValuesDataType": "FLOAT32", "initialValues": [2,4,8,3] },
        "Out": { "initialValuesDataType": "FLOAT32", "initialValues": { "valueCount": 4, "value": 0 } }
    },
    "dispatchables": {
        "cumulative_product": {
            "type": "DML_OPERATOR_CUMULATIVE_PRODUCT",
            "desc": {
                "InputTensor": { "DataType": "FLOAT32", "Sizes": [1,1,1,4] },
                "OutputTensor": { "DataType": "FLOAT32", "Sizes": [1,1,1,4] },
                "Axis": 3,
                "AxisDirection": "DML_AXIS_DIRECTION_INCREASING",
                "HasExclusiveProduct": false
            }
        }
    },
    "commands": [
        { "type": "dispatch", "dispatchable": "cumulative_product", "bindings": { "InputTensor": "A", "OutputTensor": "Out" } },
        { "type": "print", "resource": "Out" }
    ]
}"""


@pytest.mark.parametrize("engine", ["cpu", pytest.param("directml", marks=live)])
def test_dxdispatch_cumulative_product_example(tmp_path: Any, engine: str) -> None:

    path = tmp_path / "dml_cumulative_product.json"
    path.write_text(DXDISPATCH_MODEL)
    status, out, err = run_cli("run", str(path), "--ep", engine)
    assert status == 0, err
    assert out.endswith("Resource 'Out': 2, 8, 64, 192\n"), out


@EPS
@SETTINGS
@given(
    shape=shapes(max_rank=4),
    axis_pick=st.integers(0, 3),
    direction=st.sampled_from(["INCREASING", "DECREASING"]),
    excl=st.booleans(),
    dtype=st.sampled_from(["FLOAT32", "FLOAT16", "INT32", "INT64"]),
    seed=SEEDS,
)
def test_every_candidate(
    ep: str, shape: tuple[int, ...], axis_pick: int, direction: str, excl: bool, dtype: str, seed: int
) -> None:
    """The "scan", "cumsum" (ONNX CumSum, in CumSum's types) and "blocked" (floats, the cuda
    target's graph) candidates of CUMULATIVE_SUMMATION alike."""

    op = "CUMULATIVE_SUMMATION"
    axis = axis_pick % len(shape)
    x = _data(np.random.default_rng(seed), op, dtypes.BY_NAME[dtype], shape)
    desc = make_desc(op, fields(op, dtype, shape, axis, direction, excl))
    want = ("scan",) + (("cumsum",) if dtype != "FLOAT16" else ()) + (("blocked",) if dtype.startswith("FLOAT") else ())
    assert choices.available(desc, DEFAULT_OPSET) == want
    for variant in want:
        model = lowering.lower(desc, "t", target=choices.target_of(op, variant), variant=variant)
        got = every_output(runtime.create(model, "t", ep), desc, {"InputTensor": x})
        assert not (bad := mismatches(desc, got, registry.reference_outputs(desc, {"InputTensor": x}), ep)), (variant, bad)


# -- the "blocked" candidate (cuda target) --------------------------------------------------


def _blocked(shape: tuple[int, ...], axis: int, direction: str = "INCREASING", excl: bool = False, dtype: str = "FLOAT32") -> Any:
    desc = make_desc("CUMULATIVE_SUMMATION", fields("CUMULATIVE_SUMMATION", dtype, shape, axis, direction, excl))
    return desc, lowering.lower(desc, "t", target="cuda", variant="blocked")


def _branch(model: onnx.ModelProto, which: str) -> onnx.ModelProto:
    """The model with its If replaced by one branch's nodes (then_branch or else_branch): that
    branch run whatever the condition, to test each alone."""
    forced = onnx.ModelProto()
    forced.CopyFrom(model)
    graph = forced.graph
    (i, node), *_ = [(i, n) for i, n in enumerate(graph.node) if n.op_type == "If"]
    body = next(a.g for a in node.attribute if a.name == which)
    renamed = {body.output[0].name: node.output[0]}
    nodes = []
    for n in body.node:
        n.output[:] = [renamed.get(o, o) for o in n.output]
        nodes.append(n)
    del graph.node[i]
    for n in reversed(nodes):
        graph.node.insert(i, n)
    graph.initializer.extend(body.initializer)
    return forced


def _with_condition(model: onnx.ModelProto) -> tuple[onnx.ModelProto, str]:
    """The model with the If's condition as a second output (and that output's name)."""
    out = onnx.ModelProto()
    out.CopyFrom(model)
    cond = next(n for n in out.graph.node if n.op_type == "If").input[0]
    out.graph.output.append(helper.make_tensor_value_info(cond, TensorProto.BOOL, []))
    return out, cond


def _condition(model: onnx.ModelProto, x: np.ndarray) -> bool:
    probe, cond = _with_condition(model)
    return bool(runtime.ort().InferenceSession(probe.SerializeToString()).run([cond], {"InputTensor": x})[0])


# (shape, axis): the last axis in blocks (several, padded, one short block), another axis (slabs)
BLOCKED_SHAPES = [((3, 64), 1), ((2, 100), 1), ((4, 9), 1), ((70, 3), 0), ((2, 37, 3), 1), ((2, 3, 33, 1), 2)]


@pytest.mark.parametrize(("shape", "axis"), BLOCKED_SHAPES)
@pytest.mark.parametrize("direction", ["INCREASING", "DECREASING"])
@pytest.mark.parametrize("excl", [False, True])
def test_blocked_branch_alone(shape: tuple[int, ...], axis: int, direction: str, excl: bool) -> None:
    """The MatMul blocks by themselves (the If's then branch forced) against the reference, and
    the guard taking them on such data: integers, so that every order sums exactly."""
    desc, model = _blocked(shape, axis, direction, excl)
    x = np.random.default_rng(7).integers(-50, 50, shape).astype(np.float32)
    want = registry.family("CUMULATIVE_SUMMATION").reference(desc, {"InputTensor": x})
    got = runtime.create(_branch(model, "then_branch"), "t", "cpu").run({"InputTensor": x})
    np.testing.assert_array_equal(got, want)
    assert _condition(model, x)
    np.testing.assert_array_equal(runtime.create(model, "t", "cpu").run({"InputTensor": x}), want)


# data the guard refuses: NaN, an infinity, a sum of |x| past FLT_MAX (finite elements), FLOAT16 inf
REFUSED = [
    ("FLOAT32", [1, 2, np.nan, 4, 5, 6]),
    ("FLOAT32", [1, 2, 3, np.inf, 5, 6]),
    ("FLOAT32", [3e38, -3e38, 1, 2, 3e38, -3e38]),
    ("FLOAT16", [1, -np.inf, 3, 4, 5, 6]),
]


@pytest.mark.parametrize(("dtype", "row"), REFUSED)
@pytest.mark.parametrize("direction", ["INCREASING", "DECREASING"])
def test_blocked_guard_takes_the_scan(dtype: str, row: list[float], direction: str) -> None:
    """Where a row holds NaN, an infinity or a sum of |x| past the bound, the If takes the scan:
    the outputs are the scan's, bit for bit, and the finite ones DirectML leaves finite stay so,
    where the MatMul blocks alone (inf * 0 is NaN) make them NaN."""
    x = np.array([np.arange(1, 7), row], np.dtype(dtype.lower()))
    desc, model = _blocked(x.shape, 1, direction, dtype=dtype)
    assert not _condition(model, x)
    got = runtime.create(model, "t", "cpu").run({"InputTensor": x})
    scanned = lowering.lower(desc, "t", target="cuda", variant="scan")
    np.testing.assert_array_equal(got, runtime.create(scanned, "t", "cpu").run({"InputTensor": x}))
    if np.isinf(x).any():  # the blocks alone: NaN where DirectML's sums are finite
        alone = runtime.create(_branch(model, "then_branch"), "t", "cpu").run({"InputTensor": x})
        assert np.isnan(alone[1]).sum() > np.isnan(got[1]).sum()


def test_blocked_guard_bound() -> None:
    """Large finite rows below the bound take the blocks, and match the reference; a row whose
    sum of |x| passes it takes the scan. The bound leaves room for any summation order."""
    n = 6
    bound = cumulative._bound(n, n)  # one row: the whole tensor
    assert bound <= float(np.finfo(np.float32).max) / (1 + 2.0**-24) ** (2 * n)
    assert cumulative._bound(512, 2**36) == 0  # past about 2**31 elements: never the blocks
    big = np.float32(bound / 8)  # the row sums 3/4 of the bound
    x = np.array([[big, -big, big, big, -big, big]], np.float32)
    desc, model = _blocked(x.shape, 1)
    assert _condition(model, x)
    got = runtime.create(model, "t", "cpu").run({"InputTensor": x})
    np.testing.assert_allclose(got, registry.family("CUMULATIVE_SUMMATION").reference(desc, {"InputTensor": x}), rtol=1e-6)
    assert not _condition(model, x * np.float32(1.5))  # 9/8 of it: finite, refused


def test_blocked_rule() -> None:
    """The cuda target takes "blocked" along the last axis of 64 elements or more (FLOAT32 and
    FLOAT16); other axes, shorter ones, integers and the other targets keep the scan."""

    def chosen(dtype: str, shape: tuple[int, ...], axis: int, target: str = "cuda") -> str:
        desc = make_desc("CUMULATIVE_SUMMATION", fields("CUMULATIVE_SUMMATION", dtype, shape, axis))
        model = lowering.lower(desc, "t", target=target)
        return {p.key: p.value for p in model.metadata_props}["dml2onnx.lowering"]

    assert chosen("FLOAT32", (8, 512), 1) == "blocked"
    assert chosen("FLOAT16", (2, 64), 1) == "blocked"
    assert chosen("FLOAT32", (2, 64, 1), 1) == "blocked"  # trailing axes of 1: still rows
    assert chosen("FLOAT32", (2, 63), 1) == "scan"
    assert chosen("FLOAT32", (512, 2), 0) == "scan"
    assert chosen("INT32", (8, 512), 1) == "scan"
    for target in ("portable", "cpu", "dml"):
        desc = make_desc("CUMULATIVE_SUMMATION", fields("CUMULATIVE_SUMMATION", "FLOAT32", (8, 512), 1))
        assert "blocked" not in choices.available(desc, DEFAULT_OPSET, target)
        assert chosen("FLOAT32", (8, 512), 1, target) != "blocked"
