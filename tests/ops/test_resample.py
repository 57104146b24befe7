"""DML_OPERATOR_UPSAMPLE_2D, …_RESAMPLE, …_RESAMPLE1, …_RESAMPLE2 (dml2onnx/ops/resample.py) and
…_VALUE_SCALE_2D (value_scale_2d.py): DxDispatch's dml_upsample_2d model run unchanged, the pages'
relation by hand, what DirectML showed where the pages are silent (rounding of each mode and
direction, the reciprocal of the scale, clamped edges, 8-bit truncation), validation with
DirectML's refusals, NEAREST moving bytes exactly, the "resize" candidate off the dml target (one
ONNX Resize where the CPU and CUDA EPs' index tables are DirectML's, the Gathers where they are
not), and properties over random shapes, scales, offsets and types against the numpy reference.
The matrix (dml2onnx/cases/resample.py) runs them on every EP present and through DirectML's API."""

from __future__ import annotations

import math
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_slice import every_variant

from dml2onnx import lowering
from dml2onnx.backends import dmlapi, runtime
from dml2onnx.cases.slice import data
from dml2onnx.core import dtypes, operator_table
from dml2onnx.core.errors import ModelError, format_path
from dml2onnx.graph import dml_ep
from dml2onnx.graph.builder import DEFAULT_OPSET
from dml2onnx.lowering import choices, tolerances
from dml2onnx.ops import registry, resample, resample_antialias
from strategies import SEEDS
from support import EPS, assert_matches_reference, make_desc, mismatches, refusal, run_cli, tensor

ROOT = Path(__file__).resolve().parents[2]
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
live = pytest.mark.skipif(dmlapi.missing() is not None, reason="DirectML's API under Wine is not set up (make dml-setup)")
NN, LIN = "DML_INTERPOLATION_MODE_NEAREST_NEIGHBOR", "DML_INTERPOLATION_MODE_LINEAR"
INCREASING, DECREASING = "DML_AXIS_DIRECTION_INCREASING", "DML_AXIS_DIRECTION_DECREASING"
RESAMPLE_TYPES = [t.name for t in operator_table.OPERATORS["RESAMPLE1"].support[0].tensors["InputTensor"].types]


def resample1(
    x: np.ndarray, out: list[int], mode: str, scales: list[float], offsets: tuple[list[float], list[float]], **more: Any
) -> dict[str, Any]:
    dtype = _name(x.dtype)
    return {
        "InputTensor": tensor(dtype, x.shape),
        "OutputTensor": tensor(dtype, out),
        "InterpolationMode": mode,
        "DimensionCount": x.ndim,
        "Scales": scales,
        "InputPixelOffsets": offsets[0],
        "OutputPixelOffsets": offsets[1],
        **more,
    }


def _name(dtype: np.dtype) -> str:
    return next(t.name for t in dtypes.ALL if t.numpy == dtype)


def run(op: str, fields: dict[str, Any], x: np.ndarray) -> np.ndarray:
    return every_variant(op, fields, {"InputTensor": x})


# -- DxDispatch's model, the pages' relation ------------------------------------------------------


@pytest.mark.parametrize("engine", ["cpu", pytest.param("directml", marks=live), pytest.param("dml", marks=live)])
def test_dxdispatch_upsample_2d_model_runs_unchanged(engine: str) -> None:
    """microsoft/DirectML DxDispatch/models/dml_upsample_2d.json, copied as it is into models/."""
    status, out, err = run_cli("run", str(ROOT / "models" / "dml_upsample_2d.json"), "--ep", engine)
    assert status == 0, err
    want = "Resource 'output': 1, 1.25, 1.75, 2, 1.5, 1.75, 2.25, 2.5, 2.5, 2.75, 3.25, 3.5, 3, 3.25, 3.75, 4\n"
    assert out.endswith(want), out


def test_upsample_2d_nearest_repeats_each_pixel() -> None:
    x = np.arange(6, dtype=np.float32).reshape(1, 1, 2, 3)
    fields = {
        "InputTensor": tensor("FLOAT32", [1, 1, 2, 3]),
        "OutputTensor": tensor("FLOAT32", [1, 1, 6, 6]),
        "ScaleSize": {"Width": 2, "Height": 3},
        "InterpolationMode": NN,
    }
    assert run("UPSAMPLE_2D", fields, x)[0, 0].tolist() == np.repeat(np.repeat(x[0, 0], 3, 0), 2, 1).tolist()


def test_resample_is_resample1_at_pixel_centres() -> None:
    x = np.arange(12, dtype=np.float32).reshape(1, 1, 3, 4)
    for mode in (NN, LIN):
        r0 = {
            "InputTensor": tensor("FLOAT32", x.shape),
            "OutputTensor": tensor("FLOAT32", [1, 1, 5, 7]),
            "InterpolationMode": mode,
            "ScaleCount": 4,
            "Scales": [1, 1, 1.5, 1.75],
        }
        r1 = resample1(x, [1, 1, 5, 7], mode, [1, 1, 1.5, 1.75], ([0.5] * 4, [-0.5] * 4))
        assert run("RESAMPLE", r0, x).tobytes() == run("RESAMPLE1", r1, x).tobytes()


def test_linear_with_aligned_corners_and_clamped_edges() -> None:
    x = np.array([0, 10, 20, 30], np.float32)
    got = run("RESAMPLE1", resample1(x, [8], LIN, [2], ([0], [0])), x)
    assert got.tolist() == [0, 5, 10, 15, 20, 25, 30, 30]  # beyond the last element: the edge repeats
    got = run("RESAMPLE1", resample1(x, [4], LIN, [1], ([0], [-2])), x)
    assert got.tolist() == [20, 30, 30, 30]


# -- where the pages are silent: what DirectML showed --------------------------------------------

# x = [0, 1, 2, 3] doubled at pixel centres: coordinates -0.25, 0.25, 0.75, 1.25, ..., 3.25
DOUBLED = {
    "RESAMPLE1": [0, 0, 1, 1, 2, 2, 3, 3],  # floor(x + 0.5)
    "INCREASING": [0, 1, 1, 2, 2, 3, 3, 3],  # RESAMPLE2: ceil(x)
    "DECREASING": [0, 0, 0, 1, 1, 2, 2, 3],  # RESAMPLE2: floor(x)
}


@pytest.mark.parametrize("rounding", list(DOUBLED))
def test_nearest_rounding_of_each_operator(rounding: str) -> None:
    x = np.arange(4, dtype=np.float32)
    op = "RESAMPLE1" if rounding == "RESAMPLE1" else "RESAMPLE2"
    more = {} if op == "RESAMPLE1" else {"RoundingDirection": f"DML_AXIS_DIRECTION_{rounding}"}
    fields = resample1(x, [8], NN, [2], ([0.5], [-0.5]), **more)
    assert run(op, fields, x).tolist() == DOUBLED[rounding]


def test_halves_go_up_under_resample1() -> None:
    x = np.arange(4, dtype=np.float32)
    # coordinates -0.5, 0.5, 1.5, 2.5: halves up
    assert run("RESAMPLE1", resample1(x, [4], NN, [1], ([0], [0.5])), x).tolist() == [0, 1, 2, 3]
    # coordinates -0.75, 0.25, 1.25, 2.25: RESAMPLE2 INCREASING takes the ceiling, not the nearest
    fields = resample1(x, [4], NN, [1], ([0], [0.75]), RoundingDirection="DML_AXIS_DIRECTION_INCREASING")
    assert run("RESAMPLE2", fields, x).tolist() == [0, 1, 2, 3]
    assert run("RESAMPLE1", resample1(x, [4], NN, [1], ([0], [0.75])), x).tolist() == [0, 0, 1, 2]


def test_coordinate_multiplies_by_the_reciprocal_of_the_scale() -> None:
    """RESAMPLE LINEAR by 3: (2 + 0.5) * float32(1/3) - 0.5 = 0.33333337 (DirectML's), where
    (2 + 0.5) / 3 - 0.5 gives 0.3333333."""
    x = np.arange(4, dtype=np.float32).reshape(1, 1, 1, 4)
    fields = {
        "InputTensor": tensor("FLOAT32", x.shape),
        "OutputTensor": tensor("FLOAT32", [1, 1, 1, 12]),
        "InterpolationMode": LIN,
        "ScaleCount": 4,
        "Scales": [1, 1, 1, 3],
    }
    got = run("RESAMPLE", fields, x).ravel()
    assert got[2] == np.float32(0.33333337) and got[3] == np.float32(0.66666675)


@pytest.mark.parametrize("dtype", ["INT8", "UINT8"])
def test_8_bit_linear_truncates_toward_zero(dtype: str) -> None:
    x = np.array([0, 127, 100, 3] if dtype == "INT8" else [0, 255, 200, 3], dtype.lower()).reshape(1, 4)
    got = run("RESAMPLE1", resample1(x, [1, 16], LIN, [1, 4], ([0.5, 0.5], [-0.5, -0.5])), x).ravel().tolist()
    want = {  # DirectML's (measured)
        "INT8": [0, 0, 15, 47, 79, 111, 123, 116, 110, 103, 87, 63, 39, 15, 3, 3],
        "UINT8": [0, 0, 31, 95, 159, 223, 248, 234, 220, 206, 175, 126, 76, 27, 3, 3],
    }
    assert got == want[dtype]
    x = np.array([0, -1, 4, -9], np.int8).reshape(1, 4)
    got = run("RESAMPLE1", resample1(x, [1, 16], LIN, [1, 4], ([0.5, 0.5], [-0.5, -0.5])), x)
    assert got.ravel().tolist() == [0, 0, 0, 0, 0, 0, 0, 0, 2, 3, 2, 0, -4, -7, -9, -9]


@pytest.mark.parametrize("dtype", RESAMPLE_TYPES)
@pytest.mark.parametrize("op", ["RESAMPLE", "RESAMPLE1", "RESAMPLE2"])
def test_nearest_moves_bytes_exactly(op: str, dtype: str) -> None:
    x = data(np.random.default_rng(5), (3, 4), dtypes.BY_NAME[dtype])
    fields = resample1(x, [5, 7], NN, [1.5, 1.75], ([0.5, 0.5], [-0.5, -0.5]))
    if op == "RESAMPLE":
        fields = {k: v for k, v in fields.items() if "Offsets" not in k and k != "DimensionCount"} | {"ScaleCount": 2}
    if op == "RESAMPLE2":
        fields["RoundingDirection"] = "DML_AXIS_DIRECTION_DECREASING"
    got = run(op, fields, x)
    shift = Fraction(1, 2) if op == "RESAMPLE2" else Fraction(0)  # floor(x) there, floor(x + 1/2) here

    def index(n: int, scale: Fraction) -> list[int]:
        return [min(n - 1, max(0, math.floor((o + Fraction(1, 2)) / scale - shift))) for o in range(n)]

    rows, cols = index(5, Fraction(3, 2)), index(7, Fraction(7, 4))
    rows, cols = [min(r, 2) for r in rows], [min(c, 3) for c in cols]
    assert got.tobytes() == x[np.ix_(rows, cols)].tobytes()


@live
def test_directml_agrees_on_the_silent_points() -> None:
    """The measured points above, through DirectML's API itself."""
    from dml2onnx.backends import winhost

    try:
        x = np.arange(4, dtype=np.float32)
        for rounding, want in DOUBLED.items():
            op = "RESAMPLE1" if rounding == "RESAMPLE1" else "RESAMPLE2"
            more = {} if op == "RESAMPLE1" else {"RoundingDirection": f"DML_AXIS_DIRECTION_{rounding}"}
            desc = make_desc(op, resample1(x, [8], NN, [2], ([0.5], [-0.5]), **more))
            assert dmlapi.execute(desc, {"InputTensor": x}).output.tolist() == want, rounding
        xi = np.array([0, 127, 100, 3], np.int8).reshape(1, 4)
        desc = make_desc("RESAMPLE1", resample1(xi, [1, 16], LIN, [1, 4], ([0.5, 0.5], [-0.5, -0.5])))
        got = dmlapi.execute(desc, {"InputTensor": xi}).output
        assert got.ravel().tolist()[:8] == [0, 0, 15, 47, 79, 111, 123, 116]
    finally:
        winhost.shutdown()


# -- validation --------------------------------------------------------------------------------


def _r1(**change: Any) -> dict[str, Any]:
    x = np.zeros((1, 4), np.float32)
    return resample1(x, [1, 8], NN, [1, 2], ([0.5, 0.5], [-0.5, -0.5])) | change


@pytest.mark.parametrize(
    ("op", "fields", "path", "message"),
    [
        ("RESAMPLE1", _r1(Scales=[1, 0]), "desc.Scales[1]", "must be at least 2**-23"),
        ("RESAMPLE1", _r1(Scales=[-1, 2]), "desc.Scales[0]", "must be at least 2**-23"),
        ("RESAMPLE1", _r1(Scales=[1, float("nan")]), "desc.Scales[1]", "must be at least 2**-23"),
        ("RESAMPLE1", _r1(Scales=[1, 2.0**-24]), "desc.Scales[1]", "must be at least 2**-23 (FLT_EPSILON)"),
        ("RESAMPLE1", _r1(InputPixelOffsets=[0.5, float("inf")]), "desc.InputPixelOffsets[1]", "must be finite"),
        ("RESAMPLE1", _r1(OutputPixelOffsets=[float("nan"), 0]), "desc.OutputPixelOffsets[0]", "must be finite"),
        ("RESAMPLE1", _r1(OutputTensor=tensor("FLOAT16", [1, 8])), "desc.OutputTensor.DataType", "same DataType"),
        ("RESAMPLE1", _r1(OutputTensor=tensor("FLOAT32", [8])), "desc.OutputTensor.Sizes", "same DimensionCount"),
        (
            "RESAMPLE",
            {
                "InputTensor": tensor("FLOAT32", [1, 4]),
                "OutputTensor": tensor("FLOAT32", [1, 8]),
                "InterpolationMode": NN,
                "ScaleCount": 1,
                "Scales": [2],
            },
            "desc.ScaleCount",
            "must be InputTensor's DimensionCount (2)",
        ),
        (
            "UPSAMPLE_2D",
            {
                "InputTensor": tensor("FLOAT32", [1, 1, 2, 2]),
                "OutputTensor": tensor("FLOAT32", [1, 1, 4, 5]),
                "ScaleSize": {"Width": 2, "Height": 2},
                "InterpolationMode": LIN,
            },
            "desc.OutputTensor.Sizes[3]",
            "must be InputTensor.Sizes[3] * 2 (4), not 5",
        ),
        (
            "UPSAMPLE_2D",
            {
                "InputTensor": tensor("FLOAT32", [1, 1, 2, 2]),
                "OutputTensor": tensor("FLOAT32", [1, 1, 2, 4]),
                "ScaleSize": {"Width": 2, "Height": 0},
                "InterpolationMode": LIN,
            },
            "desc.ScaleSize.Height",
            "must be at least 1",
        ),
        (
            "VALUE_SCALE_2D",
            {
                "InputTensor": tensor("FLOAT32", [1, 3, 2, 2]),
                "OutputTensor": tensor("FLOAT32", [1, 3, 2, 2]),
                "Scale": 1.0,
                "ChannelCount": 1,
                "Bias": [0.0],
            },
            "desc.ChannelCount",
            "must be InputTensor's channel count (Sizes[1] = 3), not 1",
        ),
        (
            "VALUE_SCALE_2D",
            {
                "InputTensor": tensor("FLOAT32", [1, 4, 2, 2]),
                "OutputTensor": tensor("FLOAT32", [1, 4, 2, 2]),
                "Scale": 1.0,
                "ChannelCount": 4,
                "Bias": [0.0] * 4,
            },
            "desc.ChannelCount",
            "must be 1 or 3, not 4",
        ),
    ],
)
def test_refusals(op: str, fields: dict[str, Any], path: str, message: str) -> None:
    e = refusal(op, fields)
    assert format_path(e.path) == path and message in e.rule, (format_path(e.path), e.rule)


def test_portable_graphs_pass_the_static_directml_check() -> None:
    for dtype in RESAMPLE_TYPES:
        for mode in (NN, LIN):
            x = np.zeros((2, 3, 4), dtype.lower())
            desc = make_desc("RESAMPLE1", resample1(x, [3, 5, 2], mode, [1.5, 1.7, 0.5], ([0.5] * 3, [-0.5] * 3)))
            assert dml_ep.check(lowering.lower(desc, "t", target="portable")) == []


# -- properties ----------------------------------------------------------------------------------


@st.composite
def resample_descs(draw: st.DrawFn) -> tuple[str, dict[str, Any], np.ndarray]:
    op = draw(st.sampled_from(["RESAMPLE", "RESAMPLE1", "RESAMPLE2", "RESAMPLE3", "UPSAMPLE_2D"]))
    seed = draw(SEEDS)
    rng = np.random.default_rng(seed)
    if op == "UPSAMPLE_2D":
        rank = draw(st.sampled_from([4, 5]))
        dtype = draw(st.sampled_from(["FLOAT32", "FLOAT16"]))
    else:
        rank = draw(st.integers(1, 4))
        dtype = draw(st.sampled_from(RESAMPLE_TYPES))
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=rank, max_size=rank)))
    mode = draw(st.sampled_from([NN, LIN]))
    dyadic = mode == LIN and not dtypes.BY_NAME[dtype].is_float  # exact weights for the 8-bit truncation
    if op == "UPSAMPLE_2D":
        w, h = draw(st.integers(1, 3)), draw(st.integers(1, 3))
        out = [*shape[:-2], shape[-2] * h, shape[-1] * w]
        fields = {"ScaleSize": {"Width": w, "Height": h}}
    else:
        scale_set = [0.5, 1.0, 2.0, 4.0] if dyadic else [0.5, 0.75, 1.0, 1.5, 2.0, 3.0]
        if op == "RESAMPLE3":  # below 0.5 too: the iterative downsampling where Antialiased and LINEAR
            scale_set = [0.25, *scale_set] if dyadic else [0.2, 0.25, 0.3, *scale_set]
        offset_set = [0.0, 0.25, 0.5, -0.5] if dyadic else [0.0, 0.3, 0.5, -0.5, 1.0]
        scales = draw(st.lists(st.sampled_from(scale_set), min_size=rank, max_size=rank))
        out = [max(1, int(n * s + draw(st.sampled_from([0, 0.5, 1])))) for n, s in zip(shape, scales, strict=True)]
        if op == "RESAMPLE":
            fields = {"ScaleCount": rank, "Scales": scales}
        else:
            offsets = [draw(st.lists(st.sampled_from(offset_set), min_size=rank, max_size=rank)) for _ in range(2)]
            fields = {"DimensionCount": rank, "Scales": scales, "InputPixelOffsets": offsets[0], "OutputPixelOffsets": offsets[1]}
            if op in ("RESAMPLE2", "RESAMPLE3"):
                fields["RoundingDirection"] = draw(
                    st.sampled_from(["DML_AXIS_DIRECTION_INCREASING", "DML_AXIS_DIRECTION_DECREASING"])
                )
            if op == "RESAMPLE3":  # mostly TRUE: it acts on LINEAR with a scale below 0.5
                fields["Antialiased"] = draw(st.sampled_from([True, True, False]))
    fields |= {"InputTensor": tensor(dtype, shape), "OutputTensor": tensor(dtype, out), "InterpolationMode": mode}
    if op == "RESAMPLE3":  # offsets the iterative downsampling refuses (test_iterative_downsampling_refusals): pixel centres
        try:
            make_desc(op, fields)
        except ModelError:
            fields |= {"InputPixelOffsets": [0.5] * rank, "OutputPixelOffsets": [-0.5] * rank}
    t = dtypes.BY_NAME[dtype]
    m = tolerances.RESAMPLE_MAGNITUDE
    x = rng.uniform(-m, m, shape).astype(t.numpy) if t.is_float else data(rng, shape, t)
    return op, fields, x


@EPS
@SETTINGS
@given(case=resample_descs())
def test_resample_matches_reference(ep: str, case: tuple[str, dict[str, Any], np.ndarray]) -> None:
    op, fields, x = case
    assert_matches_reference(ep, op, fields, {"InputTensor": x})


@EPS
@SETTINGS
@given(
    channels=st.sampled_from([1, 3]),
    batch=st.integers(1, 3),
    hw=st.tuples(st.integers(1, 4), st.integers(1, 4)),
    scale=st.floats(-tolerances.RESAMPLE_MAGNITUDE, tolerances.RESAMPLE_MAGNITUDE, width=32),
    dtype=st.sampled_from(["FLOAT32", "FLOAT16"]),
    seed=SEEDS,
)
def test_value_scale_2d_matches_reference(
    ep: str, channels: int, batch: int, hw: tuple[int, int], scale: float, dtype: str, seed: int
) -> None:
    rng = np.random.default_rng(seed)
    m = tolerances.RESAMPLE_MAGNITUDE
    shape = (batch, channels, *hw)
    fields = {
        "InputTensor": tensor(dtype, shape),
        "OutputTensor": tensor(dtype, shape),
        "Scale": scale,
        "ChannelCount": channels,
        "Bias": rng.uniform(-m, m, channels).astype(np.float32).tolist(),
    }
    x = rng.uniform(-m, m, shape).astype(dtype.lower())
    assert_matches_reference(ep, "VALUE_SCALE_2D", fields, {"InputTensor": x})


# -- the dml target: ONNX Resize where the DirectML EP maps it back exactly ------------------------


def _resize_nodes(op: str, fields: dict[str, Any]) -> list[Any]:
    model = lowering.lower(make_desc(op, fields), "t", target="dml")
    assert dml_ep.check(model) == []
    return [n for n in model.graph.node if n.op_type == "Resize"]


def test_dml_target_emits_resize_where_it_is_the_operator() -> None:
    from onnx import helper

    x = np.zeros((1, 1, 3, 4), np.uint8)
    nodes = _resize_nodes("RESAMPLE1", resample1(x, [1, 1, 6, 6], NN, [1, 1, 2, 1.5], ([0.5] * 4, [-0.5] * 4)))
    attrs = {a.name: helper.get_attribute_value(a) for a in nodes[0].attribute}
    assert attrs == {"coordinate_transformation_mode": b"half_pixel", "mode": b"nearest", "nearest_mode": b"round_prefer_ceil"}
    more = {"RoundingDirection": "DML_AXIS_DIRECTION_DECREASING"}
    nodes = _resize_nodes("RESAMPLE2", resample1(x, [1, 1, 6, 6], NN, [1, 1, 2, 1.5], ([0.0] * 4, [0.0] * 4), **more))
    attrs = {a.name: helper.get_attribute_value(a) for a in nodes[0].attribute}
    assert attrs["nearest_mode"] == b"floor" and attrs["coordinate_transformation_mode"] == b"asymmetric"


@pytest.mark.parametrize(
    ("why", "fields"),
    [
        (
            "ceil",
            resample1(
                np.zeros((3, 4), np.float32),
                [6, 6],
                NN,
                [2, 1.5],
                ([0.5] * 2, [-0.5] * 2),
                RoundingDirection="DML_AXIS_DIRECTION_INCREASING",
            ),
        ),
        ("sizes", resample1(np.zeros((3, 4), np.float32), [7, 6], LIN, [2, 1.5], ([0.5] * 2, [-0.5] * 2))),
        ("mixed modes", resample1(np.zeros((3, 4), np.float32), [6, 6], LIN, [2, 1.5], ([0.5, 0.0], [-0.5, 0.0]))),
        ("offsets", resample1(np.zeros((3, 4), np.float32), [6, 6], LIN, [2, 1.5], ([0.25] * 2, [0.0] * 2))),
    ],
)
def test_dml_target_keeps_the_gathers_elsewhere(why: str, fields: dict[str, Any]) -> None:
    op = "RESAMPLE2" if "RoundingDirection" in fields else "RESAMPLE1"
    assert _resize_nodes(op, fields) == [], why


@live
def test_dml_target_resize_on_the_directml_ep() -> None:
    """Each type and mode through the DirectML EP (under Wine): the Resize it maps back onto
    DML_RESAMPLE gives the reference (8-bit NEAREST included, where DML_RESAMPLE1 itself floors)."""
    from dml2onnx.backends import runtime, winhost
    from support import mismatches

    rng = np.random.default_rng(9)
    try:
        for dtype in RESAMPLE_TYPES:
            for mode in (NN, LIN):
                t = dtypes.BY_NAME[dtype]
                x = rng.uniform(-8, 8, (1, 2, 3, 4)).astype(t.numpy) if t.is_float else data(rng, (1, 2, 3, 4), t)
                desc = make_desc("RESAMPLE1", resample1(x, [1, 2, 6, 6], mode, [1, 1, 2, 1.5], ([0.5] * 4, [-0.5] * 4)))
                model = lowering.lower(desc, "t", target="dml")
                assert any(n.op_type == "Resize" for n in model.graph.node)
                session = runtime.create(model, "t", "dml")
                got = {"OutputTensor": session.run({"InputTensor": x})}
                want = {"OutputTensor": registry.family("RESAMPLE1").reference(desc, {"InputTensor": x})}
                assert session.nodes_off_ep() == [] and not mismatches(desc, got, want, "dml"), (dtype, mode)
    finally:
        winhost.shutdown()


# -- the portable and cuda targets: ONNX Resize where the CPU and CUDA EPs' tables are DirectML's ------


def _centred(x: np.ndarray, out: list[int], mode: str, scales: list[float], **more: Any) -> dict[str, Any]:
    """RESAMPLE1 at pixel centres (RESAMPLE's offsets)."""
    return resample1(x, out, mode, scales, ([0.5] * x.ndim, [-0.5] * x.ndim), **more)


def _kinds(model: Any) -> list[str]:
    return [n.op_type for n in model.graph.node]


def _payloads(shape: tuple[int, ...]) -> np.ndarray:
    """FLOAT32 values with NaN payloads (quiet and signaling), -0.0 and infinities among them."""
    x = np.arange(math.prod(shape), dtype=np.float32)
    bits = x.view(np.uint32)
    bits[:4] = [0x7F800001, 0xFFC00123, 0x80000000, 0xFF800000]
    return x.reshape(shape)


@pytest.mark.parametrize(("dtype", "mode"), [("FLOAT32", NN), ("UINT8", NN), ("FLOAT32", LIN)])
@pytest.mark.parametrize(("scales", "out"), [([1, 1, 2, 2], [2, 3, 8, 10]), ([1, 1, 0.5, 0.5], [2, 3, 2, 2])])
def test_resize_where_the_tables_agree(dtype: str, mode: str, scales: list[float], out: list[int]) -> None:
    """Up and down by 2 at pixel centres (the measured geometry): `portable` and `cuda` emit one
    Resize (CUDA EP, H100: NEAREST 1303 against 861-876 GB/s, LINEAR 1046 against 176-183), the dml
    target's node; on the CPU EP NEAREST moves the bytes (NaN payloads, -0.0), LINEAR is the
    reference within tolerances.py."""
    rng = np.random.default_rng(5)
    shape = (2, 3, 4, 5)
    if dtype == "UINT8":
        x = rng.integers(0, 256, shape).astype(np.uint8)
    else:
        x = _payloads(shape) if mode == NN else rng.uniform(-8, 8, shape).astype(np.float32)
    desc = make_desc("RESAMPLE1", resample1(x, out, mode, scales, ([0.5] * 4, [-0.5] * 4)))
    want = registry.family("RESAMPLE1").reference(desc, {"InputTensor": x})
    for target in ("portable", "cuda"):
        assert choices.choose(desc, target, DEFAULT_OPSET) == "resize"
        model = lowering.lower(desc, "t", target=target)
        assert _kinds(model) == ["Resize"], _kinds(model)
        if target == "portable":
            assert dml_ep.check(model) == []
        got = runtime.create(model, "t", "cpu").run({"InputTensor": x})
        if mode == NN:
            assert got.tobytes() == want.tobytes()
        else:
            assert not mismatches(desc, {"OutputTensor": got}, {"OutputTensor": want}, "cpu")


def test_resize_linear_values() -> None:
    """ONNX's bilinear Resize at pixel centres doubling a ramp: the clamped edges and the quarters."""
    x = np.array([[0, 1, 2, 3], [4, 6, 8, 10]], np.float32)
    desc = make_desc("RESAMPLE1", resample1(x, [2, 8], LIN, [1, 2], ([0.5] * 2, [-0.5] * 2)))
    model = lowering.lower(desc, "t", target="portable")
    assert _kinds(model) == ["Resize"]
    got = runtime.create(model, "t", "cpu").run({"InputTensor": x})
    assert got.tolist() == [[0, 0.25, 0.75, 1.25, 1.75, 2.25, 2.75, 3], [4, 4.5, 5.5, 6.5, 7.5, 8.5, 9.5, 10]]


def test_the_index_tables_decide() -> None:
    """Scale 1.7 from 6 elements: output 8 is at DirectML's 8.5 * (1 / 1.7) - 0.5 = 4.4999995 (element
    4), at ONNX's 8.5 / 1.7 - 0.5 = 4.5 (element 5). The Resize the DirectML EP maps back is
    wrong on the CPU EP there, so `portable` and `cuda` keep the Gather."""
    x = np.arange(6, dtype=np.float32)
    desc = make_desc("RESAMPLE1", resample1(x, [10], NN, [1.7], ([0.5], [-0.5])))
    want = registry.family("RESAMPLE1").reference(desc, {"InputTensor": x})
    assert want[8] == 4
    dml_node = runtime.create(lowering.lower(desc, "t", target="dml"), "t", "cpu").run({"InputTensor": x})
    assert dml_node[8] == 5 and np.array_equal(np.delete(dml_node, 8), np.delete(want, 8))
    for target in ("portable", "cuda"):
        assert choices.choose(desc, target, DEFAULT_OPSET) == "gather"
        for variant in choices.available(desc, DEFAULT_OPSET, target):
            model = lowering.lower(desc, "t", target=target, variant=variant)
            assert "Resize" not in _kinds(model), variant
            assert runtime.create(model, "t", "cpu").run({"InputTensor": x}).tobytes() == want.tobytes()


@pytest.mark.parametrize(
    ("why", "op", "fields"),
    [
        ("1 / 3 rounds", "RESAMPLE1", _centred(np.zeros((2, 4), np.float32), [2, 12], LIN, [1, 3])),
        ("CPU FLOAT16 quiets sNaN", "RESAMPLE1", _centred(np.zeros((3, 4), np.float16), [6, 8], NN, [2, 2])),
        ("no CUDA INT8", "RESAMPLE1", _centred(np.zeros((3, 4), np.int8), [6, 8], NN, [2, 2])),
        ("8-bit LINEAR rounds", "RESAMPLE1", _centred(np.zeros((3, 4), np.uint8), [6, 8], LIN, [2, 2])),
        ("3-D LINEAR", "RESAMPLE1", _centred(np.zeros((2, 3, 4), np.float32), [2, 6, 8], LIN, [1, 2, 2])),
        ("scale 1: no coordinate", "RESAMPLE1", resample1(np.zeros((4,), np.float32), [4], NN, [1], ([0.0], [-0.5]))),
        ("ceil", "RESAMPLE2", _centred(np.zeros((3, 4), np.float32), [6, 8], NN, [2, 2], RoundingDirection=INCREASING)),
    ],
)
def test_gather_where_resize_would_differ(why: str, op: str, fields: dict[str, Any]) -> None:
    desc = make_desc(op, fields)
    for target in ("portable", "cuda"):
        assert choices.choose(desc, target, DEFAULT_OPSET) == "gather", why
        for variant in choices.available(desc, DEFAULT_OPSET, target):
            assert "Resize" not in _kinds(lowering.lower(desc, "t", target=target, variant=variant)), (why, variant)


def test_an_axis_keeping_its_size_takes_no_coordinate() -> None:
    """Scale 1.1 from 4 elements to 4: DirectML reads floor(x * (1 / 1.1)) = 0 0 1 2 (RESAMPLE2
    DECREASING at the corners), as ONNX's division would; the CPU EP's Resize (ORT 1.31.1) takes
    no coordinate on an axis that keeps its size and reads 0 1 2 3. `portable` and `cuda` keep the
    Gather there."""
    x = np.arange(4, dtype=np.float32) * 10
    desc = make_desc("RESAMPLE2", resample1(x, [4], NN, [1.1], ([0.0], [0.0]), RoundingDirection=DECREASING))
    attrs = resample.resize_attributes(desc)
    assert attrs is not None and resample.onnx_nearest_indices(4, 4, 1.1, attrs).tolist() == [0, 0, 1, 2]
    assert registry.family("RESAMPLE2").reference(desc, {"InputTensor": x}).tolist() == [0, 0, 10, 20]
    dml_node = runtime.create(lowering.lower(desc, "t", target="dml"), "t", "cpu").run({"InputTensor": x})
    assert dml_node.tolist() == [0, 10, 20, 30]
    for target in ("portable", "cuda"):
        assert choices.choose(desc, target, DEFAULT_OPSET) == "gather"


def test_shape_inference_sizes() -> None:
    """10 * 0.9 is 9 in FLOAT32 (ORT's output size) but 8.99999976 in ONNX's shape inference (the
    FLOAT32 scale in FLOAT64): no Resize on any target (it failed the lowering's check)."""
    x = np.arange(10, dtype=np.float32)
    desc = make_desc("RESAMPLE1", _centred(x, [9], NN, [0.9]))
    assert resample.resize_attributes(desc) is None
    want = registry.family("RESAMPLE1").reference(desc, {"InputTensor": x})
    for target in ("portable", "cuda", "dml"):
        model = lowering.lower(desc, "t", target=target)
        assert "Resize" not in _kinds(model)
        if target != "dml":
            assert runtime.create(model, "t", "cpu").run({"InputTensor": x}).tobytes() == want.tobytes()


def test_smallest_scale_is_flt_epsilon() -> None:
    """DirectML takes 2**-23 and refuses the FLOAT32 below it (measured); inf is taken too (every
    output reads the coordinate -InputPixelOffset)."""
    x = np.arange(4, dtype=np.float32)
    assert run("RESAMPLE1", resample1(x, [3], LIN, [2.0**-23], ([0.0], [0.0])), x).tolist() == [0, 3, 3]
    assert run("RESAMPLE1", resample1(x, [3], LIN, [float("inf")], ([0.0], [0.0])), x).tolist() == [0, 0, 0]
    below = float(np.nextafter(np.float32(2.0**-23), np.float32(0)))
    assert "FLT_EPSILON" in refusal("RESAMPLE1", resample1(x, [3], LIN, [below], ([0.0], [0.0]))).rule


def test_pixel_offsets_need_one_element_per_dimension() -> None:
    """DimensionCount counts Scales; the offsets' lengths are checked too (a fuzzed model found a
    traceback here)."""
    fields = {
        "InputTensor": tensor("FLOAT32", [4]),
        "OutputTensor": tensor("FLOAT32", [8]),
        "InterpolationMode": "LINEAR",
        "DimensionCount": 1,
        "Scales": [2.0],
        "InputPixelOffsets": [0.5, 0.5],
        "OutputPixelOffsets": [-0.5],
    }
    e = refusal("RESAMPLE1", fields)
    assert format_path(e.path) == "desc.InputPixelOffsets" and "must have DimensionCount (1) elements, not 2" in str(e), str(e)


# -- RESAMPLE3 (feature level 6_4) ---------------------------------------------------------------------


def _identity_rows(n: int, m: int, scale: float, mode: str, antialiased: bool, offsets: tuple[float, float]) -> dict[str, Any]:
    """RESAMPLE3 of the n x n identity along its last axis: output row j holds every input's weight."""
    ip, op_ = offsets
    x = np.eye(n, dtype=np.float32)
    fields = resample1(x, [n, m], mode, [1, scale], ([ip, ip], [op_, op_]))
    return fields | {"RoundingDirection": "DML_AXIS_DIRECTION_DECREASING", "Antialiased": antialiased}


@pytest.mark.parametrize(
    ("scale", "mode", "offsets"),
    [(0.5, LIN, (0.5, -0.5)), (0.5, LIN, (0.0, 0.0)), (0.55, LIN, (0.2, 0.1)), (0.25, NN, (0.5, -0.5)), (3.0, LIN, (0.5, -0.5))],
)
def test_resample3_antialiased_is_resample2_where_it_does_not_act(scale: float, mode: str, offsets: tuple[float, float]) -> None:
    m = max(1, int(16 * scale))
    with_aa, without = (make_desc("RESAMPLE3", _identity_rows(16, m, scale, mode, aa, offsets)) for aa in (True, False))
    x = {"InputTensor": np.eye(16, dtype=np.float32)}
    got = run("RESAMPLE3", with_aa.source, x["InputTensor"])
    two = make_desc("RESAMPLE2", {k: v for k, v in without.source.items() if k != "Antialiased"})
    assert got.tobytes() == registry.family("RESAMPLE2").reference(two, x).tobytes()


@live
@pytest.mark.parametrize(
    ("scale", "mode", "offsets"),
    [(0.5, LIN, (0.5, -0.5)), (0.5, LIN, (0.0, 0.0)), (0.55, LIN, (0.2, 0.1)), (0.25, NN, (0.5, -0.5)), (3.0, LIN, (0.5, -0.5))],
)
def test_directml_antialiased_changes_nothing_there(scale: float, mode: str, offsets: tuple[float, float]) -> None:
    m = max(1, int(16 * scale))
    x = {"InputTensor": np.eye(16, dtype=np.float32)}
    on, off = (
        dmlapi.execute(make_desc("RESAMPLE3", _identity_rows(16, m, scale, mode, aa, offsets)), x).output for aa in (True, False)
    )
    assert on.tobytes() == off.tobytes()
    desc = make_desc("RESAMPLE3", _identity_rows(16, m, scale, mode, True, offsets))
    assert not mismatches(desc, {"OutputTensor": on}, {"OutputTensor": registry.family("RESAMPLE3").reference(desc, x)}, "dml")


# -- RESAMPLE3's iterative downsampling (Antialiased, LINEAR, a scale below 0.5) ---------------------------------


@pytest.mark.parametrize(
    ("n", "m", "want"),
    [(16, 5, [16, 8, 5]), (12, 4, [12, 8, 4]), (15, 5, [15, 8, 5]), (9, 3, [9, 8, 4, 3]), (10, 2, [10, 8, 4, 2])]
    + [(20, 5, [20, 16, 8, 5]), (33, 2, [33, 32, 16, 8, 4, 2]), (8, 4, [8, 4, 4]), (5, 9, [5, 9, 9]), (16, 8, [16, 8, 8])],
)
def test_chain_of_sizes(n: int, m: int, want: list[int]) -> None:
    """DirectML's chains (measured): n, m, m where 2 m >= n, else the powers of two between."""
    assert resample_antialias.chain_sizes(n, m) == want


def test_joint_passes_pad_the_shorter_chains() -> None:
    """(16, 10) to (5, 2) (measured): axis 0 takes 16 8 5 5 next to axis 1's 10 8 4 2."""
    assert resample_antialias.antialiased_plans((16, 10), (5, 2)) == [[8, 5, 5], [8, 4, 2]]


# output 0's weights over the first inputs, as DirectML 1.15 weighs them (measured, half-pixel offsets)
AA_WEIGHTS = [
    (16, 5, 1 / 3, [0.35, 0.35, 0.15, 0.15]),
    (12, 4, 1 / 3, [0.375, 0.25, 0.375]),
    (6, 2, 1 / 3, [0.375, 0.25, 0.375]),
    (10, 2, 0.2, [7 / 32, 6 / 32, 6 / 32, 6 / 32, 7 / 32]),
    (20, 5, 0.25, [49 / 160, 21 / 80, 3 / 16, 9 / 80, 21 / 160]),
    (9, 3, 1 / 3, [25 / 64, 35 / 96, 13 / 96, 7 / 96, 7 / 192]),
    (8, 2, 0.25, [0.25, 0.25, 0.25, 0.25]),
    (16, 4, 0.3, [0.25, 0.25, 0.25, 0.25]),
]


@pytest.mark.parametrize(("n", "m", "scale", "want"), AA_WEIGHTS)
def test_iterative_downsampling_weights(n: int, m: int, scale: float, want: list[float]) -> None:
    """RESAMPLE3 of the identity: output 0 weighs the inputs as DirectML does, every candidate on
    every target giving the reference's bytes; the rows sum to 1, the last mirrors the first."""
    w = run("RESAMPLE3", _identity_rows(n, m, scale, LIN, True, (0.5, -0.5)), np.eye(n, dtype=np.float32)).T
    np.testing.assert_allclose(w[0, : len(want)], want, rtol=0, atol=1e-6)
    assert not np.any(w[0, len(want) :])
    np.testing.assert_allclose(w.sum(axis=1), 1, atol=1e-6)
    np.testing.assert_allclose(w[-1, ::-1], w[0], atol=1e-6)


def test_iterative_downsampling_ignores_scales_and_rounding() -> None:
    x = np.eye(16, dtype=np.float32)
    base = run("RESAMPLE3", _identity_rows(16, 5, 1 / 3, LIN, True, (0.5, -0.5)), x)
    for scale in (0.1, 0.49):
        for rounding in (INCREASING, DECREASING):
            fields = _identity_rows(16, 5, scale, LIN, True, (0.5, -0.5)) | {"RoundingDirection": rounding}
            assert run("RESAMPLE3", fields, x).tobytes() == base.tobytes()


def test_iterative_downsampling_blurs_axes_of_scale_1() -> None:
    """Every axis takes its chain once one scale is below 0.5; a size-keeping pass of the tf pair
    (0, -0.5) averages neighbours (u = o + 0.5, w = 1/2), so an axis of scale 1 is not kept."""
    x = np.arange(8, dtype=np.float32).reshape(2, 4) * np.float32(4)
    fields = resample1(x, [2, 1], LIN, [1, 0.25], ([0, 0.5], [-0.5, -0.5]), RoundingDirection=DECREASING, Antialiased=True)
    got = run("RESAMPLE3", fields, x)
    # axis 1: 4 -> 2 -> 1, a box of 4: 6 and 22; axis 0: 2 -> 2 -> 2, twice (x[0] + x[1]) / 2, x[1] clamped
    assert got.ravel().tolist() == [18, 22]


def _aa_fields(
    x: np.ndarray, out: list[int], ip: list[float], op: list[float], scales: list[float] | None = None
) -> dict[str, Any]:
    scales = scales or [0.3] + [1.0] * (x.ndim - 1)
    return resample1(x, out, LIN, scales, (ip, op), RoundingDirection=DECREASING, Antialiased=True)


STANDARD = [(0.5, -0.5), (0.0, 0.0), (0.0, -0.5)]


def _aa_case(rng: np.random.Generator, dtype: str, kind: str) -> tuple[np.ndarray, dict[str, Any]]:
    """A random accepted desc: `kind` "standard" (every axis a standard pair), "one" (one axis but
    axis 0 with any offsets; in [0, 1) for INT8 and UINT8), "arbitrary" (InputPixelOffsets in [0, 1)
    on every axis, axis 0 too; FLOAT32 and FLOAT16 only)."""
    rank = int(rng.integers(1, 5))
    shape = [int(v) for v in rng.integers(1, 13 if rank > 2 else 33, rank)]
    out = [max(1, int(n * rng.uniform(0.05, 0.49))) if rng.random() < 0.6 else int(rng.integers(1, 13)) for n in shape]
    scales = [float(rng.uniform(0.05, 0.49))] + [float(rng.choice([1.0, rng.uniform(0.5, 3)])) for _ in range(rank - 1)]
    scales = [float(v) for v in rng.permutation(scales)]
    pairs = [STANDARD[int(rng.integers(3))] for _ in range(rank)]
    if kind == "one" and rank > 1:
        a = int(rng.integers(1, rank))
        low = -2.0 if dtypes.BY_NAME[dtype].is_float else 0.0  # 8-bit: outside [0, 1) extrapolates (refused)
        pairs[a] = (round(float(rng.uniform(low, 2 if low else 1)), 3), round(float(rng.uniform(-2, 2)), 3))
    if kind == "arbitrary":
        pairs = [(round(float(rng.uniform(0, 1)), 3), round(float(rng.uniform(-1.5, 1.5)), 3)) for _ in range(rank)]
    t = dtypes.BY_NAME[dtype]
    m = tolerances.RESAMPLE_MAGNITUDE
    x = rng.uniform(-m, m, shape).astype(t.numpy) if t.is_float else data(rng, tuple(shape), t)
    fields = resample1(x, out, LIN, scales, ([p[0] for p in pairs], [p[1] for p in pairs]))
    return x, fields | {"RoundingDirection": str(rng.choice([INCREASING, DECREASING])), "Antialiased": True}


AA_KINDS = [("FLOAT32", "standard"), ("FLOAT32", "one"), ("FLOAT32", "arbitrary"), ("FLOAT16", "standard")]
AA_KINDS += [("FLOAT16", "arbitrary"), ("INT8", "standard"), ("UINT8", "standard"), ("UINT8", "one")]


@pytest.mark.parametrize(("dtype", "kind"), AA_KINDS)
def test_iterative_downsampling_lowered_is_the_reference(dtype: str, kind: str) -> None:
    """1-D to 4-D: every candidate on `portable`, `cpu` and `cuda` gives the reference's bytes on the
    CPU EP (each pass's Gathers and lerps in FLOAT32), the `dml` graph passes the static check."""
    rng = np.random.default_rng(AA_KINDS.index((dtype, kind)))
    for _ in range(6):
        x, fields = _aa_case(rng, dtype, kind)
        desc = make_desc("RESAMPLE3", fields)
        assert resample_antialias.antialiasing(desc)
        want = every_variant("RESAMPLE3", fields, {"InputTensor": x})
        model = lowering.lower(desc, "t", target="cuda")
        assert "Resize" not in _kinds(model)
        assert runtime.create(model, "t", "cpu").run({"InputTensor": x}).tobytes() == want.tobytes()


def test_iterative_downsampling_does_not_take_resize() -> None:
    """Where resize_attributes would find a Resize (half-pixel, 8 to 2 on the last two of 4 axes),
    none: the DirectML EP's Resize is RESAMPLE2's single lerp, ONNX's antialias another filter."""
    x = np.zeros((1, 1, 8, 8), np.float32)
    fields = _aa_fields(x, [1, 1, 2, 2], [0.5] * 4, [-0.5] * 4, [1, 1, 0.25, 0.25])
    desc = make_desc("RESAMPLE3", fields)
    assert resample.resize_attributes(desc) is None
    assert resample.resize_attributes(make_desc("RESAMPLE3", fields | {"Antialiased": False})) is not None
    for target in ("portable", "cuda", "dml"):
        assert "Resize" not in _kinds(lowering.lower(desc, "t", target=target))


@pytest.mark.parametrize(
    ("fields", "path", "message"),
    [
        (
            _aa_fields(np.zeros((8,), np.float32), [2], [1.0], [0.0]),
            "desc.InputPixelOffsets[0]",
            "must be in [0, 1) on axis 0 (the outermost, InputTensor.Sizes[0] = 8 > 1) where Antialiased LINEAR "
            "downscaling acts (Scales[0] = 0.3, below 0.5), not 1.0",
        ),
        (
            _aa_fields(np.zeros((8, 6), np.float32), [2, 6], [-0.25, 0.5], [0.5, -0.5]),
            "desc.InputPixelOffsets[0]",
            "must be in [0, 1) on axis 0",
        ),
        (
            _aa_fields(np.zeros((1, 8, 6), np.float32), [1, 2, 6], [0.5, 1.5, 0.2], [-0.5, 0.0, 0.1]),
            "desc.InputPixelOffsets[1]",
            "and axis 2 has offsets other than (0.5, -0.5), (0, 0), (0, -0.5) too, not 1.5",
        ),
        (
            _aa_fields(np.zeros((8, 6), np.int8), [2, 6], [0.3, 0.5], [0.1, -0.5]),
            "desc.InputPixelOffsets[0]",
            "must be one of (0.5, -0.5), (0, 0), (0, -0.5) with OutputPixelOffsets[0] on INT8",
        ),
        (
            _aa_fields(np.zeros((1, 8), np.uint8), [1, 2], [0.5, 1.25], [-0.5, 0.0]),
            "desc.InputPixelOffsets[1]",
            "must be in [0, 1) on UINT8",
        ),
    ],
)
def test_iterative_downsampling_refusals(fields: dict[str, Any], path: str, message: str) -> None:
    e = refusal("RESAMPLE3", fields)
    assert format_path(e.path) == path and message in e.rule, (format_path(e.path), e.rule)


@pytest.mark.parametrize(
    "fields",
    [
        _aa_fields(np.zeros((1, 8), np.float32), [1, 2], [1.5, -1.25], [-2.0, 0.75]),  # axis 0 of one element
        _aa_fields(np.zeros((3, 8), np.float32), [3, 2], [0.5, 1.5], [-0.5, -1.0]),  # one wild axis but axis 0
        _aa_fields(np.zeros((8, 6, 5), np.float32), [2, 6, 5], [0.3, 0.9, 0.0], [0.1, 1.2, -1.0]),  # in [0, 1): a few ulps
        _aa_fields(np.zeros((8, 6), np.int8), [2, 6], [0.0, 0.7], [-0.5, 0.2]),  # one odd axis: exact
        _aa_fields(np.zeros((8,), np.float32), [2], [0.5], [-0.5]) | {"Antialiased": False},  # RESAMPLE2's
        _aa_fields(np.zeros((8,), np.float32), [2], [1.0], [0.0]) | {"InterpolationMode": NN},  # no filter
    ],
)
def test_iterative_downsampling_accepts(fields: dict[str, Any]) -> None:
    x = np.random.default_rng(3).uniform(-8, 8, fields["InputTensor"]["Sizes"]).astype(fields["InputTensor"]["DataType"].lower())
    every_variant("RESAMPLE3", fields, {"InputTensor": x})


@live
def test_directml_iterative_downsampling_weights() -> None:
    """The identity rows of AA_WEIGHTS through DirectML's API: the reference's bytes."""
    for n, m, scale, _ in AA_WEIGHTS:
        x = {"InputTensor": np.eye(n, dtype=np.float32)}
        desc = make_desc("RESAMPLE3", _identity_rows(n, m, scale, LIN, True, (0.5, -0.5)))
        got = dmlapi.execute(desc, x).output
        assert got.tobytes() == registry.family("RESAMPLE3").reference(desc, x).tobytes(), (n, m)
    x = np.arange(8, dtype=np.float32).reshape(2, 4) * np.float32(4)
    fields = resample1(x, [2, 1], LIN, [1, 0.25], ([0, 0.5], [-0.5, -0.5]), RoundingDirection=DECREASING, Antialiased=True)
    assert dmlapi.execute(make_desc("RESAMPLE3", fields), {"InputTensor": x}).output.ravel().tolist() == [18, 22]


@live
@pytest.mark.parametrize(("dtype", "kind"), AA_KINDS)
def test_directml_iterative_downsampling(dtype: str, kind: str) -> None:
    """Random accepted descs, 1-D to 4-D, through DirectML's API: the reference's bytes where the
    passes are exact (antialiasing_exact, FLOAT32 and the 8-bit types), else within tolerances.py."""
    rng = np.random.default_rng(100 + AA_KINDS.index((dtype, kind)))
    for _ in range(12):
        x, fields = _aa_case(rng, dtype, kind)
        desc = make_desc("RESAMPLE3", fields)
        got = dmlapi.execute(desc, {"InputTensor": x}).output
        want = registry.family("RESAMPLE3").reference(desc, {"InputTensor": x})
        if dtype != "FLOAT16" and resample_antialias.antialiasing_exact(desc):
            assert got.tobytes() == want.tobytes(), (x.shape, fields["OutputTensor"], fields["InputPixelOffsets"])
        assert not mismatches(desc, {"OutputTensor": got}, {"OutputTensor": want}, "dml"), (x.shape, fields)
