"""The CUDA EP's LogSoftmax has two kernels: one warp per row for short rows, which computes
x - (max + log(sum)) and is 2e-3 off once |max| is 5e4, and one block per row, which computes
(x - max) - log(sum) like the reference. The `cuda` target leaves the max subtraction out only
where the second one runs (targets.cuda_warp_softmax). These tests put rows on both sides of
that bound and check every candidate against the reference with values near 5e4."""

from __future__ import annotations

import numpy as np
import pytest

from dml2onnx import lowering
from dml2onnx.backends import runtime
from dml2onnx.core.desc import OperatorDesc
from dml2onnx.graph import targets
from dml2onnx.lowering import tolerances
from dml2onnx.ops import registry
from support import EPS, make_desc, run_every_variant, tensor

GPU_ONLY = [pytest.mark.gpu, pytest.mark.skipif("cuda" not in runtime.available(), reason="no CUDA execution provider")]

# (shape, axes, dtype, whether the CUDA EP takes its warp-per-row kernel there)
SMALL = [
    ((2, 1024), [1], "FLOAT32", True),
    ((2, 1025), [1], "FLOAT32", False),
    ((3, 2048), [1], "FLOAT16", False),
    ((3, 2049), [1], "FLOAT16", False),
    ((1025, 3), [0], "FLOAT32", False),  # an outer axis: the EP transposes it last itself
    ((1024, 3), [0], "FLOAT32", True),
    ((4, 40, 3, 30), [1, 3], "FLOAT32", False),  # 1200 per row once the axes are merged
    ((4, 32, 3, 32), [1, 3], "FLOAT32", True),
]
LARGE = [  # 8192 rows or more: the bound moves for FLOAT16 rows of 1025-2048 elements
    ((8192, 1025), [1], "FLOAT16", True),
    ((8192, 1025), [1], "FLOAT32", False),
    ((8192, 2049), [1], "FLOAT16", False),
]
CASES = [pytest.param(*c, id=f"{c[0]}-{c[1]}-{c[2]}") for c in SMALL] + [
    pytest.param(*c, id=f"{c[0]}-{c[1]}-{c[2]}", marks=GPU_ONLY) for c in LARGE
]


def near_big_max(shape: tuple[int, ...], dtype: str) -> np.ndarray:
    """Values within a few units of 5e4 (3e4 in FLOAT16): x - max is exact, max + log(sum) is not."""
    big = 3e4 if dtype == "FLOAT16" else 5e4
    x = big + np.round(np.random.default_rng(5).standard_normal(shape) * 3, 1)
    return x.astype(dtype.lower())


def desc_for(shape: tuple[int, ...], axes: list[int], dtype: str) -> OperatorDesc:
    fields = {"InputTensor": tensor(dtype, shape), "OutputTensor": tensor(dtype, shape), "AxisCount": len(axes), "Axes": axes}
    return make_desc("ACTIVATION_LOG_SOFTMAX1", fields)


@EPS
@pytest.mark.parametrize(("shape", "axes", "dtype", "warp"), CASES)
def test_every_candidate_exact_near_large_max(ep: str, shape: tuple[int, ...], axes: list[int], dtype: str, warp: bool) -> None:
    desc = desc_for(shape, axes, dtype)
    run_every_variant(ep, desc, near_big_max(shape, dtype))


@pytest.mark.parametrize(("shape", "axes", "dtype", "warp"), SMALL + LARGE)
def test_cuda_target_subtracts_the_max_only_for_the_warp_kernel(
    shape: tuple[int, ...], axes: list[int], dtype: str, warp: bool
) -> None:
    desc = desc_for(shape, axes, dtype)
    length = int(np.prod([shape[a] for a in axes]))
    assert targets.cuda_warp_softmax(length, int(np.prod(shape)) // length, 2 if dtype == "FLOAT16" else 4) == warp
    kinds = [n.op_type for n in lowering.lower(desc, "t", target="cuda", variant="in_place").graph.node]
    assert ("Sub" in kinds) == warp, kinds
    # the portable graph (DirectML's kernel is not known) and argmax_max always subtract it
    assert "Sub" in [n.op_type for n in lowering.lower(desc, "t", target="portable", variant="in_place").graph.node]
    if len(axes) == 1:
        argmax_max = lowering.lower(desc, "t", target="cuda", variant="argmax_max").graph.node
        assert {"ArgMax", "Sub"} <= {n.op_type for n in argmax_max}


@pytest.mark.parametrize(("shape", "axes"), [((2, 1024), [1]), ((1024, 3), [0]), ((64, 32, 32), [1, 2])], ids=str)
@pytest.mark.gpu
@pytest.mark.skipif("cuda" not in runtime.available(), reason="no CUDA execution provider")
def test_the_warp_kernel_alone_is_off(shape: tuple[int, ...], axes: list[int]) -> None:
    """The inputs above do tell the kernels apart: without the subtraction (the `cpu` target's
    graph), the warp-per-row kernel misses the FLOAT32 tolerance on them."""
    desc = desc_for(shape, axes, "FLOAT32")
    x = near_big_max(shape, "FLOAT32")
    want = registry.family(desc.schema.name).reference(desc, {"InputTensor": x})
    got = runtime.create(lowering.lower(desc, "t", target="cpu", variant="in_place"), "t", "cuda").run({"InputTensor": x})
    result = tolerances.compare(got, want, tolerances.tolerance(desc.schema.name, desc.tensor("OutputTensor").data_type, "cuda"))
    assert not result.ok and result.max_abs > 1e-4, result
