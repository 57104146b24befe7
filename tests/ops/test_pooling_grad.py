"""DML_OPERATOR_AVERAGE_POOLING_GRAD and MAX_POOLING_GRAD (dml2onnx/ops/pooling_grad.py): the pages'
examples, what DirectML's API computed where the pages are silent (values measured under Wine,
pinned here by hand), DirectML's refusals, the graph's nodes, and properties over random window
geometries: AVERAGE's reference is the adjoint of AVERAGE_POOLING's, MAX's sends each window's
gradient to MAX_POOLING2's index, and the graph computes the reference. The matrix (tests/
matrix_pooling_grad.py) runs them on every EP present and through DirectML's API."""

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
from dml2onnx.graph.builder import DEFAULT_OPSET
from dml2onnx.lowering import choices
from dml2onnx.lowering.tolerances import POOLING_MAGNITUDE
from dml2onnx.ops import pooling_grad, registry
from dml2onnx.ops.pooling import Window, counts
from strategies import SEEDS
from support import every_output, make_desc, mismatches, refusal, run_cli, tensor

ROOT = Path(__file__).resolve().parents[2]
AVG, MAX = "AVERAGE_POOLING_GRAD", "MAX_POOLING_GRAD"
live = pytest.mark.skipif(dmlapi.missing() is not None, reason="DirectML's API under Wine is not set up (make dml-setup)")
ENGINES = ["cpu", pytest.param("directml", marks=live), pytest.param("dml", marks=live)]


def avg_fields(g: list[int], x: list[int], *window: list[int], include: bool = False, dtype: str = "FLOAT32") -> dict[str, Any]:
    """`window`: Strides, WindowSize, StartPadding, EndPadding."""
    fields = {"InputGradientTensor": tensor(dtype, g), "OutputGradientTensor": tensor(dtype, x), "DimensionCount": len(window[0])}
    return (
        fields
        | dict(zip(("Strides", "WindowSize", "StartPadding", "EndPadding"), window, strict=True))
        | {"IncludePadding": include}
    )


def max_fields(
    g: list[int], x: list[int], *window: list[int], dilations: list[int] | None = None, dtype: str = "FLOAT32"
) -> dict[str, Any]:
    fields = {k: v for k, v in avg_fields(g, x, *window, dtype=dtype).items() if k != "IncludePadding"}
    return fields | {"InputTensor": tensor(dtype, x), "Dilations": dilations or [1] * len(window[0])}


def every_variant(op: str, fields: dict[str, Any], feeds: dict[str, np.ndarray]) -> np.ndarray:
    """The reference, after checking that every candidate, built for each target it is offered on
    (scatter: `cuda` and `cpu`; the others every target), gives its bytes on the CPU EP (and
    passes the static DirectML EP check on `portable` and `dml`)."""
    desc = make_desc(op, fields)
    want = pooling_grad.reference(desc, feeds)
    for variant in choices.available(desc, DEFAULT_OPSET):
        for target in choices.only_on(op).get(variant, ("portable", "cpu", "dml")):
            model = lowering.lower(desc, "t", target=target, variant=variant)
            if target in ("portable", "dml"):
                assert dml_ep.check(model) == [], (target, variant)
            if target == "dml":
                continue
            got = runtime.create(model, "t", "cpu").run(feeds)
            assert got.dtype == want.dtype and got.tobytes() == want.tobytes(), (target, variant, got, want)
    return want


def row(op: str, fields: dict[str, Any], g: Any, x: Any = None, exact: bool = True) -> list[float]:
    """The reference's output, flattened, after checking every variant's graph: bit for bit, or
    (`exact` False: sums of fractions) within the tolerance."""
    feeds = {"InputGradientTensor": np.asarray(g, np.float32).reshape(fields["InputGradientTensor"]["Sizes"])}
    if x is not None:
        feeds["InputTensor"] = np.asarray(x, np.float32).reshape(fields["InputTensor"]["Sizes"])
    if exact:
        return every_variant(op, fields, feeds).ravel().tolist()
    every_candidate_matches(op, fields, feeds)
    return pooling_grad.reference(make_desc(op, fields), feeds).ravel().tolist()


def every_candidate_matches(op: str, fields: dict[str, Any], feeds: dict[str, np.ndarray]) -> None:
    """Each candidate's graph (built for its tests' target) on the CPU EP within the tolerance."""
    desc = make_desc(op, fields)
    want = registry.reference_outputs(desc, feeds)
    for variant in choices.available(desc, DEFAULT_OPSET):
        model = lowering.lower(desc, "t", target=choices.target_of(op, variant), variant=variant)
        got = every_output(runtime.create(model, "t", "cpu"), desc, feeds)
        assert not (bad := mismatches(desc, got, want, "cpu")), (variant, bad)


# -- the pages' examples, DxDispatch's model ------------------------------------------------------


def test_page_examples() -> None:
    avg = avg_fields([1, 1, 2, 2], [1, 1, 3, 3], [1, 1], [2, 2], [0, 0], [0, 0])
    assert row(AVG, avg, [1, 2, 3, 4]) == [0.25, 0.75, 0.5, 1, 2.5, 1.5, 0.75, 1.75, 1]
    mx = max_fields([1, 1, 2, 2], [1, 1, 3, 3], [1, 1], [2, 2], [0, 0], [0, 0])
    assert row(MAX, mx, [1, 2, 4, 5], [1, 2, 3, 2, 4, 2, 5, 6, 7]) == [0, 0, 0, 0, 3, 0, 0, 4, 5]


@pytest.mark.parametrize("engine", ENGINES)
def test_model_runs(engine: str) -> None:
    status, out, err = run_cli("run", str(ROOT / "models" / "pooling_grad.json"), "--ep", engine)
    assert status == 0, err
    printed = [line for line in out.splitlines() if line.startswith("Resource '")]
    want = ["avg_output': 0.25, 0.75, 0.5, 1, 2.5, 1.5, 0.75, 1.75, 1", "max_output': 0, 0, 0, 0, 3, 0, 0, 4, 5"]
    assert printed == [f"Resource '{w}" for w in [*want, "tie_output': 3, 0, 0, 0, 0, 0, 0, 4"]], out


# -- what DirectML computed where the pages are silent ---------------------------------------------

WINDOW_1D = ([1, 1, 1, 1], [1, 1, 1, 4], [1, 1], [1, 4], [0, 0], [0, 0])


@pytest.mark.parametrize(
    ("x", "winner"),
    [
        ([5, 5, 5, 5], 0),  # a tie: the first (the lowest logical index)
        ([np.nan, 1, 2, np.nan], 2),  # NaN skipped
        ([np.nan] * 4, 0),  # NaN, -inf and the lowest finite value all count as the lowest
        ([-np.inf] * 4, 0),
        ([-np.inf, np.nan, -3.4028235e38, -np.inf], 0),
        ([np.nan, -np.inf, 0, 0], 2),
        ([1, np.inf, np.inf, 1], 1),
    ],
)
def test_max_picks_as_max_pooling2(x: list[float], winner: int) -> None:
    # measured: the gradient 1 lands on `winner`
    assert row(MAX, max_fields(*WINDOW_1D), [1], x) == [float(i == winner) for i in range(4)]


def test_a_window_entirely_in_padding_passes_nothing() -> None:
    # measured: StartPadding 2 over 2 rows, 2x2 windows of stride 2: the first row of windows is
    # padding; its gradients (10, 30) reach no element (not element 0, the forward's index there)
    x = np.arange(1, 9, dtype=np.float32)
    mx = max_fields([1, 2, 2, 1], [1, 2, 2, 2], [2, 2], [2, 2], [2, 0], [0, 0])
    assert row(MAX, mx, [10, 20, 30, 40], x) == [0, 0, 0, 20, 0, 0, 0, 40]
    avg = avg_fields([1, 2, 2, 1], [1, 2, 2, 2], [2, 2], [2, 2], [2, 0], [0, 0])
    for include in (False, True):
        assert row(AVG, avg | {"IncludePadding": include}, [10, 20, 30, 40]) == [5] * 4 + [10] * 4


@pytest.mark.parametrize(
    ("include", "want"),
    # measured: 4 elements, padding 1 on each side, 3-element windows, 5 gradients (the formula
    # gives 4): window 4 holds element 3, EndPadding and one element past the padded input
    [
        (False, [1 / 2 + 10 / 3, 37.166668, 100 / 3 + 1000 / 2 + 10 / 3, 100 / 3 + 1000 / 2 + 10000]),
        (True, [11 / 3, 37, 370, 1100 / 3 + 5000]),
    ],
)
def test_average_divisors(include: bool, want: list[float]) -> None:
    avg = avg_fields([1, 1, 1, 5], [1, 1, 1, 4], [1, 1], [1, 3], [0, 1], [0, 1], include=include)
    np.testing.assert_allclose(row(AVG, avg, [1, 10, 100, 1000, 10000], exact=False), want, rtol=1e-6)


def test_average_takes_any_window_count() -> None:
    # measured: a 3x3 window of stride 1 over 4x4 has 2x2 windows; one window, and 3x3 windows
    # (the third reaching past the input: 2 x 2 of its elements in it), are taken as they are
    one = avg_fields([1, 1, 1, 1], [1, 1, 4, 4], [1, 1], [3, 3], [0, 0], [0, 0])
    assert np.allclose(row(AVG, one, [1], exact=False), np.pad(np.full((3, 3), 1 / 9), ((0, 1), (0, 1))).ravel())
    three = avg_fields([1, 1, 3, 3], [1, 1, 4, 4], [1, 1], [3, 3], [0, 0], [0, 0])
    assert np.isclose(row(AVG, three, np.ones(9), exact=False)[10], 4 / 9 + 4 / 6 + 1 / 4)  # element (2, 2)
    # a window larger than the padded input: its input elements' count
    assert row(AVG, avg_fields([1, 1, 1, 1], [1, 1, 1, 4], [1, 1], [1, 5], [0, 0], [0, 0]), [1]) == [0.25] * 4


def test_max_window_larger_than_the_padded_input() -> None:
    # measured: accepted with one window, the input's largest element takes its gradient
    assert row(MAX, max_fields([1, 1, 1, 1], [1, 1, 1, 2], [1, 1], [1, 3], [0, 0], [0, 0]), [1], [0, 1]) == [0, 1]
    # padding as large as the window: windows 0 and 1 entirely in padding
    mx = max_fields([1, 1, 1, 5], [1, 1, 1, 2], [1, 1], [1, 2], [0, 3], [0, 1])
    assert row(MAX, mx, [0, 1, 2, 3, 4], [0, 1]) == [2, 7]


def test_a_non_finite_gradient_stays_in_its_window() -> None:
    g = [np.inf, 1, np.nan, 2]
    avg = avg_fields([1, 1, 1, 4], [1, 1, 1, 8], [1, 2], [1, 2], [0, 0], [0, 0])
    got = row(AVG, avg, g)
    assert np.isinf(got[:2]).all() and got[2:4] == [0.5, 0.5] and np.isnan(got[4:6]).all() and got[6:] == [1, 1]
    mx = max_fields([1, 1, 1, 4], [1, 1, 1, 8], [1, 2], [1, 2], [0, 0], [0, 0])
    got = row(MAX, mx, g, [1, 0, 0, 1, 1, 0, 0, 1])
    assert np.isinf(got[0]) and got[1:4] == [0, 0, 1] and np.isnan(got[4]) and got[5:] == [0, 0, 2]


@live
def test_directml_pins() -> None:
    """A few of the cases above again through DirectML's API, FLOAT16 and 3-D windows too."""
    rng = np.random.default_rng(5)
    cases = (
        (
            MAX,
            max_fields(
                [1, 2, 2, 2, 1], [1, 2, 3, 4, 3], [2, 1, 2], [2, 3, 2], [1, 0, 0], [0, 0, 1], dilations=[1, 1, 2], dtype="FLOAT16"
            ),
        ),
        (AVG, avg_fields([1, 2, 3, 5], [1, 2, 4, 4], [2, 1], [2, 3], [1, 1], [0, 1], include=True)),
        (AVG, avg_fields([2, 1, 2, 2, 3], [2, 1, 3, 3, 4], [1, 2, 1], [2, 2, 2], [0, 1, 0], [0, 0, 0], dtype="FLOAT16")),
    )
    for op, fields in cases:
        desc = make_desc(op, fields)
        t = np.float16 if fields["InputGradientTensor"]["DataType"] == "FLOAT16" else np.float32
        feeds = {"InputGradientTensor": rng.uniform(-8, 8, fields["InputGradientTensor"]["Sizes"]).astype(t)}
        if op == MAX:
            feeds["InputTensor"] = rng.integers(-2, 3, fields["InputTensor"]["Sizes"]).astype(t)  # ties
        got = dmlapi.execute(desc, feeds).output
        want = pooling_grad.reference(desc, feeds)
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=2.0**-10, atol=1e-5)


# -- refusals ------------------------------------------------------------------------------------------

A = avg_fields([1, 2, 2, 2], [1, 2, 4, 4], [2, 2], [2, 2], [0, 0], [0, 0])
M = max_fields([1, 2, 2, 2], [1, 2, 4, 4], [2, 2], [2, 2], [0, 0], [0, 0])


@pytest.mark.parametrize(
    ("op", "fields", "path", "text"),
    [
        (
            AVG,
            A | {"OutputGradientTensor": tensor("FLOAT16", [1, 2, 4, 4])},
            "desc.OutputGradientTensor.DataType",
            "same DataType",
        ),
        (
            AVG,
            A | {"OutputGradientTensor": tensor("FLOAT32", [1, 2, 4, 4, 1])},
            "desc.OutputGradientTensor.Sizes",
            "same DimensionCount",
        ),
        (AVG, A | {"InputGradientTensor": tensor("FLOAT32", [2, 2, 2, 2])}, "desc.InputGradientTensor.Sizes[0]", "N (1)"),
        (AVG, A | {"InputGradientTensor": tensor("FLOAT32", [1, 1, 2, 2])}, "desc.InputGradientTensor.Sizes[1]", "C (2)"),
        (AVG, A | {"Strides": [2, 0]}, "desc.Strides[1]", "1 or more"),
        (AVG, A | {"WindowSize": [0, 2]}, "desc.WindowSize[0]", "1 or more"),
        (MAX, M | {"Dilations": [1, 0]}, "desc.Dilations[1]", "1 or more"),
        (MAX, M | {"InputGradientTensor": tensor("FLOAT32", [1, 2, 3, 2])}, "desc.InputGradientTensor.Sizes", "[1, 2, 2, 2]"),
        (MAX, M | {"InputTensor": tensor("FLOAT32", [1, 2, 4, 5])}, "desc.InputTensor.Sizes", ""),
        (MAX, M | {"InputTensor": tensor("FLOAT16", [1, 2, 4, 4])}, "desc.InputTensor.DataType", "same DataType"),
        (
            MAX,
            M | {"Dilations": [1, 2], "InputGradientTensor": tensor("FLOAT32", [1, 2, 2, 2])},
            "desc.InputGradientTensor.Sizes",
            "[1, 2, 2, 1]",
        ),
    ],
)
def test_refusals(op: str, fields: dict[str, Any], path: str, text: str) -> None:
    e = refusal(op, fields)
    assert format_path(e.path).startswith(path) and text in e.rule, (format_path(e.path), e.rule)


@live
def test_directml_refuses_what_is_refused() -> None:
    """DirectML's own E_INVALIDARG for the type, N, C and MAX's window-count refusals above
    (measured); Strides or WindowSize 0 it takes (zeros), Dilations 0 it refuses: all refused here."""
    from dml2onnx.core.desc import parse_operator_desc

    for op, fields in (
        (AVG, A | {"OutputGradientTensor": tensor("FLOAT16", [1, 2, 4, 4])}),
        (AVG, A | {"InputGradientTensor": tensor("FLOAT32", [1, 1, 2, 2])}),
        (MAX, M | {"InputGradientTensor": tensor("FLOAT32", [1, 2, 3, 2])}),
        (MAX, M | {"Dilations": [1, 0]}),
    ):
        desc = parse_operator_desc(op, fields, ("desc",), ("type",))
        feeds = {k: np.ones(fields[k]["Sizes"], np.float32) for k in ("InputTensor", "InputGradientTensor") if k in fields}
        with pytest.raises(dmlapi.DmlApiError) as e:
            dmlapi.execute(desc, feeds)
        assert e.value.hresult == 0x80070057, fields


# -- the graph ---------------------------------------------------------------------------------------------


def test_nodes() -> None:
    types = [n.op_type for n in lowering.lower(make_desc(AVG, A), "t", target="portable", variant="taps").graph.node]
    # the divisors, then per axis the strided spread (Reshape, Pad, Reshape, Slice) and two taps
    assert types.count("Div") == 1 and types.count("Sum") == 2 and "ConvTranspose" not in types and "Mul" not in types
    # the default on portable: conv_transpose (AVERAGE), taps (MAX: scatter is cuda and cpu only)
    assert "ConvTranspose" in [n.op_type for n in lowering.lower(make_desc(AVG, A), "t").graph.node]
    types = [
        n.op_type
        for n in lowering.lower(make_desc(MAX, M | {"InputGradientTensor": tensor("FLOAT32", [1, 2, 2, 2])}), "t").graph.node
    ]
    assert (
        types.count("Slice") >= 4 and types.count("Min") == 1 and "ConvTranspose" not in types and "ScatterElements" not in types
    )


def _types(op: str, fields: dict[str, Any], variant: str) -> list[str]:
    target = choices.target_of(op, variant)
    return [n.op_type for n in lowering.lower(make_desc(op, fields), "t", target=target, variant=variant).graph.node]


def test_candidates_nodes() -> None:
    """The ResNet-50 stem's 3x3 stride-2 window (benchmarks/suite.py's rows): conv_transpose is one
    ConvTranspose (symmetric pads and output_padding: no crop), scatter one Gather of every window
    element, ArgMax and ScatterElements; scatter only for MAX and only on `cuda` and `cpu`."""
    g, x, window = [2, 3, 4, 4], [2, 3, 8, 8], ([2, 2], [3, 3], [1, 1], [1, 1])
    assert _types(AVG, avg_fields(g, x, *window), "conv_transpose") == ["Div", "ConvTranspose"]
    conv = next(
        n
        for n in lowering.lower(make_desc(AVG, avg_fields(g, x, *window)), "t", variant="conv_transpose").graph.node
        if n.op_type == "ConvTranspose"
    )
    attrs = {a.name: list(a.ints) if a.ints else a.i for a in conv.attribute}
    # depthwise: one group per channel
    assert attrs == {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1], "group": 3, "output_padding": [1, 1]}
    assert _types(MAX, max_fields(g, x, *window), "scatter") == [
        *("GreaterOrEqual", "Where", "Pad", "Reshape", "Add", "Gather", "ArgMax", "Gather", "Add"),
        *("Reshape", "Reshape", "ConstantOfShape", "ScatterElements", "Reshape"),
    ]
    # windows entirely in padding: their gradients masked to 0, added to element 0
    assert _types(MAX, max_fields([1, 2, 2, 1], [1, 2, 2, 2], [2, 2], [2, 2], [2, 0], [0, 0]), "scatter").count("Where") == 3
    # padding as large as the window: cropped by a Slice, zeros past the windows by a Pad
    crop = _types(AVG, avg_fields([1, 1, 1, 5], [1, 1, 1, 4], [1, 1], [1, 3], [0, 1], [0, 1]), "conv_transpose")
    assert crop[-1] == "Slice" and "Pad" not in crop
    assert choices.available(make_desc(MAX, max_fields(g, x, *window)), DEFAULT_OPSET, "portable") == ("taps",)
    assert choices.available(make_desc(MAX, max_fields(g, x, *window)), 15, "cuda") == ("taps",)  # reduction: opset 16
    assert choices.available(make_desc(AVG, avg_fields(g, x, *window)), DEFAULT_OPSET, "dml") == ("taps", "conv_transpose")


# -- properties ---------------------------------------------------------------------------------------------


@st.composite
def geometries(draw: st.DrawFn, op: str) -> dict[str, Any]:
    n = draw(st.integers(2, 3))
    window = [draw(st.integers(1, 3)) for _ in range(n)]
    dilations = [draw(st.integers(1, 2)) if op == MAX else 1 for _ in range(n)]
    strides = [draw(st.integers(1, 3)) for _ in range(n)]
    start = [draw(st.integers(0, k)) for k in window]
    end = [draw(st.integers(0, k)) for k in window]
    extents = [(k - 1) * d + 1 for k, d in zip(window, dilations, strict=True)]
    spatial = [max(1, e - s - p) + draw(st.integers(0, 3)) for e, s, p in zip(extents, start, end, strict=True)]
    x = [draw(st.integers(1, 2)), draw(st.integers(1, 2)), *spatial]
    w = Window("", tuple(strides), tuple(window), tuple(start), tuple(end), tuple(dilations))
    g = [*x[:2], *w.output_sizes(tuple(spatial))]
    dtype = draw(st.sampled_from(["FLOAT32", "FLOAT16"]))
    if op == MAX:
        return max_fields(g, x, strides, window, start, end, dilations=dilations, dtype=dtype)
    return avg_fields(g, x, strides, window, start, end, include=draw(st.booleans()), dtype=dtype)


def _feeds(fields: dict[str, Any], seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    t = np.float16 if fields["InputGradientTensor"]["DataType"] == "FLOAT16" else np.float32
    feeds = {
        "InputGradientTensor": rng.uniform(-POOLING_MAGNITUDE, POOLING_MAGNITUDE, fields["InputGradientTensor"]["Sizes"]).astype(
            t
        )
    }
    if "InputTensor" in fields:
        feeds["InputTensor"] = rng.integers(-3, 4, fields["InputTensor"]["Sizes"]).astype(t)  # ties
    return feeds


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(geometries(AVG), SEEDS)
def test_average_is_the_adjoint_of_average_pooling(fields: dict[str, Any], seed: int) -> None:
    """<AVERAGE_POOLING(x), g> = <x, AVERAGE_POOLING_GRAD(g)> with the forward's fields (pooling.py's
    reference), where no window lies entirely in padding (the forward's 0 / 0)."""
    fields = fields | {k: tensor("FLOAT32", fields[k]["Sizes"]) for k in ("InputGradientTensor", "OutputGradientTensor")}
    forward = {k: v for k, v in fields.items() if k not in ("InputGradientTensor", "OutputGradientTensor")}
    forward |= {"InputTensor": fields["OutputGradientTensor"], "OutputTensor": fields["InputGradientTensor"]}
    desc = make_desc(AVG, fields)
    if (pooling_grad.divisors(desc) == 0).any():
        return
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1, 1, forward["InputTensor"]["Sizes"]).astype(np.float32)
    g = rng.uniform(-1, 1, fields["InputGradientTensor"]["Sizes"]).astype(np.float32)
    y = registry.family("AVERAGE_POOLING").reference(make_desc("AVERAGE_POOLING", forward), {"InputTensor": x}).astype(np.float64)
    dx = pooling_grad.reference(desc, {"InputGradientTensor": g}).astype(np.float64)
    assert np.isclose(np.vdot(y, g), np.vdot(x.astype(np.float64), dx), rtol=1e-5, atol=1e-5)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(geometries(MAX), SEEDS)
def test_max_follows_max_pooling2s_indices(fields: dict[str, Any], seed: int) -> None:
    """Each window's gradient lands on MAX_POOLING2's OutputIndicesTensor (pooling.py's reference),
    but for windows entirely in padding."""
    fields = fields | {
        k: tensor("FLOAT32", fields[k]["Sizes"]) for k in ("InputTensor", "InputGradientTensor", "OutputGradientTensor")
    }
    feeds = _feeds(fields, seed)
    forward = {k: v for k, v in fields.items() if k not in ("InputGradientTensor", "OutputGradientTensor")}
    forward |= {
        "OutputTensor": fields["InputGradientTensor"],
        "OutputIndicesTensor": tensor("UINT32", fields["InputGradientTensor"]["Sizes"]),
    }
    fwd = make_desc("MAX_POOLING2", forward)
    index = registry.family("MAX_POOLING2").reference(fwd, {"InputTensor": feeds["InputTensor"]})["OutputIndicesTensor"]
    w = pooling_grad.forward_window(make_desc(MAX, fields))
    inside = np.broadcast_to(counts(w, feeds["InputTensor"].shape[2:]), index.shape) > 0
    want = np.zeros(feeds["InputTensor"].size)
    np.add.at(want, index[inside].astype(np.int64), feeds["InputGradientTensor"][inside].astype(np.float64))
    got = pooling_grad.reference(make_desc(MAX, fields), feeds).astype(np.float64).ravel()
    np.testing.assert_allclose(got, want.astype(np.float32), rtol=1e-6, atol=1e-5)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from([AVG, MAX]).flatmap(lambda op: st.tuples(st.just(op), geometries(op))), SEEDS)
def test_graph_matches_reference(case: tuple[str, dict[str, Any]], seed: int) -> None:
    op, fields = case
    every_candidate_matches(op, fields, _feeds(fields, seed))
