"""DML_OPERATOR_QUANTIZED_LINEAR_AVERAGE_POOLING (dml2onnx/ops/quantized_pooling.py): the model's
values by hand (the page has no example), IncludePadding, per-channel scales and zero points, 3-D
windows, empty windows, refusals (DirectML's E_INVALIDARG pinned where the page is silent), and
properties against the numpy reference. The matrix (dml2onnx/cases/quantized_pooling.py) runs on
every EP present and through DirectML's API."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dml2onnx import lowering
from dml2onnx.backends import dmlapi, runtime
from dml2onnx.core.errors import format_path
from dml2onnx.graph import dml_ep
from dml2onnx.ops import pooling, quantized_pooling
from strategies import SEEDS
from support import EPS, make_desc, printed, refusal, run_cli, tensor

OP = "QUANTIZED_LINEAR_AVERAGE_POOLING"
MODEL = Path(__file__).parents[2] / "models" / "quantized_pooling.json"
SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
live = pytest.mark.skipif(dmlapi.missing() is not None, reason="DirectML's API under Wine is not set up")


def fields(
    x: list[int], y: list[int], window: list[int], t: str = "UINT8", params: list[int] | None = None, **more: Any
) -> dict[str, Any]:
    dims = len(x) - 2
    p = params or [1] * len(x)
    f: dict[str, Any] = {
        "InputTensor": tensor(t, x),
        "InputScaleTensor": tensor("FLOAT32", p),
        "InputZeroPointTensor": tensor(t, p),
        "OutputScaleTensor": tensor("FLOAT32", p),
        "OutputZeroPointTensor": tensor(t, p),
        "OutputTensor": tensor(t, y),
        "DimensionCount": dims,
        "Strides": [1] * dims,
        "WindowSize": window,
        "StartPadding": [0] * dims,
        "EndPadding": [0] * dims,
        "Dilations": [1] * dims,
        "IncludePadding": False,
    }
    return f | more


def run(f: dict[str, Any], feeds: dict[str, np.ndarray]) -> np.ndarray:
    """The lowered graph's bytes, checked against the reference's, and the static DirectML check."""
    desc = make_desc(OP, f)
    model = lowering.lower(desc, "t")
    assert dml_ep.check(model) == []
    got = runtime.create(model, "t", "cpu").run(feeds)
    want = quantized_pooling.reference(desc, feeds)
    assert got.tobytes() == want.tobytes(), (got, want)
    return got


def params(x_scale: Any, x_zero: Any, y_scale: Any, y_zero: Any, shape: list[int], t: Any = np.uint8) -> dict[str, np.ndarray]:
    return {
        "InputScaleTensor": np.asarray(x_scale, np.float32).reshape(shape),
        "InputZeroPointTensor": np.asarray(x_zero, t).reshape(shape),
        "OutputScaleTensor": np.asarray(y_scale, np.float32).reshape(shape),
        "OutputZeroPointTensor": np.asarray(y_zero, t).reshape(shape),
    }


def test_model_prints_the_averages_rounded_halves_to_even() -> None:
    code, out, err = run_cli("run", str(MODEL), "--ep", "cpu")
    assert code == 0, err
    assert printed(out)["output"] == [101, 102, 106, 107]  # 1, 2.5 -> 2, 5.5 -> 6, 7; + 100


def test_include_padding_counts_the_whole_window() -> None:
    x = np.arange(0, 90, 10, dtype=np.uint8).reshape(1, 1, 3, 3)
    f = fields([1, 1, 3, 3], [1, 1, 2, 2], [2, 2], Strides=[2, 2], EndPadding=[1, 1], IncludePadding=True)
    got = run(f, {"InputTensor": x} | params(0.5, 10, 5, 100, [1, 1, 1, 1]))
    # sums of -5, 0, ..., 35: 20, 25, 55, 35 over 4 each: 5, 6.25, 13.75, 8.75 / 5 -> 1, 1.25, 2.75, 1.75
    assert got.ravel().tolist() == [101, 101, 103, 102]


def test_per_channel_scales_and_zero_points_in_three_dimensions() -> None:
    x = np.stack([np.full((2, 2, 2), 10), np.full((2, 2, 2), -10)]).astype(np.int8).reshape(1, 2, 2, 2, 2)
    f = fields([1, 2, 2, 2, 2], [1, 2, 1, 1, 1], [2, 2, 2], t="INT8", params=[1, 2, 1, 1, 1])
    got = run(f, {"InputTensor": x} | params([1, 2], [0, -20], [4, 1], [-1, 3], [1, 2, 1, 1, 1], np.int8))
    # channel 0: 10 * 1 / 4 = 2.5 -> 2, - 1 = 1; channel 1: (-10 + 20) * 2 / 1 = 20, + 3 = 23
    assert got.ravel().tolist() == [1, 23]


def test_empty_windows_give_the_minimum() -> None:
    """0 / 0 for a window entirely in padding without IncludePadding: DirectML's minimum (with
    per-tensor zero points: tests/dml_findings.py has the kernels that differ)."""
    x = np.array([10, 20, 30], np.int8).reshape(1, 1, 1, 3)
    f = fields([1, 1, 1, 3], [1, 1, 3, 2], [1, 2], t="INT8", StartPadding=[2, 0])
    got = run(f, {"InputTensor": x} | params(1, 0, 1, 9, [1, 1, 1, 1], np.int8))
    assert got.reshape(3, 2).tolist() == [[-128, -128], [-128, -128], [24, 34]]  # 15 + 9, 25 + 9


def test_no_zero_points_and_saturation() -> None:
    x = np.array([0, 255, 255, 255], np.uint8).reshape(1, 1, 2, 2)
    f = fields([1, 1, 2, 2], [1, 1, 1, 1], [2, 2])
    del f["InputZeroPointTensor"], f["OutputZeroPointTensor"]
    feeds = {"InputTensor": x, "InputScaleTensor": np.full([1, 1, 1, 1], 2, np.float32)}
    assert run(f, feeds | {"OutputScaleTensor": np.full([1, 1, 1, 1], 1, np.float32)}).item() == 255  # 382.5
    assert run(f, feeds | {"OutputScaleTensor": np.full([1, 1, 1, 1], 3, np.float32)}).item() == 128  # 127.5 -> 128


@pytest.mark.parametrize(
    ("change", "path", "message"),
    [
        ({"OutputTensor": tensor("INT8", [1, 2, 3, 3])}, "desc.OutputTensor.DataType", "same DataType"),
        ({"InputZeroPointTensor": tensor("INT8", [1, 1, 1, 1])}, "desc.InputZeroPointTensor.DataType", "same DataType"),
        ({"InputScaleTensor": tensor("FLOAT32", [1, 3, 1, 1])}, "desc.InputScaleTensor.Sizes[1]", "must be 1"),
        ({"OutputScaleTensor": tensor("FLOAT32", [1])}, "desc.OutputScaleTensor.Sizes", "same DimensionCount"),
        ({"InputScaleTensor": tensor("FLOAT32", [1, 2, 1, 1])}, "desc.InputZeroPointTensor.Sizes", "InputScaleTensor's Sizes"),
        ({"OutputTensor": tensor("UINT8", [1, 2, 4, 3])}, "desc.OutputTensor.Sizes", "must be [1, 2, 3, 3]"),
        ({"WindowSize": [0, 2]}, "desc.WindowSize[0]", "1 or more"),
        (
            {"DimensionCount": 3, "Strides": [1] * 3, "WindowSize": [2] * 3}
            | {k: [0] * 3 for k in ("StartPadding", "EndPadding")},
            "desc.DimensionCount",
            "must be",
        ),
    ],
)
def test_refusals(change: dict[str, Any], path: str, message: str) -> None:
    f = fields([1, 2, 4, 4], [1, 2, 3, 3], [2, 2]) | change
    if change.get("DimensionCount") == 3:
        f["Dilations"] = [1] * 3
    e = refusal(OP, f)
    assert format_path(e.path) == path, str(e)
    assert message in e.rule, e.rule


@live
@pytest.mark.parametrize(
    ("change", "accepted"),
    [
        ({}, True),
        ({"InputScaleTensor": tensor("FLOAT32", [1, 2, 1, 1]), "InputZeroPointTensor": tensor("UINT8", [1, 2, 1, 1])}, True),
        ({"InputScaleTensor": tensor("FLOAT32", [1, 2, 1, 1])}, False),  # its zero point per tensor
        ({"OutputScaleTensor": tensor("FLOAT32", [1]), "OutputZeroPointTensor": tensor("UINT8", [1])}, False),  # 1-D
        ({"OutputTensor": tensor("INT8", [1, 2, 3, 3]), "OutputZeroPointTensor": tensor("INT8", [1, 1, 1, 1])}, False),
    ],
)
def test_directml_refuses_what_validate_refuses(change: dict[str, Any], accepted: bool) -> None:
    from dml2onnx.backends import winhost
    from dml2onnx.backends.dmlapi import DmlApiError
    from dml2onnx.core.desc import parse_operator_desc

    f = fields([1, 2, 4, 4], [1, 2, 3, 3], [2, 2]) | change
    desc = parse_operator_desc(OP, f, ("desc",), ("type",))
    rng = np.random.default_rng(3)
    feeds = {n: rng.integers(0, 100, desc.tensor(n).sizes).astype(desc.tensor(n).data_type.numpy) for n in desc.inputs}
    try:
        if accepted:
            got = dmlapi.execute(desc, feeds).output
            assert got.tobytes() == quantized_pooling.reference(make_desc(OP, f), feeds).tobytes()
        else:
            # CreateOperator's E_INVALIDARG, or CompileOperator's failure (0x8007023e) for 1-D scales
            with pytest.raises(DmlApiError, match="Operator failed: HRESULT"):
                dmlapi.execute(desc, feeds)
            assert refusal(OP, f).path
    finally:
        winhost.shutdown()


@st.composite
def geometries(draw: st.DrawFn) -> dict[str, Any]:
    dims = draw(st.integers(2, 3))
    sizes, window, strides, dilations, start, end = [], [], [], [], [], []
    for _ in range(dims):
        k, d, s = draw(st.integers(1, 3)), draw(st.integers(1, 2)), draw(st.integers(1, 3))
        p0, p1 = draw(st.integers(0, 2)), draw(st.integers(0, 2))
        n = draw(st.integers(max(1, (k - 1) * d + 1 - p0 - p1), 6))
        sizes.append(n), window.append(k), strides.append(s), dilations.append(d), start.append(p0), end.append(p1)
    w = pooling.Window("AVERAGE", tuple(strides), tuple(window), tuple(start), tuple(end), tuple(dilations))
    x = [draw(st.integers(1, 2)), draw(st.integers(1, 3)), *sizes]
    return {
        "x": x,
        "y": [*x[:2], *w.output_sizes(tuple(sizes))],
        "window": window,
        "Strides": strides,
        "Dilations": dilations,
        "StartPadding": start,
        "EndPadding": end,
    }


@EPS
@SETTINGS
@given(
    g=geometries(),
    t=st.sampled_from(["INT8", "UINT8"]),
    per_channel=st.booleans(),
    include=st.booleans(),
    seed=SEEDS,
)
def test_matches_reference(ep: str, g: dict[str, Any], t: str, per_channel: bool, include: bool, seed: int) -> None:
    rng = np.random.default_rng(seed)
    x, y, window = g.pop("x"), g.pop("y"), g.pop("window")
    shape = [1, x[1]] + [1] * (len(x) - 2) if per_channel else [1] * len(x)
    f = fields(x, y, window, t=t, params=shape, IncludePadding=include, **g)
    info = np.iinfo(np.int8 if t == "INT8" else np.uint8)

    def ints(s: list[int]) -> np.ndarray:
        return rng.integers(int(info.min), int(info.max) + 1, s).astype(info.dtype)

    scale = rng.uniform(0.01, 0.1, shape).astype(np.float32)
    feeds = {"InputTensor": ints(x), "InputZeroPointTensor": ints(shape), "OutputZeroPointTensor": ints(shape)}
    feeds |= {"InputScaleTensor": scale, "OutputScaleTensor": (scale * rng.uniform(0.3, 1.5, shape)).astype(np.float32)}
    desc = make_desc(OP, f)
    got = runtime.create(lowering.lower(desc, "t"), "t", ep).run(feeds)
    assert got.tobytes() == quantized_pooling.reference(desc, feeds).tobytes()
