"""Pooling with OutputTensor's spatial sizes other than the pages' formula (dml2onnx/ops/pooling.py):
ceil_mode as ONNX Runtime's DirectML EP writes it (MaxPool k3 s2 on 8x8: OutputTensor [1, 1, 4, 4]
with EndPadding 0), more windows, fewer windows, a window larger than the padded input. DirectML's
CreateOperator takes every spatial size of 1 or more; windows past the padded input read padding
there. Each row of CEIL_SETTLED is what DirectML's own API computed (DirectML.dll of
onnxruntime-directml 1.24.4 under Wine): every lowering candidate on the CPU EP and the reference
must give it, and test_directml_computes_so runs each desc through DirectML's API again."""

from __future__ import annotations

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
from support import every_output, make_desc, mismatches, tensor

LOW = float(np.finfo(np.float32).min)
DILATED = ("AVERAGE_POOLING1", "LP_POOLING1", "MAX_POOLING2")


def fields_of(
    op: str, sizes: list[int], out: list[int], window: list[int], strides: list[int], pads: list[int] | None = None, **more: Any
) -> dict[str, Any]:
    """A desc over InputTensor `sizes` with OutputTensor `out` ([N, C] then the spatial sizes as
    given, whatever the formula says), `pads` at both ends, FLOAT32 unless `dtype` is given."""
    n = len(sizes) - 2
    pads = pads or [0] * n
    dtype = more.pop("dtype", "FLOAT32")
    fields: dict[str, Any] = {
        "InputTensor": tensor(dtype, sizes),
        "OutputTensor": tensor(dtype, out),
        "DimensionCount": n,
        "Strides": strides,
        "WindowSize": window,
        "StartPadding": pads,
        "EndPadding": pads,
    }
    if op in DILATED:
        fields["Dilations"] = more.pop("Dilations", [1] * n)
    if op.startswith("AVERAGE"):
        fields["IncludePadding"] = more.pop("IncludePadding", False)
    if op.startswith("LP"):
        fields["P"] = more.pop("P", 1)
    if "indices" in more:
        fields["OutputIndicesTensor"] = tensor(more.pop("indices"), out)
    return fields | more


# (label, op, fields, DirectML's OutputTensor (flat), DirectML's OutputIndicesTensor or None); the
# input is 1, 2, 3, ... in InputTensor's logical order
CEIL_SETTLED: list[tuple[str, str, dict[str, Any], list[float], list[int] | None]] = [
    # the stress test's MaxPool k3 s2 p0 ceil_mode on 8x8: floor gives 3, the EP writes 4
    (
        "max-k3s2-8x8-ceil",
        "MAX_POOLING",
        fields_of("MAX_POOLING", [1, 1, 8, 8], [1, 1, 4, 4], [3, 3], [2, 2]),
        [19, 21, 23, 24, 35, 37, 39, 40, 51, 53, 55, 56, 59, 61, 63, 64],
        None,
    ),
    # AveragePool k3 s2 p1 ceil_mode count_include_pad on 6x6: the last window (2 of its 3 rows or
    # columns past the padded input) still divides by 9: (6 + 12) / 9 = 2
    (
        "average-include-k3s2p1-6x6-ceil",
        "AVERAGE_POOLING",
        fields_of("AVERAGE_POOLING", [1, 1, 6, 6], [1, 1, 4, 4], [3, 3], [2, 2], [1, 1], IncludePadding=True),
        [2, 4, 48 / 9, 2, 9, 15, 17, 6, 17, 27, 29, 10, 7, 11, 105 / 9, 4],
        None,
    ),
    # without IncludePadding: by the count of input elements
    (
        "average-k3s2p1-6x6-ceil",
        "AVERAGE_POOLING",
        fields_of("AVERAGE_POOLING", [1, 1, 6, 6], [1, 1, 4, 4], [3, 3], [2, 2], [1, 1]),
        [4.5, 6, 8, 9, 13.5, 15, 17, 18, 25.5, 27, 29, 30, 31.5, 33, 35, 36],
        None,
    ),
    # one spatial dimension (ONNX's 1-D pool as the EP writes it: [N, C, 1, W]); a window entirely
    # past the input: 0 with IncludePadding, (7 + 8) / 3 = 5 before it
    (
        "average-include-1d-more",
        "AVERAGE_POOLING",
        fields_of("AVERAGE_POOLING", [1, 1, 1, 8], [1, 1, 1, 5], [1, 3], [1, 2], IncludePadding=True),
        [2, 4, 6, 5, 0],
        None,
    ),
    ("lp-1d-ceil", "LP_POOLING", fields_of("LP_POOLING", [1, 1, 1, 8], [1, 1, 1, 4], [1, 3], [1, 2]), [6, 12, 18, 15], None),
    (
        "lp1-padded-1d-more",
        "LP_POOLING1",
        fields_of("LP_POOLING1", [1, 1, 1, 4], [1, 1, 1, 6], [1, 3], [1, 1], [0, 1]),
        [3, 6, 9, 7, 4, 0],
        None,
    ),
    # three spatial dimensions, ceil in each
    (
        "max-3d-ceil",
        "MAX_POOLING",
        fields_of("MAX_POOLING", [1, 1, 5, 5, 5], [1, 1, 3, 3, 3], [2, 2, 2], [2, 2, 2]),
        [32, 34, 35, 42, 44, 45, 47, 49, 50, 82, 84, 85, 92, 94, 95, 97, 99, 100, 107, 109, 110, 117, 119, 120, 122, 124, 125],
        None,
    ),
    (
        "average-include-3d-ceil",
        "AVERAGE_POOLING1",
        fields_of("AVERAGE_POOLING1", [1, 1, 5, 5, 5], [1, 1, 3, 3, 3], [2, 2, 2], [2, 2, 2], IncludePadding=True),
        [16.5, 18.5, 10, 26.5, 28.5, 15, 17, 18, 9.375, 66.5, 68.5, 35, 76.5, 78.5, 40, 42, 43, 21.875]
        + [52, 53, 26.875, 57, 58, 29.375, 30.375, 30.875, 15.625],
        None,
    ),
    # the indices: windows past the input are entirely padding there (the lowest value, index 0)
    (
        "max2-indices-more",
        "MAX_POOLING2",
        fields_of("MAX_POOLING2", [1, 1, 1, 8], [1, 1, 1, 6], [1, 3], [1, 2], indices="UINT32"),
        [3, 5, 7, 8, LOW, LOW],
        [2, 4, 6, 7, 0, 0],
    ),
    (
        "max1-indices-ceil-2d",
        "MAX_POOLING1",
        fields_of("MAX_POOLING1", [1, 1, 5, 5], [1, 1, 3, 3], [2, 2], [2, 2], indices="UINT64"),
        [7, 9, 10, 17, 19, 20, 22, 24, 25],
        [6, 8, 9, 16, 18, 19, 21, 23, 24],
    ),
    # fewer windows than fit: the first ones
    (
        "max1-indices-fewer",
        "MAX_POOLING1",
        fields_of("MAX_POOLING1", [1, 1, 1, 8], [1, 1, 1, 2], [1, 3], [1, 2], indices="UINT64"),
        [3, 5],
        [2, 4],
    ),
    # padding as large as the window, one window fewer than fit (the formula gives 9)
    (
        "max-padded-fewer",
        "MAX_POOLING",
        fields_of("MAX_POOLING", [1, 1, 1, 4], [1, 1, 1, 8], [1, 2], [1, 1], [0, 3]),
        [LOW, LOW, 1, 2, 3, 4, 4, LOW],
        None,
    ),
    # a window larger than the padded input
    ("max-window-past-input", "MAX_POOLING", fields_of("MAX_POOLING", [1, 1, 1, 2], [1, 1, 1, 2], [1, 3], [1, 1]), [2, 2], None),
    (
        "average-include-window-past-input",
        "AVERAGE_POOLING",
        fields_of("AVERAGE_POOLING", [1, 1, 1, 2], [1, 1, 1, 1], [1, 3], [1, 1], IncludePadding=True),
        [1],
        None,
    ),
    # dilated windows past the input
    (
        "average1-dilated-more",
        "AVERAGE_POOLING1",
        fields_of("AVERAGE_POOLING1", [1, 1, 1, 8], [1, 1, 1, 7], [1, 2], [1, 2], Dilations=[1, 3], IncludePadding=True),
        [2.5, 4.5, 6.5, 3.5, 0, 0, 0],
        None,
    ),
    (
        "max2-dilated-more",
        "MAX_POOLING2",
        fields_of("MAX_POOLING2", [1, 1, 1, 8], [1, 1, 1, 7], [1, 2], [1, 2], Dilations=[1, 3]),
        [4, 6, 8, 7, LOW, LOW, LOW],
        None,
    ),
    (
        "max-int8-ceil",
        "MAX_POOLING",
        fields_of("MAX_POOLING", [1, 1, 1, 8], [1, 1, 1, 5], [1, 3], [1, 2], dtype="INT8"),
        [3, 5, 7, 8, -128],
        None,
    ),
    (
        "max-float16-ceil",
        "MAX_POOLING",
        fields_of("MAX_POOLING", [1, 1, 1, 8], [1, 1, 1, 5], [1, 3], [1, 2], dtype="FLOAT16"),
        [3, 5, 7, 8, -65504],
        None,
    ),
]


def _input(fields: dict[str, Any]) -> np.ndarray:
    sizes = fields["InputTensor"]["Sizes"]
    return np.arange(1, int(np.prod(sizes)) + 1).reshape(sizes).astype(fields["InputTensor"]["DataType"].lower())


def _check(label: str, fields: dict[str, Any], got: dict[str, np.ndarray], want: list[float], indices: list[int] | None) -> None:
    t = np.dtype(fields["OutputTensor"]["DataType"].lower())
    np.testing.assert_allclose(got["OutputTensor"].ravel(), np.array(want, t), rtol=1e-6, err_msg=label)
    assert got["OutputTensor"].shape == tuple(fields["OutputTensor"]["Sizes"]), label
    if indices is not None:
        assert got["OutputIndicesTensor"].ravel().tolist() == indices, label


@pytest.mark.parametrize(("label", "op", "fields", "want", "indices"), CEIL_SETTLED, ids=[c[0] for c in CEIL_SETTLED])
def test_every_lowering_computes_what_directml_does(
    label: str, op: str, fields: dict[str, Any], want: list[float], indices: list[int] | None
) -> None:
    """The reference, and every candidate on every target that runs on the CPU EP (the `dml` target
    by the DirectML EP's static check), give DirectML's values."""
    desc = make_desc(op, fields)
    x = {"InputTensor": _input(fields)}
    reference = registry.reference_outputs(desc, x)
    _check(label, fields, reference, want, indices)
    variants = choices.available(desc, DEFAULT_OPSET)
    assert "slices" in variants
    for variant in variants:
        for target in ("portable", "cpu", "dml"):
            model = lowering.lower(desc, "t", target=target, variant=variant)
            assert dml_ep.check(model) == [], (label, target, variant)
            if target != "dml":
                got = every_output(runtime.create(model, "t", "cpu"), desc, x)
                assert not (bad := mismatches(desc, got, reference, "cpu")), (label, variant, target, bad)


def test_the_pool_candidate_takes_ceil_mode_by_explicit_end_padding() -> None:
    """MaxPool/AveragePool with the extended EndPadding as pads (ceil_mode 0), where ONNX's floor
    formula then gives OutputTensor's sizes; fewer windows than fit take the slices."""
    for label in ("max-k3s2-8x8-ceil", "average-include-k3s2p1-6x6-ceil"):
        op, fields = next((c[1], c[2]) for c in CEIL_SETTLED if c[0] == label)
        desc = make_desc(op, fields)
        assert "pool" in choices.available(desc, DEFAULT_OPSET)
        for target in ("portable", "cpu", "dml"):
            graph = lowering.lower(desc, "t", target=target).graph
            pools = [n for n in graph.node if n.op_type in ("MaxPool", "AveragePool")]
            assert len(pools) == 1, (label, target)
            attrs = {a.name: a for a in pools[0].attribute}
            assert "ceil_mode" not in attrs and list(attrs["pads"].ints) == ([0, 0, 1, 1] if "max" in label else [1, 1, 2, 2])
    desc = make_desc("MAX_POOLING1", next(c[2] for c in CEIL_SETTLED if c[0] == "max1-indices-fewer"))
    assert choices.available(desc, DEFAULT_OPSET) == ("slices",)


def test_n_and_c_must_be_the_inputs() -> None:
    """DirectML's CreateOperator refuses another N or C (E_INVALIDARG), and so does validation."""
    for out, text in (([2, 1, 1, 4], "InputTensor's N (1), not 2"), ([1, 2, 1, 4], "InputTensor's C (1), not 2")):
        with pytest.raises(ModelError, match=text.replace("(", r"\(").replace(")", r"\)")):
            make_desc("MAX_POOLING", fields_of("MAX_POOLING", [1, 1, 1, 8], out, [1, 3], [1, 2]))


_why = dmlapi.missing()


@pytest.mark.skipif(_why is not None, reason=f"DirectML's API under Wine is not set up ({_why})")
def test_directml_computes_so() -> None:
    for label, op, fields, want, indices in CEIL_SETTLED:
        desc = make_desc(op, fields)
        _check(label, fields, dmlapi.execute(desc, {"InputTensor": _input(fields)}).outputs, want, indices)


@pytest.mark.skipif(_why is not None, reason=f"DirectML's API under Wine is not set up ({_why})")
def test_directml_refuses_another_n_or_c() -> None:
    """What test_n_and_c_must_be_the_inputs refuses, DirectML's CreateOperator refuses (parsed
    without dml2onnx's validation)."""
    for out in ([2, 1, 1, 4], [1, 2, 1, 4], [1, 1, 1, 1, 4]):
        desc = parse_operator_desc(
            "MAX_POOLING", fields_of("MAX_POOLING", [1, 1, 1, 8], out, [1, 3], [1, 2]), ("desc",), ("type",)
        )
        with pytest.raises(dmlapi.DmlApiError, match="E_INVALIDARG"):
            dmlapi.execute(desc, {"InputTensor": np.zeros((1, 1, 1, 8), np.float32)})
