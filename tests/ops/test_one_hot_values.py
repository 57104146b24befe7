"""DML_OPERATOR_ONE_HOT's ValuesTensor (dml2onnx/ops/one_hot.py): DirectML's CreateOperator takes it
with any DimensionCount, whatever IndicesTensor's, and any Sizes holding 2 or more elements;
OffValue and OnValue are its elements 0 and 1 in row-major order. ONNX Runtime's DirectML EP
writes torch's F.one_hot as IndicesTensor [2, 5, 1], ValuesTensor [1, 1, 1, 2], OutputTensor
[2, 5, 7]. VALUE_SIZES were run through DirectML's own API (DirectML.dll of onnxruntime-directml
1.24.4 under Wine): each gave OffValue 10 and OnValue 11 from values 10, 11, 12, ..."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from dml2onnx import lowering
from dml2onnx.backends import dmlapi, runtime
from dml2onnx.core.desc import parse_operator_desc
from dml2onnx.core.errors import ModelError
from dml2onnx.graph import dml_ep
from dml2onnx.ops import registry
from support import every_output, make_desc, mismatches, tensor

VALUE_SIZES = [[2], [1, 2], [2, 1], [1, 1, 2], [1, 1, 1, 2], [1, 1, 1, 1, 1, 1, 1, 2], [3], [1, 3], [2, 2], [4, 1], [3, 1, 1]]
INDICES = np.array([0, 1, 2, 3, 4, 6, 5, 0, 9, 1], np.uint32).reshape(2, 5, 1)  # 9 is out of range: all OffValue


def fields(values: list[int], index_type: str = "UINT32", value_type: str = "FLOAT32") -> dict[str, Any]:
    return {
        "IndicesTensor": tensor(index_type, [2, 5, 1]),
        "ValuesTensor": tensor(value_type, values),
        "OutputTensor": tensor(value_type, [2, 5, 7]),
        "Axis": 2,
    }


def values_of(sizes: list[int], dtype: str = "FLOAT32") -> np.ndarray:
    return np.arange(10, 10 + int(np.prod(sizes))).reshape(sizes).astype(dtype.lower())


def expected(dtype: str = "FLOAT32") -> np.ndarray:
    """OnValue 11 at each index (none for 9), OffValue 10 elsewhere."""
    want = np.full((2, 5, 7), 10, dtype.lower())
    for (n, c, _), i in np.ndenumerate(INDICES):
        if i < 7:
            want[n, c, i] = 11
    return want


@pytest.mark.parametrize("sizes", VALUE_SIZES, ids=["x".join(map(str, s)) for s in VALUE_SIZES])
def test_values_of_any_rank(sizes: list[int]) -> None:
    """The reference and the lowering on every target (run on the CPU EP; the `dml` target by the
    DirectML EP's static check) read elements 0 and 1."""
    for value_type in ("FLOAT32", "FLOAT16", "INT8", "INT64"):
        desc = make_desc("ONE_HOT", fields(sizes, value_type=value_type))
        feeds = {"IndicesTensor": INDICES, "ValuesTensor": values_of(sizes, value_type)}
        want = registry.reference_outputs(desc, feeds)
        np.testing.assert_array_equal(want["OutputTensor"], expected(value_type))
        for target in ("portable", "cpu", "cuda", "dml"):
            model = lowering.lower(desc, "t", target=target)
            if target == "dml":
                assert dml_ep.check(model) == []
                continue
            got = every_output(runtime.create(model, "t", "cpu"), desc, feeds)
            assert not (bad := mismatches(desc, got, want, "cpu")), (sizes, value_type, target, bad)


def test_fewer_than_two_values_are_refused() -> None:
    for sizes in ([1], [1, 1]):
        with pytest.raises(ModelError, match="at least 2 elements"):
            make_desc("ONE_HOT", fields(sizes))


_why = dmlapi.missing()


@pytest.mark.skipif(_why is not None, reason=f"DirectML's API under Wine is not set up ({_why})")
def test_directml_computes_so() -> None:
    for sizes in VALUE_SIZES:
        desc = make_desc("ONE_HOT", fields(sizes))
        got = dmlapi.execute(desc, {"IndicesTensor": INDICES, "ValuesTensor": values_of(sizes)}).output
        np.testing.assert_array_equal(got, expected(), err_msg=str(sizes))


@pytest.mark.skipif(_why is not None, reason=f"DirectML's API under Wine is not set up ({_why})")
def test_directml_refuses_fewer_than_two_values() -> None:
    for sizes in ([1], [1, 1]):
        desc = parse_operator_desc("ONE_HOT", fields(sizes), ("desc",), ("type",))
        with pytest.raises(dmlapi.DmlApiError, match="E_INVALIDARG"):
            dmlapi.execute(desc, {"IndicesTensor": INDICES, "ValuesTensor": values_of(sizes)})
