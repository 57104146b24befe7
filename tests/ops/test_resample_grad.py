"""DML_OPERATOR_RESAMPLE_GRAD and …_RESAMPLE_GRAD1 (dml2onnx/ops/resample_grad.py): the pages'
example, values measured through DirectML's API (the forward read with the pixel offsets swapped),
DirectML's refusals, the graph's nodes, a finding on non-finite gradients, and properties over
random shapes, scales and offsets: the reference is the adjoint of RESAMPLE1 / RESAMPLE2 with the
offsets swapped, and the graph computes the reference. The matrix (dml2onnx/cases/resample_grad.py)
runs them on every EP present and through DirectML's API."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_slice import every_variant

from dml2onnx import lowering
from dml2onnx.backends import dmlapi
from dml2onnx.core.errors import format_path
from dml2onnx.lowering.tolerances import RESAMPLE_GRAD_TERMS, RESAMPLE_MAGNITUDE
from dml2onnx.ops import registry, resample_grad
from strategies import SEEDS
from support import assert_matches_reference, make_desc, refusal, run_cli, tensor

ROOT = Path(__file__).resolve().parents[2]
NN, LIN = "NEAREST_NEIGHBOR", "LINEAR"
live = pytest.mark.skipif(dmlapi.missing() is not None, reason="DirectML's API under Wine is not set up (make dml-setup)")
ENGINES = ["cpu", pytest.param("directml", marks=live), pytest.param("dml", marks=live)]


def grad_fields(
    op: str,
    sizes: tuple[list[int], list[int]],
    mode: str,
    scales: list[float],
    offsets: tuple[list[float], list[float]],
    dtype: str = "FLOAT32",
    rounding: str = "INCREASING",
) -> dict[str, Any]:
    """`sizes`: (InputGradientTensor's, OutputGradientTensor's); `offsets`: (input, output)."""
    fields = {
        "InputGradientTensor": tensor(dtype, sizes[0]),
        "OutputGradientTensor": tensor(dtype, sizes[1]),
        "InterpolationMode": mode,
        "DimensionCount": len(scales),
        "Scales": scales,
        "InputPixelOffsets": offsets[0],
        "OutputPixelOffsets": offsets[1],
    }
    return fields | ({"RoundingDirection": rounding} if op == "RESAMPLE_GRAD1" else {})


def grad_1d(
    op: str, g: Any, n: int, mode: str, scale: float, offsets: tuple[float, float], rounding: str = "INCREASING"
) -> list[float]:
    fields = grad_fields(op, ([len(g)], [n]), mode, [scale], ([offsets[0]], [offsets[1]]), rounding=rounding)
    return every_variant(op, fields, {"InputGradientTensor": np.asarray(g, np.float32)}).tolist()


# -- the pages' example, DxDispatch's model -----------------------------------------------------------


def test_page_example() -> None:
    """Nearest by 0.5 (height) and 1.5 (width): [4, 5, 6] gives [[9, 6], [0, 0]]: RESAMPLE_GRAD1
    rounding down at pixel centres, or RESAMPLE_GRAD with the output offset 0 (the page names none)."""
    g = np.array([4, 5, 6], np.float32).reshape(1, 1, 1, 3)
    sizes = ([1, 1, 1, 3], [1, 1, 2, 2])
    centres = ([0.5] * 4, [-0.5] * 4)
    f1 = grad_fields("RESAMPLE_GRAD1", sizes, NN, [1, 1, 0.5, 1.5], centres, rounding="DECREASING")
    f0 = grad_fields("RESAMPLE_GRAD", sizes, NN, [1, 1, 0.5, 1.5], ([0.5] * 4, [0.0] * 4))
    for op, fields in (("RESAMPLE_GRAD1", f1), ("RESAMPLE_GRAD", f0)):
        assert every_variant(op, fields, {"InputGradientTensor": g})[0, 0].tolist() == [[9, 6], [0, 0]]


@pytest.mark.parametrize("engine", ENGINES)
def test_model_runs(engine: str) -> None:
    status, out, err = run_cli("run", str(ROOT / "models" / "resample_grad.json"), "--ep", engine)
    assert status == 0, err
    assert "Resource 'page_output': 9, 6, 0, 0\n" in out
    assert "Resource 'row_output': 3.25, 1107.75\n" in out
    assert out.endswith("Resource 'corners_output': 2, 6, 10, 10\n"), out


# -- what DirectML showed: the forward read with the offsets swapped ----------------------------------


def test_linear_at_pixel_centres_reads_the_offsets_swapped() -> None:
    # measured: one-hot gradients of 4 elements doubled from 2 give the rows [0.75, 0.25], [0.25,
    # 0.75], [0, 1], [0, 1] (coordinates 0.25, 0.75, 1.25, 1.75 = (o - 0.5) / 2 + 0.5); the adjoint
    # of RESAMPLE1 with the same fields would give [1, 0], [0.75, 0.25], [0.25, 0.75], [0, 1]
    got = grad_1d("RESAMPLE_GRAD", [1, 10, 100, 1000], 2, LIN, 2, (0.5, -0.5))
    assert got == [0.75 + 2.5, 0.25 + 7.5 + 100 + 1000]
    rows = [grad_1d("RESAMPLE_GRAD", np.eye(4)[i], 2, LIN, 2, (0.5, -0.5)) for i in range(4)]
    assert rows == [[0.75, 0.25], [0.25, 0.75], [0, 1], [0, 1]]


def test_nearest_by_three_at_pixel_centres() -> None:
    # measured: of 9 gradient elements, element 0 reaches 0, elements 1-3 reach 1, 4-8 reach 2
    assert grad_1d("RESAMPLE_GRAD", list(range(1, 10)), 3, NN, 3, (0.5, -0.5)) == [1, 2 + 3 + 4, 5 + 6 + 7 + 8 + 9]


def test_equal_offsets_give_the_adjoint_of_the_same_fields() -> None:
    # corners aligned (0, 0): the swap changes nothing; LINEAR by 2 as RESAMPLE1 reads it
    assert grad_1d("RESAMPLE_GRAD", [1, 2, 4, 8], 2, LIN, 2, (0, 0)) == [1 + 1, 1 + 4 + 8]


def test_unequal_offsets() -> None:
    # measured: scale 2.5, InputPixelOffset 0.5, OutputPixelOffset 0: coordinates (o - 0.5) / 2.5
    rows = [grad_1d("RESAMPLE_GRAD", np.eye(8)[i], 3, LIN, 2.5, (0.5, 0)) for i in range(8)]
    want = [[1, 0, 0], [0.8, 0.2, 0], [0.4, 0.6, 0], [0, 1, 0], [0, 0.6, 0.4], [0, 0.2, 0.8], [0, 0, 1], [0, 0, 1]]
    np.testing.assert_allclose(rows, want, atol=1e-6)


@pytest.mark.parametrize(
    ("rounding", "want"),
    # 8 elements into 4 by 2 at pixel centres: coordinates (o - 0.5) / 2 + 0.5 = 0.25, 0.75, 1.25, ...,
    # 3.75 rounded up (the last two clamped to 3; nothing reaches 0) or down
    [("INCREASING", [0, 1 + 2, 4 + 8, 16 + 32 + 64 + 128]), ("DECREASING", [1 + 2, 4 + 8, 16 + 32, 64 + 128])],
)
def test_grad1_rounds_as_resample2(rounding: str, want: list[int]) -> None:
    g = [2**i for i in range(8)]
    assert grad_1d("RESAMPLE_GRAD1", g, 4, NN, 2, (0.5, -0.5), rounding) == want


def test_elements_nothing_reads_stay_zero_and_the_edges_take_the_rest() -> None:
    # sizes are free: 2 gradient elements into 5; coordinates (o - 0) / 2 - 0 = 0 and 0.5
    assert grad_1d("RESAMPLE_GRAD", [4, 8], 5, LIN, 2, (0, 0)) == [8, 4, 0, 0, 0]
    # an infinite scale: every element reads coordinate -OutputPixelOffset (0.5: halves)
    assert grad_1d("RESAMPLE_GRAD", [4, 8], 3, LIN, float("inf"), (0.5, -0.5)) == [6, 6, 0]


@live
def test_values_match_directml() -> None:
    """A few of the measured cases again through DirectML's API, in 2-D and FLOAT16."""
    rng = np.random.default_rng(3)
    cases = (("RESAMPLE_GRAD", LIN, "FLOAT32"), ("RESAMPLE_GRAD1", NN, "FLOAT16"), ("RESAMPLE_GRAD", NN, "FLOAT32"))
    for op, mode, dtype in cases:
        fields = grad_fields(op, ([5, 10], [3, 4]), mode, [1.5, 2.5], ([0.25, 0.5], [0.7, -0.5]), dtype, "DECREASING")
        desc = make_desc(op, fields)
        g = rng.uniform(-8, 8, (5, 10)).astype(np.float16 if dtype == "FLOAT16" else np.float32)
        got = dmlapi.execute(desc, {"InputGradientTensor": g}).output
        want = resample_grad.reference(desc, {"InputGradientTensor": g})
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=2.0**-10, atol=1e-4)


@live
def test_finding_linear_spreads_non_finite_gradients_along_the_last_of_four_axes() -> None:
    """With 4-D tensors scaled along the last axis, DirectML's LINEAR gradient sends a NaN also into
    the elements around its taps that it has weight 0 in (NaN * 0); 1-D to 3-D tensors and the
    other axes keep it in its taps, as the page's weighted contributions and the graphs do.
    NEAREST keeps it in its one element."""
    g = np.array([np.nan, 1], np.float32)
    for sizes, spread in (([1, 1, 1], True), ([], False), ([1, 1], False), ([1], False)):
        r = len(sizes) + 1
        fields = grad_fields("RESAMPLE_GRAD", ([*sizes, 2], [*sizes, 8]), LIN, [1] * (r - 1) + [0.25], ([0.0] * r, [0.0] * r))
        feeds = {"InputGradientTensor": g.reshape([*sizes, 2])}
        got = dmlapi.execute(make_desc("RESAMPLE_GRAD", fields), feeds).output.ravel()
        want = every_variant("RESAMPLE_GRAD", fields, feeds).ravel()
        assert np.isnan(want).tolist() == [True] + [False] * 7 and want[1:].tolist() == [0, 0, 0, 1, 0, 0, 0]
        # coordinates 0 and 4: the NaN reaches 0 to 4 (the 1 at 4 drowned)
        assert np.isnan(got).tolist() == ([True] * 5 + [False] * 3 if spread else np.isnan(want).tolist()), sizes
        fields["InterpolationMode"] = NN
        got = dmlapi.execute(make_desc("RESAMPLE_GRAD", fields), feeds).output.ravel()
        assert np.isnan(got).tolist() == np.isnan(every_variant("RESAMPLE_GRAD", fields, feeds).ravel()).tolist()


def test_a_tap_of_weight_zero_is_no_tap() -> None:
    # LINEAR at integer coordinates (scale 1): an infinity reaches its own element, not 0 * inf = NaN
    # into the next (measured, as DirectML)
    g = np.array([1, np.inf, 2], np.float32)
    assert grad_1d("RESAMPLE_GRAD", g, 3, LIN, 1, (0, 0)) == [1, float("inf"), 2]


# -- refusals ----------------------------------------------------------------------------------------------

BASE = grad_fields("RESAMPLE_GRAD", ([1, 1, 4, 6], [1, 1, 2, 3]), LIN, [1, 1, 2, 2], ([0.5] * 4, [-0.5] * 4))


@pytest.mark.parametrize(
    ("fields", "path", "text"),
    [
        (BASE | {"OutputGradientTensor": tensor("FLOAT16", [1, 1, 2, 3])}, "desc.OutputGradientTensor.DataType", "same DataType"),
        (BASE | {"OutputGradientTensor": tensor("FLOAT32", [2, 3])}, "desc.OutputGradientTensor.Sizes", "same DimensionCount"),
        (BASE | {"Scales": [1, 1, 2, 0]}, "desc.Scales[3]", "at least 2**-23"),
        (BASE | {"Scales": [1, 1, 2, 1e-8]}, "desc.Scales[3]", "at least 2**-23"),
        (BASE | {"Scales": [1, 1, -2, 2]}, "desc.Scales[2]", "at least 2**-23"),
        (BASE | {"Scales": [1, 1, 2, float("nan")]}, "desc.Scales[3]", "at least 2**-23"),
        (BASE | {"InputPixelOffsets": [0.5, 0.5, 0.5, float("inf")]}, "desc.InputPixelOffsets[3]", "finite"),
        (BASE | {"OutputPixelOffsets": [-0.5, float("nan"), -0.5, -0.5]}, "desc.OutputPixelOffsets[1]", "finite"),
        (BASE | {"InputPixelOffsets": [0.5, 0.5, 0.5]}, "desc.InputPixelOffsets", "DimensionCount (4) elements"),
    ],
)
def test_refusals(fields: dict[str, Any], path: str, text: str) -> None:
    for op in resample_grad.ROWS:
        f = fields | ({"RoundingDirection": "DECREASING"} if op == "RESAMPLE_GRAD1" else {})
        e = refusal(op, f)
        assert format_path(e.path) == path and text in e.rule, (format_path(e.path), e.rule)


@live
def test_directml_refuses_what_is_refused() -> None:
    """DirectML's own E_INVALIDARG for the type, rank and scale refusals above (measured; the
    non-finite offsets DirectML takes, with NaN or 0 results: refused here)."""
    from dml2onnx.core.desc import parse_operator_desc

    for change in (
        {"OutputGradientTensor": tensor("FLOAT16", [1, 1, 2, 3])},
        {"Scales": [1, 1, 2, 0]},
        {"Scales": [1, 1, 2, float("nan")]},
        {"OutputGradientTensor": tensor("FLOAT32", [2, 3])},
    ):
        desc = parse_operator_desc("RESAMPLE_GRAD", BASE | change, ("desc",), ("type",))
        with pytest.raises(dmlapi.DmlApiError) as e:
            dmlapi.execute(desc, {"InputGradientTensor": np.ones([1, 1, 4, 6], np.float32)})
        assert e.value.hresult == 0x80070057, change


# -- the graph ------------------------------------------------------------------------------------------


def _op_types(fields: dict[str, Any], op: str = "RESAMPLE_GRAD") -> list[str]:
    return [n.op_type for n in lowering.lower(make_desc(op, fields), "t", target="portable").graph.node]


def test_nodes() -> None:
    # NEAREST by 2 with offsets 0.5 and 0 (coordinates o / 2 - 0.25): two gradients into each
    # element, no weights, no empty slot; an axis of scale 1 is skipped
    halving = grad_fields("RESAMPLE_GRAD", ([3, 8], [3, 4]), NN, [1, 2], ([0.5] * 2, [0.0] * 2))
    assert _op_types(halving) == ["Gather", "ReduceSum"]
    # NEAREST doubling: at most one gradient per element, one Gather (a zero for the empty slots)
    assert _op_types(grad_fields("RESAMPLE_GRAD", ([4], [8]), NN, [0.5], ([0.5], [-0.5]))) == ["Pad", "Gather"]
    # LINEAR, FLOAT16: weights, accumulated in FLOAT32; never a MatMul (0 * inf)
    linear = grad_fields("RESAMPLE_GRAD1", ([4, 8], [2, 4]), LIN, [2, 2], ([0.5] * 2, [-0.5] * 2), "FLOAT16")
    types = _op_types(linear, "RESAMPLE_GRAD1")
    assert types[0] == types[-1] == "Cast" and types.count("Mul") == 2 and "MatMul" not in types


def test_tables_list_each_contribution_once() -> None:
    index, weight = resample_grad.tables(4, 2, (2.0, 0.5, -0.5), True, "halves_up")
    # element 0: gradients 0 and 1 (0.75, 0.25) and an empty slot; element 1: 0, 1, 2, 3
    assert index.tolist() == [[0, 1, 4, 4], [0, 1, 2, 3]]
    assert weight.tolist() == [[0.75, 0.25, 1, 1], [0.25, 0.75, 1, 1]]


# -- properties ---------------------------------------------------------------------------------------------


@st.composite
def geometries(draw: st.DrawFn) -> tuple[str, dict[str, Any]]:
    op = draw(st.sampled_from(resample_grad.ROWS))
    rank = draw(st.integers(1, 4))
    mode = draw(st.sampled_from([NN, LIN]))
    scales = [draw(st.sampled_from([1.0, 2.0, 0.5, 1.5, 3.0, 0.75, 2.5, 0.4])) for _ in range(rank)]
    outs = [draw(st.integers(1, 4)) for _ in range(rank)]
    ins = [max(1, round(n * s) + draw(st.integers(-1, 1))) for n, s in zip(outs, scales, strict=True)]
    offsets = st.sampled_from([0.0, 0.5, -0.5, 0.25, 1.0, -0.75])
    ips = [draw(offsets) for _ in range(rank)]
    ops_ = [draw(offsets) for _ in range(rank)]
    dtype = draw(st.sampled_from(["FLOAT32", "FLOAT16"]))
    rounding = draw(st.sampled_from(["INCREASING", "DECREASING"]))
    return op, grad_fields(op, (ins, outs), mode, scales, (ips, ops_), dtype, rounding)


def _forward(op: str, fields: dict[str, Any]) -> dict[str, Any]:
    """The RESAMPLE1 / RESAMPLE2 whose adjoint `fields` computes: OutputGradientTensor's sizes to
    InputGradientTensor's, the same Scales, the pixel offsets swapped."""
    forward = {
        "InputTensor": tensor("FLOAT32", fields["OutputGradientTensor"]["Sizes"]),
        "OutputTensor": tensor("FLOAT32", fields["InputGradientTensor"]["Sizes"]),
        "InterpolationMode": fields["InterpolationMode"],
        "DimensionCount": fields["DimensionCount"],
        "Scales": fields["Scales"],
        "InputPixelOffsets": fields["OutputPixelOffsets"],
        "OutputPixelOffsets": fields["InputPixelOffsets"],
    }
    return forward | ({"RoundingDirection": fields["RoundingDirection"]} if op == "RESAMPLE_GRAD1" else {})


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(geometries(), SEEDS)
def test_reference_is_the_swapped_forwards_adjoint(geometry: tuple[str, dict[str, Any]], seed: int) -> None:
    """<forward(x), g> = <x, grad(g)> for RESAMPLE1 / RESAMPLE2 (resample.py's reference) with the
    offsets swapped, in FLOAT64 on FLOAT32 data."""
    op, fields = geometry
    fields = fields | {k: tensor("FLOAT32", fields[k]["Sizes"]) for k in ("InputGradientTensor", "OutputGradientTensor")}
    rng = np.random.default_rng(seed)
    forward = _forward(op, fields)
    x = rng.uniform(-1, 1, forward["InputTensor"]["Sizes"]).astype(np.float32)
    g = rng.uniform(-1, 1, fields["InputGradientTensor"]["Sizes"]).astype(np.float32)
    fwd_op = "RESAMPLE2" if op == "RESAMPLE_GRAD1" else "RESAMPLE1"
    y = registry.family(fwd_op).reference(make_desc(fwd_op, forward), {"InputTensor": x}).astype(np.float64)
    dx = resample_grad.reference(make_desc(op, fields), {"InputGradientTensor": g}).astype(np.float64)
    assert np.isclose(np.vdot(y, g.astype(np.float64)), np.vdot(x.astype(np.float64), dx), rtol=1e-5, atol=1e-5)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(geometries(), SEEDS)
def test_graph_matches_reference(geometry: tuple[str, dict[str, Any]], seed: int) -> None:
    op, fields = geometry
    desc = make_desc(op, fields)
    if resample_grad.terms(desc) > RESAMPLE_GRAD_TERMS:
        return  # beyond the tolerance's bound
    rng = np.random.default_rng(seed)
    dtype = np.float16 if fields["InputGradientTensor"]["DataType"] == "FLOAT16" else np.float32
    g = rng.uniform(-RESAMPLE_MAGNITUDE, RESAMPLE_MAGNITUDE, fields["InputGradientTensor"]["Sizes"]).astype(dtype)
    assert_matches_reference("cpu", op, fields, {"InputGradientTensor": g})
