"""DML_OPERATOR_REDUCE, ARGMAX and ARGMIN with AxisCount 0 (dml2onnx/ops/reduce.py, argmax.py): ONNX
Runtime's DirectML EP writes REDUCE SUM with no Axes over a strided InputTensor view for Einsums
that only permute or take a diagonal ("ii->i", "abc->cab") and for ReduceSum with
noop_with_empty_axes. DirectML computes each function over a one-element reduction; NO_AXES holds
what its own API gave (DirectML.dll of onnxruntime-directml 1.24.4 under Wine), every lowering
candidate on the CPU EP and the reference must give it, and test_directml_computes_so runs each
desc through DirectML's API again."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from dml2onnx import lowering
from dml2onnx.backends import dmlapi, runtime
from dml2onnx.core.desc import parse_operator_desc
from dml2onnx.core.errors import ModelError
from dml2onnx.graph import dml_ep
from dml2onnx.graph.builder import DEFAULT_OPSET
from dml2onnx.lowering import choices
from dml2onnx.ops import registry
from support import every_output, make_desc, mismatches, printed, run_cli, tensor

F32 = [-2.5, -1, 0, 1.5, 3, 7]
I32 = [-3, -1, 0, 2, 5, 100000]
U32 = [0, 1, 2, 3, 70000, 4000000000]
I8 = [-3, -1, 0, 2, 5, 100]

# (Function, InputTensor's type, input row, DirectML's output row) over an InputTensor [1, 6]
NO_AXES: list[tuple[str, str, list[float], list[float]]] = [
    *((f, t, F32, F32) for f in ("SUM", "MULTIPLY", "AVERAGE", "MAX", "MIN") for t in ("FLOAT32", "FLOAT16")),
    *((f, "INT32", I32, I32) for f in ("SUM", "MULTIPLY", "MAX", "MIN")),
    *((f, "UINT32", U32, U32) for f in ("SUM", "MULTIPLY", "MAX", "MIN", "L1")),
    ("MAX", "INT8", I8, I8),
    ("MIN", "INT8", I8, I8),
    ("L1", "FLOAT32", F32, [abs(v) for v in F32]),
    ("L1", "FLOAT16", F32, [abs(v) for v in F32]),
    ("L1", "INT32", I32, [abs(v) for v in I32]),
    ("L2", "FLOAT32", F32, [abs(v) for v in F32]),
    ("L2", "FLOAT16", F32, [abs(v) for v in F32]),
    # x * x, wrapping: 100000**2 mod 2**32 = 1410065408 (INT32), 70000**2 and 4e9**2 modulo 2**32
    ("SUM_SQUARE", "FLOAT32", F32, [v * v for v in F32]),
    ("SUM_SQUARE", "FLOAT16", F32, [v * v for v in F32]),
    ("SUM_SQUARE", "INT32", I32, [9, 1, 0, 4, 25, 1410065408]),
    ("SUM_SQUARE", "UINT32", U32, [0, 1, 4, 9, 605032704, 1983905792]),
    # log(x): NaN below 0, -inf at 0
    ("LOG_SUM", "FLOAT32", F32, [np.nan, np.nan, -np.inf, *np.log(np.array([1.5, 3, 7], np.float32)).tolist()]),
    # log(exp(x)): x to FLOAT32's precision (DirectML gives -2.4999998 for -2.5)
    ("LOG_SUM_EXP", "FLOAT32", F32, F32),
    ("LOG_SUM_EXP", "FLOAT16", F32, F32),
    *((f, t, F32, [0] * 6) for f in ("ARGMAX", "ARGMIN") for t in ("FLOAT32", "FLOAT16")),
    *((f, t, row, [0] * 6) for f in ("ARGMAX", "ARGMIN") for t, row in (("INT32", I32), ("UINT32", U32), ("INT8", I8))),
]


def reduce_fields(
    function: str, dtype: str, sizes: list[int], out: list[int] | None = None, index: str = "UINT32"
) -> dict[str, Any]:
    out_type = index if function.startswith("ARG") else dtype
    return {
        "Function": function,
        "InputTensor": tensor(dtype, sizes),
        "OutputTensor": tensor(out_type, out or sizes),
        "AxisCount": 0,
        "Axes": [],
    }


def arg_fields(dtype: str, sizes: list[int], out: list[int] | None = None, direction: str = "INCREASING") -> dict[str, Any]:
    return {
        "InputTensor": tensor(dtype, sizes),
        "OutputTensor": tensor("UINT32", out or sizes),
        "AxisCount": 0,
        "Axes": [],
        "AxisDirection": direction,
    }


def _assert_row(got: np.ndarray, want: list[float], what: object, exact: bool = False) -> None:
    w = np.array(want, np.float64)
    if exact or got.dtype.kind != "f":
        np.testing.assert_array_equal(got.ravel().astype(np.float64), w, err_msg=str(what))
    else:
        rtol = 1e-3 if got.dtype == np.float16 else 1e-6
        np.testing.assert_allclose(got.ravel().astype(np.float64), w, rtol=rtol, err_msg=str(what))


def _every_candidate(op: str, fields: dict[str, Any], x: np.ndarray) -> dict[str, np.ndarray]:
    """The reference's outputs, after checking every candidate on every target that runs on the
    CPU EP against it (the `dml` target by the DirectML EP's static check)."""
    desc = make_desc(op, fields)
    want = registry.reference_outputs(desc, {"InputTensor": x})
    for variant in choices.available(desc, DEFAULT_OPSET):
        for target in ("portable", "cpu", "cuda", "dml"):
            model = lowering.lower(desc, "t", target=target, variant=variant)
            assert dml_ep.check(model) == [] or target in ("cpu", "cuda"), (target, variant)
            if target != "dml":
                got = every_output(runtime.create(model, "t", "cpu"), desc, {"InputTensor": x})
                assert not (bad := mismatches(desc, got, want, "cpu")), (op, fields, variant, target, bad)
    return want


@pytest.mark.parametrize(("function", "dtype", "x", "want"), NO_AXES, ids=[f"{f}-{t}" for f, t, _, _ in NO_AXES])
def test_reduce_without_axes(function: str, dtype: str, x: list[float], want: list[float]) -> None:
    fields = reduce_fields(function, dtype, [1, 6])
    got = _every_candidate("REDUCE", fields, np.array(x, dtype.lower()).reshape(1, 6))["OutputTensor"]
    _assert_row(got, want, (function, dtype), exact=function not in ("LOG_SUM", "LOG_SUM_EXP"))


@pytest.mark.parametrize("op", ["ARGMAX", "ARGMIN"])
def test_argmax_argmin_without_axes(op: str) -> None:
    for direction in ("INCREASING", "DECREASING"):
        x = np.array(F32, np.float32).reshape(2, 3)
        got = _every_candidate(op, arg_fields("FLOAT32", [2, 3], direction=direction), x)["OutputTensor"]
        assert got.tolist() == [[0, 0, 0], [0, 0, 0]]


def test_the_lowering_is_element_wise() -> None:
    """No reduction node: a copy, |x|, x * x, log or a constant 0."""

    def ops(function: str, dtype: str) -> list[str]:
        return [n.op_type for n in lowering.lower(make_desc("REDUCE", reduce_fields(function, dtype, [4])), "t").graph.node]

    assert ops("SUM", "FLOAT32") == ["Identity"]
    assert ops("L2", "FLOAT32") == ["Abs"]
    assert ops("SUM_SQUARE", "INT32") == ["Mul"]
    assert ops("ARGMAX", "FLOAT32") == ["ConstantOfShape"]
    assert ops("LOG_SUM", "FLOAT16") == ["Cast", "Log", "Cast"]


def test_output_sizes_must_be_the_inputs() -> None:
    for out in ([1, 1], [6, 1]):
        with pytest.raises(ModelError, match="must be"):
            make_desc("REDUCE", reduce_fields("SUM", "FLOAT32", [1, 6], out))
        with pytest.raises(ModelError, match="must be"):
            make_desc("ARGMAX", arg_fields("FLOAT32", [1, 6], out))
    # an axis named twice or out of range is still refused
    with pytest.raises(ModelError, match="out of range"):
        make_desc("REDUCE", reduce_fields("SUM", "FLOAT32", [1, 6]) | {"AxisCount": 1, "Axes": [2]})


def test_a_diagonal_through_a_strided_view(tmp_path: Path) -> None:
    """ "ii->i" as the DirectML EP writes it: SUM with no Axes over sizes [4], strides [5] of a
    4x4 buffer: the diagonal."""
    desc = reduce_fields("SUM", "FLOAT32", [4]) | {
        "InputTensor": {"DataType": "FLOAT32", "Sizes": [4], "Strides": [5], "TotalTensorSizeInBytes": 64}
    }
    model = {
        "resources": {
            "x": {"initialValuesDataType": "FLOAT32", "initialValues": [float(v) for v in range(16)]},
            "y": {"initialValuesDataType": "FLOAT32", "initialValues": [0.0] * 4},
        },
        "dispatchables": {"diag": {"type": "DML_OPERATOR_REDUCE", "desc": desc}},
        "commands": [
            {"type": "dispatch", "dispatchable": "diag", "bindings": {"InputTensor": "x", "OutputTensor": "y"}},
            {"type": "print", "resource": "y"},
        ],
    }
    path = tmp_path / "diag.json"
    path.write_text(json.dumps(model))
    engines = ["cpu"] + (["dml-api"] if dmlapi.missing() is None else [])
    for ep in engines:
        code, out, err = run_cli("run", str(path), "--ep", ep, "-q")
        assert code == 0, err
        assert printed(out) == {"y": [0, 5, 10, 15]}, (ep, out)


_why = dmlapi.missing()


@pytest.mark.skipif(_why is not None, reason=f"DirectML's API under Wine is not set up ({_why})")
def test_directml_computes_so() -> None:
    for function, dtype, x, want in NO_AXES:
        desc = make_desc("REDUCE", reduce_fields(function, dtype, [1, 6]))
        got = dmlapi.execute(desc, {"InputTensor": np.array(x, dtype.lower()).reshape(1, 6)}).output
        _assert_row(got, want, (function, dtype))
    for op in ("ARGMAX", "ARGMIN"):
        for direction in ("INCREASING", "DECREASING"):
            desc = make_desc(op, arg_fields("FLOAT32", [2, 3], direction=direction))
            assert dmlapi.execute(desc, {"InputTensor": np.array(F32, np.float32).reshape(2, 3)}).output.tolist() == [[0] * 3] * 2
    # MAX and MIN skip NaN as over several elements (the NaN finding: the reference keeps NaN)
    for function, want in (("MAX", -np.inf), ("MIN", np.inf)):
        desc = make_desc("REDUCE", reduce_fields(function, "FLOAT32", [2]))
        assert dmlapi.execute(desc, {"InputTensor": np.array([np.nan, 1], np.float32)}).output.tolist() == [want, 1]


@pytest.mark.skipif(_why is not None, reason=f"DirectML's API under Wine is not set up ({_why})")
def test_directml_refuses_other_output_sizes() -> None:
    """What test_output_sizes_must_be_the_inputs refuses, DirectML's CreateOperator refuses
    (parsed without dml2onnx's validation): E_INVALIDARG."""
    x = np.zeros((1, 6), np.float32)
    for out in ([1, 1], [6, 1]):
        for op, fields in (
            ("REDUCE", reduce_fields("SUM", "FLOAT32", [1, 6], out)),
            ("ARGMAX", arg_fields("FLOAT32", [1, 6], out)),
        ):
            desc = parse_operator_desc(op, fields, ("desc",), ("type",))
            with pytest.raises(dmlapi.DmlApiError, match="E_INVALIDARG"):
                dmlapi.execute(desc, {"InputTensor": x})
