"""Shared test helpers: build a desc from JSON, lower it, run it on ORT's CPU EP, and run
the command line in-process."""

from __future__ import annotations

import contextlib
import io
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from dml2onnx import lowering
from dml2onnx.backends import runtime
from dml2onnx.commands import cli
from dml2onnx.core.desc import OperatorDesc, parse_operator_desc
from dml2onnx.core.errors import ModelError
from dml2onnx.graph.builder import DEFAULT_OPSET
from dml2onnx.lowering import choices, tolerances
from dml2onnx.ops import registry

# Each property runs on the CPU EP and, where onnxruntime-gpu is installed, on the CUDA EP with CPU
# fallback disabled (`pytest -m gpu` selects those).
EP_PARAMS = [
    "cpu",
    pytest.param(
        "cuda",
        marks=[pytest.mark.gpu, pytest.mark.skipif("cuda" not in runtime.available(), reason="no CUDA execution provider")],
    ),
]
EPS = pytest.mark.parametrize("ep", EP_PARAMS)


def tensor(dtype: str, sizes: list[int] | tuple[int, ...]) -> dict[str, Any]:
    return {"DataType": dtype, "Sizes": list(sizes)}


def make_desc(op: str, fields: dict[str, Any]) -> OperatorDesc:
    desc = parse_operator_desc(op, fields, ("desc",), ("type",))
    lowering.validate(desc)
    return desc


def run_lowered(desc: OperatorDesc, inputs: dict[str, np.ndarray], opset: int | None = None, ep: str = "cpu") -> np.ndarray:
    model = lowering.lower(desc, "test", **({"opset": opset} if opset else {}))
    return runtime.create(model, "test", ep).run(inputs)


def lowered_and_reference(
    ep: str, op: str, fields: dict[str, Any], inputs: dict[str, np.ndarray], opset: int | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """The lowered graph's output on `ep` (no CPU fallback) and the numpy reference's."""
    desc = make_desc(op, fields)
    got = run_lowered(desc, inputs, opset, ep)
    want = registry.family(desc.schema.name).reference(desc, inputs)
    out = desc.tensor(desc.output)
    assert got.dtype == out.data_type.numpy, (got.dtype, out.data_type)
    assert got.shape == out.sizes, (got.shape, out.sizes)
    return got, want


def write_model(folder: Path, model: dict[str, Any], name: str = "model.json") -> str:
    path = folder / name
    path.write_text(json.dumps(model))
    return str(path)


def run_cli(*args: str) -> tuple[int, str, str]:
    """(exit status, stdout, stderr) of `dml2onnx ARGS`, in-process."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = cli.main(list(args))
        except SystemExit as e:  # argparse usage errors and --help
            status = int(e.code or 0)
    return status, out.getvalue(), err.getvalue()


def printed(stdout: str) -> dict[str, list[float]]:
    """`Resource 'NAME': 1, 2` lines -> {NAME: [1.0, 2.0]}."""
    result = {}
    for line in stdout.splitlines():
        if line.startswith("Resource '"):
            name, _, values = line[len("Resource '") :].partition("': ")
            result[name] = [float(v) for v in values.split(", ")]
    return result


def refusal(op: str, fields: dict[str, Any], level: str | None = None) -> ModelError:
    """The ModelError validating this desc raises (at the newest feature level, or `level`)."""
    with pytest.raises(ModelError) as e:
        lowering.validate(parse_operator_desc(op, fields, ("desc",), ("type",), **({"level": level} if level else {})))
    return e.value


def every_output(session: Any, desc: OperatorDesc, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """A session's every output, by the desc's output fields, each of its tensor's type and Sizes."""
    got = lowering.by_field(desc, session.run_all(inputs))
    for field, value in got.items():
        t = desc.tensor(field)
        assert (value.dtype, value.shape) == (t.data_type.numpy, t.sizes), (field, value.dtype, value.shape, t)
    return got


def mismatches(desc: OperatorDesc, got: dict[str, np.ndarray], want: dict[str, np.ndarray], ep: str) -> str:
    """'' where every output matches the reference within tolerances.py, else what differs."""
    return "; ".join(
        f"{field}: max abs {c.max_abs}, max rel {c.max_rel}, got {got[field].ravel()[:8]} want {want[field].ravel()[:8]}"
        for field, c in tolerances.compare_outputs(desc, got, want, ep).items()
        if not c.ok
    )


def assert_matches_reference(ep: str, op: str, fields: dict[str, Any], feeds: dict[str, np.ndarray]) -> None:
    """The lowered graph on `ep` against the numpy reference, every output: within tolerances.py
    for floats, exactly for integers (the scalar fields and the first elements of both in the message)."""
    desc = make_desc(op, fields)
    got = every_output(runtime.create(lowering.lower(desc, "test"), "test", ep), desc, feeds)
    want = registry.reference_outputs(desc, feeds)
    scalars = {k: v for k, v in fields.items() if not k.endswith("Tensor")}
    assert not (bad := mismatches(desc, got, want, ep)), (op, scalars, bad)


def assert_prints_match(got: str, want: str) -> None:
    """Two `run` outputs print the same resources with the same values: exactly, or within 1e-4 (six
    printed digits round differently: POW's 1.2656251 against 1.265625; lavapipe's asin and acos
    under DirectML, tolerances.py); NaN and infinities exactly."""
    assert got, "nothing printed"
    if got == want:
        return
    a, b = printed(got), printed(want)
    assert a.keys() == b.keys(), (got, want)
    for name in b:
        np.testing.assert_allclose(a[name], b[name], rtol=1e-4, atol=1e-4, err_msg=name)


def argmax_model(
    in_tensor: dict[str, Any], buffer: list[float], out_tensor: dict[str, Any], out_init: list[int], axis: int = 1
) -> dict[str, Any]:
    """ArgMax of a FLOAT32 resource `x` bound as `in_tensor` into a UINT32 resource `y`, printed."""
    return {
        "resources": {
            "x": {"initialValuesDataType": "FLOAT32", "initialValues": buffer},
            "y": {"initialValuesDataType": "UINT32", "initialValues": out_init},
        },
        "dispatchables": {
            "a": {
                "type": "ARGMAX",
                "desc": {
                    "InputTensor": in_tensor,
                    "OutputTensor": out_tensor,
                    "AxisCount": 1,
                    "Axes": [axis],
                    "AxisDirection": "INCREASING",
                },
            }
        },
        "commands": [
            {"type": "dispatch", "dispatchable": "a", "bindings": {"InputTensor": "x", "OutputTensor": "y"}},
            {"type": "print", "resource": "y"},
        ],
    }


def reinterpreting_model() -> dict[str, Any]:
    """ArgMax over a FLOAT32 buffer bound as INT32: the bits are reinterpreted, as on the GPU."""
    return argmax_model({"DataType": "INT32", "Sizes": [2]}, [1.0, 2.0], {"DataType": "UINT32", "Sizes": [1]}, [9], axis=0)


def run_every_variant(ep: str, desc: OperatorDesc, x: np.ndarray, targets: tuple[str, ...] | None = None) -> None:
    """Every candidate lowering (choices.py) for `targets` (default: `portable` and the EP's own),
    on `ep`, against the reference within tolerances.py (exact for integer outputs)."""
    want = registry.family(desc.schema.name).reference(desc, {"InputTensor": x})
    tol = tolerances.tolerance(desc.schema.name, desc.tensor("OutputTensor").data_type, ep)
    for target in targets or ("portable", ep):
        for variant in choices.available(desc, DEFAULT_OPSET, target):
            got = runtime.create(lowering.lower(desc, "t", target=target, variant=variant), "t", ep).run({"InputTensor": x})
            result = tolerances.compare(got, want, tol)
            assert result.ok, (target, variant, result, got, want)


def rewritten(model: onnx.ModelProto, rewrite: Callable[[onnx.ModelProto], onnx.ModelProto]) -> onnx.ModelProto:
    """A copy of an ONNX model through one of graph/'s whole-model rewrites, checked in full."""
    out = onnx.ModelProto()
    out.CopyFrom(model)
    out = rewrite(out)
    onnx.checker.check_model(out, full_check=True)
    return out


def run_as_written(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    """The model's outputs on the CPU EP with ONNX Runtime's graph optimizations off (its own fusions
    would compute some nodes otherwise)."""
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"]).run(None, feeds)
