"""DML_OPERATOR_ELEMENT_WISE_IF (dml2onnx/ops/element_wise_if.py): by hand, what DirectML's own API
computed; validation; the graphs each target emits; and properties over random shapes, types,
conditions and special values against the numpy reference, bit for bit. The matrix
(dml2onnx/cases/element_wise_if.py) runs it on every EP present and through DirectML's API."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dml2onnx import lowering
from dml2onnx.backends import dmlapi, runtime
from dml2onnx.core import dtypes, operator_table
from dml2onnx.core.errors import ModelError, format_path
from dml2onnx.graph import dml_ep
from dml2onnx.graph.builder import onnx_type_name
from dml2onnx.ops import registry
from dml2onnx.ops.element_wise_if import CARRIER, ROWS, WHERE_TYPES
from strategies import SEEDS, shapes
from support import EPS, lowered_and_reference, make_desc, refusal, run_cli, tensor

OP = "ELEMENT_WISE_IF"
TYPES = [t.name for t in operator_table.OPERATORS[OP].support[0].tensors["OutputTensor"].types]
NAMES = ("ConditionTensor", "ATensor", "BTensor")


def fields_of(dtype: str, shape: tuple[int, ...] | list[int]) -> dict[str, Any]:
    return {"ConditionTensor": tensor("UINT8", shape)} | {n: tensor(dtype, shape) for n in ("ATensor", "BTensor", "OutputTensor")}


def run(dtype: str, cond: list[int], a: Any, b: Any, ep: str = "cpu") -> np.ndarray:
    np_type = np.dtype(dtype.lower())
    feeds = {
        "ConditionTensor": np.array(cond, np.uint8),
        "ATensor": np.asarray(a).astype(np_type) if np.asarray(a).dtype == np_type else np.array(a, dtype=object).astype(np_type),
        "BTensor": np.asarray(b).astype(np_type) if np.asarray(b).dtype == np_type else np.array(b, dtype=object).astype(np_type),
    }
    got, want = lowered_and_reference(ep, OP, fields_of(dtype, feeds["ATensor"].shape), feeds)
    assert got.dtype == want.dtype == np_type and got.tobytes() == want.tobytes(), (got, want)
    return got


# -- by hand: what DirectML's API computed (DirectML.dll of onnxruntime-directml 1.24.4 under Wine) --


def test_the_page_example() -> None:
    got = run("FLOAT32", [[1, 0], [1, 1]], [[1, 2], [3, 4]], [[9, 8], [7, 6]])
    assert got.tolist() == [[1, 8], [3, 4]]


@pytest.mark.parametrize("dtype", TYPES)
def test_any_nonzero_condition_selects_a(dtype: str) -> None:
    """2, 7, 128 and 255 select ATensor as 1 does (DirectML: nonzero is true)."""
    got = run(dtype, [0, 1, 2, 7, 128, 255, 0, 1], list(range(10, 18)), list(range(100, 108)))
    assert got.tolist() == [100, 11, 12, 13, 14, 15, 106, 17]


def test_64_bit_integers_move_exactly() -> None:
    big = [2**64 - 1, 2**53 + 1, 2**63 + 3, 2**63]
    assert run("UINT64", [1, 1, 1, 0], big, [0, 0, 0, 2**53 + 3]).tolist() == [2**64 - 1, 2**53 + 1, 2**63 + 3, 2**53 + 3]
    signed = [-(2**63), 2**53 + 1, 2**63 - 1, -(2**53) - 1]
    assert run("INT64", [9, 1, 1, 1], signed, [0, 0, 0, 0]).tolist() == signed


def test_floats_move_bit_for_bit() -> None:
    bits = np.array([0x7FC12345, 0x80000000, 0x7F800000, 0xFFC00001], np.uint32)
    x = bits.view(np.float32)
    assert run("FLOAT32", [1, 1, 3, 255], x, np.zeros(4, np.float32)).view(np.uint32).tolist() == bits.tolist()
    halves = np.array([0x7E01, 0xFC00, 0x8000, 0x0001], np.uint16)
    got = run("FLOAT16", [0, 0, 0, 0], np.zeros(4, np.float16), halves.view(np.float16))
    assert got.view(np.uint16).tolist() == halves.tolist()
    doubles = np.array([0x7FF8000000000123, 0x8000000000000000], np.uint64)
    assert run("FLOAT64", [5, 5], doubles.view(np.float64), [0.0, 0.0]).view(np.uint64).tolist() == doubles.tolist()


def test_the_types_ends() -> None:
    for dtype in ("INT8", "INT16", "INT32", "UINT8", "UINT16", "UINT32"):
        info = np.iinfo(dtype.lower())
        a, b = [int(info.min), int(info.max)], [int(info.max), int(info.min)]
        assert run(dtype, [1, 0], a, b).tolist() == [int(info.min), int(info.min)]


_why = dmlapi.missing()


@pytest.mark.skipif(_why is not None, reason=f"DirectML's API under Wine is not set up ({_why})")
def test_directml_reads_nonzero_as_true() -> None:
    c = np.array([0, 1, 2, 7, 128, 255], np.uint8)
    a, b = np.arange(10, 16, dtype=np.int8), np.arange(-6, 0, dtype=np.int8)
    got = dmlapi.execute(make_desc(OP, fields_of("INT8", [6])), {"ConditionTensor": c, "ATensor": a, "BTensor": b}).output
    assert got.tolist() == [-6, 11, 12, 13, 14, 15]


# -- the graphs ------------------------------------------------------------------------------------

CUDA_WHERE = ("FLOAT", "FLOAT16", "DOUBLE", "INT32", "INT64", "UINT8")  # onnxruntime's cuda/tensor/where.cc


@pytest.mark.parametrize("dtype", TYPES)
def test_graphs(dtype: str) -> None:
    """Every target's graph passes the static DirectML EP check. `cuda` uses Where only on the
    types the CUDA EP's Where takes (the others through CARRIER); `portable` too for integers,
    but gathers floats (ONNX Runtime's CPU Where loses a selected -0); `dml` emits the Where the
    DirectML EP maps back onto ELEMENT_WISE_IF, on the type itself."""
    desc = make_desc(OP, fields_of(dtype, [2, 3]))
    for target in ("portable", "cuda", "dml"):
        model = lowering.lower(desc, "t", target=target)
        assert dml_ep.check(model) == [], (dtype, target)
        types = {v.name: v.type.tensor_type.elem_type for v in (*model.graph.input, *model.graph.value_info)}
        ops_used = [n.op_type for n in model.graph.node]
        if target == "portable" and dtypes.BY_NAME[dtype].is_float:
            assert "Where" not in ops_used and "GatherElements" in ops_used
            continue
        wheres = [n for n in model.graph.node if n.op_type == "Where"]
        assert len(wheres) == 1
        where_type = dtypes.BY_ONNX[types[wheres[0].input[1]]]
        if target == "dml":
            assert where_type.name == dtype and ops_used == ["Cast", "Where"]
        else:
            assert where_type in WHERE_TYPES and onnx_type_name(where_type.onnx) in CUDA_WHERE
            assert (where_type.name == dtype) == (dtypes.BY_NAME[dtype] not in CARRIER)


def test_a_selected_negative_zero_stays_on_the_cpu_ep() -> None:
    """ONNX Runtime's CPU Where gives +0 for a selected -0 of its second input: the `portable`
    and `cpu` graphs gather instead; the `cuda` graph's Where is exact on the CUDA EP."""
    fields = fields_of("FLOAT32", [4])
    feeds = {
        "ConditionTensor": np.array([1, 0, 5, 0], np.uint8),
        "ATensor": np.array([-0.0, 1.0, -0.0, 2.0], np.float32),
        "BTensor": np.array([3.0, -0.0, 4.0, -0.0], np.float32),
    }
    desc = make_desc(OP, fields)
    for target in ("portable", "cpu"):
        got = runtime.create(lowering.lower(desc, "t", target=target), "t", "cpu").run(feeds)
        assert np.signbit(got).tolist() == [True, True, True, True], target


# -- validation -----------------------------------------------------------------------------------


def if_refusal(fields: dict[str, Any]) -> ModelError:
    return refusal(OP, fields)


@pytest.mark.parametrize(
    ("fields", "path", "text"),
    [
        ({"BTensor": tensor("INT32", [2, 3])}, "desc.BTensor.DataType", "same DataType"),
        ({"OutputTensor": tensor("FLOAT16", [2, 3])}, "desc.OutputTensor.DataType", "same DataType"),
        ({"ConditionTensor": tensor("UINT8", [3, 2])}, "desc.ConditionTensor.Sizes", "same Sizes"),
        ({"ATensor": tensor("FLOAT32", [2, 3, 1])}, "desc.ATensor.Sizes", "same DimensionCount"),
        ({"ConditionTensor": tensor("INT8", [2, 3])}, "desc.ConditionTensor.DataType", "UINT8"),
        ({"ConditionTensor": tensor("FLOAT32", [2, 3])}, "desc.ConditionTensor.DataType", "UINT8"),
    ],
)
def test_invalid(fields: dict[str, Any], path: str, text: str) -> None:
    e = if_refusal(fields_of("FLOAT32", [2, 3]) | fields)
    assert format_path(e.path) == path and text in str(e), str(e)


def test_rank_limits() -> None:
    e = if_refusal(fields_of("FLOAT32", [1] * 9))
    assert "DimensionCount" in str(e) or "dimension" in str(e).lower(), str(e)


def test_invalid_model_exits_2(tmp_path: Any) -> None:
    model = {
        "resources": {"x": {"initialValuesDataType": "FLOAT32", "initialValues": [1, 0]}},
        "dispatchables": {
            "if": {"type": "DML_OPERATOR_ELEMENT_WISE_IF", "desc": fields_of("FLOAT32", [2]) | {"BTensor": tensor("INT32", [2])}}
        },
        "commands": [
            {
                "type": "dispatch",
                "dispatchable": "if",
                "bindings": {"ConditionTensor": "x", "ATensor": "x", "BTensor": "x", "OutputTensor": "x"},
            }
        ],
    }
    path = tmp_path / "m.json"
    path.write_text(json.dumps(model))
    code, _, err = run_cli("run", str(path))
    assert code == 2 and "dispatchables.if.desc.BTensor.DataType" in err, err


def test_rows_are_the_adopted_operators() -> None:
    assert set(ROWS) == set(registry.family("ELEMENT_WISE_IF").operators)


# -- properties -----------------------------------------------------------------------------------


def _pool(dtype: np.dtype) -> np.ndarray:
    """The type's ends, neighbours past 2**53 for 64-bit types; signed zeros, infinities and NaN
    (with payloads) for floats."""
    if dtype.kind == "f":
        pool = np.array([0.0, -0.0, 1.0, -1.5, np.inf, -np.inf, np.nan, 1e4, 6e4], dtype)
        if dtype == np.float32:
            pool = np.concatenate([pool, np.array([0x7FC00001, 0xFF800001], np.uint32).view(np.float32)])
        return pool
    info = np.iinfo(dtype)
    values = [int(info.min), int(info.min) + 1, -1, 0, 1, 2, int(info.max) - 1, int(info.max)]
    if dtype.itemsize == 8:
        values += [2**53, 2**53 + 1, 2**62 + 1, -(2**53) - 1]
    return np.array([v for v in values if info.min <= v <= info.max], dtype=object).astype(dtype)


@st.composite
def cases(draw: st.DrawFn) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    dtype = draw(st.sampled_from(TYPES))
    shape = draw(shapes())
    rng = np.random.default_rng(draw(SEEDS))
    pool = _pool(np.dtype(dtype.lower()))
    feeds = {
        "ConditionTensor": rng.choice(np.array([0, 0, 1, 2, 255], np.uint8), size=shape),
        "ATensor": rng.choice(pool, size=shape),
        "BTensor": rng.choice(pool, size=shape),
    }
    return fields_of(dtype, shape), feeds


@EPS
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=cases())
def test_matches_reference(ep: str, case: tuple[dict[str, Any], dict[str, np.ndarray]]) -> None:
    fields, feeds = case
    got, want = lowered_and_reference(ep, OP, fields, feeds)
    assert got.dtype == want.dtype and got.tobytes() == want.tobytes(), (fields, got.ravel()[:8], want.ravel()[:8])


@settings(max_examples=40, deadline=None)
@given(case=cases())
def test_reference_matches_python(case: tuple[dict[str, Any], dict[str, np.ndarray]]) -> None:
    """The reference against Python's own selection, element by element, on the elements' bytes."""
    fields, feeds = case
    desc = make_desc(OP, fields)
    got = registry.family(OP).reference(desc, feeds)
    c, a, b = (feeds[n].ravel() for n in NAMES)
    want = [a[i : i + 1].tobytes() if c[i] != 0 else b[i : i + 1].tobytes() for i in range(c.size)]
    assert [got.ravel()[i : i + 1].tobytes() for i in range(c.size)] == want
