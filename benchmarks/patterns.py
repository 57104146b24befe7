"""Raw ONNX patterns timed on the CUDA EP, to find lowerings worth adding to dml2onnx/lowering/choices.py.

Each experiment is a small hand-built graph with a numpy reference. On the GPU machine (after
onnxruntime-gpu is unpacked, see benchmarks/README.md):

    python3 benchmarks/patterns.py [--only SUBSTRING] > patterns.json

Every graph runs with CPU fallback disabled; the output is checked against the reference, and
the ArgMax patterns are also run on tied, -inf and NaN data (first index expected on ties).
GB/s counts the bytes of the graph's inputs and of its OutputTensor once each.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17


@dataclass
class Graph:
    """A tiny graph builder: nodes, constants and the one OutputTensor."""

    inputs: dict[str, np.ndarray]
    nodes: list[onnx.NodeProto] = field(default_factory=list)
    inits: list[onnx.TensorProto] = field(default_factory=list)
    count: int = 0

    def const(self, value: Any, dtype: Any = np.int64) -> str:
        self.count += 1
        name = f"c{self.count}"
        self.inits.append(numpy_helper.from_array(np.asarray(value, dtype), name))
        return name

    def op(self, op_type: str, inputs: list[str], outputs: int = 1, domain: str = "", **attrs: Any) -> Any:
        self.count += 1
        names = [f"t{self.count}_{i}" for i in range(outputs)]
        self.nodes.append(helper.make_node(op_type, inputs, names, name=f"n{self.count}", domain=domain, **attrs))
        return names[0] if outputs == 1 else names

    def model(self, out: str) -> onnx.ModelProto:
        self.nodes.append(helper.make_node("Identity", [out], ["OutputTensor"], name="out"))
        ins = [
            helper.make_tensor_value_info(k, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape) for k, v in self.inputs.items()
        ]
        opsets = [helper.make_opsetid("", OPSET), helper.make_opsetid("com.microsoft", 1)]
        probe = helper.make_model(helper.make_graph(self.nodes, "probe", ins, [], self.inits), opset_imports=opsets, ir_version=8)
        inferred = {v.name: v.type.tensor_type.elem_type for v in onnx.shape_inference.infer_shapes(probe).graph.value_info}
        elem = inferred.get(out) or TensorProto.FLOAT  # contrib ops (FusedConv) are not inferred: FLOAT
        outs = [helper.make_tensor_value_info("OutputTensor", elem, None)]
        graph = helper.make_graph(self.nodes, "pattern", ins, outs, self.inits)
        return helper.make_model(graph, opset_imports=opsets, ir_version=8)


@dataclass
class Experiment:
    name: str
    group: str
    build: Callable[[Graph], str]
    inputs: dict[str, np.ndarray]
    reference: Callable[[dict[str, np.ndarray]], np.ndarray]
    rtol: float = 0.0
    tie_inputs: dict[str, np.ndarray] | None = None  # small data with ties / -inf / NaN
    config: dict[str, str] = field(default_factory=dict)


PROVIDER = ["CUDAExecutionProvider"]
DEVICE = "cuda"


def session(model: onnx.ModelProto, config: dict[str, str]) -> Any:
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.log_severity_level = 3
    if DEVICE == "cuda":
        so.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
    for k, v in config.items():
        so.add_session_config_entry(k, v)
    providers: list[Any] = [(PROVIDER[0], {"use_tf32": "0"})] if DEVICE == "cuda" else PROVIDER  # FLOAT32 as DirectML
    return ort.InferenceSession(model.SerializeToString(), so, providers=providers)


def bound_run(sess: Any, feeds: dict[str, np.ndarray]) -> tuple[Callable[[], None], Any]:
    """One synchronized run with inputs and output on the device (io binding), and the binding."""
    import onnxruntime as ort

    binding = sess.io_binding()
    values = {k: ort.OrtValue.ortvalue_from_numpy(np.ascontiguousarray(v), DEVICE, 0) for k, v in feeds.items()}
    for k, v in values.items():
        binding.bind_ortvalue_input(k, v)
    binding.bind_output("OutputTensor", DEVICE)

    def run() -> None:
        sess.run_with_iobinding(binding)
        binding.synchronize_outputs()

    run.values = values  # type: ignore[attr-defined]  # the inputs live as long as the closure
    return run, binding


def time_model(sess: Any, feeds: dict[str, np.ndarray], iterations: int) -> tuple[float, float, np.ndarray, Callable[[], None]]:
    run, binding = bound_run(sess, feeds)
    samples = []
    for i in range(iterations + 3):
        start = time.perf_counter()
        run()
        if i >= 3:
            samples.append((time.perf_counter() - start) * 1e3)
    out = binding.copy_outputs_to_cpu()[0]
    return statistics.median(samples), min(samples), out, run


def check(got: np.ndarray, want: np.ndarray, rtol: float) -> tuple[bool, float]:
    if got.shape != want.shape:
        got = got.reshape(want.shape) if got.size == want.size else got
    if got.shape != want.shape:
        return False, float("inf")
    if rtol == 0:
        bad = got != want
        if want.dtype.kind == "f":
            bad &= ~(np.isnan(got) & np.isnan(want))
        return not bad.any(), float(bad.mean())
    g, w = got.astype(np.float64), want.astype(np.float64)
    err = np.abs(g - w)
    return bool(np.all(err <= rtol + rtol * np.abs(w))), float(err.max())


# ---------------------------------------------------------------- ArgMax over a leading / middle axis


def first_argmax(x: np.ndarray, axis: int) -> np.ndarray:
    return np.argmax(x, axis=axis, keepdims=True).astype(np.int64)


def argmax_patterns(x: np.ndarray, tag: str, ties: np.ndarray) -> Iterator[Experiment]:
    """x of shape (B, R, W) reduced over R (B = 1: a leading axis)."""
    r = x.shape[1]

    def plain(g: Graph) -> str:
        return g.op("ArgMax", ["x"], axis=1, keepdims=1)

    def pool(chunk: int) -> Callable[[Graph], str]:
        def build(g: Graph) -> str:
            rr = g.inputs["x"].shape[1]
            ww = g.inputs["x"].shape[2]
            bb = g.inputs["x"].shape[0]
            k = min(chunk, rr)
            v4 = g.op("Reshape", ["x", g.const([bb, rr // k, k, ww])])
            vals, idx = g.op("MaxPool", [v4], outputs=2, kernel_shape=[k, 1])
            if k < rr:  # second stage: the chunk holding the first maximum
                best = g.op("ArgMax", [vals], axis=1, keepdims=1)
                idx = g.op("GatherElements", [idx, best], axis=1)
            row = g.op("Mod", [g.op("Div", [idx, g.const(ww)]), g.const(rr)])
            return g.op("Reshape", [row, g.const([bb, 1, ww])])

        return build

    def reduce_equal_min(g: Graph) -> str:
        rr = g.inputs["x"].shape[1]
        top = g.op("ReduceMax", ["x"], axes=[1], keepdims=1)
        eq = g.op("Equal", ["x", top])
        iota = g.const(np.arange(rr, dtype=np.float32).reshape(1, rr, 1), np.float32)
        pos = g.op("Where", [eq, iota, g.const(float(rr), np.float32)])
        return g.op("Cast", [g.op("ReduceMin", [pos], axes=[1], keepdims=1)], to=TensorProto.INT64)

    def transposed(g: Graph) -> str:
        t = g.op("Transpose", ["x"], perm=[0, 2, 1])
        a = g.op("ArgMax", [t], axis=2, keepdims=1)
        return g.op("Transpose", [a], perm=[0, 2, 1])

    def einsum_transposed(g: Graph) -> str:
        t = g.op("Einsum", ["x"], equation="brw->bwr")
        a = g.op("ArgMax", [t], axis=2, keepdims=1)
        return g.op("Transpose", [a], perm=[0, 2, 1])

    def transposed_reshaped(g: Graph) -> str:
        bb, rr, ww = g.inputs["x"].shape
        t = g.op("Transpose", ["x"], perm=[0, 2, 1])
        t = g.op("Reshape", [t, g.const([bb * ww, rr])])
        a = g.op("ArgMax", [t], axis=1, keepdims=1)
        return g.op("Reshape", [a, g.const([bb, 1, ww])])

    ref = lambda v: first_argmax(v["x"], 1)  # noqa: E731
    group = f"ARGMAX {tag}"
    yield Experiment(f"{group}: ArgMax", group, plain, {"x": x}, ref, tie_inputs={"x": ties})
    yield Experiment(f"{group}: MaxPool one stage", group, pool(r), {"x": x}, ref, tie_inputs={"x": ties})
    for chunk in (16, 64, 256):
        yield Experiment(
            f"{group}: MaxPool chunks of {chunk} + ArgMax", group, pool(chunk), {"x": x}, ref, tie_inputs={"x": ties}
        )
    yield Experiment(f"{group}: ReduceMax+Equal+Where+ReduceMin", group, reduce_equal_min, {"x": x}, ref, tie_inputs={"x": ties})
    yield Experiment(
        f"{group}: Transpose+ArgMax (TransposeOptimizer off)",
        group,
        transposed,
        {"x": x},
        ref,
        config={"optimization.disable_specified_optimizers": "TransposeOptimizer"},
    )
    yield Experiment(f"{group}: Transpose+ArgMax", group, transposed, {"x": x}, ref, tie_inputs={"x": ties})
    yield Experiment(f"{group}: Einsum transpose+ArgMax", group, einsum_transposed, {"x": x}, ref, tie_inputs={"x": ties})
    yield Experiment(f"{group}: Transpose+Reshape+ArgMax", group, transposed_reshaped, {"x": x}, ref, tie_inputs={"x": ties})


def tie_data(shape: tuple[int, int, int], dtype: Any) -> np.ndarray:
    rng = np.random.default_rng(7)
    t = np.round(rng.standard_normal(shape) * 2).astype(dtype)  # many ties
    t[0, :, 0] = -np.inf
    t[0, :, 1] = 5
    t[0, 3, 2] = np.nan
    t[0, :, 3] = np.nan
    return t


def hardmax_patterns(x: np.ndarray, tag: str) -> Iterator[Experiment]:
    """Hardmax over axis 1 of (1, R, W): an index, then OneHot along that axis."""
    _, r, w = x.shape

    def one_hot_of(index: Callable[[Graph], str]) -> Callable[[Graph], str]:
        def build(g: Graph) -> str:
            i32 = g.op("Cast", [g.op("Reshape", [index(g), g.const([1, w])])], to=TensorProto.INT32)
            values = g.const([0, 1], np.float32)
            return g.op("OneHot", [i32, g.const(r, np.int32), values], axis=1)

        return build

    def argmax(g: Graph) -> str:
        return g.op("ArgMax", ["x"], axis=1, keepdims=1)

    def pooled(g: Graph) -> str:
        v4 = g.op("Reshape", ["x", g.const([1, r // 64, 64, w])])
        vals, idx = g.op("MaxPool", [v4], outputs=2, kernel_shape=[64, 1])
        best = g.op("ArgMax", [vals], axis=1, keepdims=1)
        return g.op("Div", [g.op("GatherElements", [idx, best], axis=1), g.const(w)])

    def ref(v: dict[str, np.ndarray]) -> np.ndarray:
        a = np.argmax(v["x"], axis=1)
        out = np.zeros_like(v["x"])
        np.put_along_axis(out, a[:, None, :], 1, axis=1)
        return out

    group = f"HARDMAX1 {tag}"
    yield Experiment(f"{group}: ArgMax+OneHot", group, one_hot_of(argmax), {"x": x}, ref)
    yield Experiment(f"{group}: MaxPool chunks of 64 + ArgMax + OneHot", group, one_hot_of(pooled), {"x": x}, ref)


# ---------------------------------------------------------------- LogSoftmax over the last axis


def log_softmax_patterns(x: np.ndarray) -> Iterator[Experiment]:
    def ref(v: dict[str, np.ndarray]) -> np.ndarray:
        s = v["x"].astype(np.float64)
        s = s - s.max(axis=-1, keepdims=True)
        return (s - np.log(np.exp(s).sum(axis=-1, keepdims=True))).astype(v["x"].dtype)

    def plain(g: Graph) -> str:
        return g.op("LogSoftmax", ["x"], axis=-1)

    def centered(g: Graph) -> str:
        where = g.op("ArgMax", ["x"], axis=-1, keepdims=1)
        top = g.op("GatherElements", ["x", where], axis=-1)
        return g.op("LogSoftmax", [g.op("Sub", ["x", top])], axis=-1)

    def softmax_bn(g: Graph) -> str:
        # (x - max) - log(1 / softmax(x) at the max): BatchNormalization does both subtractions
        rows = g.inputs["x"].shape[0]
        where = g.op("ArgMax", ["x"], axis=-1, keepdims=1)
        top = g.op("GatherElements", ["x", where], axis=-1)
        p = g.op("GatherElements", [g.op("Softmax", ["x"], axis=-1), where], axis=-1)
        shift = g.op("Log", [p])  # -log(sum exp(x - max))
        eps = 2.0**-16
        x4 = g.op("Reshape", ["x", g.const([1, rows, -1, 1])])
        flat = lambda t: g.op("Reshape", [t, g.const([rows])])  # noqa: E731
        y = g.op(
            "BatchNormalization",
            [x4, g.const(np.ones(rows), np.float32), flat(shift), flat(top), g.const(np.full(rows, 1 - eps), np.float32)],
            epsilon=eps,
        )
        return g.op("Reshape", [y, g.const(list(g.inputs["x"].shape))])

    group = "LOG_SOFTMAX1 trailing"
    big = x.copy()
    big[:, 7] = 5e4  # a large maximum: the uncentered kernel is 2e-3 off there
    yield Experiment(f"{group}: LogSoftmax (uncentered)", group, plain, {"x": x}, ref, rtol=5e-5, tie_inputs={"x": big[:64]})
    yield Experiment(
        f"{group}: ArgMax+GatherElements+Sub+LogSoftmax", group, centered, {"x": x}, ref, rtol=5e-5, tie_inputs={"x": big[:64]}
    )
    yield Experiment(
        f"{group}: Softmax at the max + BatchNormalization",
        group,
        softmax_bn,
        {"x": x},
        ref,
        rtol=5e-5,
        tie_inputs={"x": big[:64]},
    )


def log_softmax_leading_patterns(x: np.ndarray) -> Iterator[Experiment]:
    """LogSoftmax over axis 0 of (R, W)."""
    r, w = x.shape

    def ref(v: dict[str, np.ndarray]) -> np.ndarray:
        s = v["x"].astype(np.float64)
        s = s - s.max(axis=0, keepdims=True)
        return (s - np.log(np.exp(s).sum(axis=0, keepdims=True))).astype(v["x"].dtype)

    def chain_with(top: Callable[[Graph], str]) -> Callable[[Graph], str]:
        def build(g: Graph) -> str:
            d = g.op("Sub", ["x", top(g)])
            total = g.op("ReduceSum", [g.op("Exp", [d]), g.const([0])], keepdims=1)
            return g.op("Sub", [d, g.op("Log", [total])])

        return build

    def reduce_max(g: Graph) -> str:
        return g.op("ReduceMax", ["x"], axes=[0], keepdims=1)

    def pool_max(g: Graph) -> str:
        v4 = g.op("Reshape", ["x", g.const([1, 1, r, w])])
        return g.op("Reshape", [g.op("MaxPool", [v4], kernel_shape=[r, 1]), g.const([1, w])])

    def einsum_centered(g: Graph) -> str:
        t = g.op("Einsum", ["x"], equation="rw->wr")
        where = g.op("ArgMax", [t], axis=1, keepdims=1)
        top = g.op("GatherElements", [t, where], axis=1)
        y = g.op("LogSoftmax", [g.op("Sub", [t, top])], axis=1)
        return g.op("Einsum", [y], equation="wr->rw")

    group = "LOG_SOFTMAX1 leading"
    yield Experiment(f"{group}: ReduceMax chain", group, chain_with(reduce_max), {"x": x}, ref, rtol=5e-5)
    yield Experiment(f"{group}: MaxPool (values) chain", group, chain_with(pool_max), {"x": x}, ref, rtol=5e-5)
    yield Experiment(f"{group}: Einsum transposes + centered LogSoftmax", group, einsum_centered, {"x": x}, ref, rtol=5e-5)


# ---------------------------------------------------------------- OneHot with small depths


def one_hot_patterns(depth: int, axis: int) -> Iterator[Experiment]:
    rows = 2**26 // depth
    rng = np.random.default_rng(depth)
    idx = rng.integers(0, depth, size=rows).astype(np.int32)
    idx[:7] = [-1, depth, -depth, depth + 5, -depth - 1, 0, depth - 1]
    shape = (rows, 1) if axis == 1 else (1, rows)
    inputs = {"i": idx.reshape(shape), "v": np.array([[0.25, 3.0]], np.float32)}

    def ref(v: dict[str, np.ndarray]) -> np.ndarray:
        i = v["i"].astype(np.int64)
        i = np.where(i < 0, i + depth, i)
        pos = np.arange(depth).reshape((1, depth) if axis == 1 else (depth, 1))
        return np.where(i == pos, v["v"][0, 1], v["v"][0, 0]).astype(np.float32)

    def onnx_one_hot(g: Graph) -> str:
        off_on = g.op("Reshape", ["v", g.const([2])])
        flat = g.op("Reshape", ["i", g.const([rows])])
        y = g.op("OneHot", [flat, g.const(depth, np.int32), off_on], axis=axis)
        return y

    def normalized(g: Graph) -> str:
        """Indices in [0, depth], depth for out of range (int32 Where/Add on the small tensor)."""
        flat = g.op("Reshape", ["i", g.const([rows])])
        neg = g.op("Less", [flat, g.const(0, np.int32)])
        wrapped = g.op("Where", [neg, g.op("Add", [flat, g.const(depth, np.int32)]), flat])
        ok = g.op(
            "And", [g.op("GreaterOrEqual", [wrapped, g.const(0, np.int32)]), g.op("Less", [wrapped, g.const(depth, np.int32)])]
        )
        return g.op("Where", [ok, wrapped, g.const(depth, np.int32)])

    def gather_table(g: Graph) -> str:
        eye = np.eye(depth + 1, depth, dtype=bool)
        off = g.op("Slice", ["v", g.const([0, 0]), g.const([1, 1])])
        on = g.op("Slice", ["v", g.const([0, 1]), g.const([1, 2])])
        table = g.op("Where", [g.const(eye if axis == 1 else eye.T, bool), on, off])
        return g.op("Gather", [table, normalized(g)], axis=0 if axis == 1 else 1)

    def equal_where(g: Graph) -> str:
        pos = g.const(np.arange(depth, dtype=np.int32).reshape((1, depth) if axis == 1 else (depth, 1)), np.int32)
        i = normalized(g)
        i = g.op("Reshape", [i, g.const([rows, 1] if axis == 1 else [1, rows])])
        off = g.op("Slice", ["v", g.const([0, 0]), g.const([1, 1])])
        on = g.op("Slice", ["v", g.const([0, 1]), g.const([1, 2])])
        return g.op("Where", [g.op("Equal", [i, pos]), on, off])

    group = f"ONE_HOT depth {depth} axis {axis}"
    yield Experiment(f"{group}: OneHot", group, onnx_one_hot, inputs, ref)
    yield Experiment(f"{group}: Gather from a (depth+1) x depth table", group, gather_table, inputs, ref)
    yield Experiment(f"{group}: Equal+Where", group, equal_where, inputs, ref)


# ---------------------------------------------------------------- MVN


def mvn_patterns(x: np.ndarray, cross: bool, extras: bool) -> Iterator[Experiment]:
    n, c, h, w = x.shape
    eps = 1e-5
    rng = np.random.default_rng(3)
    scale = rng.uniform(0.5, 2, (1, c, 1, 1)).astype(np.float32)
    bias = rng.uniform(-1, 1, (1, c, 1, 1)).astype(np.float32)
    inputs = {"x": x} | ({"s": scale, "b": bias} if extras else {})

    def ref(v: dict[str, np.ndarray]) -> np.ndarray:
        d = v["x"].astype(np.float64)
        axes = (1, 2, 3) if cross else (2, 3)
        d = d - d.mean(axis=axes, keepdims=True)
        y = d / np.sqrt((d * d).mean(axis=axes, keepdims=True) + eps)
        if extras:
            y = np.maximum(y * v["s"] + v["b"], 0)
        return y.astype(np.float32)

    def finish(g: Graph, y: str) -> str:
        if not extras:
            return y
        return g.op("Relu", [g.op("Add", [g.op("Mul", [y, "s"]), "b"])])

    def chain(g: Graph) -> str:
        axes = [1, 2, 3] if cross else [2, 3]
        mean = g.op("ReduceMean", ["x"], axes=axes, keepdims=1)
        d = g.op("Sub", ["x", mean])
        var = g.op("ReduceMean", [g.op("Mul", [d, d])], axes=axes, keepdims=1)
        return finish(g, g.op("Div", [d, g.op("Sqrt", [g.op("Add", [var, g.const(eps, np.float32)])])]))

    def layer_norm(g: Graph) -> str:
        if cross:
            y = g.op("LayerNormalization", ["x", g.const(np.ones((c, h, w)), np.float32)], axis=1, epsilon=eps)
        else:
            y = g.op("LayerNormalization", ["x", g.const(np.ones((h, w)), np.float32)], axis=2, epsilon=eps)
        return finish(g, y)

    def instance_norm(g: Graph) -> str:
        s = g.op("Reshape", ["s", g.const([c])]) if extras else g.const(np.ones(c), np.float32)
        b = g.op("Reshape", ["b", g.const([c])]) if extras else g.const(np.zeros(c), np.float32)
        y = g.op("InstanceNormalization", ["x", s, b], epsilon=eps)
        return g.op("Relu", [y]) if extras else y

    def stats(g: Graph) -> tuple[str, str]:
        """Per (n, c) mean and 1/sqrt(var + eps) from LayerNormalization's extra outputs; across
        channels combined exactly: var = mean(var_c) + mean((mean_c - mean)^2)."""
        rows = g.op("Reshape", ["x", g.const([n * c, h * w])])
        ln_eps = eps if not cross else 0.0
        _, mean, inv = g.op("LayerNormalization", [rows, g.const(np.ones(h * w), np.float32)], outputs=3, axis=1, epsilon=ln_eps)
        mean = g.op("Reshape", [mean, g.const([n, c])])
        inv = g.op("Reshape", [inv, g.const([n, c])])
        if not cross:
            return mean, inv
        var_c = g.op("Reciprocal", [g.op("Mul", [inv, inv])])
        m = g.op("ReduceMean", [mean], axes=[1], keepdims=1)
        dm = g.op("Sub", [mean, m])
        var = g.op(
            "Add",
            [
                g.op("ReduceMean", [var_c], axes=[1], keepdims=1),
                g.op("ReduceMean", [g.op("Mul", [dm, dm])], axes=[1], keepdims=1),
            ],
        )
        inv_n = g.op("Reciprocal", [g.op("Sqrt", [g.op("Add", [var, g.const(eps, np.float32)])])])
        return g.op("Expand", [m, g.const([n, c])]), g.op("Expand", [inv_n, g.const([n, c])])

    def affine(g: Graph) -> tuple[str, str]:
        """y = x * k + q per (n, c), folding the statistics and Scale/Bias."""
        mean, inv = stats(g)
        k = g.op("Mul", [inv, g.op("Reshape", ["s", g.const([1, c])])]) if extras else inv
        q = g.op("Neg", [g.op("Mul", [mean, k])])
        if extras:
            q = g.op("Add", [q, g.op("Reshape", ["b", g.const([1, c])])])
        return k, q

    def per_group(apply: Callable[[Graph, str, str, str], str], relu: bool) -> Callable[[Graph], str]:
        """x as (1, N*C, H, W), one affine (k, q) per (n, c) channel applied by `apply`."""

        def build(g: Graph) -> str:
            k, q = affine(g)
            x4 = g.op("Reshape", ["x", g.const([1, n * c, h, w])])
            y = apply(g, x4, k, q)
            if relu:
                y = g.op("Relu", [y])
            return g.op("Reshape", [y, g.const([n, c, h, w])])

        return build

    def conv(g: Graph, x4: str, k: str, q: str, fused: bool = False) -> str:
        wk = g.op("Reshape", [k, g.const([n * c, 1, 1, 1])])
        bias = g.op("Reshape", [q, g.const([n * c])])
        if fused:
            return g.op("FusedConv", [x4, wk, bias], domain="com.microsoft", group=n * c, activation="Relu")
        return g.op("Conv", [x4, wk, bias], group=n * c)

    def batch_norm(g: Graph, x4: str, k: str, q: str) -> str:
        bn_eps = 2.0**-16  # var + eps is exactly 1: BatchNormalization applies k and q alone
        flat = lambda t: g.op("Reshape", [t, g.const([n * c])])  # noqa: E731
        zeros, ones = g.const(np.zeros(n * c), np.float32), g.const(np.full(n * c, 1 - bn_eps), np.float32)
        return g.op("BatchNormalization", [x4, flat(k), flat(q), zeros, ones], epsilon=bn_eps)

    stats_conv = per_group(conv, extras)
    stats_bn = per_group(batch_norm, extras)
    stats_fused_conv = per_group(lambda g, x4, k, q: conv(g, x4, k, q, fused=True), False)

    group = f"MVN {'cross' if cross else 'per-channel'}{' +scale/bias/relu' if extras else ''}"
    yield Experiment(f"{group}: reduce chain", group, chain, inputs, ref, rtol=5e-5)
    yield Experiment(
        f"{group}: LayerNormalization{' +Mul/Add/Relu' if extras else ''}", group, layer_norm, inputs, ref, rtol=5e-5
    )
    if not cross:
        yield Experiment(
            f"{group}: InstanceNormalization{' +Relu' if extras else ''}", group, instance_norm, inputs, ref, rtol=5e-5
        )
    yield Experiment(
        f"{group}: LN statistics + depthwise Conv{' +Relu' if extras else ''}", group, stats_conv, inputs, ref, rtol=5e-5
    )
    yield Experiment(
        f"{group}: LN statistics + BatchNormalization{' +Relu' if extras else ''}", group, stats_bn, inputs, ref, rtol=5e-5
    )
    if extras:
        yield Experiment(f"{group}: LN statistics + FusedConv(Relu)", group, stats_fused_conv, inputs, ref, rtol=5e-5)


def probe_columns(dtype: Any) -> np.ndarray:
    """(1, 8, 7) columns: all -inf, all NaN, one NaN, -inf and a finite, all +inf, equal 1e30
    (FLOAT16: 4096), equal 3 (the first a maximum)."""
    big = 1e30 if dtype == np.float32 else 4096
    cols = [
        [-np.inf] * 8,
        [np.nan] * 8,
        [1, 2, np.nan, 9, 0, 0, 0, 0],
        [-np.inf, -np.inf, -5, -np.inf, -5, -np.inf, -np.inf, -np.inf],
        [np.inf] * 8,
        [big] * 8,
        [3, 1, 3, 2, 3, 0, 0, 3],
    ]
    return np.array(cols, dtype).T.reshape(1, 8, len(cols))


def semantics(dtype: Any) -> Iterator[tuple[str, Callable[[Graph], str], dict[str, np.ndarray]]]:
    x = probe_columns(dtype)
    rows = np.ascontiguousarray(x[0].T)  # the same columns as rows: ArgMax over the last axis

    def argmax_leading(g: Graph) -> str:
        return g.op("ArgMax", ["x"], axis=1, keepdims=1)

    def argmax_trailing(g: Graph) -> str:
        return g.op("ArgMax", ["x"], axis=1, keepdims=1)

    def pool(g: Graph) -> str:
        v4 = g.op("Reshape", ["x", g.const([1, 1, 8, x.shape[2]])])
        _, idx = g.op("MaxPool", [v4], outputs=2, kernel_shape=[8, 1])
        return idx

    yield "ArgMax over the columns (leading axis)", argmax_leading, {"x": x}
    yield "ArgMax over the rows (last axis)", argmax_trailing, {"x": rows}
    yield "MaxPool indices over the columns (raw, flat)", pool, {"x": x}


# ---------------------------------------------------------------- round 3: chunked stages


def outer_chunk_patterns(x: np.ndarray, tag: str, ties: np.ndarray) -> Iterator[Experiment]:
    """ArgMax over axis 1 of (1, R, W) in chunks along that axis: is an outer-axis reduction over
    a short chunk fast enough for a two-stage ArgMax without a full Transpose?"""
    _, r, w = x.shape

    def chunk_argmax(c: int) -> Callable[[Graph], str]:
        def build(g: Graph) -> str:
            rr, ww = g.inputs["x"].shape[1:]
            v4 = g.op("Reshape", ["x", g.const([1, rr // c, c, ww])])
            return g.op("ArgMax", [v4], axis=2, keepdims=1)

        return build

    def chunk_reduce_max(c: int) -> Callable[[Graph], str]:
        def build(g: Graph) -> str:
            rr, ww = g.inputs["x"].shape[1:]
            v4 = g.op("Reshape", ["x", g.const([1, rr // c, c, ww])])
            return g.op("ReduceMax", [v4], axes=[2], keepdims=1)

        return build

    def two_stage(c: int) -> Callable[[Graph], str]:
        def build(g: Graph) -> str:
            rr, ww = g.inputs["x"].shape[1:]
            k = rr // c
            v4 = g.op("Reshape", ["x", g.const([1, k, c, ww])])
            inner = g.op("ArgMax", [v4], axis=2, keepdims=1)  # [1, k, 1, W]
            best = g.op("GatherElements", [v4, inner], axis=2)  # each chunk's max
            bt = g.op("Reshape", [g.op("Transpose", [best], perm=[0, 2, 3, 1]), g.const([ww, k])])
            chunk = g.op("ArgMax", [bt], axis=1, keepdims=1)  # [W, 1], innermost: no outer-axis quirk
            pos = g.op("Reshape", [g.op("Transpose", [inner], perm=[0, 2, 3, 1]), g.const([ww, k])])
            within = g.op("GatherElements", [pos, chunk], axis=1)
            index = g.op("Add", [g.op("Mul", [chunk, g.const(c)]), within])
            return g.op("Reshape", [index, g.const([1, 1, ww])])

        return build

    def reduce_max_all(g: Graph) -> str:
        return g.op("ReduceMax", ["x"], axes=[1], keepdims=1)

    group = f"R3 ARGMAX {tag}"
    ref = lambda v: first_argmax(v["x"], 1)  # noqa: E731
    for c in (4, 16, 64):
        shaped = lambda v, c=c: first_argmax(v["x"].reshape(1, r // c, c, w), 2)  # noqa: E731
        yield Experiment(f"{group}: ArgMax over chunks of {c} (stage 1 alone)", group, chunk_argmax(c), {"x": x}, shaped)
        vals = lambda v, c=c: v["x"].reshape(1, r // c, c, w).max(axis=2, keepdims=True)  # noqa: E731
        yield Experiment(f"{group}: ReduceMax over chunks of {c} (alone)", group, chunk_reduce_max(c), {"x": x}, vals)
    top = lambda v: v["x"].max(1, keepdims=True)  # noqa: E731
    yield Experiment(f"{group}: ReduceMax over the axis (alone)", group, reduce_max_all, {"x": x}, top)
    for c in (8, 16, 64):
        yield Experiment(f"{group}: two stages, chunks of {c}", group, two_stage(c), {"x": x}, ref, tie_inputs={"x": ties})


def reversed_rows(g: Graph, t: str) -> str:
    """`t` (rows, length) with each row reversed."""
    return g.op("Slice", [t, g.const([-1]), g.const([-(2**63)]), g.const([1]), g.const([-1])])


def decreasing_patterns(x: np.ndarray, ties: np.ndarray) -> Iterator[Experiment]:
    """The last maximum over the rows of (R, L): reversed, or in chunks with only the chosen
    chunk reversed."""

    def ref(v: dict[str, np.ndarray]) -> np.ndarray:
        a = v["x"]
        return (a.shape[1] - 1 - np.argmax(a[:, ::-1], axis=1)).reshape(-1, 1).astype(np.int64)

    def reversed_argmax(g: Graph) -> str:
        nn = g.inputs["x"].shape[1]
        return g.op("Sub", [g.const(nn - 1), g.op("ArgMax", [reversed_rows(g, "x")], axis=1, keepdims=1)])

    def chunked(c: int) -> Callable[[Graph], str]:
        def build(g: Graph) -> str:
            rr, nn = g.inputs["x"].shape
            k = nn // c
            v3 = g.op("Reshape", ["x", g.const([rr, k, c])])
            best = g.op("GatherElements", [v3, g.op("ArgMax", [v3], axis=2, keepdims=1)], axis=2)  # [R, k, 1]
            best = g.op("Reshape", [best, g.const([rr, k])])
            # [R, 1]: the last chunk holding the maximum
            chunk = g.op("Sub", [g.const(k - 1), g.op("ArgMax", [reversed_rows(g, best)], axis=1, keepdims=1)])
            at = g.op("Expand", [g.op("Reshape", [chunk, g.const([rr, 1, 1])]), g.const([rr, 1, c])])
            part = g.op("Reshape", [g.op("GatherElements", [v3, at], axis=1), g.const([rr, c])])
            within = g.op("Sub", [g.const(c - 1), g.op("ArgMax", [reversed_rows(g, part)], axis=1, keepdims=1)])
            return g.op("Add", [g.op("Mul", [chunk, g.const(c)]), within])

        return build

    group = "R3 ARGMAX trailing DECREASING"
    yield Experiment(f"{group}: reversed + ArgMax", group, reversed_argmax, {"x": x}, ref, tie_inputs={"x": ties})
    for c in (64, 128, 512):
        name = f"{group}: chunks of {c}, the chosen chunk reversed"
        yield Experiment(name, group, chunked(c), {"x": x}, ref, tie_inputs={"x": ties})


def few_rows_chain_patterns(x: np.ndarray) -> Iterator[Experiment]:
    """LogSoftmax over a few long rows (R, L): the one-level chain against reductions in two
    levels, over chunks of the row and then over the chunks."""
    rows, n = x.shape

    def ref(v: dict[str, np.ndarray]) -> np.ndarray:
        s = v["x"].astype(np.float64)
        s = s - s.max(axis=1, keepdims=True)
        return (s - np.log(np.exp(s).sum(axis=1, keepdims=True))).astype(np.float32)

    def chain(c: int, argmax_max: bool) -> Callable[[Graph], str]:
        def build(g: Graph) -> str:
            if c == 0:
                top = g.op("ReduceMax", ["x"], axes=[1], keepdims=1)
                d = g.op("Sub", ["x", top])
                total = g.op("ReduceSum", [g.op("Exp", [d]), g.const([1])], keepdims=1)
                return g.op("Sub", [d, g.op("Log", [total])])
            v3 = g.op("Reshape", ["x", g.const([rows, n // c, c])])
            if argmax_max:
                part = g.op("GatherElements", [v3, g.op("ArgMax", [v3], axis=2, keepdims=1)], axis=2)
            else:
                part = g.op("ReduceMax", [v3], axes=[2], keepdims=1)
            top = g.op("ReduceMax", [part], axes=[1], keepdims=1)
            d = g.op("Sub", [v3, top])
            partial = g.op("ReduceSum", [g.op("Exp", [d]), g.const([2])], keepdims=1)
            total = g.op("ReduceSum", [partial, g.const([1])], keepdims=1)
            return g.op("Reshape", [g.op("Sub", [d, g.op("Log", [total])]), g.const([rows, n])])

        return build

    group = f"R3 LOG_SOFTMAX1 {rows} rows of {n}"
    yield Experiment(f"{group}: LogSoftmax", group, lambda g: g.op("LogSoftmax", ["x"], axis=1), {"x": x}, ref, rtol=5e-5)
    yield Experiment(f"{group}: chain, one level", group, chain(0, False), {"x": x}, ref, rtol=5e-5)
    for c in (4096, 65536):
        yield Experiment(f"{group}: chain, chunks of {c}, ReduceMax", group, chain(c, False), {"x": x}, ref, rtol=5e-5)
        yield Experiment(f"{group}: chain, chunks of {c}, ArgMax max", group, chain(c, True), {"x": x}, ref, rtol=5e-5)


def padded_log_softmax_patterns(x: np.ndarray) -> Iterator[Experiment]:
    """Rows of 1024: one -inf column more moves the CUDA EP to its exact block-per-row kernel."""

    def ref(v: dict[str, np.ndarray]) -> np.ndarray:
        s = v["x"].astype(np.float64)
        s = s - s.max(axis=1, keepdims=True)
        return (s - np.log(np.exp(s).sum(axis=1, keepdims=True))).astype(np.float32)

    def padded(g: Graph) -> str:
        n = g.inputs["x"].shape[1]
        p = g.op("Pad", ["x", g.const([0, 0, 0, 1]), g.const(-np.inf, np.float32)])
        y = g.op("LogSoftmax", [p], axis=1)
        return g.op("Slice", [y, g.const([0]), g.const([n]), g.const([1])])

    group = "R3 LOG_SOFTMAX1 rows of 1024"
    yield Experiment(f"{group}: -inf column + LogSoftmax + Slice", group, padded, {"x": x}, ref, rtol=5e-5)


def round3(quick: bool) -> Iterator[Experiment]:
    rng = np.random.default_rng(5)
    r, w = (1024, 4096) if quick else (4096, 16384)
    x = rng.standard_normal((1, r, w)).astype(np.float32)
    yield from outer_chunk_patterns(x, f"leading-{r}x{w}", tie_data((1, 256, 64), np.float32))
    rows = rng.standard_normal((r, w)).astype(np.float32)
    ties = tie_data((1, 1024, 64), np.float32)[0].T.copy()  # rows of 1024 with ties, -inf and NaN columns
    yield from decreasing_patterns(rows, ties)
    for shape in ((4, 2**22), (16, 2**20)) if quick else ((4, 2**24), (16, 2**22), (1, 2**26)):
        yield from few_rows_chain_patterns(rng.standard_normal(shape).astype(np.float32) * 30)
    short = rng.standard_normal((2**10 if quick else 2**16, 1024)).astype(np.float32) * 30 + 5e4
    yield from padded_log_softmax_patterns(short)


# ---------------------------------------------------------------- round 4: one long one-hot row


def one_hot_row_patterns(length: int, rows: int) -> Iterator[Experiment]:
    """Hardmax1 over every axis ends in a one-hot of one index over the whole tensor: OneHot of one
    index with depth `length`, against the same output as `rows` rows with one valid index (the
    others out of range: all off)."""
    rng = np.random.default_rng(11)
    at = int(rng.integers(0, length))
    width = length // rows
    one = {"i": np.array([at], np.int32)}
    spread = np.full((rows, 1), width, np.int32)  # out of range: a row of zeros
    spread[at // width, 0] = at % width
    valid = rng.integers(0, width, size=(rows, 1)).astype(np.int32)
    off_on = np.array([0, 1], np.float32)

    def flat_ref(v: dict[str, np.ndarray]) -> np.ndarray:
        y = np.zeros((1, length), np.float32)
        y[0, at] = 1
        return y

    def rows_ref(v: dict[str, np.ndarray]) -> np.ndarray:
        i = v["i"].reshape(-1)
        y = np.zeros((rows, width), np.float32)
        ok = i < width
        y[np.arange(rows)[ok], i[ok]] = 1
        return y

    def one_hot(depth: int) -> Callable[[Graph], str]:
        return lambda g: g.op("OneHot", ["i", g.const(depth, np.int32), g.const(off_on, np.float32)], axis=1)

    group = f"R4 ONE_HOT one index in {length}"
    yield Experiment(f"{group}: OneHot of one index, depth {length}", group, one_hot(length), one, flat_ref)
    name = f"{group}: OneHot over {rows} rows of {width}, one index valid"
    yield Experiment(name, group, one_hot(width), {"i": spread}, rows_ref)
    name = f"{group}: OneHot over {rows} rows of {width}, every index valid"
    yield Experiment(name, group, one_hot(width), {"i": valid}, rows_ref)


# ---------------------------------------------------------------- round 5: values-only MaxPool chunks, TopK, MVN by IN


def pooled_index(g: Graph, shape: tuple[int, int, int], k: int, last: bool) -> str:
    """The first (last) maximum over axis 1 of x (B, R, W): a values-only MaxPool (cuDNN) over
    chunks of k rows, the first (last) chunk holding the column's maximum by an innermost ArgMax
    over the small transposed chunk maxima, then the first (last) maximum inside that chunk.
    Output (B, 1, W), int64."""
    bb, rr, ww = shape
    n = rr // k
    m = g.op("MaxPool", [g.op("Reshape", ["x", g.const([bb, 1, rr, ww])])], kernel_shape=[k, 1], strides=[k, 1])
    mt = g.op("Reshape", [g.op("Transpose", [g.op("Reshape", [m, g.const([bb, n, ww])])], perm=[0, 2, 1]), g.const([bb * ww, n])])
    if last:
        mt = reversed_rows(g, mt)
    chunk = g.op("ArgMax", [mt], axis=1, keepdims=1)  # [B*W, 1]
    if last:
        chunk = g.op("Sub", [g.const(n - 1), chunk])
    start = g.op("Mul", [g.op("Reshape", [chunk, g.const([bb, 1, ww])]), g.const(k)])
    rows = g.op("Add", [start, g.const(np.arange(k).reshape(1, k, 1))])  # [B, k, W]
    part = g.op("GatherElements", [g.op("Reshape", ["x", g.const([bb, rr, ww])]), rows], axis=1)
    pt = g.op("Reshape", [g.op("Transpose", [part], perm=[0, 2, 1]), g.const([bb * ww, k])])
    if last:
        pt = reversed_rows(g, pt)
    within = g.op("ArgMax", [pt], axis=1, keepdims=1)
    if last:
        within = g.op("Sub", [g.const(k - 1), within])
    return g.op("Reshape", [g.op("Add", [g.op("Mul", [chunk, g.const(k)]), within]), g.const([bb, 1, ww])])


def finite_ties(shape: tuple[int, int, int], dtype: Any) -> np.ndarray:
    """(B, R, W) with many ties and no NaN: one slice over R all -inf, one all equal."""
    rng = np.random.default_rng(7)
    t = np.round(rng.standard_normal(shape) * 2).astype(dtype)
    if shape[2] > 1:
        t[0, :, 0], t[0, :, 1] = -np.inf, 5
    else:
        t[0, :, 0], t[1, :, 0] = -np.inf, 5
    return t


def pooled_patterns(x: np.ndarray, tag: str, ties: np.ndarray, chunks: tuple[int, ...], hardmax: bool) -> Iterator[Experiment]:
    """x (B, R, W) reduced over R."""

    def first(v: dict[str, np.ndarray]) -> np.ndarray:
        return first_argmax(v["x"], 1)

    def last_ref(v: dict[str, np.ndarray]) -> np.ndarray:
        a = v["x"]
        return (a.shape[1] - 1 - np.argmax(a[:, ::-1], axis=1, keepdims=True)).astype(np.int64)

    def pool_alone(k: int) -> Callable[[Graph], str]:
        def build(g: Graph) -> str:
            b2, r2, w2 = g.inputs["x"].shape
            v4 = g.op("Reshape", ["x", g.const([b2, 1, r2, w2])])
            return g.op("MaxPool", [v4], kernel_shape=[k, 1], strides=[k, 1])

        return build

    def index(k: int, last: bool) -> Callable[[Graph], str]:
        return lambda g: pooled_index(g, g.inputs["x"].shape, k, last)

    def hot(k: int) -> Callable[[Graph], str]:
        def build(g: Graph) -> str:
            b2, r2, w2 = g.inputs["x"].shape
            index = g.op("Reshape", [pooled_index(g, (b2, r2, w2), k, False), g.const([b2, w2])])
            i = g.op("Cast", [index], to=TensorProto.INT32)
            return g.op("OneHot", [i, g.const(r2, np.int32), g.const([0, 1], x.dtype)], axis=1)

        return build

    def hot_ref(v: dict[str, np.ndarray]) -> np.ndarray:
        out = np.zeros_like(v["x"])
        np.put_along_axis(out, first_argmax(v["x"], 1), 1, axis=1)
        return out

    group = f"R5 ARGMAX {tag}"
    for k in chunks:
        pooled_ref = lambda v, k=k: v["x"].reshape(v["x"].shape[0], 1, -1, k, v["x"].shape[2]).max(axis=3)  # noqa: E731
        yield Experiment(f"{group}: MaxPool values over chunks of {k} (alone)", group, pool_alone(k), {"x": x}, pooled_ref)
        yield Experiment(f"{group}: pooled chunks of {k}", group, index(k, False), {"x": x}, first, tie_inputs={"x": ties})
        name = f"{group}: pooled chunks of {k}, DECREASING"
        yield Experiment(name, group, index(k, True), {"x": x}, last_ref, tie_inputs={"x": ties})
        if hardmax:
            yield Experiment(f"R5 HARDMAX1 {tag}: pooled chunks of {k} + OneHot", f"R5 HARDMAX1 {tag}", hot(k), {"x": x}, hot_ref)


def topk_patterns(rows: int, length: int) -> Iterator[Experiment]:
    """The first maximum of each row by TopK(k=1) (ties: the lower index first, by the spec), for
    the types the CUDA EP's ArgMax lacks; and INT32 by ReduceMax + Equal + Cast + ArgMax."""
    rng = np.random.default_rng(13)
    for dtype in (np.int32, np.int64, np.float32):
        x = rng.integers(-(2**30), 2**30, size=(rows, length)).astype(dtype)
        ties = rng.integers(0, 3, size=(64, 1000)).astype(dtype)
        if dtype != np.float32:
            ties[5, :] = np.iinfo(dtype).min
            ties[6, 7::9] = np.iinfo(dtype).max
        ref = lambda v: np.argmax(v["x"], axis=1, keepdims=True).astype(np.int64)  # noqa: E731

        def topk(g: Graph) -> str:
            return g.op("TopK", ["x", g.const([1])], outputs=2, axis=1)[1]

        def equal_cast(g: Graph) -> str:
            top = g.op("ReduceMax", ["x"], axes=[1], keepdims=1)
            hit = g.op("Cast", [g.op("Equal", ["x", top])], to=TensorProto.FLOAT)
            return g.op("ArgMax", [hit], axis=1, keepdims=1)

        def via_double(g: Graph) -> str:
            return g.op("ArgMax", [g.op("Cast", ["x"], to=TensorProto.DOUBLE)], axis=1, keepdims=1)

        group = f"R5 ARGMAX trailing {np.dtype(dtype).name}"
        yield Experiment(f"{group}: TopK k=1", group, topk, {"x": x}, ref, tie_inputs={"x": ties})
        if dtype == np.int32:
            yield Experiment(f"{group}: ReduceMax+Equal+Cast+ArgMax", group, equal_cast, {"x": x}, ref, tie_inputs={"x": ties})
            yield Experiment(f"{group}: Cast DOUBLE + ArgMax", group, via_double, {"x": x}, ref, tie_inputs={"x": ties})


def mvn_cross_patterns(x: np.ndarray) -> Iterator[Experiment]:
    """MVN across channels as InstanceNormalization over x viewed (1, N, C*H*W): N channels."""
    n, c, h, w = x.shape
    eps = 1e-5
    rng = np.random.default_rng(3)
    scale = rng.uniform(0.5, 2, (1, c, 1, 1)).astype(np.float32)
    bias = rng.uniform(-1, 1, (1, c, 1, 1)).astype(np.float32)

    def ref(v: dict[str, np.ndarray], extras: bool) -> np.ndarray:
        d = v["x"].astype(np.float64)
        d = d - d.mean(axis=(1, 2, 3), keepdims=True)
        y = d / np.sqrt((d * d).mean(axis=(1, 2, 3), keepdims=True) + eps)
        if extras:
            y = np.maximum(y * v["s"] + v["b"], 0)
        return y.astype(np.float32)

    def normalized(g: Graph) -> str:
        rows = g.op("Reshape", ["x", g.const([1, n, c * h * w])])
        ones, zeros = g.const(np.ones(n), np.float32), g.const(np.zeros(n), np.float32)
        return g.op("InstanceNormalization", [rows, ones, zeros], epsilon=eps)

    def plain(g: Graph) -> str:
        return g.op("Reshape", [normalized(g), g.const([n, c, h, w])])

    def mul_add_relu(g: Graph) -> str:
        y = g.op("Reshape", [normalized(g), g.const([n, c, h, w])])
        return g.op("Relu", [g.op("Add", [g.op("Mul", [y, "s"]), "b"])])

    def bn_relu(g: Graph) -> str:
        bn_eps = 2.0**-16  # var + eps is exactly 1: BatchNormalization applies Scale and Bias alone
        y = g.op("Reshape", [normalized(g), g.const([1, n * c, h, w])])
        tile = lambda t: g.op("Reshape", [g.op("Expand", [t, g.const([n, c, 1, 1])]), g.const([n * c])])  # noqa: E731
        zeros, ones = g.const(np.zeros(n * c), np.float32), g.const(np.full(n * c, 1 - bn_eps), np.float32)
        y = g.op("BatchNormalization", [y, tile("s"), tile("b"), zeros, ones], epsilon=bn_eps)
        return g.op("Reshape", [g.op("Relu", [y]), g.const([n, c, h, w])])

    group = "R5 MVN cross"
    alone, full = (lambda v: ref(v, False)), (lambda v: ref(v, True))
    yield Experiment(f"{group}: InstanceNormalization over (1, N, CHW)", group, plain, {"x": x}, alone, rtol=5e-5)
    inputs = {"x": x, "s": scale, "b": bias}
    group += " +scale/bias/relu"
    yield Experiment(f"{group}: IN over (1, N, CHW) +Mul/Add/Relu", group, mul_add_relu, inputs, full, rtol=5e-5)
    yield Experiment(f"{group}: IN over (1, N, CHW) +BatchNormalization +Relu", group, bn_relu, inputs, full, rtol=5e-5)


def round5(quick: bool) -> Iterator[Experiment]:
    rng = np.random.default_rng(17)
    r, w = (1024, 4096) if quick else (4096, 16384)
    for dtype in (np.float32, np.float16):
        x = rng.standard_normal((1, r, w)).astype(dtype)
        name = np.dtype(dtype).name
        ties = finite_ties((1, 256, 64), dtype)
        yield from pooled_patterns(x, f"leading-{r}x{w}-{name}", ties, (16, 64, 256), dtype == np.float32)
    mid = rng.standard_normal((16, 1024, 256) if quick else (64, 4096, 256)).astype(np.float32)
    yield from pooled_patterns(mid, "middle-" + "x".join(map(str, mid.shape)), finite_ties((4, 256, 64), np.float32), (64,), True)
    rows = rng.standard_normal((r, w, 1)).astype(np.float32)  # trailing: (rows, L, 1)
    yield from pooled_patterns(rows, f"trailing-{r}x{w}", finite_ties((64, 1024, 1), np.float32), (128, 512), False)
    yield from topk_patterns(r, w)
    shape = (16, 64, 64, 64) if quick else (64, 64, 128, 128)
    yield from mvn_cross_patterns(rng.standard_normal(shape).astype(np.float32) + 3)


# ---------------------------------------------------------------- round 6: LogSoftmax on short rows, centred only when needed


def guarded_log_softmax_patterns(rows: int, bound: float) -> Iterator[Experiment]:
    """Rows of 1024: the CUDA EP's warp kernel computes x - (max + log(sum)), off by up to
    ulp(|max| + 7) / 2; with every row's |max| <= `bound` that is within the tolerance, and the
    max need not be subtracted first. An If on that condition (the max found by ArgMax +
    GatherElements, as the centred lowering does anyway) picks the plain kernel or the centred one."""
    rng = np.random.default_rng(19)
    small = rng.standard_normal((rows, 1024)).astype(np.float32) * 3
    large = (rng.standard_normal((rows, 1024)) * 30 + 5e4).astype(np.float32)

    def ref(v: dict[str, np.ndarray]) -> np.ndarray:
        s = v["x"].astype(np.float64)
        s = s - s.max(axis=1, keepdims=True)
        return (s - np.log(np.exp(s).sum(axis=1, keepdims=True))).astype(np.float32)

    def row_max(g: Graph) -> str:
        return g.op("GatherElements", ["x", g.op("ArgMax", ["x"], axis=1, keepdims=1)], axis=1)

    def centred(g: Graph) -> str:
        return g.op("LogSoftmax", [g.op("Sub", ["x", row_max(g)])], axis=1)

    def guarded(g: Graph) -> str:
        top = row_max(g)
        largest = g.op("ReduceMax", [g.op("Abs", [top])], keepdims=0)
        small_enough = g.op("LessOrEqual", [largest, g.const(bound, np.float32)])
        out = helper.make_tensor_value_info
        plain = helper.make_graph(
            [helper.make_node("LogSoftmax", ["x"], ["plain_y"], axis=1)], "plain", [], [out("plain_y", TensorProto.FLOAT, None)]
        )
        shifted = helper.make_graph(
            [
                helper.make_node("Sub", ["x", top], ["shifted_d"]),
                helper.make_node("LogSoftmax", ["shifted_d"], ["shifted_y"], axis=1),
            ],
            "shifted",
            [],
            [out("shifted_y", TensorProto.FLOAT, None)],
        )
        return g.op("If", [small_enough], then_branch=plain, else_branch=shifted)

    for tag, x in (("small max", small), ("max near 5e4", large)):
        group = f"R6 LOG_SOFTMAX1 {rows} rows of 1024, {tag}"
        plain = lambda g: g.op("LogSoftmax", ["x"], axis=1)  # noqa: E731
        yield Experiment(f"{group}: LogSoftmax alone", group, plain, {"x": x}, ref, rtol=5e-5)
        yield Experiment(f"{group}: ArgMax max subtracted + LogSoftmax", group, centred, {"x": x}, ref, rtol=5e-5)
        name = f"{group}: If |max| <= {bound:g}: LogSoftmax alone, else centred"
        yield Experiment(name, group, guarded, {"x": x}, ref, rtol=5e-5)


# ---------------------------------------------------------------- round 7: part 3's data movement


def _in_range(g: Graph, idx: str, size: int) -> str:
    """True when every index is in [-size, size): ONNX's Gather* and Scatter* take them as they are."""
    low = g.op("ReduceMin", [idx], keepdims=0)
    high = g.op("ReduceMax", [idx], keepdims=0)
    dtype = g.inputs[idx].dtype
    return g.op("And", [g.op("GreaterOrEqual", [low, g.const(-size, dtype)]), g.op("Less", [high, g.const(size, dtype)])])


def _guarded(g: Graph, cond: str, node: onnx.NodeProto, out: str) -> str:
    """If(cond) the one native node, else the same node on clamped indices (stands in for the flat
    fallback: only the then branch runs on the timed data)."""
    then = helper.make_graph([node], "then", [], [helper.make_tensor_value_info(out, TensorProto.FLOAT, None)])
    other = onnx.NodeProto()
    other.CopyFrom(node)
    del other.output[:]
    other.output.append(out + "_else")
    other.name = node.name + "_else"
    otherwise = helper.make_graph([other], "else", [], [helper.make_tensor_value_info(out + "_else", TensorProto.FLOAT, None)])
    return g.op("If", [cond], then_branch=then, else_branch=otherwise)


def round7(quick: bool) -> Iterator[Experiment]:
    """Part 3 at 64M FLOAT32 elements (2M with --quick): candidates beside the lowerings the suite
    timed below 70% (50%) of the copy bandwidth: TopK's key types, CumSum as blocked MatMuls,
    Gather*/Scatter* native behind an If on the indices' range, DepthToSpace, Tile, Resize."""
    rng = np.random.default_rng(7)
    n, c, h, w = (2, 32, 128, 256) if quick else (8, 64, 256, 512)
    x = rng.standard_normal((n, c, h, w)).astype(np.float32)
    # TopK: 8 of each row of 512, values checked; tie data holds -inf (the H100 gave -FLT_MAX's index)
    rows = x.reshape(-1, w)
    ties = np.tile(np.array([[3, 3, -np.inf]], np.float32), (4, 1))
    ref_top = lambda v: -np.sort(-v["x"], axis=1)[:, : min(8, v["x"].shape[1])]  # noqa: E731

    def top(key: Callable[[Graph], str], k: int = 8) -> Callable[[Graph], str]:
        def build(g: Graph) -> str:
            kk = g.const([k]) if g.inputs["x"].shape[1] >= k else g.const([g.inputs["x"].shape[1]])
            values = g.op("TopK", [key(g), kk], outputs=2, axis=1, largest=1, sorted=1)[0]
            return g.op("Cast", [values], to=TensorProto.FLOAT)

        return build

    group = f"R7 TOP_K 8 of rows of {w}"
    yield Experiment(f"{group}: TopK FLOAT32", group, top(lambda g: "x"), {"x": rows}, ref_top, tie_inputs={"x": ties})
    as_double = lambda g: g.op("Cast", ["x"], to=TensorProto.DOUBLE)  # noqa: E731
    yield Experiment(f"{group}: TopK DOUBLE", group, top(as_double), {"x": rows}, ref_top, tie_inputs={"x": ties})
    ints = rng.integers(-(2**31), 2**31 - 1, size=rows.shape).astype(np.int32)
    ref_int = lambda v: (-np.sort(-v["x"].astype(np.int64), axis=1)[:, :8]).astype(np.float32)  # noqa: E731

    def unique_int64(g: Graph) -> str:  # key * n + (n - 1 - index): ties by ascending index, one TopK
        wide = g.op("Cast", ["x"], to=TensorProto.INT64)
        back = g.const(np.arange(w - 1, -1, -1).reshape(1, w))
        key = g.op("Add", [g.op("Mul", [wide, g.const(w)]), back])
        values = g.op("TopK", [key, g.const([8])], outputs=2, axis=1, largest=1, sorted=1)[0]
        key = g.op("Sub", [values, g.op("Mod", [values, g.const(w)])])  # floor(values / w) * w: the key
        return g.op("Cast", [g.op("Div", [key, g.const(w)])], to=TensorProto.FLOAT)

    yield Experiment(f"{group}: TopK INT32", group, top(lambda g: "x"), {"x": ints}, ref_int)
    yield Experiment(f"{group}: TopK INT64 (unique keys from INT32)", group, unique_int64, {"x": ints}, ref_int)
    # CumSum along the last axis, and as 32-wide blocks: MatMul by a triangle, block offsets by a smaller one
    ref_cumsum = lambda v: np.cumsum(v["x"].astype(np.float64), axis=3)  # noqa: E731
    yield Experiment(
        "R7 CUMSUM last axis: CumSum", "R7 CUMSUM", lambda g: g.op("CumSum", ["x", g.const(3)]), {"x": x}, ref_cumsum, rtol=1e-4
    )

    def blocked(block: int) -> Callable[[Graph], str]:
        def build(g: Graph) -> str:
            blocks = w // block
            tri = g.const(np.triu(np.ones((block, block))), np.float32)
            strict = g.const(np.triu(np.ones((blocks, blocks)), 1), np.float32)
            y = g.op("MatMul", [g.op("Reshape", ["x", g.const([n, c, h, blocks, block])]), tri])
            totals = g.op("Slice", [y, g.const([block - 1]), g.const([block]), g.const([4])])
            offsets = g.op("MatMul", [g.op("Reshape", [totals, g.const([n, c, h, blocks])]), strict])
            y = g.op("Add", [y, g.op("Unsqueeze", [offsets, g.const([4])])])
            return g.op("Reshape", [y, g.const([n, c, h, w])])

        return build

    for block in (16, 32, 64):
        yield Experiment(
            f"R7 CUMSUM last axis: MatMul blocks of {block}", "R7 CUMSUM", blocked(block), {"x": x}, ref_cumsum, rtol=1e-4
        )
    # Gather along the channels (a permutation), GatherElements and ScatterElements along the last axis
    order = rng.permutation(c).astype(np.int32)
    shuffle = np.tile(np.argsort(rng.random((n * c * h // 8, w)), axis=1).astype(np.int32), (8, 1)).reshape(x.shape)
    gather = {"x": x, "i": order}
    ref_gather = lambda v: np.take(v["x"], v["i"], axis=1)  # noqa: E731
    yield Experiment("R7 GATHER channels: Gather", "R7 GATHER", lambda g: g.op("Gather", ["x", "i"], axis=1), gather, ref_gather)

    def guarded_gather(g: Graph) -> str:
        node = helper.make_node("Gather", ["x", "i"], ["gathered"], name="gather", axis=1)
        return _guarded(g, _in_range(g, "i", c), node, "gathered")

    yield Experiment("R7 GATHER channels: If in range: Gather", "R7 GATHER", guarded_gather, gather, ref_gather)
    elements = {"x": x, "i": shuffle}
    ref_elements = lambda v: np.take_along_axis(v["x"], v["i"].astype(np.int64), axis=3)  # noqa: E731
    plain = lambda g: g.op("GatherElements", ["x", "i"], axis=3)  # noqa: E731
    yield Experiment("R7 GATHER_ELEMENTS last axis: GatherElements", "R7 GATHER_ELEMENTS", plain, elements, ref_elements)

    def guarded_elements(g: Graph) -> str:
        node = helper.make_node("GatherElements", ["x", "i"], ["gathered"], name="gather", axis=3)
        return _guarded(g, _in_range(g, "i", w), node, "gathered")

    yield Experiment("R7 GATHER_ELEMENTS last axis: If in range", "R7 GATHER_ELEMENTS", guarded_elements, elements, ref_elements)
    scatter = {"x": x, "i": shuffle, "u": x[::-1].copy()}

    def ref_scatter(v: dict[str, np.ndarray]) -> np.ndarray:
        out = v["x"].copy()
        np.put_along_axis(out, v["i"].astype(np.int64), v["u"], axis=3)
        return out

    plain_scatter = lambda g: g.op("ScatterElements", ["x", "i", "u"], axis=3)  # noqa: E731
    yield Experiment("R7 SCATTER last axis: ScatterElements", "R7 SCATTER", plain_scatter, scatter, ref_scatter)

    def guarded_scatter(g: Graph) -> str:
        node = helper.make_node("ScatterElements", ["x", "i", "u"], ["scattered"], name="scatter", axis=3)
        return _guarded(g, _in_range(g, "i", w), node, "scattered")

    yield Experiment("R7 SCATTER last axis: If in range", "R7 SCATTER", guarded_scatter, scatter, ref_scatter)
    # DepthToSpace block 2 (CRD: pixel shuffle)
    b = 2

    def ref_d2s(v: dict[str, np.ndarray]) -> np.ndarray:
        t = v["x"].reshape(n, c // 4, b, b, h, w).transpose(0, 1, 4, 2, 5, 3)
        return t.reshape(n, c // 4, h * b, w * b)

    yield Experiment(
        "R7 DEPTH_TO_SPACE CRD: DepthToSpace",
        "R7 D2S",
        lambda g: g.op("DepthToSpace", ["x"], blocksize=b, mode="CRD"),
        {"x": x},
        ref_d2s,
    )

    def d2s_transpose(g: Graph) -> str:
        t = g.op("Transpose", [g.op("Reshape", ["x", g.const([n, c // 4, b, b, h, w])])], perm=[0, 1, 4, 2, 5, 3])
        return g.op("Reshape", [t, g.const([n, c // 4, h * b, w * b])])

    yield Experiment("R7 DEPTH_TO_SPACE CRD: Reshape Transpose Reshape", "R7 D2S", d2s_transpose, {"x": x}, ref_d2s)

    def d2s_merged(g: Graph) -> str:  # n and c/4 merged: a 5-D transpose
        t = g.op("Transpose", [g.op("Reshape", ["x", g.const([n * c // 4, b, b, h, w])])], perm=[0, 3, 1, 4, 2])
        return g.op("Reshape", [t, g.const([n, c // 4, h * b, w * b])])

    yield Experiment("R7 DEPTH_TO_SPACE CRD: merged 5-D Transpose", "R7 D2S", d2s_merged, {"x": x}, ref_d2s)
    # Tile 2x2 of a quarter; nearest and linear 2x upsampling of a quarter
    q = x[:, :, : h // 2, : w // 2].copy()
    ref_tile = lambda v: np.tile(v["x"], (1, 1, 2, 2))  # noqa: E731
    yield Experiment("R7 TILE 2x2: Tile", "R7 TILE", lambda g: g.op("Tile", ["x", g.const([1, 1, 2, 2])]), {"x": q}, ref_tile)

    def tile_concat(g: Graph) -> str:
        wide = g.op("Concat", ["x", "x"], axis=3)
        return g.op("Concat", [wide, wide], axis=2)

    yield Experiment("R7 TILE 2x2: Concat twice", "R7 TILE", tile_concat, {"x": q}, ref_tile)

    def tile_expand(g: Graph) -> str:  # (n, c, 1, h, 1, w) expanded to (n, c, 2, h, 2, w)
        e = g.op("Expand", [g.op("Reshape", ["x", g.const([n, c, 1, h // 2, 1, w // 2])]), g.const([n, c, 2, h // 2, 2, w // 2])])
        return g.op("Reshape", [e, g.const([n, c, h, w])])

    yield Experiment("R7 TILE 2x2: Expand", "R7 TILE", tile_expand, {"x": q}, ref_tile)
    ref_nearest = lambda v: v["x"].repeat(2, axis=2).repeat(2, axis=3)  # noqa: E731
    scales = lambda g: g.const([1, 1, 2, 2], np.float32)  # noqa: E731
    nearest = lambda g: g.op("Resize", ["x", "", scales(g)], mode="nearest")  # noqa: E731
    yield Experiment("R7 RESAMPLE nearest 2x: Resize", "R7 RESAMPLE", nearest, {"x": q}, ref_nearest)

    def nearest_expand(g: Graph) -> str:
        e = g.op("Expand", [g.op("Reshape", ["x", g.const([n, c, h // 2, 1, w // 2, 1])]), g.const([n, c, h // 2, 2, w // 2, 2])])
        return g.op("Reshape", [e, g.const([n, c, h, w])])

    yield Experiment("R7 RESAMPLE nearest 2x: Expand", "R7 RESAMPLE", nearest_expand, {"x": q}, ref_nearest)

    def ref_linear(v: dict[str, np.ndarray]) -> np.ndarray:
        y = v["x"].astype(np.float64)
        for axis in (2, 3):
            p = np.concatenate([np.take(y, [0], axis), y, np.take(y, [-1], axis)], axis)
            m = y.shape[axis]
            a, mid, z = (np.take(p, range(s, s + m), axis) for s in (0, 1, 2))
            even, odd = 0.25 * a + 0.75 * mid, 0.75 * mid + 0.25 * z
            y = np.stack([even, odd], axis + 1).reshape(*y.shape[:axis], 2 * m, *y.shape[axis + 1 :])
        return y

    linear = lambda g: g.op("Resize", ["x", "", scales(g)], mode="linear")  # noqa: E731
    yield Experiment("R7 RESAMPLE linear 2x: Resize", "R7 RESAMPLE", linear, {"x": q}, ref_linear, rtol=1e-5)

    def linear_split(g: Graph) -> str:
        wide = g.op("Resize", ["x", "", g.const([1, 1, 1, 2], np.float32)], mode="linear")
        return g.op("Resize", [wide, "", g.const([1, 1, 2, 1], np.float32)], mode="linear")

    yield Experiment("R7 RESAMPLE linear 2x: Resize W then H", "R7 RESAMPLE", linear_split, {"x": q}, ref_linear, rtol=1e-5)

    def linear_formula(g: Graph) -> str:  # 0.25/0.75 of neighbours, edge-padded, interleaved; W then H
        y, shape = "x", [n, c, h // 2, w // 2]
        for axis in (3, 2):
            m = shape[axis]
            pads = [0] * 8
            pads[axis], pads[axis + 4] = 1, 1
            p = g.op("Pad", [y, g.const(pads)], mode="edge")
            part = lambda s, p=p, m=m, axis=axis: g.op("Slice", [p, g.const([s]), g.const([s + m]), g.const([axis])])  # noqa: E731
            a, mid, z = part(0), part(1), part(2)
            quarter, three = g.const(0.25, np.float32), g.const(0.75, np.float32)
            body = g.op("Mul", [mid, three])
            even = g.op("Add", [g.op("Mul", [a, quarter]), body])
            odd = g.op("Add", [body, g.op("Mul", [z, quarter])])
            pair = g.op(
                "Concat",
                [g.op("Unsqueeze", [even, g.const([axis + 1])]), g.op("Unsqueeze", [odd, g.const([axis + 1])])],
                axis=axis + 1,
            )
            shape = [*shape[:axis], 2 * m, *shape[axis + 1 :]]
            y = g.op("Reshape", [pair, g.const(shape)])
        return y

    yield Experiment("R7 RESAMPLE linear 2x: formula", "R7 RESAMPLE", linear_formula, {"x": q}, ref_linear, rtol=1e-5)


def round8(quick: bool) -> Iterator[Experiment]:
    """What the part 3 candidates still lose to ORT's plumbing (64M FLOAT32, 2M with --quick): a
    Reshape that produces the graph output (a copy?), an If's output (a copy?), GATHER by rows with
    out-of-range rows fixed by NonZero + ScatterND (no If), the guards' reductions on 64M INT32
    indices, TopK by K ArgMax passes, the CumSum guard's reductions."""
    rng = np.random.default_rng(8)
    n, c, h, w = (2, 32, 128, 256) if quick else (8, 64, 256, 512)
    x = rng.standard_normal((n, c, h, w)).astype(np.float32)
    order = rng.permutation(c).astype(np.int32)
    gather = {"x": x, "i": order}
    ref_gather = lambda v: np.take(v["x"], v["i"], axis=1)  # noqa: E731
    g_node = lambda g: g.op("Gather", ["x", "i"], axis=1)  # noqa: E731
    yield Experiment("R8 GATHER: Gather", "R8 GATHER", g_node, gather, ref_gather)
    same = lambda g: g.op("Reshape", [g_node(g), g.const([n, c, h, w])])  # noqa: E731
    yield Experiment("R8 GATHER: Gather, Reshape to the same shape", "R8 GATHER", same, gather, ref_gather)
    flat = lambda g: g.op("Reshape", [g_node(g), g.const([n * c, h, w])])  # noqa: E731
    yield Experiment("R8 GATHER: Gather, Reshape to 3-D", "R8 GATHER", flat, gather, ref_gather)

    def if_gather(reshaped: bool) -> Callable[[Graph], str]:
        def build(g: Graph) -> str:
            nodes = [helper.make_node("Gather", ["x", "i"], ["gathered"], name="gather", axis=1)]
            out = "gathered"
            if reshaped:
                g.inits.append(numpy_helper.from_array(np.array([n, c, h, w], np.int64), "same_shape"))
                nodes.append(helper.make_node("Reshape", ["gathered", "same_shape"], ["reshaped"], name="reshape"))
                out = "reshaped"
            then = helper.make_graph(nodes, "then", [], [helper.make_tensor_value_info(out, TensorProto.FLOAT, None)])
            other = helper.make_graph(
                [helper.make_node("Identity", ["x"], ["other"], name="other")],
                "else",
                [],
                [helper.make_tensor_value_info("other", TensorProto.FLOAT, None)],
            )
            return g.op("If", [_in_range(g, "i", c)], then_branch=then, else_branch=other)

        return build

    yield Experiment("R8 GATHER: If in range: Gather", "R8 GATHER", if_gather(False), gather, ref_gather)
    yield Experiment("R8 GATHER: If in range: Gather, Reshape", "R8 GATHER", if_gather(True), gather, ref_gather)

    def rows(g: Graph) -> str:  # rows o*c + i of x as [n*c, h, w]; rows outside: the last element
        r = g.op("Add", [g.const(np.arange(n).reshape(n, 1) * c), g.op("Cast", ["i"], to=TensorProto.INT64)])
        outside = g.op("Or", [g.op("Less", [r, g.const(0)]), g.op("GreaterOrEqual", [r, g.const(n * c)])])
        r = g.op("Where", [outside, g.const(0), r])
        y = g.op("Gather", [g.op("Reshape", ["x", g.const([n * c, h, w])]), r], axis=0)
        where = g.op("Transpose", [g.op("NonZero", [outside])], perm=[1, 0])
        last = g.op("Slice", [g.op("Reshape", ["x", g.const([-1])]), g.const([-1]), g.const([n * c * h * w])])
        count = g.op("Slice", [g.op("Shape", [where]), g.const([0]), g.const([1])])
        fill = g.op("Expand", [last, g.op("Concat", [count, g.const([h, w])], axis=0)])
        return g.op("ScatterND", [y, where, fill])

    yield Experiment("R8 GATHER: rows, NonZero + ScatterND for rows outside", "R8 GATHER", rows, gather, ref_gather)
    # The guards' reductions over 64M INT32 indices (the output: one BOOL, as FLOAT32)
    idx = np.tile(np.argsort(rng.random((n * c * h // 8, w)), axis=1).astype(np.int32), (8, 1)).reshape(x.shape)
    guard_in = {"i": idx}
    ref_true = lambda v: np.array(1.0, np.float32)  # noqa: E731
    below = lambda g, m: g.op("Cast", [g.op("Less", [m, g.const(w, np.float32)])], to=TensorProto.FLOAT)  # noqa: E731
    as_f = lambda g: g.op("Cast", ["i"], to=TensorProto.FLOAT)  # noqa: E731
    yield Experiment(
        "R8 GUARD: Cast, ReduceMax", "R8 GUARD", lambda g: below(g, g.op("ReduceMax", [as_f(g)], keepdims=0)), guard_in, ref_true
    )

    def int_max(g: Graph) -> str:
        m = g.op("ReduceMax", ["i"], keepdims=0)
        return g.op("Cast", [g.op("Less", [m, g.const(w, np.int32)])], to=TensorProto.FLOAT)

    yield Experiment("R8 GUARD: ReduceMax INT32", "R8 GUARD", int_max, guard_in, ref_true)

    def staged17(g: Graph) -> str:
        m = g.op("ReduceMax", [as_f(g)], axes=[3], keepdims=1)
        return below(g, g.op("ReduceMax", [m], keepdims=0))

    yield Experiment("R8 GUARD: Cast, ReduceMax last axis, ReduceMax", "R8 GUARD", staged17, guard_in, ref_true)

    def wide_rows(g: Graph) -> str:
        m = g.op("ReduceMax", [g.op("Reshape", [as_f(g), g.const([-1, 65536])])], axes=[1], keepdims=0)
        return below(g, g.op("ReduceMax", [m], keepdims=0))

    yield Experiment("R8 GUARD: Cast, ReduceMax rows of 65536, ReduceMax", "R8 GUARD", wide_rows, guard_in, ref_true)

    def topk_one(g: Graph) -> str:
        v = g.op("TopK", [g.op("Reshape", ["i", g.const([1, -1])]), g.const([1])], outputs=2, axis=1)[0]
        return g.op("Cast", [g.op("Less", [g.op("Reshape", [v, g.const([])]), g.const(w, np.int32)])], to=TensorProto.FLOAT)

    yield Experiment("R8 GUARD: TopK 1 of INT32", "R8 GUARD", topk_one, guard_in, ref_true)
    # The CumSum guard: sum of |x| over the whole tensor
    small = lambda v: np.array(1.0, np.float32)  # noqa: E731
    finite = lambda g, s: g.op("Cast", [g.op("Less", [s, g.const(3e38, np.float32)])], to=TensorProto.FLOAT)  # noqa: E731
    yield Experiment(
        "R8 SUM|x|: ReduceL1", "R8 SUM|x|", lambda g: finite(g, g.op("ReduceL1", ["x"], keepdims=0)), {"x": x}, small
    )

    def l1_staged(g: Graph) -> str:
        s = g.op("ReduceL1", ["x"], axes=[3], keepdims=0)
        return finite(g, g.op("ReduceSum", [s], keepdims=0))

    yield Experiment("R8 SUM|x|: ReduceL1 last axis, ReduceSum", "R8 SUM|x|", l1_staged, {"x": x}, small)

    def max_abs(g: Graph) -> str:
        return finite(g, g.op("ReduceMax", [g.op("Abs", ["x"])], keepdims=0))

    yield Experiment("R8 SUM|x|: ReduceMax of Abs", "R8 SUM|x|", max_abs, {"x": x}, small)

    def max_min(g: Graph) -> str:
        hi = g.op("ReduceMax", ["x"], keepdims=0)
        lo = g.op("ReduceMin", ["x"], keepdims=0)
        return finite(g, g.op("Max", [hi, g.op("Neg", [lo])]))

    yield Experiment("R8 SUM|x|: ReduceMax, ReduceMin", "R8 SUM|x|", max_min, {"x": x}, small)
    # TopK 8 of rows of 512 by 8 ArgMax passes, each picked element replaced by -inf
    rows8 = x.reshape(-1, w)
    ref_top = lambda v: -np.sort(-v["x"], axis=1)[:, :8]  # noqa: E731

    def selection(key_type: int) -> Callable[[Graph], str]:
        def build(g: Graph) -> str:
            keys = "x" if key_type == TensorProto.FLOAT else g.op("Cast", ["x"], to=key_type)
            dtype = np.float32 if key_type == TensorProto.FLOAT else np.float64
            mark = g.const(np.full((rows8.shape[0], 1), -np.inf, dtype), dtype)
            picked = []
            for _ in range(8):
                a = g.op("ArgMax", [keys], axis=1, keepdims=1)
                picked.append(a)
                keys = g.op("ScatterElements", [keys, a, mark], axis=1)
            return g.op("GatherElements", ["x", g.op("Concat", picked, axis=1)], axis=1)

        return build

    yield Experiment("R8 TOP_K 8 of 512: 8 ArgMax FLOAT32", "R8 TOP_K", selection(TensorProto.FLOAT), {"x": rows8}, ref_top)
    yield Experiment("R8 TOP_K 8 of 512: 8 ArgMax DOUBLE", "R8 TOP_K", selection(TensorProto.DOUBLE), {"x": rows8}, ref_top)
    top = lambda g: g.op("TopK", ["x", g.const([8])], outputs=2, axis=1, largest=1, sorted=1)[0]  # noqa: E731
    yield Experiment("R8 TOP_K 8 of 512: TopK", "R8 TOP_K", top, {"x": rows8}, ref_top)
    # DepthToSpace with a Reshape to the same shape after it
    b = 2

    def ref_d2s(v: dict[str, np.ndarray]) -> np.ndarray:
        t = v["x"].reshape(n, c // 4, b, b, h, w).transpose(0, 1, 4, 2, 5, 3)
        return t.reshape(n, c // 4, h * b, w * b)

    d2s = lambda g: g.op("DepthToSpace", ["x"], blocksize=b, mode="CRD")  # noqa: E731
    yield Experiment("R8 D2S: DepthToSpace", "R8 D2S", d2s, {"x": x}, ref_d2s)
    d2s_same = lambda g: g.op("Reshape", [d2s(g), g.const([n, c // 4, h * b, w * b])])  # noqa: E731
    yield Experiment("R8 D2S: DepthToSpace, Reshape to the same shape", "R8 D2S", d2s_same, {"x": x}, ref_d2s)


def round9(quick: bool) -> Iterator[Experiment]:
    """Issue 35's operator tail (tools/tail_report.py): other exact ONNX forms of the slowest cases.
    LP_NORMALIZATION's channel sum of squares by ReduceSumSquare (the lowering), by Mul + MatMul with a
    row of ones, by Mul + a 1x1 Conv of ones; HARD_SWISH as HardSigmoid + Mul (the lowering) or ONNX
    HardSwish; INT32 ArgMax through DOUBLE (the lowering) or as ReduceMax, Equal, Cast to FLOAT16, ArgMax."""
    rng = np.random.default_rng(9)
    n, c, hw = (4, 256, 28) if quick else (32, 256, 56)
    x = rng.standard_normal((n, c, hw, hw)).astype(np.float32)
    eps = np.float32(1e-5)
    ref_lp = lambda v: v["x"] / np.sqrt((v["x"].astype(np.float64) ** 2).sum(1, keepdims=True) + eps)  # noqa: E731

    def normalized(g: Graph, squares: str) -> str:
        return g.op("Div", ["x", g.op("Sqrt", [g.op("Add", [squares, g.const(eps, np.float32)])])])

    def by_reduce(g: Graph) -> str:
        return normalized(g, g.op("ReduceSumSquare", ["x"], axes=[1], keepdims=1))

    def by_matmul(g: Graph) -> str:
        sq = g.op("Reshape", [g.op("Mul", ["x", "x"]), g.const([n, c, hw * hw])])
        summed = g.op("MatMul", [g.const(np.ones((1, c)), np.float32), sq])
        return normalized(g, g.op("Reshape", [summed, g.const([n, 1, hw, hw])]))

    def by_conv(g: Graph) -> str:
        return normalized(g, g.op("Conv", [g.op("Mul", ["x", "x"]), g.const(np.ones((1, c, 1, 1)), np.float32)]))

    for label, build in (("ReduceSumSquare", by_reduce), ("Mul, MatMul of ones", by_matmul), ("Mul, 1x1 Conv of ones", by_conv)):
        yield Experiment(f"R9 LP_NORMALIZATION: {label}", "R9 LP_NORMALIZATION", build, {"x": x}, ref_lp, rtol=1e-5)
    r, w = (1024, 4096) if quick else (4096, 16384)
    h = (rng.standard_normal((r, w)) * 4).astype(np.float32)
    ref_hs = lambda v: v["x"] * np.clip(v["x"] * np.float32(1 / 6) + np.float32(0.5), 0, 1)  # noqa: E731
    yield Experiment(
        "R9 HARD_SWISH: HardSigmoid, Mul",
        "R9 HARD_SWISH",
        lambda g: g.op("Mul", ["x", g.op("HardSigmoid", ["x"], alpha=1 / 6, beta=0.5)]),
        {"x": h},
        ref_hs,
        rtol=1e-6,
    )
    yield Experiment("R9 HARD_SWISH: HardSwish", "R9 HARD_SWISH", lambda g: g.op("HardSwish", ["x"]), {"x": h}, ref_hs, rtol=1e-6)
    ints = rng.integers(-(2**31), 2**31 - 1, (r, w), dtype=np.int64).astype(np.int32)
    ref_am = lambda v: first_argmax(v["x"], 1)  # noqa: E731
    yield Experiment(
        "R9 ARGMAX INT32: Cast to DOUBLE, ArgMax",
        "R9 ARGMAX INT32",
        lambda g: g.op("ArgMax", [g.op("Cast", ["x"], to=TensorProto.DOUBLE)], axis=1, keepdims=0),
        {"x": ints},
        ref_am,
    )

    def by_equality(g: Graph) -> str:
        top = g.op("ReduceMax", ["x"], axes=[1], keepdims=1)
        hit = g.op("Cast", [g.op("Equal", ["x", top])], to=TensorProto.FLOAT16)
        return g.op("ArgMax", [hit], axis=1, keepdims=0)

    yield Experiment(
        "R9 ARGMAX INT32: ReduceMax, Equal, Cast to FLOAT16, ArgMax", "R9 ARGMAX INT32", by_equality, {"x": ints}, ref_am
    )


def experiments(quick: bool) -> Iterator[Experiment]:
    rng = np.random.default_rng(0)
    r, w = (1024, 4096) if quick else (4096, 16384)
    for dtype in (np.float32, np.float16):
        x = rng.standard_normal((1, r, w)).astype(dtype)
        tag = f"leading-{r}x{w}-{np.dtype(dtype).name}"
        yield from argmax_patterns(x, tag, tie_data((1, 256, 64), dtype))
        if dtype == np.float32:
            yield from hardmax_patterns(x, tag)
    mid = rng.standard_normal((16, 1024, 256) if quick else (64, 4096, 256)).astype(np.float32)
    yield from argmax_patterns(mid, "middle-" + "x".join(map(str, mid.shape)), tie_data((4, 256, 64), np.float32))
    yield from log_softmax_patterns(rng.standard_normal((r, w)).astype(np.float32))
    yield from log_softmax_leading_patterns(rng.standard_normal((r, w)).astype(np.float32))
    for depth in (16, 256, 4096):
        for axis in (1, 0):
            yield from one_hot_patterns(depth, axis)
    shape = (16, 64, 64, 64) if quick else (64, 64, 128, 128)
    xm = rng.standard_normal(shape).astype(np.float32) + 3
    for cross in (False, True):
        for extras in (False, True):
            yield from mvn_patterns(xm, cross, extras)
    yield from round3(quick)
    yield from one_hot_row_patterns(2**22 if quick else 2**26, 1024 if quick else 4096)
    yield from round5(quick)
    yield from guarded_log_softmax_patterns(2**10 if quick else 2**16, 64.0)
    yield from round7(quick)
    yield from round8(quick)
    yield from round9(quick)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--only", default="")
    parser.add_argument("-i", "--iterations", type=int, default=20)
    parser.add_argument("--cpu", action="store_true", help="try the patterns on the CPU EP (no timing value)")
    parser.add_argument("--kernels", action="store_true", help="record each pattern's CUDA kernels (needs PyTorch)")
    args = parser.parse_args()
    if args.cpu:
        global PROVIDER, DEVICE
        PROVIDER, DEVICE = ["CPUExecutionProvider"], "cpu"
    rows = []
    for dtype in (np.float32, np.float16):
        for label, build, feeds in semantics(dtype):
            try:
                g = Graph(feeds)
                got = session(g.model(build(g)), {}).run(None, feeds)[0].ravel().tolist()
            except Exception as ex:
                got = str(ex).strip().splitlines()[0][:200]
            rows.append({"name": f"semantics {np.dtype(dtype).name}: {label}", "got": got})
            want = np.argmax(probe_columns(dtype), axis=1).ravel().tolist()
            print(f"semantics {np.dtype(dtype).name}: {label}: {got} (np: {want})", file=sys.stderr)
    for e in experiments(args.quick):
        if not any(part in e.name for part in args.only.split("|")):
            continue
        row: dict[str, Any] = {"name": e.name, "group": e.group}
        nbytes = sum(a.nbytes for a in e.inputs.values())
        try:
            g = Graph(e.inputs)
            model = g.model(e.build(g))
            sess = session(model, e.config)
            median, minimum, out, run = time_model(sess, e.inputs, args.iterations)
            nbytes += out.nbytes
            ok, err = check(out, e.reference(e.inputs), e.rtol)
            row |= {"median_ms": median, "min_ms": minimum, "gb_per_s": nbytes / median / 1e6, "correct": ok, "error": err}
            if args.kernels:
                from kernels import breakdown

                row["kernels"] = breakdown(run)
            if e.tie_inputs is not None:
                tg = Graph(e.tie_inputs)
                tsess = session(tg.model(e.build(tg)), e.config)
                got = tsess.run(None, e.tie_inputs)[0]
                want = e.reference(e.tie_inputs)
                row["ties_correct"], row["ties_error"] = check(got, want, e.rtol)
                if not row["ties_correct"]:
                    row["ties_first_diffs"] = (
                        [(int(a), int(b)) for a, b in zip(got.reshape(want.shape).ravel(), want.ravel(), strict=True) if a != b][
                            :6
                        ]
                        if want.dtype.kind == "i"
                        else None
                    )
            del sess
        except Exception as ex:  # recorded: the EP refused or failed this pattern
            row["failed"] = str(ex).strip().splitlines()[0][:300]
        rows.append(row)
        brief = f"{row['gb_per_s']:.0f} GB/s correct={row['correct']}" if "gb_per_s" in row else f"FAILED {row['failed']}"
        ties = f" ties={row['ties_correct']}" if "ties_correct" in row else ""
        print(f"{e.name}: {brief}{ties}", file=sys.stderr, flush=True)
    import onnxruntime

    json.dump({"onnxruntime": onnxruntime.__version__, "results": rows}, sys.stdout, indent=1)


if __name__ == "__main__":
    main()
