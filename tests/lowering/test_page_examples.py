"""The doc pages' examples for the operators of issue 19 (models/page_examples.json): every page of
ELEMENT_WISE_*, CAST, FILL_VALUE_*, DIAGONAL_MATRIX(1), ACTIVATION_HARD_SWISH, SWISH,
PARAMETERIZED_RELU and RELU_GRAD was read; these are the ones with input and output values. The
model runs through the command line on the CPU EP, ONNX Runtime's DirectML EP under Wine (`dml`)
and DirectML's own API (`directml`), and each printed resource must be the page's output (floats
within dml2onnx.lowering.tolerances for the operator, integers exactly). Where the page's output is not what
DirectML computes, the test asserts DirectML's value and says why."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from dml2onnx.backends import dmlapi, winhost
from dml2onnx.core import dtypes
from dml2onnx.lowering import tolerances
from support import printed, run_cli

MODEL = Path(__file__).resolve().parents[2] / "models" / "page_examples.json"

# resource printed -> (operator, output data type, the page's output in row-major order)
EXPECTED: dict[str, tuple[str, str, list[float]]] = {
    # in the description: [[1, 0], [1, 1]] selects from [[1, 2], [3, 4]] or [[9, 8], [7, 6]]
    "element_wise_if_1_out": ("ELEMENT_WISE_IF", "FLOAT32", [1, 8, 3, 4]),
    "element_wise_bit_count_1_out": ("ELEMENT_WISE_BIT_COUNT", "UINT32", [0, 6, 4, 5]),
    "element_wise_bit_not_1_out": ("ELEMENT_WISE_BIT_NOT", "UINT8", [255, 127, 213, 0]),
    # the page's example is BIT_NOT's (one InputTensor, no BTensor): with B = 255 XOR is NOT
    "element_wise_bit_xor_1_out": ("ELEMENT_WISE_BIT_XOR", "UINT8", [255, 127, 213, 0]),
    "fill_value_constant_1_out": ("FILL_VALUE_CONSTANT", "FLOAT32", [13.0] * 8),
    "fill_value_sequence_1_out": ("FILL_VALUE_SEQUENCE", "FLOAT32", [3, 5, 7]),
    # ValueDelta -2 on the page: the UINT8 union member 254
    "fill_value_sequence_2_out": ("FILL_VALUE_SEQUENCE", "UINT8", [10, 8, 6, 4]),
    "diagonal_matrix_1_out": ("DIAGONAL_MATRIX", "FLOAT32", [1, 0, 0, 0, 1, 0, 0, 0, 1]),
    "diagonal_matrix_2_out": ("DIAGONAL_MATRIX", "FLOAT32", [0, 1, 0, 0, 0, 1, 0, 0, 0]),
    "diagonal_matrix_3_out": ("DIAGONAL_MATRIX", "FLOAT32", [0, 0, 1, 0, 0, 1]),
    "diagonal_matrix_4_out": ("DIAGONAL_MATRIX", "FLOAT32", [0, 0, 0, 0, 0, 0]),
    # "Default identity matrix" with Value 7: the page prints
    #     [[1, 0, 0, 0, 0], [0, 1, 0, 0, 0], [0, 0, 1, 0, 0], [0, 0, 0, 1, 0]]
    # but DirectML writes Value, 7, on the diagonal (its API and its EP, as dml2onnx): the page's
    # output is that of Value 1
    "diagonal_matrix1_1_out": ("DIAGONAL_MATRIX1", "FLOAT32", (np.eye(4, 5) * 7).ravel().tolist()),
    "diagonal_matrix1_2_out": (
        "DIAGONAL_MATRIX1",
        "FLOAT32",
        [7, 7, 7, 0, 0, 0, 7, 7, 7, 0, 0, 0, 7, 7, 7, 0, 0, 0, 7, 7],
    ),
    "diagonal_matrix1_3_out": (
        "DIAGONAL_MATRIX1",
        "FLOAT32",
        [0, 7, 3, 7, 9, 0, 0, 8, 6, 9, 0, 0, 0, 8, 7, 0, 0, 0, 0, 4],
    ),
    "diagonal_matrix1_4_out": (
        "DIAGONAL_MATRIX1",
        "FLOAT32",
        [4, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 2, 0],
    ),
}

_dml_missing = None if winhost.available() else f"the DirectML EP under Wine is not set up ({winhost.missing()})"
_api_missing = dmlapi.missing()
EPS = [
    "cpu",
    pytest.param("dml", marks=pytest.mark.skipif(_dml_missing is not None, reason=f"{_dml_missing}: `make dml-setup`")),
    pytest.param(
        "directml",
        marks=pytest.mark.skipif(_api_missing is not None, reason=f"DirectML's API under Wine: {_api_missing}"),
    ),
]


def run(ep: str) -> dict[str, list[float]]:
    try:
        status, out, err = run_cli("run", str(MODEL), "--ep", ep)
    finally:
        if ep != "cpu":
            # each Wine host holds ~2 GB of shared memory: leave none running for the tests after
            # (the OOM killer took a later test's host when these stayed up)
            winhost.shutdown()
    assert status == 0, err
    return printed(out)


@pytest.mark.parametrize("ep", EPS)
def test_page_examples(ep: str) -> None:
    got = run(ep)
    assert list(got) == list(EXPECTED)  # one print per example, in the model's order
    for name, (operator, data_type, want) in EXPECTED.items():
        t = dtypes.BY_NAME[data_type]
        tol = tolerances.tolerance(operator, t, ep)
        if tol.exact:
            assert got[name] == want, (name, got[name], want)
        else:
            np.testing.assert_allclose(got[name], want, rtol=tol.rtol, atol=tol.atol, err_msg=name)
