"""DML_OPERATOR_TOP_K and TOP_K1: the pages' examples, ties (ascending index in both
directions), what DirectML computes where the pages are silent (K equal to the axis, -0 and +0
tied, 64-bit integers beyond 2**53, NaN payloads moved), dml2onnx's NaN order, the dml target's
TopK, refusals, and properties against the numpy reference."""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dml2onnx import lowering
from dml2onnx.backends import dmlapi, runtime
from dml2onnx.cases.top_k import TYPES, _pool
from dml2onnx.core import dtypes
from dml2onnx.core.desc import parse_operator_desc
from dml2onnx.core.errors import format_path
from dml2onnx.graph import dml_ep
from dml2onnx.graph.builder import DEFAULT_OPSET
from dml2onnx.graph.targets import DML_NODE_DOC
from dml2onnx.lowering import choices
from dml2onnx.ops import registry
from strategies import SEEDS, shapes
from support import EPS, assert_matches_reference, every_output, make_desc, refusal, tensor

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def fields(
    op: str, dtype: str, shape: tuple[int, ...], axis: int, k: int, direction: str = "DECREASING", index: str = "UINT32"
) -> dict[str, Any]:
    out = tuple(k if i == axis else s for i, s in enumerate(shape))
    f = {"InputTensor": tensor(dtype, shape), "OutputValueTensor": tensor(dtype, out), "OutputIndexTensor": tensor(index, out)}
    f |= {"Axis": axis, "K": k}
    return f | ({"AxisDirection": direction} if op == "TOP_K1" else {})


def run(op: str, x: Any, axis: int, k: int, direction: str = "DECREASING", index: str = "UINT32", target: str = "portable"):
    x = np.asarray(x)
    desc = make_desc(op, fields(op, x.dtype.name.upper(), x.shape, axis, k, direction, index))
    got = every_output(runtime.create(lowering.lower(desc, "t", target=target), "t", "cpu"), desc, {"InputTensor": x})
    return got["OutputValueTensor"], got["OutputIndexTensor"]


PAGE_INPUT = np.array([[0, 1, 10, 11], [3, 2, 9, 8], [4, 5, 6, 7]], np.float32).reshape(1, 1, 3, 4)


@pytest.mark.parametrize("op", ["TOP_K", "TOP_K1"])
def test_page_examples(op: str) -> None:
    values, index = run(op, PAGE_INPUT, 3, 2)
    np.testing.assert_array_equal(values.reshape(3, 2), [[11, 10], [9, 8], [7, 6]])
    np.testing.assert_array_equal(index.reshape(3, 2), [[3, 2], [2, 3], [3, 2]])
    values, index = run(op, PAGE_INPUT, 2, 2)
    np.testing.assert_array_equal(values.reshape(2, 4), [[4, 5, 10, 11], [3, 2, 9, 8]])
    np.testing.assert_array_equal(index.reshape(2, 4), [[2, 2, 0, 0], [1, 1, 1, 1]])


def test_top_k1_increasing_page_example() -> None:
    values, index = run("TOP_K1", PAGE_INPUT, 3, 2, "INCREASING")
    np.testing.assert_array_equal(values.reshape(3, 2), [[0, 1], [2, 3], [4, 5]])
    np.testing.assert_array_equal(index.reshape(3, 2), [[0, 1], [1, 0], [0, 1]])


@pytest.mark.parametrize("direction", ["DECREASING", "INCREASING"])
def test_ties_by_ascending_index(direction: str) -> None:
    x = np.array([[5, 7, 5, 7, 5, 1, 7, 5]], np.int32)
    values, index = run("TOP_K1", x, 1, 5, direction)
    if direction == "DECREASING":  # 7s (1, 3, 6), then the first two 5s (0, 2)
        assert values.tolist() == [[7, 7, 7, 5, 5]] and index.tolist() == [[1, 3, 6, 0, 2]]
    else:  # 1 (5), then the first four 5s (0, 2, 4, 7)
        assert values.tolist() == [[1, 5, 5, 5, 5]] and index.tolist() == [[5, 0, 2, 4, 7]]


def test_what_directml_computes() -> None:
    """Measured with DirectML's API (dml2onnx.backends.dmlapi): K may be the axis' size; -0 and +0 tie;
    UINT64 and INT64 beyond 2**53 exactly, with UINT64 indices."""
    values, index = run("TOP_K", np.array([[3, 1, 4, 1, 5]], np.int32), 1, 5)
    assert values.tolist() == [[5, 4, 3, 1, 1]] and index.tolist() == [[4, 2, 0, 1, 3]]
    z = np.array([[0.0, -0.0, 0.0, -0.0, 1, -1]], np.float32)
    values, index = run("TOP_K1", z, 1, 6)
    assert index.tolist() == [[4, 0, 1, 2, 3, 5]]
    assert values.view(np.uint32).tolist() == [[0x3F800000, 0, 0x80000000, 0, 0x80000000, 0xBF800000]]
    values, index = run("TOP_K1", z, 1, 6, "INCREASING")
    assert index.tolist() == [[5, 0, 1, 2, 3, 4]]
    u = np.array([[5, 2**63 + 3, 2**63 + 1, 7, 2**63 + 3]], np.uint64)
    values, index = run("TOP_K", u, 1, 3, index="UINT64")
    assert values.tolist() == [[2**63 + 3, 2**63 + 3, 2**63 + 1]] and index.tolist() == [[1, 4, 2]]
    assert index.dtype == np.uint64
    s = np.array([[-5, 2**62, -(2**63), 7, 2**62]], np.int64)
    values, index = run("TOP_K1", s, 1, 3, "INCREASING")
    assert values.tolist() == [[-(2**63), -5, 7]] and index.tolist() == [[2, 0, 3]]


@pytest.mark.parametrize("direction", ["DECREASING", "INCREASING"])
def test_nan_ranks_above_infinity(direction: str) -> None:
    """DirectML orders nothing with NaN present; dml2onnx ranks NaN above +inf, payloads kept."""
    bits = np.array([[0x3F800000, 0x7FC00001, 0x7F800000, 0xFFC00002, 0xFF800000, 0]], np.uint32)
    values, index = run("TOP_K1", bits.view(np.float32), 1, 6, direction)
    want = [1, 3, 2, 0, 5, 4] if direction == "DECREASING" else [4, 5, 0, 2, 1, 3]
    assert index.tolist() == [want]
    assert values.view(np.uint32).tolist() == [bits[0, want].tolist()]
    half = np.array([[np.nan, np.inf, 1, np.nan]], np.float16)
    values, index = run("TOP_K1", half, 1, 3)
    assert index.tolist() == [[0, 3, 1]]


def test_dml_target_is_the_topk_node() -> None:
    desc = make_desc("TOP_K1", fields("TOP_K1", "FLOAT16", (2, 8), 1, 3, "INCREASING"))
    model = lowering.lower(desc, "t", target="dml")
    assert [n.op_type for n in model.graph.node] == ["TopK", "Cast"] and model.graph.node[0].doc_string == DML_NODE_DOC
    assert dml_ep.check(model) == []
    portable = lowering.lower(desc, "t")
    assert dml_ep.check(portable) == [] and "ScatterND" not in {n.op_type for n in portable.graph.node}


@pytest.mark.parametrize(
    ("change", "path", "message"),
    [
        ({"Axis": 2}, "desc.Axis", "less than InputTensor's DimensionCount"),
        ({"K": 0}, "desc.K", "greater than 0"),
        ({"K": 4}, "desc.K", "at most InputTensor's size along Axis (3)"),
        ({"OutputValueTensor": tensor("FLOAT16", (2, 2))}, "desc.OutputValueTensor.DataType", "same DataType"),
        ({"OutputIndexTensor": tensor("UINT32", (2, 3))}, "desc.OutputIndexTensor.Sizes", "with K (2) along Axis"),
        ({"OutputValueTensor": tensor("FLOAT32", (2, 1, 2))}, "desc.OutputValueTensor.Sizes", "same DimensionCount"),
    ],
)
def test_refusals(change: dict[str, Any], path: str, message: str) -> None:
    e = refusal("TOP_K1", fields("TOP_K1", "FLOAT32", (2, 3), 1, 2) | change)
    assert format_path(e.path) == path and message in e.rule, (e.path, e.rule)


def test_older_levels() -> None:
    e = refusal("TOP_K1", fields("TOP_K1", "INT64", (2, 3), 1, 2), level="4_1")
    assert e.path == ("desc", "InputTensor", "DataType")
    e = refusal("TOP_K", fields("TOP_K", "FLOAT32", (2, 3), 1, 2), level="3_0")
    assert e.path == ("desc", "InputTensor", "Sizes")


@EPS
@SETTINGS
@given(
    shape=shapes(),
    data=st.data(),
    seed=SEEDS,
    op=st.sampled_from(["TOP_K", "TOP_K1"]),
    dtype=st.sampled_from(TYPES),
    special=st.sampled_from(["", "specials", "nan"]),
)
def test_matches_reference(
    ep: str, shape: tuple[int, ...], data: st.DataObject, seed: int, op: str, dtype: Any, special: str
) -> None:
    axis = data.draw(st.integers(0, len(shape) - 1))
    k = data.draw(st.integers(1, shape[axis]))
    direction = data.draw(st.sampled_from(["DECREASING", "INCREASING"]))
    index = data.draw(st.sampled_from(["UINT32", "UINT64"]))
    x = np.random.default_rng(seed).choice(_pool(dtype, special if dtype.is_float else ""), size=shape)
    assert_matches_reference(ep, op, fields(op, dtype.name, shape, axis, k, direction, index), {"InputTensor": x})


_why = dmlapi.missing()
live = pytest.mark.skipif(_why is not None, reason=f"DirectML's API under Wine is not set up ({_why})")


@live
def test_directml_settles_k_zeros_and_nan() -> None:
    """K equal to the axis' size runs, K above it is refused; -0 and +0 tie by index; with NaN
    in the sequence DirectML leaves out a finite value of the top K (1.0 here)."""
    x = np.array([[3, 1, 4, 1, 5]], np.int32)
    got = dmlapi.execute(make_desc("TOP_K", fields("TOP_K", "INT32", (1, 5), 1, 5)), {"InputTensor": x}).outputs
    assert got["OutputIndexTensor"].tolist() == [[4, 2, 0, 1, 3]]
    too_many = parse_operator_desc("TOP_K", fields("TOP_K", "INT32", (1, 5), 1, 6), ("desc",), ("type",))
    with pytest.raises(dmlapi.DmlApiError):
        dmlapi.execute(too_many, {"InputTensor": x})
    z = np.array([[0.0, -0.0, 0.0, -0.0, 1, -1]], np.float32)
    got = dmlapi.execute(make_desc("TOP_K1", fields("TOP_K1", "FLOAT32", (1, 6), 1, 6)), {"InputTensor": z}).outputs
    assert got["OutputIndexTensor"].tolist() == [[4, 0, 1, 2, 3, 5]]
    n = np.array([[1, np.nan, 3, np.inf, -np.inf, np.nan, 3, -0.0, 0.0, -1]], np.float32)
    got = dmlapi.execute(make_desc("TOP_K1", fields("TOP_K1", "FLOAT32", (1, 10), 1, 6)), {"InputTensor": n}).outputs
    assert 0 not in got["OutputIndexTensor"].ravel().tolist()


# -- the keys' range: the CUDA EP's TopK pads rows with -FLT_MAX / FLT_MAX (INT64's ends), and a
# real -inf (+inf) sorted beyond that sentinel (H100: [3, 3, -inf] K=3 gave [3, 3, 3], [0, 1, 0]);
# rows of 3 run its bitonic kernel, rows of 700 its radix one (aligned to 1024 > 256 threads).

FLT_MAX = float(np.finfo(np.float32).max)
SENTINEL_ROWS = [
    # (op, direction, row, K)
    ("TOP_K", "DECREASING", [3, 3, -np.inf], 3),
    ("TOP_K1", "INCREASING", [np.inf, 2, np.inf], 3),
    ("TOP_K1", "INCREASING", [np.inf, 2, np.inf], 2),
    ("TOP_K1", "DECREASING", [-np.inf, -FLT_MAX, -np.inf, -FLT_MAX], 3),
    ("TOP_K1", "INCREASING", [-FLT_MAX, -np.inf, -FLT_MAX, -np.inf], 3),
    ("TOP_K1", "DECREASING", [FLT_MAX, np.inf, np.nan, FLT_MAX, np.inf, np.nan], 3),
    ("TOP_K1", "DECREASING", [FLT_MAX, np.inf, np.nan, FLT_MAX, np.inf, np.nan], 5),
    ("TOP_K1", "INCREASING", [np.nan, np.inf, FLT_MAX, np.nan, np.inf, FLT_MAX], 6),
    ("TOP_K1", "INCREASING", [np.nan, np.inf, FLT_MAX, np.nan, np.inf, FLT_MAX], 3),
]


def _sentinel_row(row: list[float], length: int) -> np.ndarray:
    """The row, or the row spread over `length` elements among finite filler (1.0, 2.0)."""
    if length == len(row):
        return np.array([row], np.float32)
    out = np.resize(np.array([1.0, 2.0], np.float32), length)
    out[np.linspace(0, length - 1, len(row)).astype(int)] = row
    return out[None, :]


@EPS
@pytest.mark.parametrize("length", [0, 700])
@pytest.mark.parametrize(("op", "direction", "row", "k"), SENTINEL_ROWS)
def test_infinities_beside_the_sentinel(ep: str, length: int, op: str, direction: str, row: list[float], k: int) -> None:
    x = _sentinel_row(row, length or len(row))
    for kk in sorted({k, x.shape[1] - 1} if length else {k}):
        assert_matches_reference(ep, op, fields(op, "FLOAT32", x.shape, 1, kk, direction), {"InputTensor": x})
    assert_matches_reference(ep, op, fields(op, "FLOAT32", x.T.shape, 0, k, direction), {"InputTensor": x.T.copy()})


def test_infinities_beside_the_sentinel_values() -> None:
    """The H100's failing case and its neighbours, with the values they must give."""
    values, index = run("TOP_K", np.array([3, 3, -np.inf], np.float32), 0, 3)
    assert values.tolist() == [3, 3, -np.inf] and index.tolist() == [0, 1, 2]
    values, index = run("TOP_K1", np.array([[np.inf, 2, np.inf]], np.float32), 1, 3, "INCREASING")
    assert values.tolist() == [[2, np.inf, np.inf]] and index.tolist() == [[1, 0, 2]]
    values, index = run("TOP_K1", np.array([[-np.inf, -FLT_MAX, -np.inf, -FLT_MAX]], np.float32), 1, 3)
    assert values.tolist() == [[-FLT_MAX, -FLT_MAX, -np.inf]] and index.tolist() == [[1, 3, 0]]
    x = np.array([[FLT_MAX, np.inf, np.nan, FLT_MAX, np.inf, np.nan]], np.float32)
    assert run("TOP_K1", x, 1, 5)[1].tolist() == [[2, 5, 1, 4, 0]]
    assert run("TOP_K1", x, 1, 6, "INCREASING")[1].tolist() == [[0, 3, 1, 4, 2, 5]]


@EPS
@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.uint64])
@pytest.mark.parametrize("direction", ["DECREASING", "INCREASING"])
@pytest.mark.parametrize("length", [5, 700])
def test_integer_ends(ep: str, dtype: type, direction: str, length: int) -> None:
    """The integers' minimum (which the CUDA EP's radix TopK negates) and maximum, both tied,
    mostly negative or mostly positive rows, K of 1, 3 and all but one."""
    info = np.iinfo(dtype)
    rng = np.random.default_rng(length)
    for pool in ([info.min, info.min + 1, info.min + 1, info.max, 0], [info.max, info.max - 1, info.min, info.min, 5]):
        x = rng.choice(np.array(pool, dtype), size=(2, length))
        for k in sorted({1, 3, length - 1}):
            assert_matches_reference(
                ep, "TOP_K1", fields("TOP_K1", x.dtype.name.upper(), x.shape, 1, k, direction), {"InputTensor": x}
            )


def _topk_inputs(desc_fields: dict[str, Any], op: str, x: np.ndarray) -> list[np.ndarray]:
    """The keys every TopK node of the lowered graph ranks (the graph's values, on the CPU EP)."""
    model = lowering.lower(make_desc(op, desc_fields), "t")
    names = [n.input[0] for n in model.graph.node if n.op_type == "TopK"]
    typed = {v.name: v for v in onnx.shape_inference.infer_shapes(model).graph.value_info}
    model.graph.output.extend(typed[name] for name in names)
    return list(runtime.create(model, "t", "cpu").run_all({"InputTensor": x}, names).values())


@pytest.mark.parametrize("direction", ["DECREASING", "INCREASING"])
def test_keys_stay_inside_the_sentinels(direction: str) -> None:
    """No TopK of the graph ranks +-inf, NaN or an integer type's minimum; the FLOAT32 case of the
    suite (K=8 of rows of 512) ranks FLOAT32, then INT32 keys (the by-run and the ties TopK)."""
    x = np.random.default_rng(5).choice(_pool(dtypes.FLOAT32, "nan"), size=(4, 512)).astype(np.float32)
    keys = _topk_inputs(fields("TOP_K1", "FLOAT32", x.shape, 1, 8, direction), "TOP_K1", x)
    assert [k.dtype for k in keys] == [np.float32, np.int32, np.int32]
    assert np.isfinite(keys[0]).all() and np.abs(keys[0]).max() == FLT_MAX
    for dtype in (dtypes.INT32, dtypes.INT64, dtypes.UINT64):
        xi = np.random.default_rng(6).choice(_pool(dtype), size=(4, 40))
        key = _topk_inputs(fields("TOP_K1", xi.dtype.name.upper(), xi.shape, 1, 8, direction), "TOP_K1", xi)[0]
        assert key.min() == np.iinfo(key.dtype).min + 1, dtype  # the pool holds the minimum


def test_long_rows_take_int64_positions() -> None:
    """K * 4 * n above 2**31 (n = 24000, K = 23000): the by-run keys in INT64, the ties' in INT32."""
    rng = np.random.default_rng(8)
    x = rng.choice(_pool(dtypes.FLOAT32, "nan"), size=(1, 24000)).astype(np.float32)
    f = fields("TOP_K1", "FLOAT32", x.shape, 1, 23000, "INCREASING")
    assert [k.dtype for k in _topk_inputs(f, "TOP_K1", x)] == [np.float32, np.int64, np.int32]
    assert_matches_reference("cpu", "TOP_K1", f, {"InputTensor": x})


def _guarded(
    op: str, x: np.ndarray, axis: int, k: int, direction: str, ep: str, variant: str = "guarded"
) -> tuple[bool, np.ndarray, np.ndarray, Any]:
    """A `cuda` target candidate's graph ("guarded" or "selection") on `ep`: whether its If took
    the fast branch, the two outputs, and the desc."""
    desc = make_desc(op, fields(op, x.dtype.name.upper(), x.shape, axis, k, direction))
    model = lowering.lower(desc, "t", target="cuda", variant=variant)
    assert {p.key: p.value for p in model.metadata_props}["dml2onnx.lowering"] == variant
    (branch,) = [n for n in model.graph.node if n.op_type == "If"]
    model.graph.output.append(onnx.helper.make_tensor_value_info(branch.input[0], onnx.TensorProto.BOOL, []))
    session = runtime.create(model, "t", ep)
    got = session.run_all({"InputTensor": x})
    taken = bool(got.pop(branch.input[0]))
    out = lowering.by_field(desc, got)
    return taken, out["OutputValueTensor"], out["OutputIndexTensor"], desc


GUARDED_ROWS = [  # (op, direction, row, K, whether TopK's own indices are taken)
    ("TOP_K", "DECREASING", [5, 3, 3], 3, True),  # every element of the K-th key selected
    ("TOP_K", "DECREASING", [3, 3, 3, 1], 2, False),  # one more 3 than places: the ties' TopK
    ("TOP_K", "DECREASING", [3, 3, -np.inf], 3, False),  # the K-th key is -FLT_MAX, the pad's value
    ("TOP_K1", "INCREASING", [np.inf, 2, 1], 3, False),  # +inf: FLT_MAX when smallest
    ("TOP_K1", "DECREASING", [FLT_MAX, np.inf, np.nan, FLT_MAX, np.inf, np.nan], 6, True),  # one key, classes by sub
    ("TOP_K1", "INCREASING", [7, 1, 4, 1, 9], 3, True),
]


@EPS
@pytest.mark.parametrize(("op", "direction", "row", "k", "fast"), GUARDED_ROWS)
def test_guarded_takes_topk_indices_only_without_surplus_ties(
    ep: str, op: str, direction: str, row: list[float], k: int, fast: bool
) -> None:
    """`guarded` (the `cuda` target): TopK's own indices, reordered by run, where every sequence's
    K-th key has no more elements than places and lies inside the pads' values; else `ranked`'s
    ties TopK. Both give the reference, bit for bit."""
    x = np.array([row], np.float32)
    taken, values, index, desc = _guarded(op, x, 1, k, direction, ep)
    want = ops_reference(desc, x)
    assert taken == fast
    np.testing.assert_array_equal(index, want["OutputIndexTensor"])
    np.testing.assert_array_equal(values, want["OutputValueTensor"])


@EPS
@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.int64, np.uint32])
def test_guarded_rows_with_and_without_ties(ep: str, dtype: type) -> None:
    """Rows of 700 distinct values take TopK's indices; the same rows with a surplus tie at the K-th
    key in one of them take the ties' TopK; the integers' maximum at the K-th key (INCREASING) too."""
    rng = np.random.default_rng(3)
    x = np.stack([rng.permutation(700) for _ in range(4)]).astype(dtype)
    for direction in ("DECREASING", "INCREASING"):
        taken, _, index, desc = _guarded("TOP_K1", x, 1, 8, direction, ep)
        assert taken and np.array_equal(index, ops_reference(desc, x)["OutputIndexTensor"])
    tied = x.copy()
    tied[2, :3] = np.sort(x[2])[-8]  # three more elements of the 8th largest
    taken, _, index, desc = _guarded("TOP_K1", tied, 1, 8, "DECREASING", ep)
    assert not taken and np.array_equal(index, ops_reference(desc, tied)["OutputIndexTensor"])
    if dtype != np.float32:  # all K = n sorted INCREASING: the K-th key is the row's largest
        top = x.copy()
        top[1, 5] = np.iinfo(dtype).max
        taken, _, index, desc = _guarded("TOP_K1", top, 1, 700, "INCREASING", ep)
        assert taken == (dtype == np.uint32)  # INT32/INT64 keys at their maximum: the pads' value
        assert np.array_equal(index, ops_reference(desc, top)["OutputIndexTensor"])


def ops_reference(desc: Any, x: np.ndarray) -> dict[str, np.ndarray]:

    return registry.reference_outputs(desc, {"InputTensor": x})


SELECTION_ROWS = [  # (op, direction, row, K, whether the ArgMax passes are taken)
    ("TOP_K", "DECREASING", [5, 3, 3, 9, 3], 3, True),  # ties by ascending index
    ("TOP_K1", "INCREASING", [2, -0.0, 0.0, 1, -0.0], 4, True),  # -0 and +0 equal: ascending index
    ("TOP_K1", "DECREASING", [1, 3e37, -3e37, 3e37], 4, True),
    ("TOP_K1", "DECREASING", [1, FLT_MAX, -FLT_MAX, FLT_MAX], 4, False),  # finite, but the sum of |x| overflows
    ("TOP_K", "DECREASING", [3, 3, -np.inf], 3, False),  # -inf: the ranked keys
    ("TOP_K1", "INCREASING", [np.inf, 2, 1], 2, False),
    ("TOP_K1", "DECREASING", [1, np.nan, 3], 1, False),  # NaN ranks above +inf: the ranked keys
    ("TOP_K1", "INCREASING", [7, 1, 4, 1, 9, 0.5, 2, 8, 3], 8, True),
]


@EPS
@pytest.mark.parametrize(("op", "direction", "row", "k", "fast"), SELECTION_ROWS)
def test_selection_takes_argmax_passes_only_on_finite_data(
    ep: str, op: str, direction: str, row: list[float], k: int, fast: bool
) -> None:
    """`selection` (the `cuda` target): K passes of ArgMax (ArgMin) where every value is finite,
    else `guarded`'s ranked keys. Both give the reference, bit for bit."""
    x = np.array([row, row[::-1]], np.float32)
    taken, values, index, desc = _guarded(op, x, 1, k, direction, ep, "selection")
    want = ops_reference(desc, x)
    assert taken == fast
    np.testing.assert_array_equal(index, want["OutputIndexTensor"])
    np.testing.assert_array_equal(values.view(np.uint32), want["OutputValueTensor"].view(np.uint32))


def test_selection_applies_to_float32_small_k_along_the_last_axis() -> None:
    """Where `selection` is a candidate and the `cuda` target's rule takes it; `guarded` elsewhere."""
    cases = [  # (dtype, shape, axis, K, applies)
        ("FLOAT32", (4, 9), 1, 8, True),
        ("FLOAT32", (4, 9), 1, 9, False),  # K past SELECTION_MAX_K
        ("FLOAT32", (3, 9, 1, 1), 1, 2, True),  # trailing 1s: the last axis longer than 1
        ("FLOAT32", (9, 3), 0, 2, False),  # a leading axis
        ("FLOAT16", (4, 9), 1, 2, False),
        ("INT32", (4, 9), 1, 2, False),
    ]
    for dtype, shape, axis, k, applies in cases:
        desc = make_desc("TOP_K1", fields("TOP_K1", dtype, shape, axis, k, "DECREASING"))
        assert ("selection" in choices.available(desc, DEFAULT_OPSET, "cuda")) == applies
        assert choices.choose(desc, "cuda", DEFAULT_OPSET) == ("selection" if applies else "guarded")
        assert choices.choose(desc, "portable", DEFAULT_OPSET) == "ranked"


@EPS
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_selection_matches_the_reference(ep: str, data: st.DataObject) -> None:
    """Random FLOAT32 rows with many repeated values (ties), K of 1..8, both directions, some with a
    NaN or an infinity (the other branch): the reference's values and indices exactly."""
    rows = data.draw(st.integers(1, 4))
    n = data.draw(st.integers(2, 40))
    k = data.draw(st.integers(1, min(n, 8)))
    direction = data.draw(st.sampled_from(["DECREASING", "INCREASING"]))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    scale = data.draw(st.sampled_from([1.0, 5e37, 1e-45]))  # 5e37: sums of |x| past FLOAT32's range
    x = (rng.integers(-4, 5, size=(rows, n, 1)) * scale).astype(np.float32)
    special = data.draw(st.sampled_from([None, np.nan, np.inf, -np.inf]))
    if special is not None:
        x[rng.integers(rows), rng.integers(n), 0] = special
    taken, values, index, desc = _guarded("TOP_K1", x, 1, k, direction, ep, "selection")
    want = ops_reference(desc, x)
    total = np.abs(x.astype(np.float64)).sum()
    if special is not None or total > 3.5e38:
        assert not taken
    elif total < 3.3e38:  # clear of FLT_MAX whatever order the sum is taken in
        assert taken
    np.testing.assert_array_equal(index, want["OutputIndexTensor"])
    np.testing.assert_array_equal(values.view(np.uint32), want["OutputValueTensor"].view(np.uint32))
