"""Statements made in the doc pages' text (beyond their example sections), checked through the
lowered graphs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from support import lowered_and_reference, printed, run_cli, tensor, write_model


@pytest.mark.parametrize(("direction", "expected"), [("INCREASING", 0), ("DECREASING", 4)])
def test_argmax_axis_direction_text(direction: str, expected: int) -> None:
    # "argmax({3,2,1,2,3}) = 0" for INCREASING and "= 4" for DECREASING
    got, want = lowered_and_reference(
        "cpu",
        "ARGMAX",
        {
            "InputTensor": tensor("FLOAT32", [5]),
            "OutputTensor": tensor("UINT32", [1]),
            "AxisCount": 1,
            "Axes": [0],
            "AxisDirection": f"DML_AXIS_DIRECTION_{direction}",
        },
        {"InputTensor": np.array([3, 2, 1, 2, 3], np.float32)},
    )
    assert got.tolist() == want.tolist() == [expected]


def test_one_hot_sizes_text() -> None:
    # "if OutputTensor has sizes {2,3,4,5} and Axis is 1, IndicesTensor has sizes {2,1,4,5}"
    indices = np.random.default_rng(0).integers(-4, 5, size=(2, 1, 4, 5)).astype(np.int32)
    got, want = lowered_and_reference(
        "cpu",
        "ONE_HOT",
        {
            "IndicesTensor": tensor("INT32", [2, 1, 4, 5]),
            "ValuesTensor": tensor("INT8", [1, 1, 1, 2]),
            "OutputTensor": tensor("INT8", [2, 3, 4, 5]),
            "Axis": 1,
        },
        {"IndicesTensor": indices, "ValuesTensor": np.array([-7, 9], np.int8).reshape(1, 1, 1, 2)},
    )
    np.testing.assert_array_equal(got, want)
    assert set(np.unique(got)) <= {-7, 9}


def test_one_hot_on_value_along_fastest_dimension_of_size_above_1() -> None:
    # "the 1st element along the fastest-changing dimension of size > 1 is OnValue"
    values = np.array([4, 2, 9], np.float32).reshape(1, 3, 1)
    got, _ = lowered_and_reference(
        "cpu",
        "ONE_HOT",
        {
            "IndicesTensor": tensor("UINT64", [1, 1, 2]),
            "ValuesTensor": tensor("FLOAT32", [1, 3, 1]),
            "OutputTensor": tensor("FLOAT32", [1, 3, 2]),
            "Axis": 1,
        },
        {"IndicesTensor": np.array([1, 2**64 - 1], np.uint64).reshape(1, 1, 2), "ValuesTensor": values},
    )
    assert got[0, :, 0].tolist() == [4, 2, 4] and got[0, :, 1].tolist() == [4, 4, 4]


def test_unsigned_indices_are_never_counted_from_the_end() -> None:
    # negative indices count from the end only for signed types: UINT32 0xFFFFFFFF is out of range
    for index_type, index in (("UINT32", 0xFFFFFFFF), ("UINT64", 2**64 - 1), ("INT32", -1), ("INT64", -1)):
        got, want = lowered_and_reference(
            "cpu",
            "ONE_HOT",
            {
                "IndicesTensor": tensor(index_type, [1]),
                "ValuesTensor": tensor("FLOAT32", [2]),
                "OutputTensor": tensor("FLOAT32", [3]),
                "Axis": 0,
            },
            {"IndicesTensor": np.array([index]).astype(index_type.lower()), "ValuesTensor": np.array([0, 1], np.float32)},
        )
        expected = [0, 0, 1] if index_type.startswith("INT") else [0, 0, 0]
        assert got.tolist() == want.tolist() == expected, index_type


@pytest.mark.parametrize("x", [[1000, -1000, 0], [-50000, 0, -50000], [1e30, 1e30, -1e30]])
def test_log_softmax_is_stable_on_large_inputs(x: list[float]) -> None:
    got, want = lowered_and_reference(
        "cpu",
        "ACTIVATION_LOG_SOFTMAX1",
        {"InputTensor": tensor("FLOAT32", [3]), "OutputTensor": tensor("FLOAT32", [3]), "AxisCount": 1, "Axes": [0]},
        {"InputTensor": np.array(x, np.float32)},
    )
    assert np.all(np.isfinite(got))
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def test_hardmax_equals_hardmax1_on_last_axis_remark() -> None:
    # "equivalent to DML_ACTIVATION_HARDMAX_OPERATOR_DESC when Axes == {DimensionCount - 1}"
    x = np.array([[1, 3, 3], [2, 2, 0]], np.float16)
    got, _ = lowered_and_reference(
        "cpu",
        "ACTIVATION_HARDMAX1",
        {"InputTensor": tensor("FLOAT16", [2, 3]), "OutputTensor": tensor("FLOAT16", [2, 3]), "AxisCount": 1, "Axes": [1]},
        {"InputTensor": x},
    )
    assert got.tolist() == [[0, 1, 0], [1, 0, 0]]


def test_mvn_scale_without_bias_and_bias_without_scale() -> None:
    x = np.arange(8, dtype=np.float32).reshape(1, 2, 2, 2)
    for name in ("ScaleTensor", "BiasTensor"):
        got, want = lowered_and_reference(
            "cpu",
            "MEAN_VARIANCE_NORMALIZATION",
            {
                "InputTensor": tensor("FLOAT32", [1, 2, 2, 2]),
                name: tensor("FLOAT32", [1, 1, 2, 1]),
                "OutputTensor": tensor("FLOAT32", [1, 2, 2, 2]),
                "CrossChannel": False,
                "NormalizeVariance": False,
                "Epsilon": 0.0,
            },
            {"InputTensor": x, name: np.array([2, -1], np.float32).reshape(1, 1, 2, 1)},
        )
        np.testing.assert_allclose(got, want, rtol=1e-6)


def test_dispatchable_level_bindings_take_initial_contents(tmp_path: Path) -> None:
    """Bindings on the dispatchable bind OWNED_BY_DML tensors at initialization."""
    model = {
        "resources": {
            "v": {"initialValuesDataType": "INT32", "initialValues": [5, 6]},
            "i": {"initialValuesDataType": "UINT32", "initialValues": [1, 0]},
            "o": {"initialValuesDataType": "INT32", "initialValues": {"valueCount": 4, "value": 0}},
        },
        "dispatchables": {
            "oh": {
                "type": "DML_OPERATOR_ONE_HOT",
                "bindings": {"ValuesTensor": "v"},
                "desc": {
                    "IndicesTensor": {"DataType": "UINT32", "Sizes": [2, 1]},
                    "ValuesTensor": {"DataType": "INT32", "Sizes": [1, 2], "Flags": "DML_TENSOR_FLAG_OWNED_BY_DML"},
                    "OutputTensor": {"DataType": "INT32", "Sizes": [2, 2]},
                    "Axis": 1,
                },
            }
        },
        "commands": [
            {"type": "dispatch", "dispatchable": "oh", "bindings": {"IndicesTensor": "i", "OutputTensor": "o"}},
            {"type": "print", "resource": "o"},
        ],
    }
    status, out, err = run_cli("run", write_model(tmp_path, model))
    assert status == 0, err
    assert printed(out)["o"] == [5, 6, 6, 5]
