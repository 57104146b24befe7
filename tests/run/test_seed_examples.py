"""Every example on the operator pages (models/), through the command line, asserting the exact values."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from support import printed, run_cli

MODELS = Path(__file__).resolve().parents[2] / "models"


def run_model(name: str) -> dict[str, list[float]]:
    status, out, err = run_cli("run", str(MODELS / f"{name}.json"))
    assert status == 0, err
    return printed(out)


def test_hardmax1_page_examples() -> None:
    got = run_model("hardmax1")
    assert got["example1_output"] == [1, 0, 0, 1, 1, 1, 0, 0]  # Axes {1}
    assert got["example2_output"] == [1, 0, 0, 1, 0, 1, 1, 0]  # Axes {0}
    assert got["example3_output"] == [0, 0, 0, 1, 0, 1, 0, 0]  # Axes {0, 2}


def _log_softmax(x: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
    m = x.max(axis=axes, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=axes, keepdims=True))


@pytest.mark.parametrize("example,axes", [(1, (1,)), (2, (0,)), (3, (0, 2))])
def test_log_softmax1_page_examples_true_values(example: int, axes: tuple[int, ...]) -> None:
    # The page's outputs are copied from HARDMAX1 (0/1 values); these are the true values.
    x = np.array([12, 0, -101, 11, 3, 234, 0, -101], dtype=np.float64).reshape(2, 2, 2)
    want = _log_softmax(x, axes).reshape(-1)
    got = np.array(run_model("log_softmax1")[f"example{example}_output"])
    # print shows 6 significant digits
    np.testing.assert_allclose(got, want, rtol=5e-6, atol=1e-6)  # float32 log of a sum near 1
    assert np.all(got <= 0)


def test_log_softmax1_example1_first_values_by_hand() -> None:
    got = run_model("log_softmax1")["example1_output"]
    # {12, -101} along axis 1: 12 - log(e^12 + e^-101) = 0 to float32; -101 - 12 = -113
    assert got[0] == 0 and got[2] == -113


def test_argmax_page_examples() -> None:
    got = run_model("argmax")
    assert got["columns"] == [1, 2, 1]
    assert got["rows"] == [2, 2, 1]
    assert got["all"] == [7]


def test_one_hot_page_examples() -> None:
    got = run_model("one_hot")
    assert got["example1_output"] == [1, 0, 0, 0, 0, 0, 0, 1, 0, 0, 1, 0]
    assert got["example2_output"] == [1, 0, 0, 1, 0, 0, 1, 0, 0, 1, 0, 0]
    assert got["example3_output"] == [2, 4, 4, 4, 4, 4, 4, 2, 4, 4, 2, 4]
    assert got["example4_output"] == [0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]


def test_mean_variance_normalization_model() -> None:
    got = run_model("mean_variance_normalization")
    x = np.arange(1, 9, dtype=np.float64).reshape(1, 2, 2, 2)
    per_channel = (x - x.mean(axis=(2, 3), keepdims=True)) / np.sqrt(x.var(axis=(2, 3), keepdims=True) + 1e-5)
    np.testing.assert_allclose(got["per_channel"], per_channel.reshape(-1), rtol=1e-5)
    cross = (x - x.mean()) / np.sqrt(x.var() + 1e-5)
    scaled = np.maximum(cross * np.array([2, 0.5]).reshape(1, 2, 1, 1) + np.array([1, -1]).reshape(1, 2, 1, 1), 0)
    np.testing.assert_allclose(got["cross_channel_scaled_relu"], scaled.reshape(-1), rtol=1e-5)
    assert got["centered_only"] == [-1.5, -0.5, 0.5, 1.5, -1.5, -0.5, 0.5, 1.5]


def test_print_text_is_dxdispatch_format() -> None:
    status, out, _ = run_cli("run", str(MODELS / "argmax.json"))
    assert status == 0
    assert out.splitlines() == [
        "Resource 'input': 1, 2, 3, 3, 0, 4, 2, 5, 2",
        "Resource 'columns': 1, 2, 1",
        "Resource 'rows': 2, 2, 1",
        "Resource 'all': 7",
    ]


def test_argmin_page_examples_and_ties() -> None:
    got = run_model("argmin")
    assert got["columns"] == [0, 1, 2]
    assert got["rows"] == [0, 1, 0]
    assert got["all"] == [4]
    assert got["first"] == [0] and got["last"] == [4]  # argmin({1, 2, 3, 2, 1}) by AxisDirection


def test_reduce_page_examples() -> None:
    got = run_model("reduce")
    assert got["columns"] == [6, 6, 9]
    assert got["rows"] == [6, 7, 8]
    assert got["all"] == [21]
    assert got["argmax_all"] == [7]


def test_strided_views() -> None:
    got = run_model("strided_views")
    assert got["row_max"] == [1, 99, 0, 99]  # written through strides [2, 1]: the gaps keep 99
    assert got["column_max"] == [1, 0, 1, 1]  # the transposed view: max of (3, 8), (9, 2), (1, 7), (4, 6)
    assert got["first_row_hardmax"] == [0, 1, 0, 0] * 3  # stride 0: the first row three times
