"""DML_OPERATOR_NONZERO_COORDINATES: the page's example, what DirectML computes where the page is
silent (N above the effective rank: the last N coordinates; NaN non-zero, -0 zero), dml2onnx's
zeros past the count, refusals, and properties against the numpy reference."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dml2onnx import lowering
from dml2onnx.backends import dmlapi, runtime
from dml2onnx.cases.nonzero_coordinates import TYPES
from dml2onnx.core.desc import parse_operator_desc
from dml2onnx.core.errors import format_path
from dml2onnx.graph import dml_ep
from dml2onnx.lowering import tolerances
from strategies import SEEDS, shapes
from support import EPS, assert_matches_reference, every_output, make_desc, printed, refusal, run_cli, tensor, write_model

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def fields(dtype: str, shape: tuple[int, ...], n: int, count: tuple[int, ...] = (1,)) -> dict[str, Any]:
    m = int(np.prod(shape))
    coords = (1, 1, m, n) if len(shape) == 4 else (m, n)
    return {
        "InputTensor": tensor(dtype, shape),
        "OutputCountTensor": tensor("UINT32", count),
        "OutputCoordinatesTensor": tensor("UINT32", coords),
    }


def run(x: Any, n: int) -> tuple[int, np.ndarray]:
    x = np.asarray(x)
    desc = make_desc("NONZERO_COORDINATES", fields(x.dtype.name.upper(), x.shape, n))
    got = every_output(runtime.create(lowering.lower(desc, "t"), "t", "cpu"), desc, {"InputTensor": x})
    return int(got["OutputCountTensor"].ravel()[0]), got["OutputCoordinatesTensor"].reshape(-1, n)


PAGE_INPUT = np.array([[1.0, 0.0, 0.0, 2.0], [-0.0, 3.5, 0.0, -5.0]], np.float32).reshape(1, 1, 2, 4)


def test_page_example() -> None:
    count, coords = run(PAGE_INPUT, 2)
    assert count == 4
    assert coords.tolist() == [[0, 0], [0, 3], [1, 1], [1, 3], [0, 0], [0, 0], [0, 0], [0, 0]]


def test_what_directml_computes() -> None:
    """Measured with DirectML's API: N above the effective rank gives the last N coordinates;
    NaN, infinities and subnormals are non-zero, -0 is zero; the rows past the count are left
    unwritten by DirectML, zeros here."""
    count, coords = run(PAGE_INPUT, 4)
    assert count == 4 and coords[:4].tolist() == [[0, 0, 0, 0], [0, 0, 0, 3], [0, 0, 1, 1], [0, 0, 1, 3]]
    count, coords = run(np.array([0, -0.0, np.nan, 6e-8], np.float16), 1)
    assert count == 2 and coords.ravel().tolist() == [2, 3, 0, 0]
    count, coords = run(np.array([np.nan, 0, -0.0, 1, 0, np.inf, -1e-45], np.float32), 1)
    assert count == 4 and coords.ravel().tolist() == [0, 3, 5, 6, 0, 0, 0]
    count, coords = run(np.array([[0, 1, 0], [2, 0, 0]], np.int8), 2)
    assert count == 2 and coords.tolist() == [[0, 1], [1, 0], [0, 0], [0, 0], [0, 0], [0, 0]]


def test_directml_comparisons_skip_the_unwritten_rows() -> None:
    desc = make_desc("NONZERO_COORDINATES", fields("INT32", (2, 2), 2))
    want = {
        "OutputCountTensor": np.array([1], np.uint32),
        "OutputCoordinatesTensor": np.array([[1, 0], [0, 0], [0, 0], [0, 0]], np.uint32),
    }
    got = dict(want, OutputCoordinatesTensor=np.array([[1, 0], [0xCDCDCDCD] * 2, [0xCDCDCDCD] * 2, [0xCDCDCDCD] * 2], np.uint32))
    assert all(c.ok for c in tolerances.compare_outputs(desc, got, want, "dml").values())
    assert not tolerances.compare_outputs(desc, got, want, "cpu")["OutputCoordinatesTensor"].ok


def test_portable_passes_the_static_dml_check() -> None:
    desc = make_desc("NONZERO_COORDINATES", fields("UINT16", (3, 5), 2))
    assert dml_ep.check(lowering.lower(desc, "t")) == []


@pytest.mark.parametrize(
    ("change", "path", "message"),
    [
        ({"OutputCountTensor": tensor("UINT32", (1, 2))}, "desc.OutputCountTensor.Sizes", "must all be 1"),
        ({"OutputCoordinatesTensor": tensor("UINT32", (2, 6, 2))}, "desc.OutputCoordinatesTensor.Sizes", "1 before the last two"),
        ({"OutputCoordinatesTensor": tensor("UINT32", (7, 2))}, "desc.OutputCoordinatesTensor.Sizes[0]", "element count (6)"),
        ({"OutputCoordinatesTensor": tensor("UINT32", (6, 1))}, "desc.OutputCoordinatesTensor.Sizes[1]", "effective rank (2)"),
        ({"OutputCoordinatesTensor": tensor("UINT32", (6, 3))}, "desc.OutputCoordinatesTensor.Sizes[1]", "DimensionCount (2)"),
        ({"OutputCountTensor": tensor("INT32", (1,))}, "desc.OutputCountTensor.DataType", "UINT32"),
    ],
)
def test_refusals(change: dict[str, Any], path: str, message: str) -> None:
    e = refusal("NONZERO_COORDINATES", fields("FLOAT32", (2, 3), 2) | change)
    assert format_path(e.path) == path and message in e.rule, (e.path, e.rule)


def test_older_levels() -> None:
    e = refusal("NONZERO_COORDINATES", fields("FLOAT32", (2, 3), 2), level="3_1")
    assert e.path[:2] == ("desc", "InputTensor")


@EPS
@SETTINGS
@given(shape=shapes(), data=st.data(), seed=SEEDS, dtype=st.sampled_from(TYPES), density=st.sampled_from([0.0, 0.3, 0.7, 1.0]))
def test_matches_reference(ep: str, shape: tuple[int, ...], data: st.DataObject, seed: int, dtype: Any, density: float) -> None:
    lead = next((i for i, s in enumerate(shape) if s != 1), len(shape))
    n = data.draw(st.integers(max(1, len(shape) - lead), len(shape)))
    rng = np.random.default_rng(seed)
    x = np.where(rng.random(shape) < density, rng.integers(1, 100, shape), 0).astype(dtype.numpy)
    if dtype.is_float:
        x = np.where(rng.random(shape) < 0.2, np.array(-0.0, dtype.numpy), x)
    count = (1,) * data.draw(st.integers(1, 8))
    f = fields(dtype.name, shape, n, count)
    f["OutputCoordinatesTensor"] = tensor("UINT32", (int(np.prod(shape)), n))
    assert_matches_reference(ep, "NONZERO_COORDINATES", f, {"InputTensor": x})


_why = dmlapi.missing()
live = pytest.mark.skipif(_why is not None, reason=f"DirectML's API under Wine is not set up ({_why})")


@live
def test_directml_leaves_the_rows_past_the_count_unwritten() -> None:
    """DirectML writes the count's rows only: the 0xCD fill stays in the rest; the last N
    coordinates for N above the effective rank; N below it refused."""
    desc = make_desc("NONZERO_COORDINATES", fields("FLOAT32", (1, 1, 2, 4), 4))
    got = dmlapi.execute(desc, {"InputTensor": PAGE_INPUT}).outputs
    coords = got["OutputCoordinatesTensor"].reshape(-1, 4)
    assert int(got["OutputCountTensor"].ravel()[0]) == 4
    assert coords[:4].tolist() == [[0, 0, 0, 0], [0, 0, 0, 3], [0, 0, 1, 1], [0, 0, 1, 3]]
    assert (coords[4:] == 0xCDCDCDCD).all()
    narrow = parse_operator_desc("NONZERO_COORDINATES", fields("INT8", (2, 3), 1), ("desc",), ("type",))
    with pytest.raises(dmlapi.DmlApiError):
        dmlapi.execute(narrow, {"InputTensor": np.array([[0, 1, 0], [2, 0, 0]], np.int8)})


@live
@pytest.mark.parametrize("ep", ["directml", "cpu"])
def test_rows_past_the_count_keep_the_resource_contents_under_directml(tmp_path: Path, ep: str) -> None:
    """`run --ep directml` binds the output resource's bytes as DirectML's output buffer, as
    DxDispatch does: the rows past the count keep the resource's 7s; the lowered graphs write zeros
    there (the reference's rows past the count)."""
    model = {
        "resources": {
            "input": {"initialValuesDataType": "FLOAT32", "initialValues": PAGE_INPUT.ravel().tolist()},
            "count": {"initialValuesDataType": "UINT32", "initialValues": [9]},
            "coordinates": {"initialValuesDataType": "UINT32", "initialValues": {"valueCount": 40, "value": 7}},
        },
        "dispatchables": {"nz": {"type": "DML_OPERATOR_NONZERO_COORDINATES", "desc": fields("FLOAT32", (1, 1, 2, 4), 4)}},
        "commands": [
            {
                "type": "dispatch",
                "dispatchable": "nz",
                "bindings": {"InputTensor": "input", "OutputCountTensor": "count", "OutputCoordinatesTensor": "coordinates"},
            },
            {"type": "print", "resource": "coordinates"},
        ],
    }
    status, out, err = run_cli("run", write_model(tmp_path, model), "--ep", ep)
    assert status == 0, err
    rest = 7 if ep == "directml" else 0
    assert printed(out)["coordinates"] == [0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 1, 1, 0, 0, 1, 3] + [rest] * 16 + [7] * 8
