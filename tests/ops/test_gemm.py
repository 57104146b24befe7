"""DML_OPERATOR_GEMM (dml2onnx/ops/gemm.py): the page's formula on values worked by hand and
DxDispatch's dml_gemm and dml_gemm_graph examples; where the page is silent, what DirectML's own API
computed; validation; the candidates and the nodes each target emits; and properties over random
shapes, transforms, Alpha, Beta, C broadcasts and fused activations against the numpy reference.
The matrix (dml2onnx/cases/gemm.py) runs them on every EP present and through DirectML's API."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dml2onnx import lowering
from dml2onnx.backends import dmlapi, runtime
from dml2onnx.core import dtypes
from dml2onnx.core.errors import format_path
from dml2onnx.graph import dml_ep
from dml2onnx.graph.builder import DEFAULT_OPSET
from dml2onnx.lowering import choices, tolerances
from dml2onnx.ops import registry
from strategies import SEEDS
from support import EPS, make_desc, printed, refusal, run_cli, tensor

OP = "GEMM"
MODELS = Path(__file__).resolve().parents[2] / "models"
A = np.arange(1, 7, dtype=np.float32).reshape(2, 3)
B = np.arange(1, 13, dtype=np.float32).reshape(3, 4)


def gemm(
    a: np.ndarray,
    b: np.ndarray,
    c: np.ndarray | None = None,
    trans: tuple[bool, bool] = (False, False),
    alpha: float = 1.0,
    beta: float = 1.0,
    activation: dict[str, Any] | None = None,
    c_strides: list[int] | None = None,
    ep: str = "cpu",
) -> np.ndarray:
    """The reference, after checking that every candidate on every target that runs on `ep` gives
    it within tolerance (the `dml` target: the static DirectML EP check)."""
    m = a.shape[-1] if trans[0] else a.shape[-2]
    n = b.shape[-2] if trans[1] else b.shape[-1]
    dtype = dtypes.BY_NUMPY[a.dtype].name
    out = [*a.shape[:-2], m, n]
    fields: dict[str, Any] = {
        "ATensor": tensor(dtype, a.shape),
        "BTensor": tensor(dtype, b.shape),
        "OutputTensor": tensor(dtype, out),
        "TransA": "DML_MATRIX_TRANSFORM_TRANSPOSE" if trans[0] else "DML_MATRIX_TRANSFORM_NONE",
        "TransB": "TRANSPOSE" if trans[1] else "NONE",
        "Alpha": alpha,
        "Beta": beta,
    }
    feeds = {"ATensor": a, "BTensor": b}
    if c is not None:
        fields["CTensor"] = tensor(dtype, out) | ({"Strides": c_strides} if c_strides else {})
        feeds["CTensor"] = np.broadcast_to(c, out).copy()
    if activation:
        fields["FusedActivation"] = activation
    return every_variant(fields, feeds, ep)


def every_variant(fields: dict[str, Any], feeds: dict[str, np.ndarray], ep: str = "cpu") -> np.ndarray:
    desc = make_desc(OP, fields)
    want = registry.family(OP).reference(desc, feeds)
    out = desc.tensor("OutputTensor")
    assert want.dtype == out.data_type.numpy and want.shape == out.sizes
    k = desc.tensor("ATensor").sizes[-2 if fields["TransA"].endswith("TRANSPOSE") else -1]
    for variant in choices.available(desc, DEFAULT_OPSET):
        for target in ("portable", ep, "dml"):
            model = lowering.lower(desc, "t", target=target, variant=variant)
            assert dml_ep.check(model) == [], (target, variant)
            if target == "dml":
                continue
            got = runtime.create(model, "t", ep).run(feeds)
            c = tolerances.compare(got, want, tolerances.gemm(out.data_type, k, ep))
            assert c.ok, (target, variant, c, got.ravel()[:8], want.ravel()[:8])
    return want


# -- the page's formula, by hand ---------------------------------------------------------------


def test_by_hand() -> None:
    assert gemm(A, B).tolist() == [[38, 44, 50, 56], [83, 98, 113, 128]]
    assert gemm(A.T.copy(), B, trans=(True, False)).tolist() == [[38, 44, 50, 56], [83, 98, 113, 128]]
    assert gemm(A, B.T.copy(), trans=(False, True)).tolist() == [[38, 44, 50, 56], [83, 98, 113, 128]]
    c = np.array([[1, 2, 3, 4], [5, 6, 7, 8]], np.float32)
    assert gemm(A, B, c, alpha=0.5, beta=-2).tolist() == [[17, 18, 19, 20], [31.5, 37, 42.5, 48]]
    relu = {"Type": "ACTIVATION_RELU"}
    assert gemm(A, B, c, alpha=-1, beta=100, activation=relu).tolist() == [[62, 156, 250, 344], [417, 502, 587, 672]]


def test_a_batch_of_matrices_and_c_broadcast_by_strides() -> None:
    a = np.stack([A, -A])[None]  # [1, 2, 2, 3]
    b = np.stack([B, 2 * B])[None]
    row = np.array([10, 20, 30, 40], np.float32)
    got = gemm(a, b, row, c_strides=[0, 0, 0, 1])
    assert got[0, 0].tolist() == [[48, 64, 80, 96], [93, 118, 143, 168]]
    assert got[0, 1].tolist() == [[-66, -68, -70, -72], [-156, -176, -196, -216]]
    one = np.float32(1000)
    assert gemm(A, B, one, c_strides=[0, 0], beta=1).tolist() == [[1038, 1044, 1050, 1056], [1083, 1098, 1113, 1128]]


def test_dxdispatch_dml_gemm_prints_what_dxdispatch_prints() -> None:
    """models/gemm.json's first dispatchable is DxDispatch's dml_gemm as it is: a 3x1 by 1x3 outer
    product of [1, 2, 3] and [4, 5, 6] plus a C of 2s."""
    status, out, err = run_cli("run", str(MODELS / "gemm.json"), "--ep", "cpu")
    assert status == 0, err
    got = printed(out)
    assert got["output"] == [6, 7, 8, 10, 12, 14, 14, 17, 20]
    assert got["batchOutput"] == [1, 5.5, 4, 8.5, 0, 0.5, 0, 0]


def test_dxdispatch_dml_gemm_graph_runs(tmp_path: Path) -> None:
    """DxDispatch's dml_gemm_graph: a GEMM dispatchable (not a `graph` one) compiled as a DML
    graph, B bound at initialization (OWNED_BY_DML), half precision allowed, no C with Beta 1: 32s."""
    model = """{
        "resources": {
            "A": { "initialValuesDataType": "FLOAT32", "initialValues": { "valueCount": 1024, "value": 1 } },
            "B": { "initialValuesDataType": "FLOAT32", "initialValues": { "valueCount": 1024, "value": 1 } },
            "output": { "initialValuesDataType": "FLOAT32", "initialValues": { "valueCount": 1024, "value": 1 } }
        },
        "dispatchables": {
            "gemm": {
                "type": "DML_OPERATOR_GEMM",
                "desc": {
                    "ATensor": { "DataType": "FLOAT32", "Sizes": [1,1,32,32] },
                    "BTensor": { "DataType": "FLOAT32", "Sizes": [1,1,32,32], "Flags": "DML_TENSOR_FLAG_OWNED_BY_DML" },
                    "OutputTensor": { "DataType": "FLOAT32", "Sizes": [1,1,32,32] },
                    "TransA": "DML_MATRIX_TRANSFORM_NONE",
                    "TransB": "DML_MATRIX_TRANSFORM_NONE",
                    "Alpha": 1.0,
                    "Beta": 1.0
                },
                "dmlCompileType": "DmlCompileGraph",
                "executionFlags": "DML_EXECUTION_FLAG_ALLOW_HALF_PRECISION_COMPUTATION",
                "bindings": { "BTensor": "B" }
            }
        },
        "commands": [
            { "type": "dispatch", "dispatchable": "gemm", "bindings": { "ATensor": "A", "OutputTensor": "output" } },
            { "type": "print", "resource": "output" }
        ]
    }"""
    path = tmp_path / "dml_gemm_graph.json"
    path.write_text(model)
    status, out, err = run_cli("run", str(path), "--ep", "cpu")
    assert status == 0, err
    assert printed(out)["output"] == [32.0] * 1024


# -- what DirectML computes where the page is silent -------------------------------------------


def test_beta_without_c_is_ignored() -> None:
    assert gemm(A, B, beta=5).tolist() == [[38, 44, 50, 56], [83, 98, 113, 128]]


def test_alpha_and_beta_zero_still_multiply() -> None:
    """0 * inf is NaN: DirectML takes no BLAS-style short cut (measured through its API)."""
    a = A.copy()
    a[0, 0] = np.inf
    got = gemm(a, B, np.zeros((2, 4), np.float32), alpha=0.0)
    assert np.isnan(got[0]).all() and got[1].tolist() == [0, 0, 0, 0]
    c = np.zeros((2, 4), np.float32)
    c[1, 2] = np.inf
    got = gemm(A, B, c, beta=0.0)
    assert np.isnan(got[1, 2]) and got[0].tolist() == [38, 44, 50, 56]


def test_float16_accumulates_in_float32() -> None:
    """3000 ones sum to 3000 (FLOAT16 accumulation would stop at 2048); 64 products of 2000 are
    128000, beyond FLOAT16, before Alpha 1/16 brings them to 8000."""
    k = 3000
    got = gemm(np.ones((1, k), np.float16), np.ones((k, 1), np.float16))
    assert got.dtype == np.float16 and got.item() == 3000
    got = gemm(np.ones((1, 1, 2, 64), np.float16), np.full((1, 1, 64, 3), 2000, np.float16), alpha=1 / 16)
    assert (got == 8000).all()


_why = dmlapi.missing()


@pytest.mark.skipif(_why is not None, reason=f"DirectML's API under Wine is not set up ({_why})")
def test_directml_settles_so() -> None:
    base = {
        "ATensor": tensor("FLOAT32", [2, 3]),
        "BTensor": tensor("FLOAT32", [3, 4]),
        "OutputTensor": tensor("FLOAT32", [2, 4]),
        "TransA": "NONE",
        "TransB": "NONE",
        "Alpha": 1.0,
        "Beta": 5.0,
    }
    got = dmlapi.execute(make_desc(OP, base), {"ATensor": A, "BTensor": B}).output
    assert got.tolist() == [[38, 44, 50, 56], [83, 98, 113, 128]]
    a = A.copy()
    a[0, 0] = np.inf
    got = dmlapi.execute(make_desc(OP, base | {"Alpha": 0.0}), {"ATensor": a, "BTensor": B}).output
    assert np.isnan(got[0]).all() and got[1].tolist() == [0, 0, 0, 0]
    half = {
        "ATensor": tensor("FLOAT16", [1, 3000]),
        "BTensor": tensor("FLOAT16", [3000, 1]),
        "OutputTensor": tensor("FLOAT16", [1, 1]),
    }
    ones = {"ATensor": np.ones((1, 3000), np.float16), "BTensor": np.ones((3000, 1), np.float16)}
    assert dmlapi.execute(make_desc(OP, base | half), ones).output.item() == 3000


# -- validation --------------------------------------------------------------------------------

BASE = {
    "ATensor": tensor("FLOAT32", [1, 2, 2, 3]),
    "BTensor": tensor("FLOAT32", [1, 2, 3, 4]),
    "CTensor": tensor("FLOAT32", [1, 2, 2, 4]),
    "OutputTensor": tensor("FLOAT32", [1, 2, 2, 4]),
    "TransA": "NONE",
    "TransB": "NONE",
    "Alpha": 1.0,
    "Beta": 1.0,
}


@pytest.mark.parametrize(
    ("fields", "path", "text"),
    [
        (BASE | {"BTensor": tensor("FLOAT32", [1, 2, 2, 4])}, "desc.BTensor.Sizes[2]", "K = 3"),
        (BASE | {"TransB": "TRANSPOSE"}, "desc.BTensor.Sizes[3]", "K = 3"),
        (BASE | {"TransA": "TRANSPOSE"}, "desc.BTensor.Sizes[2]", "K = 2"),
        (BASE | {"OutputTensor": tensor("FLOAT32", [1, 2, 3, 4])}, "desc.OutputTensor.Sizes[2]", "must be 2 (M"),
        (BASE | {"OutputTensor": tensor("FLOAT32", [1, 2, 2, 5])}, "desc.OutputTensor.Sizes[3]", "must be 4 (N"),
        (BASE | {"ATensor": tensor("FLOAT32", [1, 1, 2, 3])}, "desc.ATensor.Sizes[1]", "the batch"),
        (BASE | {"BTensor": tensor("FLOAT32", [2, 2, 3, 4])}, "desc.BTensor.Sizes[0]", "the batch"),
        (BASE | {"CTensor": tensor("FLOAT32", [1, 1, 1, 4])}, "desc.CTensor.Sizes", "OutputTensor's Sizes"),
        (BASE | {"CTensor": tensor("FLOAT32", [2, 4])}, "desc.CTensor.Sizes", "same DimensionCount"),
        (BASE | {"ATensor": tensor("FLOAT32", [2, 2, 3])}, "desc.ATensor.Sizes", "same DimensionCount"),
        (BASE | {"BTensor": tensor("FLOAT16", [1, 2, 3, 4])}, "desc.BTensor.DataType", "same DataType"),
        (BASE | {"CTensor": tensor("FLOAT16", [1, 2, 2, 4])}, "desc.CTensor.DataType", "same DataType"),
        (BASE | {"ATensor": tensor("INT32", [1, 2, 2, 3])}, "desc.ATensor", "INT32"),
        (BASE | {"OutputTensor": tensor("FLOAT32", [2, 1, 1, 2, 4])}, "desc.OutputTensor", "2 to 4"),
        (BASE | {"TransA": "CONJUGATE"}, "desc.TransA", "DML_MATRIX_TRANSFORM"),
        ({k: v for k, v in BASE.items() if k != "Alpha"}, "desc.Alpha", "required"),
        (BASE | {"FusedActivation": {"Type": "ACTIVATION_SOFTPLUS", "Steepness": 0.0}}, "desc.FusedActivation", "Steepness"),
    ],
)
def test_invalid(fields: dict[str, Any], path: str, text: str) -> None:
    e = refusal(OP, fields)
    assert format_path(e.path).startswith(path) and text in str(e), (format_path(e.path), str(e))


def test_before_4_0_every_tensor_is_4d() -> None:
    two_d = {
        "ATensor": tensor("FLOAT32", [2, 3]),
        "BTensor": tensor("FLOAT32", [3, 4]),
        "OutputTensor": tensor("FLOAT32", [2, 4]),
        "TransA": "NONE",
        "TransB": "NONE",
        "Alpha": 1.0,
        "Beta": 0.0,
    }
    e = refusal(OP, two_d, level="3_1")
    assert "4" in str(e) and format_path(e.path).startswith("desc.ATensor"), (format_path(e.path), str(e))
    refusal_free = make_desc(OP, two_d)
    assert refusal_free.tensor("ATensor").rank == 2


# -- candidates and graphs ---------------------------------------------------------------------


def _nodes(fields: dict[str, Any], target: str, variant: str | None = None) -> list[str]:
    return [n.op_type for n in lowering.lower(make_desc(OP, fields), "t", target=target, variant=variant).graph.node]


def test_gemm_where_the_batch_is_one_matmul_elsewhere() -> None:
    one = BASE | {k: tensor("FLOAT32", [1, 1, *BASE[k]["Sizes"][2:]]) for k in ("ATensor", "BTensor", "CTensor", "OutputTensor")}
    for target in ("portable", "cuda", "dml"):
        assert "Gemm" in _nodes(one, target) and "MatMul" not in _nodes(one, target)
        assert "MatMul" in _nodes(BASE, target) and "Gemm" not in _nodes(BASE, target)
    assert _nodes(BASE | {"TransA": "TRANSPOSE", "ATensor": tensor("FLOAT32", [1, 2, 3, 2])}, "portable")[:2] == [
        "Transpose",
        "MatMul",
    ]
    assert _nodes(BASE | {"Alpha": 2.0, "Beta": 0.5}, "portable") == ["MatMul", "Mul", "Mul", "Add"]


def test_matmul_alone_where_gemm_has_nothing_to_fold() -> None:
    """Alpha 1 and no C: MatMul on the measured targets (faster than Gemm on an H100, gemm.choose)."""
    bare = {k: (v | {"Sizes": [1, 1, *v["Sizes"][2:]]} if k.endswith("Tensor") else v) for k, v in BASE.items() if k != "CTensor"}
    for target in ("portable", "cuda"):
        assert _nodes(bare, target) == ["MatMul"]
        assert _nodes(bare | {"Alpha": 2.0}, target) == ["Reshape", "Reshape", "Gemm", "Reshape"]
    assert choices.choose(make_desc(OP, bare), "cuda", DEFAULT_OPSET) == "matmul"
    assert choices.choose(make_desc(OP, bare | {"Alpha": 2.0}), "cuda", DEFAULT_OPSET) == "gemm"


def test_float16_graphs() -> None:
    """FLOAT16: in FLOAT32 on portable and cpu (no FLOAT16 MatMul or Gemm on the CPU EP); as it is on
    cuda and dml, but through FLOAT32 where a MatMul would round A x B before Alpha."""
    half = {k: (v | {"DataType": "FLOAT16"} if k.endswith("Tensor") else v) for k, v in BASE.items()}
    assert _nodes(half, "portable").count("Cast") == 4
    assert _nodes(half, "cuda") == ["MatMul", "Add"] and _nodes(half, "dml") == ["MatMul", "Add"]
    assert "Cast" in _nodes(half | {"Alpha": 0.5}, "cuda")
    one = {k: (v | {"Sizes": [1, 1, *v["Sizes"][2:]]} if k.endswith("Tensor") else v) for k, v in half.items()}
    assert _nodes(one | {"Alpha": 0.5}, "dml") == ["Reshape", "Reshape", "Reshape", "Gemm", "Reshape"]


@pytest.mark.parametrize("dtype", ["FLOAT32", "FLOAT16"])
def test_graphs_on_every_target(dtype: str) -> None:
    for example in registry.family(OP).examples(make_desc(OP, {**BASE}).schema):
        if example["ATensor"]["DataType"] != dtype:
            continue
        desc = make_desc(OP, example)
        for variant in choices.available(desc, DEFAULT_OPSET):
            for target in ("portable", "cuda", "dml", "cpu"):
                model = lowering.lower(desc, "t", target=target, variant=variant)
                if target != "cpu":
                    assert dml_ep.check(model) == [], (target, variant)


# -- properties --------------------------------------------------------------------------------


@st.composite
def cases(draw: st.DrawFn) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    dtype = draw(st.sampled_from(dtypes.FLOATS))
    rank = draw(st.integers(2, 4))
    batch = tuple(draw(st.integers(1, 3)) for _ in range(rank - 2))
    m, n = (draw(st.integers(1, 6)) for _ in range(2))
    k = draw(st.integers(1, tolerances.GEMM_LENGTH))
    ta, tb = draw(st.booleans()), draw(st.booleans())
    a_sizes = (*batch, k, m) if ta else (*batch, m, k)
    b_sizes = (*batch, n, k) if tb else (*batch, k, n)
    out = (*batch, m, n)
    fields: dict[str, Any] = {
        "ATensor": tensor(dtype.name, a_sizes),
        "BTensor": tensor(dtype.name, b_sizes),
        "OutputTensor": tensor(dtype.name, out),
        "TransA": "TRANSPOSE" if ta else "NONE",
        "TransB": "TRANSPOSE" if tb else "NONE",
        "Alpha": draw(st.sampled_from([1.0, 0.5, -1.5, 0.0, 2.0])),
        "Beta": draw(st.sampled_from([1.0, 0.25, -2.0, 0.0])),
    }
    rng = np.random.default_rng(draw(SEEDS))
    feeds = {
        "ATensor": rng.uniform(-1, 1, a_sizes).astype(dtype.numpy),
        "BTensor": rng.uniform(-1, 1, b_sizes).astype(dtype.numpy),
    }
    if draw(st.booleans()):  # C varying along a random subset of the output's axes, strides 0 elsewhere
        varies = tuple(s if draw(st.booleans()) else 1 for s in out)
        strides, step = [], 1
        for s in reversed(varies):
            strides.insert(0, step if s > 1 else 0)
            step *= s
        fields["CTensor"] = tensor(dtype.name, out) | {"Strides": strides}
        feeds["CTensor"] = np.broadcast_to(rng.uniform(-1, 1, varies).astype(dtype.numpy), out).copy()
    activation = draw(st.sampled_from([None, "ACTIVATION_RELU", "ACTIVATION_SIGMOID", "ACTIVATION_LEAKY_RELU"]))
    if activation:
        fields["FusedActivation"] = {"Type": activation} | ({"Alpha": 0.1} if activation.endswith("LEAKY_RELU") else {})
    return fields, feeds


@EPS
@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=cases())
def test_every_candidate_matches_reference(ep: str, case: tuple[dict[str, Any], dict[str, np.ndarray]]) -> None:
    every_variant(*case, ep=ep)


@settings(max_examples=50, deadline=None)
@given(case=cases())
def test_reference_matches_the_pages_formula(case: tuple[dict[str, Any], dict[str, np.ndarray]]) -> None:
    """The reference against y = Alpha * op(A) op(B) + Beta * C element by element, in Python floats."""
    fields, feeds = case
    if "FusedActivation" in fields:
        del fields["FusedActivation"]
    desc = make_desc(OP, fields)
    got = registry.family(OP).reference(desc, feeds)
    a, b = feeds["ATensor"].astype(np.float64), feeds["BTensor"].astype(np.float64)
    if fields["TransA"] == "TRANSPOSE":
        a = np.swapaxes(a, -1, -2)
    if fields["TransB"] == "TRANSPOSE":
        b = np.swapaxes(b, -1, -2)
    alpha, beta = float(np.float32(fields["Alpha"])), float(np.float32(fields["Beta"]))
    for index in np.ndindex(got.shape):
        *batch, i, j = index
        s = sum(float(a[(*batch, i, t)]) * float(b[(*batch, t, j)]) for t in range(a.shape[-1]))
        want = alpha * s + (beta * float(feeds["CTensor"][index]) if "CTensor" in feeds else 0.0)
        rounded = np.asarray(np.float32(want)).astype(got.dtype)  # one ulp: a sum's order may round it
        assert abs(float(got[index]) - float(rounded)) <= abs(float(np.spacing(rounded))) + 1e-30, (index, got[index], want)
