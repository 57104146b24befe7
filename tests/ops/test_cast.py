"""CAST, FILL_VALUE_CONSTANT and FILL_VALUE_SEQUENCE (dml2onnx/ops/cast.py, fill_value.py): what
DirectML computed (by hand, from its API under Wine), refusals, properties against the reference,
and DxDispatch's fill model run unchanged."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dml2onnx.core import dtypes, operator_table
from dml2onnx.core.errors import ModelError, format_path
from dml2onnx.ops import cast, fill_value, registry
from support import lowered_and_reference, make_desc, run_cli, tensor, write_model

NAN, INF = float("nan"), float("inf")


def _cast(src: str, dst: str, values: list[Any]) -> tuple[np.ndarray, np.ndarray]:
    x = np.array(values, dtype=object if src not in ("FLOAT32", "FLOAT64", "FLOAT16") else np.float64).astype(src.lower())
    fields = {"InputTensor": tensor(src, x.shape), "OutputTensor": tensor(dst, x.shape)}
    return lowered_and_reference("cpu", "CAST", fields, {"InputTensor": x})


# (source, target, inputs, what DirectML's API computed)
BY_HAND = [
    ("FLOAT32", "INT8", [1.5, -1.5, 300, -300, NAN, INF, -INF, 127.5], [1, -1, 127, -128, 0, 127, -128, 127]),
    ("FLOAT32", "UINT8", [-0.7, -300, 255.9, NAN, INF], [0, 0, 255, 0, 255]),
    ("FLOAT32", "INT32", [3e9, -3e9, 2.0**31, NAN, -INF], [2**31 - 1, -(2**31), 2**31 - 1, 0, -(2**31)]),
    ("FLOAT32", "UINT32", [-1e10, 3e9, 2.0**32, NAN], [0, 3000000000, 2**32 - 1, 0]),
    ("FLOAT32", "INT64", [1e10, NAN, INF, -INF, 1e19, -1e19], [10**10, 2**63 - 1, 2**63 - 1, 1 - 2**63, 2**63 - 1, 1 - 2**63]),
    ("FLOAT32", "UINT64", [-1.5, -300, NAN, -INF, 1e19], [2**64 - 1, 2**64 - 300, 2**63 - 1, 2**63 + 1, 2**63 - 1]),
    ("FLOAT64", "INT32", [2147483646.0, 1e300, -1.5, NAN], [2147483646, 2**31 - 1, -1, 0]),
    ("FLOAT16", "INT16", [65504, -65504, INF, NAN, 1000.5], [32767, -32768, 32767, 0, 1000]),
    ("INT64", "INT32", [2**31, 2**32 - 1, 2**53 + 1, -(2**63)], [-(2**31), -1, 1, 0]),
    ("INT64", "INT16", [65536, 2**31, 2**32 + 5, -300], [32767, -32768, 5, -300]),
    ("INT64", "UINT16", [-300, 2**31, 2**32, 65536], [65535, 65535, 0, 65535]),
    ("UINT64", "INT8", [2**64 - 2, 2**31, 300], [-2, -128, 127]),
    ("INT32", "UINT16", [-300, -1, 65536], [65535, 65535, 65535]),
    ("INT32", "UINT32", [-300], [2**32 - 300]),
    ("INT32", "UINT64", [-(2**31)], [2**64 - 2**31]),
    ("UINT32", "INT16", [2**31, 2**32 - 1, 65536], [-32768, -1, 32767]),
    ("INT16", "UINT8", [-300, -1, 300], [255, 255, 255]),
    ("INT8", "UINT16", [-128, -1, 127], [65535, 65535, 127]),
    ("UINT8", "INT8", [128, 255, 7], [127, 127, 7]),
    ("INT64", "UINT64", [-1, -(2**63)], [2**64 - 1, 2**63]),
    ("UINT64", "INT64", [2**64 - 2, 2**53 + 1], [-2, 2**53 + 1]),
    ("INT64", "FLOAT32", [2**53 + 1, -300], [2.0**53, -300.0]),
]


@pytest.mark.parametrize(("src", "dst", "x", "want"), BY_HAND, ids=[f"{a}-{b}" for a, b, *_ in BY_HAND])
def test_cast_as_directml_computes(src: str, dst: str, x: list[Any], want: list[Any]) -> None:
    got, ref = _cast(src, dst, x)
    expected = np.array(want, dtype=object).astype(dst.lower())
    np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(ref, expected)


def test_cast_float_to_float16_overflows_to_infinity() -> None:
    # IEEE (DirectML under vkd3d/lavapipe saturates to 65504: dml_findings)
    got, ref = _cast("FLOAT32", "FLOAT16", [70000.0, -1e10, 0.1, NAN])
    np.testing.assert_array_equal(got[:2], [np.inf, -np.inf])
    np.testing.assert_array_equal(ref, got)


def test_wide_integers_to_float64_are_exact_where_they_fit() -> None:
    got, _ = _cast("UINT64", "FLOAT64", [2**64 - 1, 2**53, 3])
    np.testing.assert_array_equal(got, [2.0**64, 2.0**53, 3.0])


def fill(op: str, t: str, sizes: list[int], **values: Any) -> tuple[np.ndarray, np.ndarray]:
    fields = {"OutputTensor": tensor(t, sizes), "ValueDataType": t, **values}
    return lowered_and_reference("cpu", op, fields, {})


@pytest.mark.parametrize(
    ("t", "start", "delta", "want"),
    [
        ("FLOAT32", 3, 2, [3, 5, 7]),  # the page's example 1
        ("UINT8", 10, 254, [10, 8, 6, 4]),  # the page's example 2 (delta -2 as UINT8)
        ("INT8", 126, 1, [126, 127, -128, -127]),
        ("UINT16", 65534, 1, [65534, 65535, 0, 1]),
        ("INT32", 2**31 - 3, 2**30, [2147483645, -1073741827, -3, 1073741821]),
        ("INT64", 2**62, 2**62, [2**62, -(2**63), -(2**62), 0]),
        ("UINT64", 2**64 - 2, 1, [2**64 - 2, 2**64 - 1, 0, 1]),
        ("INT64", 2**53 + 1, 1, [2**53 + 1, 2**53 + 2, 2**53 + 3, 2**53 + 4]),
    ],
)
def test_fill_sequence_as_directml_computes(t: str, start: int, delta: int, want: list[int]) -> None:
    got, ref = fill("FILL_VALUE_SEQUENCE", t, [len(want)], ValueStart=start, ValueDelta=delta)
    expected = np.array(want, dtype=object).astype(t.lower())
    np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(ref, expected)


def test_fill_sequence_float16_is_computed_in_float32_not_accumulated() -> None:
    got, ref = fill("FILL_VALUE_SEQUENCE", "FLOAT16", [3000], ValueStart={"UInt16": 0x2E66}, ValueDelta={"UInt16": 0x2E66})
    np.testing.assert_array_equal(got, ref)
    assert abs(float(got[-1]) - 300.0) < 0.3  # accumulating in FLOAT16 would stop at 256


def test_fill_constant() -> None:
    got, ref = fill("FILL_VALUE_CONSTANT", "FLOAT32", [1, 1, 2, 4], Value=13.0)  # the page's example
    np.testing.assert_array_equal(got, np.full((1, 1, 2, 4), 13, np.float32))
    np.testing.assert_array_equal(ref, got)
    got, _ = fill("FILL_VALUE_CONSTANT", "UINT64", [3], Value={"UInt64": 2**64 - 1})
    np.testing.assert_array_equal(got, np.array([2**64 - 1] * 3, np.uint64))


def test_refusals() -> None:
    with pytest.raises(ModelError) as e:
        make_desc("FILL_VALUE_CONSTANT", {"OutputTensor": tensor("FLOAT32", [2]), "ValueDataType": "INT32", "Value": 1})
    assert format_path(e.value.path).endswith("ValueDataType") and "OutputTensor's DataType" in str(e.value)
    with pytest.raises(ModelError) as e:
        make_desc("CAST", {"InputTensor": tensor("FLOAT32", [2, 3]), "OutputTensor": tensor("INT8", [3, 2])})
    assert "Sizes" in format_path(e.value.path)


def test_rows_are_the_adopted_operators() -> None:
    assert set(cast.ROWS) == set(registry.family("CAST").operators)
    assert set(fill_value.ROWS) == set(registry.family("FILL_VALUE_CONSTANT").operators)


TYPES = [t.name for t in dtypes.ALL]


@settings(max_examples=40, deadline=None)
@given(
    src=st.sampled_from(TYPES),
    dst=st.sampled_from(TYPES),
    shape=st.lists(st.integers(1, 3), min_size=1, max_size=4),
    seed=st.integers(0, 2**32 - 1),
)
def test_cast_property(src: str, dst: str, shape: list[int], seed: int) -> None:
    from dml2onnx.cases.cast import edges

    x = np.random.default_rng(seed).choice(edges(dtypes.BY_NAME[src]), size=tuple(shape))
    fields = {"InputTensor": tensor(src, shape), "OutputTensor": tensor(dst, shape)}
    got, want = lowered_and_reference("cpu", "CAST", fields, {"InputTensor": x})
    if dtypes.BY_NAME[dst].is_float:
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=4e-3)
    else:
        np.testing.assert_array_equal(got, want)


@settings(max_examples=40, deadline=None)
@given(
    t=st.sampled_from([t.name for t in operator_table.OPERATORS["FILL_VALUE_SEQUENCE"].support[0].tensors["OutputTensor"].types]),
    shape=st.lists(st.integers(1, 4), min_size=1, max_size=8),
    a=st.integers(-(2**70), 2**70),
    d=st.integers(-(2**70), 2**70),
)
def test_fill_sequence_property(t: str, shape: list[int], a: int, d: int) -> None:
    dt = dtypes.BY_NAME[t]
    if dt.is_float:
        start, delta = float(np.float32(a % 1000 - 500) / 7), float(np.float32(d % 100 - 50) / 3)
    else:
        info = np.iinfo(dt.numpy)
        start, delta = (int(info.min) + v % (int(info.max) - int(info.min) + 1) for v in (a, d))
    got, want = fill("FILL_VALUE_SEQUENCE", t, shape, ValueStart=start, ValueDelta=delta)
    if dt.is_float:
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=4e-3, atol=4e-3)
    else:
        np.testing.assert_array_equal(got, want)
    assert registry.family("FILL_VALUE_SEQUENCE").reference is fill_value.reference


def test_dxdispatch_fill_value_sequence_model(tmp_path: Path) -> None:
    """As DxDispatch's models/dml_fill_value_sequence.json: a graph with no inputs, printed."""
    model = {
        "resources": {"Out": {"initialValuesDataType": "FLOAT32", "initialValues": {"valueCount": 5, "value": 0}}},
        "dispatchables": {
            "fill_sequence": {
                "type": "DML_OPERATOR_FILL_VALUE_SEQUENCE",
                "desc": {
                    "ValueDataType": "FLOAT32",
                    "ValueStart": 3.2,
                    "ValueDelta": 1.5,
                    "OutputTensor": {"DataType": "FLOAT32", "Sizes": [1, 1, 1, 5]},
                },
            }
        },
        "commands": [
            {"type": "dispatch", "dispatchable": "fill_sequence", "bindings": {"OutputTensor": "Out"}},
            {"type": "print", "resource": "Out"},
        ],
    }
    path = write_model(tmp_path, model)
    code, out, err = run_cli("run", path, "--ep", "cpu")
    assert code == 0, err
    # 3.2f + i * 1.5f, as DxDispatch prints it
    assert out == "Resource 'Out': 3.2, 4.7, 6.2, 7.7, 9.2\n"
    code, out, err = run_cli("export", path, "-o", str(tmp_path / "onnx"), "--allow-any-path")
    assert code == 0, err
    assert (tmp_path / "onnx" / "fill_sequence.onnx").is_file()
