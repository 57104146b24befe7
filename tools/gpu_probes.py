"""Checks on a GPU machine's CUDA EP (../shared/GPU.md) of the ONNX Runtime behaviours the `cuda`
target's graphs rely on (graph/cuda_fusions.py, ops/gather_masked.py), each against the nodes it
stands for, in one process; CPU fallback off, TF32 off.

    python3 tools/gpu_probes.py OUT

Prints a line per probe (exact, or how it differs) and writes OUT/probes.json."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import onnxruntime as ort
from onnx import TensorProto, helper

MS = ("com.microsoft", 1)


def _run(
    nodes: list,
    inputs: dict[str, np.ndarray],
    out_type: int,
    consts: list | None = None,
    domains=(("", 17),),
    optimize: bool = True,
) -> np.ndarray:
    ins = [helper.make_tensor_value_info(k, helper.np_dtype_to_tensor_dtype(v.dtype), list(v.shape)) for k, v in inputs.items()]
    graph = helper.make_graph(nodes, "probe", ins, [helper.make_tensor_value_info("y", out_type, None)], consts or [])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid(d, v) for d, v in domains], ir_version=8)
    so = ort.SessionOptions()
    so.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
    if not optimize:
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(model.SerializeToString(), so, providers=[("CUDAExecutionProvider", {"use_tf32": "0"})])
    return session.run(None, inputs)[0]


def int64_clip() -> str:
    """Clip of INT64 values at and past 31 bits (the CPU EP's is wrong there)."""
    x = np.array([2**31, -(2**31) - 1, 2**62, -(2**63), 2**63 - 1, 5, -6, 30521, -30523, 30522, 0], np.int64)
    for lo, hi in ((-30523, 30522), (-7, 6)):
        feeds = {"x": x, "lo": np.array(lo, np.int64), "hi": np.array(hi, np.int64)}
        got = _run([helper.make_node("Clip", ["x", "lo", "hi"], ["y"])], feeds, TensorProto.INT64)
        if not np.array_equal(got, np.clip(x, lo, hi)):
            return f"differs for [{lo}, {hi}]: {got.tolist()}"
    return "exact"


def half_gelu() -> str:
    """com.microsoft Gelu in FLOAT16 against activations.py's FLOAT32 steps, every finite FLOAT16 value."""
    x = np.arange(65536, dtype=np.uint16).view(np.float16)
    x = x[np.isfinite(x)]
    steps = [
        helper.make_node("Cast", ["x"], ["xf"], to=TensorProto.FLOAT),
        helper.make_node("Div", ["xf", "sqrt2"], ["d"]),
        helper.make_node("Erf", ["d"], ["e"]),
        helper.make_node("Mul", ["xf", "half"], ["hx"]),
        helper.make_node("Add", ["e", "one"], ["ope"]),
        helper.make_node("Mul", ["hx", "ope"], ["g"]),
        helper.make_node("Cast", ["g"], ["y"], to=TensorProto.FLOAT16),
    ]
    consts = [
        helper.make_tensor("sqrt2", TensorProto.FLOAT, [], [float(np.float32(np.sqrt(2)))]),
        helper.make_tensor("half", TensorProto.FLOAT, [], [0.5]),
        helper.make_tensor("one", TensorProto.FLOAT, [], [1.0]),
    ]
    out = {}
    for optimize in (True, False):  # fused by ONNX Runtime into one FLOAT32 Gelu, and step by step
        want = _run(steps, {"x": x}, TensorProto.FLOAT16, consts, optimize=optimize)
        got = _run([helper.make_node("Gelu", ["x"], ["y"], domain=MS[0])], {"x": x}, TensorProto.FLOAT16, domains=(("", 17), MS))
        out["fused steps" if optimize else "unfused steps"] = int((got.view(np.uint16) != want.view(np.uint16)).sum())
    return "exact" if not any(out.values()) else f"differs in {out} of {x.size}"


def half_fused_matmul() -> str:
    """com.microsoft FusedMatMul in FLOAT16 with alpha against Cast, MatMul, Mul, Cast in FLOAT32."""
    rng = np.random.default_rng(0)
    report = []
    for alpha, k in ((0.25, 16), (0.125, 64), (0.25, 3000), (float(np.float32(1 / np.sqrt(80))), 80)):
        a = rng.standard_normal((4, 16, k)).astype(np.float16)
        b = rng.standard_normal((4, k, 16)).astype(np.float16)
        if k == 3000:  # 0.25 * 180000: past FLOAT16 before alpha, 45000 after
            a[:], b[:] = 60, 1
        node = helper.make_node("FusedMatMul", ["a", "b"], ["y"], domain=MS[0], alpha=alpha)
        got = _run([node], {"a": a, "b": b}, TensorProto.FLOAT16, domains=(("", 17), MS))
        steps = [
            helper.make_node("Cast", ["a"], ["af"], to=TensorProto.FLOAT),
            helper.make_node("Cast", ["b"], ["bf"], to=TensorProto.FLOAT),
            helper.make_node("MatMul", ["af", "bf"], ["p"]),
            helper.make_node("Mul", ["p", "alpha"], ["q"]),
            helper.make_node("Cast", ["q"], ["y"], to=TensorProto.FLOAT16),
        ]
        alpha_t = [helper.make_tensor("alpha", TensorProto.FLOAT, [], [alpha])]
        want = _run(steps, {"a": a, "b": b}, TensorProto.FLOAT16, alpha_t, optimize=False)
        report.append(f"alpha {alpha:.6g} K {k}: {int((got.view(np.uint16) != want.view(np.uint16)).sum())} of {got.size} differ")
    return "; ".join(report)


def half_gemm_alpha_beta() -> str:
    """ONNX Gemm in FLOAT16 with alpha and beta against the FLOAT32 steps (gemm.py's `gemm` candidate,
    which the `cuda` target keeps in FLOAT16)."""
    rng = np.random.default_rng(2)
    a = rng.standard_normal((16, 80)).astype(np.float16)
    b = rng.standard_normal((80, 24)).astype(np.float16)
    c = rng.standard_normal((16, 24)).astype(np.float16)
    report = []
    for alpha, beta in ((0.125, 1.0), (float(np.float32(1 / np.sqrt(80))), 1.0), (1.0, 0.3), (0.5, 0.25)):
        node = helper.make_node("Gemm", ["a", "b", "c"], ["y"], alpha=alpha, beta=beta)
        got = _run([node], {"a": a, "b": b, "c": c}, TensorProto.FLOAT16)
        steps = [
            *(helper.make_node("Cast", [v], [f"{v}f"], to=TensorProto.FLOAT) for v in "abc"),
            helper.make_node("Gemm", ["af", "bf", "cf"], ["g"], alpha=alpha, beta=beta),
            helper.make_node("Cast", ["g"], ["y"], to=TensorProto.FLOAT16),
        ]
        want = _run(steps, {"a": a, "b": b, "c": c}, TensorProto.FLOAT16, optimize=False)
        report.append(
            f"alpha {alpha:.6g} beta {beta:.6g}: {int((got.view(np.uint16) != want.view(np.uint16)).sum())} of {got.size} differ"
        )
    return "; ".join(report)


def fused_conv_nan() -> str:
    """com.microsoft FusedConv with activation Relu against Conv, Relu where the convolution gives NaN."""
    rng = np.random.default_rng(1)
    x = rng.standard_normal((1, 3, 8, 8)).astype(np.float32)
    x[0, 0, 2, 2] = np.nan
    feeds = {"x": x, "w": rng.standard_normal((4, 3, 3, 3)).astype(np.float32), "b": rng.standard_normal(4).astype(np.float32)}
    want = _run(
        [helper.make_node("Conv", ["x", "w", "b"], ["c"]), helper.make_node("Relu", ["c"], ["y"])], feeds, TensorProto.FLOAT
    )
    node = helper.make_node("FusedConv", ["x", "w", "b"], ["y"], domain=MS[0], activation="Relu")
    got = _run([node], feeds, TensorProto.FLOAT, domains=(("", 17), MS))
    if np.array_equal(got, want, equal_nan=True):
        return "exact"
    return f"differs: {int(np.isnan(want).sum())} NaN after Conv, Relu; {int(np.isnan(got).sum())} after FusedConv"


PROBES = {
    "int64_clip": int64_clip,
    "half_gelu": half_gelu,
    "half_fused_matmul": half_fused_matmul,
    "half_gemm_alpha_beta": half_gemm_alpha_beta,
    "fused_conv_nan": fused_conv_nan,
}


def main(out: Path) -> None:
    results = {"onnxruntime": ort.__version__}
    for name, probe in PROBES.items():
        try:
            results[name] = probe()
        except Exception as e:  # reported: a probe that cannot run says why
            results[name] = f"failed: {str(e).splitlines()[0][:200]}"
        print(f"{name}: {results[name]}", flush=True)
    out.mkdir(parents=True, exist_ok=True)
    (out / "probes.json").write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
