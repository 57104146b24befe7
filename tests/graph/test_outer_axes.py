"""Reductions over outer (not innermost) axes: the `last_axis` lowerings keep their Transpose
through ONNX Runtime's optimizer, and slices whose values are all -inf (ARGMIN: +inf) give the
first index on every EP (the CUDA EP's ArgMax answers 2**31 - 1 there on an outer axis)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import helper

from dml2onnx import lowering
from dml2onnx.backends import runtime
from dml2onnx.lowering import choices
from support import EPS, make_desc, run_every_variant, tensor

CASES = [((6, 5), [0]), ((3, 6, 4), [1]), ((4, 3, 5), [0, 1]), ((6, 5), [1]), ((2, 3, 4), [0, 2])]


def fields(op: str, dtype: str, shape: tuple[int, ...], axes: list[int], direction: str = "INCREASING") -> dict[str, Any]:
    f: dict[str, Any] = {"InputTensor": tensor(dtype, shape), "AxisCount": len(axes), "Axes": axes}
    if op in ("ARGMAX", "ARGMIN"):
        out = [1 if i in axes else s for i, s in enumerate(shape)]
        return f | {"OutputTensor": tensor("INT64", out), "AxisDirection": direction}
    return f | {"OutputTensor": tensor(dtype, shape)}


def infinite_slices(shape: tuple[int, ...], axes: list[int], dtype: str, value: float) -> np.ndarray:
    """Rounded normal values (many ties) where every reduced slice through the first kept
    element is `value` only."""
    x = np.round(np.random.default_rng(3).standard_normal(shape) * 2).astype(dtype.lower())
    index = tuple(slice(None) if i in axes else 0 for i in range(len(shape)))
    x[index] = value
    return x


@EPS
@pytest.mark.parametrize(("shape", "axes"), CASES, ids=[f"{s}-{a}" for s, a in CASES])
@pytest.mark.parametrize("dtype", ["FLOAT32", "FLOAT16"])
@pytest.mark.parametrize(
    ("op", "direction"),
    [
        ("ARGMAX", "INCREASING"),
        ("ARGMAX", "DECREASING"),
        ("ARGMIN", "INCREASING"),
        ("ACTIVATION_HARDMAX1", ""),
        ("ACTIVATION_LOG_SOFTMAX1", ""),
    ],
)
def test_all_infinite_slices(ep: str, shape: tuple[int, ...], axes: list[int], dtype: str, op: str, direction: str) -> None:
    desc = make_desc(op, fields(op, dtype, shape, axes, direction or "INCREASING"))
    run_every_variant(ep, desc, infinite_slices(shape, axes, dtype, np.inf if op == "ARGMIN" else -np.inf))


def optimized_nodes(model: onnx.ModelProto, tmp_path: Path) -> list[onnx.NodeProto]:
    """The graph as ONNX Runtime's CPU session optimizes it (the transpose optimizer is EP-agnostic)."""
    rt = runtime.ort()
    options = rt.SessionOptions()
    options.log_severity_level = 3
    options.graph_optimization_level = rt.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    options.optimized_model_filepath = str(tmp_path / "optimized.onnx")
    rt.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    return list(onnx.load(tmp_path / "optimized.onnx").graph.node)


@pytest.mark.parametrize(("shape", "axes"), [((64, 32), [0]), ((3, 64, 32), [1]), ((64, 8, 32), [0, 1])])
@pytest.mark.parametrize(
    ("op", "variant"),
    [
        ("ARGMAX", "last_axis"),
        ("ARGMIN", "last_axis"),
        ("ACTIVATION_HARDMAX1", "last_axis"),
        ("ACTIVATION_LOG_SOFTMAX1", "last_axis"),
        ("ARGMAX", "two_stage"),
        ("ACTIVATION_HARDMAX1", "two_stage"),
    ],
)
def test_last_axis_transpose_survives_the_optimizer(
    tmp_path: Path, op: str, variant: str, shape: tuple[int, ...], axes: list[int]
) -> None:
    """Without the merging Reshape after the Transpose, ONNX Runtime moves the Transpose behind
    the ArgMax / LogSoftmax, which then runs on the outer axis again (2.5x slower on CUDA).
    two_stage's first ArgMax runs on the chunks of the moved axes, its innermost axis."""
    desc = make_desc(op, fields(op, "FLOAT32", shape, axes))
    nodes = optimized_nodes(lowering.lower(desc, "t", target="cuda", variant=variant), tmp_path)
    kinds = [n.op_type for n in nodes]
    reducing = next(n for n in nodes if n.op_type in ("ArgMax", "ArgMin", "LogSoftmax"))
    axis = {a.name: helper.get_attribute_value(a) for a in reducing.attribute}["axis"]
    assert "Transpose" in kinds[: kinds.index(reducing.op_type)], kinds
    assert axis in ((1, -1) if variant == "last_axis" else (2, -1)), (kinds, axis)  # the innermost axis


@EPS
@pytest.mark.parametrize(
    ("shape", "axes"), [((4, 3, 5), [0, 2]), ((3, 2, 4, 2, 3), [0, 2, 4]), ((2, 3, 4, 5), [0, 1, 3]), ((5, 3), [0, 1])]
)
@pytest.mark.parametrize("dtype", ["FLOAT32", "FLOAT16"])
def test_hardmax1_over_runs_of_axes(ep: str, shape: tuple[int, ...], axes: list[int], dtype: str) -> None:
    """one_hot_product (axes in several runs) against the reference and the other candidates:
    ties, a maximum in each run's first and last place, and slices of -inf."""
    desc = make_desc("ACTIVATION_HARDMAX1", fields("ACTIVATION_HARDMAX1", dtype, shape, axes))
    runs = len([a for i, a in enumerate(axes) if i == 0 or axes[i - 1] != a - 1])
    assert ("one_hot_product" in choices.available(desc, lowering.DEFAULT_OPSET)) == (runs > 1)
    for seed in range(3):
        x = np.round(np.random.default_rng(seed).standard_normal(shape) * (1 + seed)).astype(dtype.lower())
        run_every_variant(ep, desc, x)
    run_every_variant(ep, desc, infinite_slices(shape, axes, dtype, -np.inf))
    last = np.zeros(shape, dtype.lower())
    last[tuple(s - 1 for s in shape)] = 1  # the last place of every run in one slice
    run_every_variant(ep, desc, last)


def test_one_hot_product_writes_the_output_in_place() -> None:
    """One Transpose (the input's axes moved last for ArgMax), none after the one-hots."""
    desc = make_desc("ACTIVATION_HARDMAX1", fields("ACTIVATION_HARDMAX1", "FLOAT32", (256, 64, 256), [0, 2]))
    kinds = [n.op_type for n in lowering.lower(desc, "t", target="cuda", variant="one_hot_product").graph.node]
    assert kinds.count("Transpose") == 1 and kinds.index("Transpose") < kinds.index("OneHot"), kinds
    assert kinds.count("OneHot") == 2 and kinds[-1] == "Mul", kinds


def test_outer_axis_guard_only_where_needed() -> None:
    def ops_of(target: str, axes: list[int], variant: str) -> list[str]:
        desc = make_desc("ARGMAX", fields("ARGMAX", "FLOAT32", (6, 5), axes))
        return [n.op_type for n in lowering.lower(desc, "t", target=target, variant=variant).graph.node]

    assert "Where" in ops_of("cuda", [0], "in_place") and "Where" in ops_of("portable", [0], "in_place")
    assert "Where" not in ops_of("cuda", [0], "last_axis") and "Where" not in ops_of("cuda", [1], "in_place")
    assert "Where" not in ops_of("cpu", [0], "in_place") and "Where" not in ops_of("dml", [0], "in_place")
