"""DML_OPERATOR_CONVOLUTION with OutputTensor spatial sizes other than the page's formula gives
(dml2onnx/ops/convolution.py): what DirectML's own API computed for each, measured under Wine with
values that tell the possibilities apart (input 1, 2, 3..., filter 1, 10, 100..., Bias 1000), and
the reference and every candidate on every target giving the same on the CPU EP. ONNX Runtime's
DirectML EP writes such descs for ConvTranspose with output_padding or output_shape (OutputPadding
0, OutputTensor including the extra elements): tests/commands/test_capture.py captures one."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from dml2onnx import lowering
from dml2onnx.backends import dmlapi, runtime, winhost
from dml2onnx.core import desc as desc_module
from dml2onnx.core.errors import format_path
from dml2onnx.graph import dml_ep
from dml2onnx.graph.builder import DEFAULT_OPSET
from dml2onnx.lowering import choices
from dml2onnx.ops import convolution, registry
from support import make_desc, refusal, tensor

OP = "CONVOLUTION"
TARGETS = ("portable", "cpu", "cuda", "dml")


def fields(x: list[int], w: list[int], y: list[int], bias: bool = True, **more: Any) -> dict[str, Any]:
    """A FLOAT32 FORWARD cross-correlation desc (convolution.example's defaults), a one-element Bias."""
    f: dict[str, Any] = dict(convolution.example("FLOAT32", x, w, y))
    if bias:
        f["BiasTensor"] = tensor("FLOAT32", [1, 1] + [1] * (len(x) - 2))
    return f | more


def feeds(f: dict[str, Any]) -> dict[str, np.ndarray]:
    """Input 1, 2, 3...; filter 1, 10, 100...; Bias 1000."""
    x, w = f["InputTensor"]["Sizes"], f["FilterTensor"]["Sizes"]
    out = {
        "InputTensor": np.arange(1, np.prod(x) + 1, dtype=np.float32).reshape(x),
        "FilterTensor": (10.0 ** np.arange(np.prod(w))).astype(np.float32).reshape(w),
    }
    if "BiasTensor" in f:
        out["BiasTensor"] = np.full(f["BiasTensor"]["Sizes"], 1000, np.float32)
    return out


def back(size: int, **more: Any) -> dict[str, Any]:
    """BACKWARD, input 1, 2, 3 and filter 1, 10, 100 along W, Stride 2: the full transposed
    result is 1, 10, 102, 20, 203, 30, 300 (7 elements), plus the Bias."""
    return fields([1, 1, 1, 3], [1, 1, 1, 3], [1, 1, 1, size], Direction="BACKWARD", Strides=[1, 2]) | more


def fwd(size: int, k: int = 2, **more: Any) -> dict[str, Any]:
    """FORWARD, input 1..5 along W, filter 1, 10 (or 1, 10, ... k elements): 4 elements by the formula."""
    return fields([1, 1, 1, 5], [1, 1, 1, k], [1, 1, 1, size]) | more


LINEAR = {"FusedActivation": {"Type": "ACTIVATION_LINEAR", "Alpha": 2.0, "Beta": 7.0}}
FULL = [1001, 1010, 1102, 1020, 1203, 1030, 1300]

# what DirectML's API wrote (dml_exec under Wine, DirectML 1.15), element by element
MEASURED: dict[str, tuple[dict[str, Any], list[float]]] = {
    # BACKWARD: element o is the full transposed result's element StartPadding + o (EndPadding
    # changes nothing), past its end the Bias alone; smaller sizes are its start
    "back-1": (back(1), FULL[:1]),
    "back-6": (back(6), FULL[:6]),
    "back-8": (back(8), [*FULL, 1000]),  # ONNX Runtime's ConvTranspose output_padding 1 computes it alike
    "back-12": (back(12), FULL + [1000] * 5),
    "back-start1-end2-size2": (back(2, StartPadding=[0, 1], EndPadding=[0, 2]), FULL[1:3]),
    "back-start1-end2-size6": (back(6, StartPadding=[0, 1], EndPadding=[0, 2]), FULL[1:]),
    "back-start1-end2-size8": (back(8, StartPadding=[0, 1], EndPadding=[0, 2]), [*FULL[1:], 1000, 1000]),
    "back-start2-end6-size3": (back(3, StartPadding=[0, 2], EndPadding=[0, 6]), FULL[2:5]),  # formula: -1
    "back-start6-size3": (back(3, StartPadding=[0, 6]), [1300, 1000, 1000]),
    "back-start7-size2": (back(2, StartPadding=[0, 7]), [1000, 1000]),  # past the whole result
    "back-start8-size3-nobias": (back(3, StartPadding=[0, 8]) | {"BiasTensor": None}, [0, 0, 0]),
    # OutputPadding: the last OutputPadding elements of OutputTensor are 0, the rest as above
    "back-outpad1-size6": (back(6, OutputPadding=[0, 1]), [*FULL[:5], 0]),
    "back-outpad1-size9": (back(9, OutputPadding=[0, 1]), [*FULL, 1000, 0]),
    "back-outpad2-size10": (back(10, OutputPadding=[0, 2]), [*FULL, 1000, 0, 0]),
    # the fused activation sees every element, the OutputPadding zeros included
    "back-outpad1-size9-linear": (back(9, OutputPadding=[0, 1]) | LINEAR, [2 * v + 7 for v in [*FULL, 1000, 0]]),
    "back-size9-nobias": (back(9) | {"BiasTensor": None}, [1, 10, 102, 20, 203, 30, 300, 0, 0]),
    "back-size9-convolution": (back(9, Mode="CONVOLUTION"), [1100, 1010, 1201, 1020, 1302, 1030, 1003, 1000, 1000]),
    "back-dilation2-size9": (
        back(9, Strides=[1, 1], Dilations=[1, 2]),
        [1001, 1002, 1013, 1020, 1130, 1200, 1300, 1000, 1000],
    ),
    "back-1d-size9": (
        fields([1, 1, 3], [1, 1, 3], [1, 1, 9], Direction="BACKWARD", Strides=[2]),
        [*FULL, 1000, 1000],
    ),
    "back-3d-2x1x9": (
        fields([1, 1, 1, 1, 3], [1, 1, 1, 1, 3], [1, 1, 2, 1, 9], Direction="BACKWARD", Strides=[1, 1, 2]),
        [*FULL, 1000, 1000] + [1000] * 9,
    ),
    # 2-D, both axes past the full 3x4 result
    "back-2d-4x5": (
        fields([1, 1, 2, 2], [1, 1, 2, 2], [1, 1, 4, 5], Direction="BACKWARD", Strides=[1, 2]),
        [1001, 1010, 1002, 1020, 1000, 1103, 2030, 1204, 3040, 1000, 1300, 4000, 1400, 5000, 1000] + [1000] * 5,
    ),
    # FORWARD: element o sums x[o * Stride + p * Dilation - StartPadding] (x 0 outside the input,
    # EndPadding changes nothing), plus the Bias
    "fwd-2": (fwd(2), [1021, 1032]),
    "fwd-6": (fwd(6), [1021, 1032, 1043, 1054, 1005, 1000]),
    "fwd-8": (fwd(8), [1021, 1032, 1043, 1054, 1005, 1000, 1000, 1000]),
    "fwd-stride2-start1-size5": (fwd(5, Strides=[1, 2], StartPadding=[0, 1]), [1010, 1032, 1054, 1000, 1000]),
    "fwd-stride2-start1-end3-size5": (
        fwd(5, Strides=[1, 2], StartPadding=[0, 1], EndPadding=[0, 3]),
        [1010, 1032, 1054, 1000, 1000],
    ),
    "fwd-outpad1-size3": (fwd(3, OutputPadding=[0, 1]), [1021, 1032, 0]),
    "fwd-outpad1-size7": (fwd(7, OutputPadding=[0, 1]), [1021, 1032, 1043, 1054, 1005, 1000, 0]),
    "fwd-outpad1-size7-linear": (fwd(7, OutputPadding=[0, 1]) | LINEAR, [2049, 2071, 2093, 2115, 2017, 2007, 7]),
    # the filter longer than the input (the formula: no output)
    "fwd-k6-size2": (fwd(2, k=6), [55321, 6432]),
    "fwd-k6-start2-size3": (fwd(3, k=6, StartPadding=[0, 2]), [433100, 544210, 55321]),
}


def _drop_none(f: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in f.items() if v is not None}


@pytest.mark.parametrize("name", list(MEASURED))
def test_reference_and_every_lowering_compute_what_directml_computes(name: str) -> None:
    f, want = MEASURED[name]
    f = _drop_none(f)
    desc = make_desc(OP, f)  # validates
    inputs = feeds(f)
    got = registry.family(OP).reference(desc, inputs)
    assert got.ravel().tolist() == want
    for variant in choices.available(desc, DEFAULT_OPSET):
        for target in TARGETS:
            model = lowering.lower(desc, "t", target=target, variant=variant)
            assert dml_ep.check(model) == [], (target, variant)
            out = runtime.create(model, "t", "cpu").run(inputs)
            assert out.ravel().tolist() == want, (target, variant)


def _ops(f: dict[str, Any], target: str) -> list[str]:
    return [n.op_type for n in lowering.lower(make_desc(OP, _drop_none(f)), "t", target=target).graph.node]


def _attr(f: dict[str, Any], target: str, op: str, name: str) -> list[int] | None:
    node = next(n for n in lowering.lower(make_desc(OP, _drop_none(f)), "t", target=target).graph.node if n.op_type == op)
    return next((list(a.ints) for a in node.attribute if a.name == name), None)


def test_nodes() -> None:
    # PyTorch's ConvTranspose2d(k3, s2, p1, output_padding 1) as the DirectML EP writes it: StartPadding
    # 1, EndPadding 1, OutputTensor 8 (the formula: 7) is elements 1..8 of the full 9
    pytorch = fields([1, 1, 4, 4], [1, 1, 3, 3], [1, 1, 8, 8], Direction="BACKWARD", Strides=[2, 2])
    pytorch |= {"StartPadding": [1, 1], "EndPadding": [1, 1]}
    assert _ops(pytorch, "dml") == ["Reshape", "ConvTranspose"] and _attr(pytorch, "dml", "ConvTranspose", "pads") == [1, 1, 0, 0]
    assert _ops(pytorch, "cuda") == ["Reshape", "ConvTranspose", "Slice"]  # symmetric pads (0), then the crop
    # past the full result: ONNX Runtime's output_padding (below the stride), the rest appended
    assert _ops(back(8), "dml") == ["Reshape", "ConvTranspose"] and _attr(back(8), "dml", "ConvTranspose", "output_padding") == [
        0,
        1,
    ]
    assert _ops(back(12), "dml") == ["Reshape", "ConvTranspose", "Reshape", "Expand", "Concat"]
    assert _ops(back(3, StartPadding=[0, 7]), "dml") == ["Reshape", "Reshape", "Expand"]
    # FORWARD: Conv's end pad reaching the last element, or a Slice of its start
    assert _ops(fwd(6), "dml") == ["Reshape", "Conv"] and _attr(fwd(6), "dml", "Conv", "pads") == [0, 0, 0, 2]
    assert _ops(fwd(2), "dml") == ["Reshape", "Conv", "Slice"]


# -- validation and DirectML's API -------------------------------------------------------------------

REFUSED = {  # (desc, the spatial axis): OutputTensor no larger than OutputPadding
    "back-size1-outpad1": (back(1, OutputPadding=[0, 1]), 1),
    "back-size2-outpad2": (back(2, OutputPadding=[0, 2]), 1),
    "back-size2-outpad5": (back(2, OutputPadding=[0, 5]), 1),
    "fwd-size1-outpad1": (fwd(1, OutputPadding=[0, 1]), 1),
    "fwd-size2-outpad4": (fwd(2, OutputPadding=[0, 4]), 1),
    "back-2d-height1-outpad1": (fields([1, 1, 2, 2], [1, 1, 2, 2], [1, 1, 1, 3], Direction="BACKWARD", OutputPadding=[1, 0]), 0),
}


@pytest.mark.parametrize("name", list(REFUSED))
def test_output_no_larger_than_output_padding_is_refused(name: str) -> None:
    f, axis = REFUSED[name]
    e = refusal(OP, f)
    assert format_path(e.path) == f"desc.OutputTensor.Sizes[{axis + 2}]" and f"must exceed OutputPadding[{axis}]" in e.rule, (
        e.rule
    )


_why = dmlapi.missing()
live = pytest.mark.skipif(_why is not None, reason=f"DirectML's API under Wine is not set up ({_why}): run `make dml-setup`")


def directml(f: dict[str, Any]) -> np.ndarray:
    d = desc_module.parse_operator_desc(OP, f, ("desc",), ("type",))  # not validated: DirectML decides
    return dmlapi.execute(d, feeds(f)).output


@pytest.fixture(scope="module")
def wine() -> Any:
    yield
    winhost.shutdown()


@live
def test_directml_computes_the_measured_values(wine: Any) -> None:
    for name, (f, want) in MEASURED.items():
        assert directml(_drop_none(f)).ravel().tolist() == want, name


@live
def test_directml_refuses_what_dml2onnx_refuses(wine: Any) -> None:
    for f, _ in REFUSED.values():
        with pytest.raises(dmlapi.DmlApiError, match="E_INVALIDARG"):
            directml(f)
    # one element more than OutputPadding: accepted, that element computed
    assert directml(back(2, OutputPadding=[0, 1])).ravel().tolist() == [1001, 0]
    assert directml(fwd(2, OutputPadding=[0, 1])).ravel().tolist() == [1021, 0]
