"""The `cuda` target's whole-model fusions: node pairs and chains of a lowered network that ONNX
Runtime's CUDA EP runs as one kernel of its com.microsoft domain, with the same values, where its
own graph optimizers do not fuse them (a node is a kernel launch, and on a network at batch 1 the
launches cost as much as the arithmetic):

- a FLOAT16 GELU (activations.py: Cast to FLOAT32, Div by sqrt(2), Erf, Add 1, Mul by 0.5 x, Cast
  back) as one FLOAT16 Gelu: the CUDA EP computes it in FLOAT32 and rounds once, every finite
  FLOAT16 input giving what those steps give as ONNX Runtime runs them by default (its optimizer
  fuses them into one FLOAT32 Gelu; 369 of the 63488 differ from the steps run one by one). The CPU
  EP's FLOAT16 Gelu is another kernel: 1969 differ there, by up to 2**-9 of the value in its
  negative tail (ONNX Runtime 1.31.1);
- Cast(FLOAT16 -> FLOAT32) of both inputs -> MatMul -> Mul by a constant Alpha -> Cast back
  (DirectML's FLOAT16 GEMM with Alpha, which scales the FLOAT32 sum before the one rounding: gemm.py)
  as FusedMatMul in FLOAT16 with that alpha: cuBLAS accumulates FLOAT16 in FLOAT32 and applies
  alpha before rounding too (only the order of the sums may differ, as in any FLOAT16 GEMM there),
  with alpha rounded to FLOAT16 first (ONNX Runtime passes it as the half type), so only an Alpha
  that FLOAT16 holds exactly (1/sqrt(64) = 0.125 ...) is fused.

- Add of two values of one shape (2-D or 3-D) read only by a LayerNormalization over the last axis
  as one SkipLayerNormalization: ONNX Runtime fuses the pair so itself where the values are 3-D,
  and this is its kernel; after graph/leading_ones.py a transformer's hidden states are 2-D, where
  its optimizer leaves them (the kernel takes both).

Each is checked on the GPU by tools/gpu_probes.py (benchmarks/results/). Not fused: Conv -> Relu as
FusedConv (cuDNN's activation gives 0 for NaN where Relu keeps it, and a captured SqueezeNet of 26
of them ran 0.57x its original on an H200, against 0.93x unfused)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from dml2onnx.graph import views

MS_DOMAIN = "com.microsoft"


def fuse(model: onnx.ModelProto) -> onnx.ModelProto:
    """The model with the fusions above; com.microsoft imported where any applied. The model must
    carry its value types (onnx.shape_inference.infer_shapes); it is changed in place."""
    g = model.graph
    fused = _each_cast_to_half(g, _half_gelu) + _each_cast_to_half(g, _half_matmul_alpha) + _skip_layer_norms(g)
    if fused:
        views.drop_unread_constants(g)
        if not any(o.domain == MS_DOMAIN for o in model.opset_import):
            model.opset_import.append(helper.make_opsetid(MS_DOMAIN, 1))
    return model


class _Graph:
    """Who makes and who reads each value, for matching chains of single-use values."""

    def __init__(self, g: onnx.GraphProto) -> None:
        self.types = {vi.name: vi.type.tensor_type.elem_type for vi in (*g.input, *g.value_info, *g.output)}
        self.consts = {t.name: t for t in g.initializer}
        self.outputs = {o.name for o in g.output}
        self.made_by = {o: n for n in g.node for o in n.output}
        self.reads = views.value_uses(g)  # a subgraph's or graph output's read counts: never fused away

    def only_read_by_one(self, v: str) -> bool:
        return self.reads.get(v, 0) == 1 and v not in self.outputs

    def producer(self, v: str, op: str) -> onnx.NodeProto | None:
        n = self.made_by.get(v)
        return n if n is not None and n.op_type == op and not n.domain and self.only_read_by_one(v) else None


def _replace(g: onnx.GraphProto, gone: list[onnx.NodeProto], new: dict[int, onnx.NodeProto]) -> None:
    """The graph without the nodes `gone` (by identity) and with new[id(node)] in place of a node."""
    views.splice(g, {id(n) for n in gone}, {k: [n] for k, n in new.items()})


# A rewrite of the chain that ends in one Cast to FLOAT16: the nodes it drops, and the nodes that
# take the places of others (by the replaced node's identity)
Rewrite = tuple[list[onnx.NodeProto], dict[int, onnx.NodeProto]]


def _each_cast_to_half(g: onnx.GraphProto, match: Callable[[_Graph, onnx.NodeProto], Rewrite | None]) -> int:
    """Every Cast to FLOAT16 whose chain `match` rewrites, rewritten. How many."""
    s = _Graph(g)
    gone: list[onnx.NodeProto] = []
    new: dict[int, onnx.NodeProto] = {}
    count = 0
    for back in g.node:
        if back.op_type == "Cast" and not back.domain and _cast_to(back) == TensorProto.FLOAT16:
            found = match(s, back)
            if found is not None:
                gone += found[0]
                new.update(found[1])
                count += 1
    _replace(g, gone, new)
    return count


def _half_gelu(s: _Graph, back: onnx.NodeProto) -> Rewrite | None:
    """Cast(FLOAT16 -> FLOAT32) -> x / sqrt(2), Erf, + 1, 0.5 * x, product -> [Reshape ->] Cast back
    (activations.py's GELU of a FLOAT16 value) as one FLOAT16 Gelu (then the Reshape)."""
    view = s.producer(back.input[0], "Reshape")
    product = s.producer(view.input[0] if view is not None else back.input[0], "Mul")
    chain = _gelu_chain(s, product) if product is not None else None
    if chain is None:
        return None
    gelu = helper.make_node(
        "Gelu",
        [chain[0].input[0]],
        [f"{back.output[0]} (Gelu)" if view is not None else back.output[0]],
        name=f"{back.name} (Gelu)",
        domain=MS_DOMAIN,
        doc_string="0.5 * x * (1 + erf(x / sqrt(2))) in FLOAT32, rounded to FLOAT16",
    )
    if view is None:
        return chain, {id(back): gelu}
    moved = onnx.NodeProto()  # the view after the Gelu, to the Cast's result
    moved.CopyFrom(view)
    moved.input[0], moved.output[0] = gelu.output[0], back.output[0]
    return chain, {id(view): gelu, id(back): moved}


def _gelu_chain(s: _Graph, product: onnx.NodeProto) -> list[onnx.NodeProto] | None:
    """[Cast up, Div, Erf, Add, Mul(0.5), Mul] of a FLOAT16 GELU computed in FLOAT32, or None."""
    parts = [s.made_by.get(v) for v in product.input]
    half = next((n for n in parts if n is not None and n.op_type == "Mul"), None)
    plus = next((n for n in parts if n is not None and n.op_type == "Add"), None)
    if half is None or plus is None or s.types.get(product.output[0]) != TensorProto.FLOAT:
        return None
    erf = s.producer(plus.input[0], "Erf")
    div = s.producer(erf.input[0], "Div") if erf is not None else None
    up = s.made_by.get(div.input[0]) if div is not None else None
    if up is None or up.op_type != "Cast" or up.domain or s.types.get(up.input[0]) != TensorProto.FLOAT16:
        return None
    xf = up.output[0]
    exact = (
        _scalar(s, plus.input[1]) == 1.0
        and _scalar(s, div.input[1]) == float(np.float32(np.sqrt(2)))
        and list(half.input) == [xf, half.input[1]]
        and _scalar(s, half.input[1]) == 0.5
        and s.reads.get(xf) == 2
        and xf not in s.outputs
        and all(s.only_read_by_one(n.output[0]) for n in (half, plus))
    )
    return [up, div, erf, plus, half, product] if exact else None


def _half_matmul_alpha(s: _Graph, back: onnx.NodeProto) -> Rewrite | None:
    """Cast(FLOAT16 -> FLOAT32) x 2 -> MatMul -> Mul(Alpha) -> Cast(-> FLOAT16) as one FLOAT16
    FusedMatMul with that alpha, where FLOAT16 holds Alpha exactly."""
    mul = s.producer(back.input[0], "Mul")
    if mul is None or s.types.get(mul.output[0]) != TensorProto.FLOAT:
        return None
    alpha = _scalar(s, mul.input[1])
    matmul = s.producer(mul.input[0], "MatMul")
    if alpha is None or matmul is None or alpha == 0 or float(np.float16(alpha)) != alpha:
        return None
    ups = [s.producer(v, "Cast") for v in matmul.input]
    if any(u is None or s.types.get(u.input[0]) != TensorProto.FLOAT16 for u in ups) or ups[0] is ups[1]:
        return None
    fused = helper.make_node(
        "FusedMatMul",
        [u.input[0] for u in ups if u is not None],
        list(back.output),
        name=f"{matmul.name} * alpha",
        domain=MS_DOMAIN,
        doc_string=f"{alpha} * A x B summed in FLOAT32, rounded once to FLOAT16",
        alpha=alpha,
    )
    return [mul, matmul, *[u for u in ups if u is not None]], {id(back): fused}


def _cast_to(n: onnx.NodeProto) -> int:
    return next((a.i for a in n.attribute if a.name == "to"), 0)


def _scalar(s: _Graph, v: str) -> float | None:
    """The value of a one-element FLOAT32 constant."""
    t = s.consts.get(v)
    if t is None or t.data_type != TensorProto.FLOAT:
        return None
    a = numpy_helper.to_array(t)
    return float(a.reshape(())) if a.size == 1 else None


def _skip_layer_norms(g: onnx.GraphProto) -> int:
    """Every Add -> LayerNormalization pair above as one SkipLayerNormalization. How many."""
    s = _Graph(g)
    shapes = views.static_shapes(g)  # a constant's too
    gone: list[onnx.NodeProto] = []
    new: dict[int, onnx.NodeProto] = {}
    for norm in g.node:
        if norm.op_type != "LayerNormalization" or norm.domain or len(norm.input) != 3 or len(norm.output) != 1:
            continue
        add = s.producer(norm.input[0], "Add")
        rank = len(shapes.get(norm.input[0], ()))
        axis = next((attr.i for attr in norm.attribute if attr.name == "axis"), -1)
        if add is None or rank not in (2, 3) or axis not in (-1, rank - 1) or s.types.get(norm.input[0]) not in _NORM_TYPES:
            continue
        a, b = add.input
        summed = shapes[norm.input[0]]
        width = summed[-1:]
        if a in s.consts or b in s.consts or shapes.get(a) != summed or shapes.get(b) != summed:
            continue
        if any(shapes.get(v) != width for v in norm.input[1:]):
            continue
        epsilon = next((attr.f for attr in norm.attribute if attr.name == "epsilon"), 1e-5)
        fused = helper.make_node(
            "SkipLayerNormalization",
            [a, b, norm.input[1], norm.input[2]],
            list(norm.output),
            name=f"{norm.name} (with the Add before it)",
            domain=MS_DOMAIN,
            doc_string="layer normalization of input + skip over the last axis",
            epsilon=epsilon,
        )
        gone.append(add)
        new[id(norm)] = fused
    _replace(g, gone, new)
    return len(new)


_NORM_TYPES = (TensorProto.FLOAT, TensorProto.FLOAT16)
