"""DML_OPERATOR_RNN, DML_OPERATOR_LSTM and DML_OPERATOR_GRU: one recurrent layer over
InputTensor X [1, seq_length, batch, input] (t: dimension 1), forward, backward or both
(Direction; num_directions D = 2 for BIDIRECTIONAL, else 1).

Tensors (every float tensor of InputTensor's DataType, FLOAT32 or FLOAT16; 4 dimensions each):
WeightTensor W [1, D, G*hidden, input], RecurrenceTensor R [1, D, G*hidden, hidden] (G gates:
RNN 1, LSTM 4 in the order i o f c, GRU 3 in the order z r h), BiasTensor [1, 1, D, 2*G*hidden]
(W's biases of every gate, then R's), HiddenInitTensor (and LSTM's CellMemInitTensor)
[1, D, batch, hidden], SequenceLengthsTensor UINT32 [1, 1, 1, batch], LSTM's PeepholeTensor
[1, 1, D, 3*hidden] (i o f); outputs OutputSequenceTensor [seq_length, D, batch, hidden] (H_t of
every t), OutputSingleTensor [1, D, batch, hidden] (the last H_t) and LSTM's
OutputCellSingleTensor (the last C_t), each optional. hidden is RecurrenceTensor's Sizes[3].
ActivationDescs: f (RNN), f g (GRU), f g h (LSTM) for the forward direction, then again for the
backward one when bidirectional; any activation that DirectML fuses (with its parameters).

The cells (the pages' equations, ONNX's RNN/GRU/LSTM; P_o multiplies C_t, below):
RNN   H = f(X W^T + H R^T + Wb + Rb)
GRU   z = f(X Wz^T + H Rz^T + Wbz + Rbz), r = f(... r ...),
      h = g(X Wh^T + (r * H) Rh^T + Rbh + Wbh)   (LinearBeforeReset: g(X Wh^T + r * (H Rh^T + Rbh) + Wbh)),
      H = (1 - z) * h + z * H
LSTM  i = f(clip(X Wi^T + H Ri^T + Pi * C + Wbi + Rbi)), f_ = f(... f ...) (CoupleInputForget: 1 - i),
      c = g(clip(X Wc^T + H Rc^T + Wbc + Rbc)), C = f_ * C + i * c,
      o = f(clip(X Wo^T + H Ro^T + Po * C_new + Wbo + Rbo)), H = o * h(C_new)
clip bounds an activation's input to [-ClipThreshold, ClipThreshold] where UseClipThreshold.

Sequence lengths (SequenceLengthsTensor, per batch entry): the forward direction runs t = 0 ..
len - 1, the backward one t = len - 1 .. 0 (each entry's own last step first); OutputSequenceTensor
is 0 at t >= len, and the single outputs hold the state after the entry's last step. The pages
say nothing of lengths beyond seq_length, or of 0: DirectML's rules below (data, not the desc:
nothing to refuse at parse time).

What DirectML's own API computed (every matrix case, tests/ops/test_recurrent.py pins the values):
- where the pages are silent: a batch entry of length 0 in the forward direction still takes
  step 0: OutputCellSingleTensor is the cell state after step 0 and OutputSingleTensor is 0 (not
  the initial states); in the backward direction it keeps HiddenInitTensor and CellMemInitTensor.
  CELU as an activation of GRU or LSTM fails CompileOperator (E_UNEXPECTED): refused here; RNN
  takes it. Every other fusable activation (with its parameters) works in all three.
- lengths beyond seq_length (page silent): read as seq_length (UINT32: 2^31 and 2^32 - 1 too) by
  both directions' steps, OutputSequenceTensor and OutputCellSingleTensor, but the forward
  OutputSingleTensor is 0 there, as at a length of 0: DirectML's forward direction writes it at
  step len - 1, and there is none. Well defined, not garbage: probed with every cell, direction
  and output, FLOAT32 and FLOAT16, with and without initial states and OutputSequenceTensor, and
  with InputTensor's and OutputSequenceTensor's buffers padded past their ends (marker values):
  no X is read and nothing is written past seq_length. The DirectML EP's ONNX node (onnx_node)
  computes the same (every matrix case with lengths, under Wine).
- where the LSTM page is wrong: its output gate reads P_o * C_{t-1} and H_t = o_t * h(c_t) (the
  cell gate); DirectML computes P_o * C_t and h(C_t), as ONNX's LSTM does (the DirectML EP maps
  ONNX's LSTM straight onto this operator): the reference follows DirectML (a documentation error,
  like LogSoftmax1's page examples).
- FLOAT16: DirectML rounds each step's values to FLOAT16 (1.5e-3 off FLOAT32 after 3 steps:
  tolerances.recurrent); the graphs compute in FLOAT32 and round once.

Lowerings:
- "unrolled" (every target): the sequence length is static, so each direction is unrolled step by
  step: one MatMul of every X_t by W^T (plus Wb) up front, then per step a MatMul by R^T (plus
  Rb), the gates (Slice), clip (Clip), the activations (the fused-activation lowerings of
  activations.py), and with sequence lengths a Where per state keeping it past an entry's length
  (the forward direction's step 0 unmasked, as DirectML), one zeroing OutputSequenceTensor and
  one the forward OutputSingleTensor outside 0 < len <= seq_length; FLOAT16 is computed in
  FLOAT32 and rounded once. Every node is one the CPU, CUDA and DirectML EPs register; the graph
  grows with seq_length (about 15 nodes per step and direction).
- "onnx_node" (the dml target only: DML_ONLY, DML_PREFERENCE): ONNX's RNN, GRU or LSTM, which the
  DirectML EP turns back into this operator (DmlOperatorRecurrentNeuralNetwork.cpp: X [seq, batch,
  input] and the others without their leading 1s, sequence_lens INT32 read as UINT32, the
  activations by ONNX name with activation_alpha/beta, clip only where UseClipThreshold,
  input_forget, linear_before_reset), where every activation is one that EP maps: RELU,
  LEAKY_RELU, THRESHOLDED_RELU, TANH, SCALED_TANH, SIGMOID, HARD_SIGMOID, ELU, SOFTSIGN (not
  SOFTPLUS: the EP leaves its Steepness unset; not LINEAR, IDENTITY, the ELUs' variants, SHRINK,
  GELU, PARAMETRIC_SOFTPLUS). The CPU EP's kernels compute every FLOAT32 matrix case with lengths
  from 1 to seq_length as DirectML does (tests/ops/test_recurrent.py); at a length of 0 they differ,
  and they refuse one beyond seq_length.
- "cudnn" (the cuda target only: CUDA_ONLY): the same ONNX node (one builder, `_rnn_node`), which
  the CUDA EP runs through cuDNN (onnxruntime/core/providers/cuda/rnn/cudnn_rnn_base.cc), for the
  cells cuDNN computes (`cudnn_cell`): the EP falls back to the CPU EP (RNNNeedFallbackToCPU in
  cuda_execution_provider.cc) for activation_alpha, activation_beta or clip, activations other
  than the cells' own (RNN Tanh, not Relu, which cuDNN has; GRU Sigmoid, Tanh; LSTM Sigmoid,
  Tanh, Tanh), input_forget, linear_before_reset 0 (cuDNN's GRU is LinearBeforeReset's) and
  peepholes, which its kernel never reads. cuDNN takes lengths from 1 to seq_length only (the EP runs a 0 as 1 and zeroes every
  output of that entry, initial states lost): the graph clamps them to [1, seq_length] and then
  restores DirectML's rules with Where nodes (`_directml_lengths`: 0 for a length of 0 in
  OutputSequenceTensor, the forward OutputSingleTensor 0 past seq_length, the backward states
  at their initial values at a length of 0). FLOAT16 is computed in FLOAT32 (Cast around it), as
  the unrolled graph does. The CPU EP's kernels compute the same ONNX semantics for lengths 1 to
  seq_length and stand in for cuDNN's in the tests (every matrix case it applies to: 55). For
  FLOAT32 the CUDA EP sets CUDNN_DEFAULT_MATH (CudnnRNN::Set in cudnn_rnn_base.h), which lets
  cuDNN use TF32 tensor cores on Ampere and later GPUs (PyTorch asks for CUDNN_FMA_MATH when TF32
  is off; runtime.py's use_tf32=0 does not reach this descriptor in the source read); on the H100
  the kernels cuDNN ran were FFMA (sm80_xmma_gemm_f32f32..._ffma, benchmarks/results/
  h100-part4-2026-11-23.md) and every matrix case it applies to stayed within tolerances.recurrent,
  as did the benchmark's 64-step LSTM and GRU.
- The choice (`choose`): cudnn on the cuda target where it applies (one node instead of about 15
  per step and direction: the unrolled LSTM of 64 steps launched 905 kernels on an H200, 0.27x
  cuDNN's time; cudnn took 1.97 ms on the H100, 0.90x torch.nn.LSTM); the unrolled graph elsewhere.
"""

from __future__ import annotations

import numpy as np

from dml2onnx.core import dtypes
from dml2onnx.core.desc import OperatorDesc
from dml2onnx.core.schema import OperatorSchema
from dml2onnx.graph.builder import GraphBuilder
from dml2onnx.graph.targets import DML_NODE_DOC
from dml2onnx.ops import activations, common
from dml2onnx.ops.family import Family
from dml2onnx.ops.recurrent_reference import (
    CELLS,
    F32,
    Cell,
    Dims,
    cell,
    dims,
    directions,
    reference,
    validate,
)

CANDIDATES = ("unrolled", "onnx_node", "cudnn")
DML_ONLY = ("onnx_node",)
DML_PREFERENCE = ("onnx_node",)
CUDA_ONLY = ("cudnn",)
CUDNN_DOC = "ONNX's node for the CUDA EP's cuDNN kernels (recurrent.py: cudnn)"
# The activations of the cells cuDNN computes, per direction (cuda_execution_provider.cc's
# activations_supported: RNN's Relu, which cuDNN has, is not among them)
CUDNN_ACTIVATIONS = {
    "RNN": ("ACTIVATION_TANH",),
    "GRU": ("ACTIVATION_SIGMOID", "ACTIVATION_TANH"),
    "LSTM": ("ACTIVATION_SIGMOID", "ACTIVATION_TANH", "ACTIVATION_TANH"),
}
# The activations the DirectML EP maps from ONNX names onto DirectML's (InitActivationDescs in
# DmlOperatorRecurrentNeuralNetwork.cpp), with the fields it passes as activation_alpha and
# activation_beta. Softplus is left out: the EP leaves its Steepness unset.
ONNX_ACTIVATIONS: dict[str, tuple[str, tuple[str, ...], tuple[str, ...]]] = {
    "ACTIVATION_RELU": ("Relu", (), ()),
    "ACTIVATION_LEAKY_RELU": ("LeakyRelu", ("Alpha",), ()),
    "ACTIVATION_THRESHOLDED_RELU": ("ThresholdedRelu", ("Alpha",), ()),
    "ACTIVATION_TANH": ("Tanh", (), ()),
    "ACTIVATION_SCALED_TANH": ("ScaledTanh", ("Alpha",), ("Beta",)),
    "ACTIVATION_SIGMOID": ("Sigmoid", (), ()),
    "ACTIVATION_HARD_SIGMOID": ("HardSigmoid", ("Alpha",), ("Beta",)),
    "ACTIVATION_ELU": ("Elu", ("Alpha",), ()),
    "ACTIVATION_SOFTSIGN": ("Softsign", (), ()),
}
ONNX_DIRECTIONS = {"FORWARD": "forward", "BACKWARD": "reverse", "BIDIRECTIONAL": "bidirectional"}


def applies(desc: OperatorDesc, candidate: str, opset: int) -> bool:
    if candidate == "onnx_node":
        return all(a.schema.name in ONNX_ACTIVATIONS for a in desc["ActivationDescs"])
    if candidate == "cudnn":
        return cudnn_cell(desc)
    return True


def cudnn_cell(desc: OperatorDesc) -> bool:
    """Whether the desc is a cell cuDNN computes, with the ONNX node's attributes the CUDA EP takes
    (RNNNeedFallbackToCPU in cuda_execution_provider.cc: no activation_alpha, activation_beta nor
    clip, its activations only, input_forget 0, linear_before_reset 1, no peepholes)."""
    op = desc.schema.name
    if [a.schema.name for a in desc["ActivationDescs"]] != list(CUDNN_ACTIVATIONS[op]) * directions(desc):
        return False
    if op == "GRU":
        return bool(desc["LinearBeforeReset"])
    if op == "LSTM":
        return desc.optional_tensor("PeepholeTensor") is None and not desc["UseClipThreshold"] and not desc["CoupleInputForget"]
    return True


def choose(desc: OperatorDesc, target: str, options: tuple[str, ...]) -> str:
    """On the `cuda` target, cuDNN's kernels where they apply (one node instead of about 15 per step
    and direction); the unrolled graph elsewhere. On the H100, 64 steps, batch 64, 512 -> 512 FLOAT32
    (benchmarks/results/h100-part4-2026-11-23.md): LSTM 1.97 ms against the unrolled 9.16 and
    torch.nn.LSTM's 1.77, GRU 1.85 ms against 10.2 and torch.nn.GRU's 1.79."""
    return "cudnn" if target == "cuda" and "cudnn" in options else "unrolled"


def lower(desc: OperatorDesc, b: GraphBuilder, inputs: dict[str, str]) -> dict[str, str]:
    if b.variant == "onnx_node":
        return _onnx_node(desc, b, inputs)
    if b.variant == "cudnn":
        return _cudnn(desc, b, inputs)
    return _unrolled(desc, b, inputs)


def _onnx_node(desc: OperatorDesc, b: GraphBuilder, inputs: dict[str, str]) -> dict[str, str]:
    """The dml target's ONNX node, which the DirectML EP maps back onto this operator: the lengths
    as INT32 (the EP reads them as UINT32 again), every type as it is."""
    lengths = inputs.get("SequenceLengthsTensor")
    if lengths is not None:
        lengths = b.cast(lengths, dtypes.INT32, "lengths_int32", "sequence_lens as INT32")
    return _rnn_node(desc, b, inputs, lengths, DML_NODE_DOC)


def _rnn_node(desc: OperatorDesc, b: GraphBuilder, values: dict[str, str], lengths: str | None, doc: str) -> dict[str, str]:
    """ONNX's RNN, GRU or LSTM node over `values` (DirectML's tensors by field) and INT32
    sequence_lens `lengths`: DirectML's tensors without their leading 1s (X [seq, batch, input],
    W [D, G*hidden, input], ...), the activations by ONNX name with their parameters, clip only
    where UseClipThreshold; each output the desc asks for, in DirectML's shape."""
    d, op = dims(desc), desc.schema.name

    def shaped(name: str, sizes: list[int]) -> str:
        v = values.get(name)
        if v is None:
            return ""
        return b.reshape(v, sizes, f"{name}_onnx", f"{name} in ONNX's layout")

    gh = cell(desc).gates * d.hidden
    state = [d.directions, d.batch, d.hidden]
    sequence_lens = "" if lengths is None else b.reshape(lengths, [d.batch], "lengths", "sequence_lens [batch]")
    node_inputs = [
        shaped("InputTensor", [d.seq, d.batch, d.input]),
        shaped("WeightTensor", [d.directions, gh, d.input]),
        shaped("RecurrenceTensor", [d.directions, gh, d.hidden]),
        shaped("BiasTensor", [d.directions, 2 * gh]),
        sequence_lens,
        shaped("HiddenInitTensor", state),
    ]
    if op == "LSTM":
        node_inputs += [shaped("CellMemInitTensor", state), shaped("PeepholeTensor", [d.directions, 3 * d.hidden])]
    while node_inputs[-1] == "":
        node_inputs.pop()
    names, alphas, betas = [], [], []
    for act in desc["ActivationDescs"]:
        name, alpha, beta = ONNX_ACTIVATIONS[act.schema.name]
        names.append(name)
        alphas += [float(np.float32(act[f])) for f in alpha]
        betas += [float(np.float32(act[f])) for f in beta]
    attrs: dict[str, object] = {"hidden_size": d.hidden, "direction": ONNX_DIRECTIONS[desc["Direction"]], "activations": names}
    if alphas:
        attrs["activation_alpha"] = alphas
    if betas:
        attrs["activation_beta"] = betas
    if op == "LSTM":
        if desc["UseClipThreshold"]:
            attrs["clip"] = float(np.float32(desc["ClipThreshold"]))
        attrs["input_forget"] = int(bool(desc["CoupleInputForget"]))
    if op == "GRU":
        attrs["linear_before_reset"] = int(bool(desc["LinearBeforeReset"]))
    fields = ["OutputSequenceTensor", "OutputSingleTensor", "OutputCellSingleTensor"][: 3 if op == "LSTM" else 2]
    wanted = [f for f in fields if desc.optional_tensor(f) is not None]
    count = max(fields.index(f) for f in wanted) + 1
    outs = b.node_outputs(op, node_inputs, op.lower(), doc, n_outputs=count, **attrs)
    result = {}
    for f in wanted:
        v = outs[fields.index(f)]
        result[f] = v if f == "OutputSequenceTensor" else b.reshape(v, [1, *state], f"{f}_4d", f"{f} as [1, D, batch, hidden]")
    return result


def _cudnn(desc: OperatorDesc, b: GraphBuilder, inputs: dict[str, str]) -> dict[str, str]:
    """The cuda target's ONNX node, which the CUDA EP runs through cuDNN: FLOAT16 computed in
    FLOAT32, the lengths clamped to [1, seq_length] (cuDNN takes no other), DirectML's rules for
    the others restored after it (`_directml_lengths`)."""
    d = dims(desc)
    values = _in_float32(desc, b, inputs)
    raw = inputs.get("SequenceLengthsTensor")
    if raw is None:
        return _in_type(desc, b, _rnn_node(desc, b, values, None, CUDNN_DOC))
    length = b.reshape(b.cast(raw, dtypes.INT64, "lengths_int64", "the lengths as INT64"), [d.batch, 1], "length", "a column")
    at_least_1 = b.node("Max", [length, b.i64(1, "one")], "length_at_least_1", "max(length, 1)")
    clamped = b.node("Min", [at_least_1, b.i64(d.seq, "seq_length")], "length_clamped", "min(max(length, 1), seq_length)")
    as_int32 = b.cast(clamped, dtypes.INT32, "lengths_int32", "sequence_lens as INT32")
    result = _rnn_node(desc, b, values, as_int32, CUDNN_DOC)
    return _in_type(desc, b, _directml_lengths(desc, b, result, values, length))


def _directml_lengths(
    desc: OperatorDesc, b: GraphBuilder, result: dict[str, str], values: dict[str, str], length: str
) -> dict[str, str]:
    """DirectML's outputs from those of a node that ran every batch entry for its length clamped to
    [1, seq_length] (`length`: the lengths as they are, INT64 [batch, 1]): a length beyond
    seq_length runs seq_length steps there too, but DirectML's forward OutputSingleTensor is 0
    (no step len - 1); a length of 0 took step 0 there, as DirectML's forward direction does (its
    cell state is DirectML's), but outputs no H_0 and leaves the backward direction's states at
    HiddenInitTensor and CellMemInitTensor."""
    d = dims(desc)
    backward = [desc["Direction"] == "BACKWARD" or k == 1 for k in range(d.directions)]
    zero = b.scalar(0.0, F32, "zero")
    empty = b.node("Equal", [length, b.i64(0, "zero_length")], "empty", "length 0")

    def rows(cond: str, want_backward: bool, step: str) -> str:
        """`cond` [batch, 1] on the directions that are (not) backward, [1, D, batch, 1]."""
        picked = [k == want_backward for k in backward]
        if all(picked):
            return cond
        mask = b.const(np.array(picked).reshape(1, d.directions, 1, 1), f"{step}_directions")
        return b.node("And", [mask, cond], step, "on the " + ("backward" if want_backward else "forward") + " direction")

    out = dict(result)
    if "OutputSequenceTensor" in out:
        out["OutputSequenceTensor"] = b.node(
            "Where", [empty, zero, out["OutputSequenceTensor"]], "sequence_empty", "0 for a length of 0 (not step 0's H)"
        )
    if "OutputSingleTensor" in out:
        h = out["OutputSingleTensor"]
        if not all(backward):
            beyond = b.node("Less", [b.i64(d.seq, "seq_length_limit"), length], "beyond", "length > seq_length")
            no_last = b.node("Or", [empty, beyond], "no_last_step", "no step len - 1")
            h = b.node("Where", [rows(no_last, False, "forward_no_last"), zero, h], "single_forward", "0: no step len - 1")
        if any(backward):
            h0 = values.get("HiddenInitTensor") or zero
            h = b.node("Where", [rows(empty, True, "backward_empty"), h0, h], "single_backward", "H_0 where length 0")
        out["OutputSingleTensor"] = h
    if "OutputCellSingleTensor" in out and any(backward):
        c0 = values.get("CellMemInitTensor") or zero
        cond = rows(empty, True, "backward_empty_cell")
        out["OutputCellSingleTensor"] = b.node(
            "Where", [cond, c0, out["OutputCellSingleTensor"]], "cell_backward", "C_0 where length 0"
        )
    return out


def _in_float32(desc: OperatorDesc, b: GraphBuilder, inputs: dict[str, str]) -> dict[str, str]:
    """The float inputs in FLOAT32: FLOAT16 is computed in FLOAT32 and rounded once (`_in_type`)."""
    if desc.tensor("InputTensor").data_type != dtypes.FLOAT16:
        return dict(inputs)
    return {
        k: v if v is None or k == "SequenceLengthsTensor" else b.cast(v, F32, f"{k}_to_float32", f"{k} in FLOAT32")
        for k, v in inputs.items()
    }


def _in_type(desc: OperatorDesc, b: GraphBuilder, result: dict[str, str]) -> dict[str, str]:
    """Each FLOAT32 output in the desc's type."""
    dtype = desc.tensor("InputTensor").data_type
    if dtype != dtypes.FLOAT16:
        return result
    return {k: b.cast(v, dtype, f"{k}_to_float16", f"{k} in FLOAT16") for k, v in result.items()}


def _unrolled(desc: OperatorDesc, b: GraphBuilder, inputs: dict[str, str]) -> dict[str, str]:
    d, c, op = dims(desc), cell(desc), desc.schema.name
    floats = _in_float32(desc, b, inputs)
    x = b.reshape(floats["InputTensor"], [d.seq, d.batch, d.input], "x", "X as [seq_length, batch, input]")
    lengths = None
    if inputs.get("SequenceLengthsTensor") is not None:
        lengths = b.reshape(
            b.cast(inputs["SequenceLengthsTensor"], dtypes.INT64, "lengths_int64", "the lengths as INT64"),
            [d.batch, 1],
            "lengths",
            "each batch entry's length, as a column",
        )
    zero = b.scalar(0.0, F32, "zero")
    state = [1, 1, d.batch, d.hidden]
    seq_parts, singles, cells = [], [], []
    for k in range(d.directions):
        backward = desc["Direction"] == "BACKWARD" or k == 1
        run = _Direction(desc, b, f"{'backward' if backward else 'forward'}", k, d, c, op)
        run.load(floats)
        xw = run.input_projection(x)
        steps = range(d.seq - 1, -1, -1) if backward else range(d.seq)
        outs: dict[int, str] = {}
        for t in steps:
            h_new, c_new = run.step(xw, t)
            if lengths is None:
                run.h, run.c = h_new, c_new
                outs[t] = h_new
                continue
            live = b.node("Less", [b.i64(t, f"{run.tag}_t{t}"), lengths], f"{run.tag}_live_{t}", f"t = {t} < the length")
            # the forward direction takes step 0 whatever the length (DirectML: a length of 0 ends
            # with step 0's cell state)
            first = not backward and t == 0
            run.h = (
                h_new if first else b.node("Where", [live, h_new, run.h], f"{run.tag}_h_{t}", "H_t, or H kept past the length")
            )
            if run.c is not None:
                run.c = (
                    c_new
                    if first
                    else b.node("Where", [live, c_new, run.c], f"{run.tag}_c_{t}", "C_t, or C kept past the length")
                )
            outs[t] = b.node("Where", [live, h_new, zero], f"{run.tag}_y_{t}", "H_t, 0 past the length")
            if first:
                first_live = live
        final = run.h
        if lengths is not None and not backward:
            within = b.node("Less", [lengths, b.i64(d.seq + 1, "seq_length_plus_1")], "within", "length <= seq_length")
            ended = b.node("And", [first_live, within], "ended", "0 < length <= seq_length: a step len - 1 was taken")
            final = b.node("Where", [ended, final, zero], f"{run.tag}_single", "0 where no step len - 1 (DirectML)")
        singles.append(b.reshape(final, state, f"{run.tag}_single_4d", "the last H_t as [1, 1, batch, hidden]"))
        if run.c is not None:
            cells.append(b.reshape(run.c, state, f"{run.tag}_cell_4d", "the last C_t as [1, 1, batch, hidden]"))
        if desc.optional_tensor("OutputSequenceTensor") is not None:
            parts = [b.reshape(outs[t], state, f"{run.tag}_y4d_{t}", f"H_{t} as [1, 1, batch, hidden]") for t in range(d.seq)]
            seq_parts.append(_concat(b, parts, 0, f"{run.tag}_sequence", "H_t of every t"))
    values = {"OutputSingleTensor": _concat(b, singles, 1, "single", "the last H_t of each direction")}
    if seq_parts:
        values["OutputSequenceTensor"] = _concat(b, seq_parts, 1, "sequence", "[seq_length, num_directions, batch, hidden]")
    if cells:
        values["OutputCellSingleTensor"] = _concat(b, cells, 1, "cell_single", "the last C_t of each direction")
    return _in_type(desc, b, {k: values[k] for k in desc.outputs})


def _concat(b: GraphBuilder, parts: list[str], axis: int, step: str, doc: str) -> str:
    return parts[0] if len(parts) == 1 else b.node("Concat", parts, step, doc, axis=axis)


class _Direction:
    """One direction's weights and state, and its steps as nodes."""

    def __init__(self, desc: OperatorDesc, b: GraphBuilder, tag: str, k: int, d: Dims, c: Cell, op: str) -> None:
        self.desc, self.b, self.tag, self.k, self.d, self.cell, self.op = desc, b, tag, k, d, c, op
        self.acts = desc["ActivationDescs"][k * c.activations : (k + 1) * c.activations]
        self.clip = float(np.float32(desc["ClipThreshold"])) if op == "LSTM" and desc["UseClipThreshold"] else None
        self.couple = op == "LSTM" and bool(desc["CoupleInputForget"])
        self.linear_before_reset = op == "GRU" and bool(desc["LinearBeforeReset"])

    def _slice(self, v: str, axis: int, name: str, doc: str, size: int | None = None) -> str:
        """Direction k of `v` along `axis` (Sizes[axis] = D), reshaped to [-1] or [size, -1]."""
        b = self.b
        part = v if self.d.directions == 1 else b.slice(v, [axis], [self.k], [self.k + 1], f"{self.tag}_{name}_slice", doc)
        return b.reshape(part, [-1] if size is None else [size, -1], f"{self.tag}_{name}", doc)

    def load(self, floats: dict[str, str]) -> None:
        b, d, g = self.b, self.d, self.cell.gates
        gh = g * d.hidden
        w = self._slice(floats["WeightTensor"], 1, "w", "W of this direction", gh)
        self.w_t = b.transpose(w, [1, 0], f"{self.tag}_w_t", "W^T [input, gates * hidden]")
        r = self._slice(floats["RecurrenceTensor"], 1, "r", "R of this direction", gh)
        self.r = r
        self.r_t = b.transpose(r, [1, 0], f"{self.tag}_r_t", "R^T [hidden, gates * hidden]")
        bias = floats.get("BiasTensor")
        self.wb = self.rb = None
        if bias is not None:
            flat = self._slice(bias, 2, "bias", "the biases of this direction")
            self.wb = b.slice(flat, [0], [0], [gh], f"{self.tag}_wb", "Wb of every gate")
            self.rb = b.slice(flat, [0], [gh], [2 * gh], f"{self.tag}_rb", "Rb of every gate")
        shape = [d.batch, d.hidden]
        h0, c0 = floats.get("HiddenInitTensor"), floats.get("CellMemInitTensor")
        zeros = None
        if h0 is None or (self.op == "LSTM" and c0 is None):
            zeros = b.filled(shape, 0.0, np.float32, f"{self.tag}_zeros", "a zero state")
        self.h = zeros if h0 is None else self._slice(h0, 1, "h0", "H_0 of this direction", d.batch)
        self.c = None
        if self.op == "LSTM":
            self.c = zeros if c0 is None else self._slice(c0, 1, "c0", "C_0 of this direction", d.batch)
        self.p = None
        peep = floats.get("PeepholeTensor")
        if self.op == "LSTM" and peep is not None:
            flat = self._slice(peep, 2, "peephole", "P of this direction")
            self.p = [
                b.slice(flat, [0], [j * d.hidden], [(j + 1) * d.hidden], f"{self.tag}_p{n}", f"P_{n}")
                for j, n in enumerate("iof")
            ]
        if self.op == "GRU" and self.rb is not None:
            self.rb_h = self._gate(self.rb, 2, "rb_h", 0)
            self.rb = self._gate(self.rb, 0, "rb_zr", 0, 2)
        if self.op == "GRU":
            self.r_zr_t = self._gate(self.r_t, 0, "r_zr_t", 1, 2)
            self.r_h_t = self._gate(self.r_t, 2, "r_h_t", 1)

    def _gate(self, v: str, j: int, name: str, axis: int, count: int = 1) -> str:
        n = self.d.hidden
        return self.b.slice(v, [axis], [j * n], [(j + count) * n], f"{self.tag}_{name}", f"gate block(s) {j}..{j + count - 1}")

    def input_projection(self, x: str) -> str:
        b = self.b
        xw = b.node("MatMul", [x, self.w_t], f"{self.tag}_xw", "X_t W^T for every t")
        if self.wb is not None:
            xw = b.node("Add", [xw, self.wb], f"{self.tag}_xw_b", "+ Wb")
        return xw

    def _act(self, v: str, i: int) -> str:
        return activations.lower(self.b, v, self.acts[i])

    def _clip(self, v: str, step: str) -> str:
        if self.clip is None:
            return v
        b = self.b
        lo, hi = b.scalar(-self.clip, F32, f"{step}_lo"), b.scalar(self.clip, F32, f"{step}_hi")
        return b.node("Clip", [v, lo, hi], step, "clip to [-ClipThreshold, ClipThreshold]")

    def step(self, xw: str, t: int) -> tuple[str, str | None]:
        b, d, tag = self.b, self.d, f"{self.tag}_{t}"
        xt = b.reshape(
            b.slice(xw, [0], [t], [t + 1], f"{tag}_xw_t", "X_t W^T + Wb"),
            [d.batch, -1],
            f"{tag}_xw_2d",
            "[batch, gates * hidden]",
        )
        if self.op == "GRU":
            return self._gru(xt, tag), None
        hr = b.node("MatMul", [self.h, self.r_t], f"{tag}_hr", "H_{t-1} R^T")
        if self.rb is not None:
            hr = b.node("Add", [hr, self.rb], f"{tag}_hr_b", "+ Rb")
        pre = b.node("Add", [xt, hr], f"{tag}_pre", "every gate's linear part")
        if self.op == "RNN":
            return self._act(pre, 0), None
        gate = {n: self._gate(pre, j, f"{t}_{n}", 1) for j, n in enumerate("iofc")}
        p = self.p
        assert self.c is not None

        def peep(n: str, j: int, c: str) -> str:
            if p is None:
                return gate[n]
            return b.node("Add", [gate[n], b.node("Mul", [p[j], c], f"{tag}_p{n}_c", f"P_{n} * C")], f"{tag}_{n}_peep", "+ P * C")

        i = self._act(self._clip(peep("i", 0, self.c), f"{tag}_i_clip"), 0)
        if self.couple:
            f = b.node("Sub", [b.scalar(1.0, F32, f"{tag}_one"), i], f"{tag}_f", "f = 1 - i (CoupleInputForget)")
        else:
            f = self._act(self._clip(peep("f", 2, self.c), f"{tag}_f_clip"), 0)
        g = self._act(self._clip(gate["c"], f"{tag}_c_clip"), 1)
        c_new = b.node(
            "Add",
            [b.node("Mul", [f, self.c], f"{tag}_fc", "f * C_{t-1}"), b.node("Mul", [i, g], f"{tag}_ig", "i * c")],
            f"{tag}_cell",
            "C_t = f * C_{t-1} + i * c",
        )
        o = self._act(self._clip(peep("o", 1, c_new), f"{tag}_o_clip"), 0)
        return b.node("Mul", [o, self._act(c_new, 2)], f"{tag}_h", "H_t = o * h(C_t)"), c_new

    def _gru(self, xt: str, tag: str) -> str:
        b = self.b
        x_zr, x_h = self._gate(xt, 0, f"{tag}_x_zr", 1, 2), self._gate(xt, 2, f"{tag}_x_h", 1)
        hr = b.node("MatMul", [self.h, self.r_zr_t], f"{tag}_hr_zr", "H_{t-1} R_zr^T")
        if self.rb is not None:
            hr = b.node("Add", [hr, self.rb], f"{tag}_hr_zr_b", "+ Rb_zr")
        zr = self._act(b.node("Add", [x_zr, hr], f"{tag}_zr_pre", "z and r's linear parts"), 0)
        z, r = self._gate(zr, 0, f"{tag}_z", 1), self._gate(zr, 1, f"{tag}_r", 1)
        if self.linear_before_reset:
            hh = b.node("MatMul", [self.h, self.r_h_t], f"{tag}_hr_h", "H_{t-1} Rh^T")
            if self.rb is not None:
                hh = b.node("Add", [hh, self.rb_h], f"{tag}_hr_h_b", "+ Rbh")
            hh = b.node("Mul", [r, hh], f"{tag}_reset", "r * (H_{t-1} Rh^T + Rbh)")
        else:
            rh = b.node("Mul", [r, self.h], f"{tag}_reset", "r * H_{t-1}")
            hh = b.node("MatMul", [rh, self.r_h_t], f"{tag}_hr_h", "(r * H_{t-1}) Rh^T")
            if self.rb is not None:
                hh = b.node("Add", [hh, self.rb_h], f"{tag}_hr_h_b", "+ Rbh")
        h_cand = self._act(b.node("Add", [x_h, hh], f"{tag}_h_pre", "h's linear part"), 1)
        # H_t = (1 - z) * h + z * H_{t-1} = h + z * (H_{t-1} - h)
        keep = b.node(
            "Mul", [z, b.node("Sub", [self.h, h_cand], f"{tag}_h_diff", "H_{t-1} - h")], f"{tag}_z_keep", "z * (H_{t-1} - h)"
        )
        return b.node("Add", [h_cand, keep], f"{tag}_h", "H_t = (1 - z) * h + z * H_{t-1}")


def examples(op: OperatorSchema) -> list[common.Example]:
    """onnx_ops: each type, bidirectional, every optional input and output, the default
    activations."""
    c, out = CELLS[op.name], []
    defaults = {"RNN": ("TANH",), "GRU": ("SIGMOID", "TANH"), "LSTM": ("SIGMOID", "TANH", "TANH")}[op.name]
    for t in common.example_types(op, "InputTensor"):
        g, h = c.gates, 2
        state = common.example_tensor(t, [1, 2, 3, h])
        desc: common.Example = {
            "InputTensor": common.example_tensor(t, [1, 4, 3, 5]),
            "WeightTensor": common.example_tensor(t, [1, 2, g * h, 5]),
            "RecurrenceTensor": common.example_tensor(t, [1, 2, g * h, h]),
            "BiasTensor": common.example_tensor(t, [1, 1, 2, 2 * g * h]),
            "HiddenInitTensor": state,
            "SequenceLengthsTensor": common.example_tensor("UINT32", [1, 1, 1, 3]),
            "OutputSequenceTensor": common.example_tensor(t, [4, 2, 3, h]),
            "OutputSingleTensor": state,
            "ActivationDescCount": 2 * c.activations,
            "ActivationDescs": [{"Type": f"ACTIVATION_{a}"} for a in defaults * 2],
            "Direction": "BIDIRECTIONAL",
        }
        if op.name == "LSTM":
            desc |= {"CellMemInitTensor": state, "PeepholeTensor": common.example_tensor(t, [1, 1, 2, 3 * h])}
            desc |= {"OutputCellSingleTensor": state, "ClipThreshold": 1.0, "UseClipThreshold": True, "CoupleInputForget": False}
        if op.name == "GRU":
            desc["LinearBeforeReset"] = True
        out.append(desc)
    return out


OPERATOR_FAMILY = Family(
    ("RNN", "LSTM", "GRU"),
    validate,
    lower,
    reference,
    CANDIDATES,
    applies=applies,
    choose=choose,
    cuda_only=CUDA_ONLY,
    dml_only=DML_ONLY,
    dml_preference=DML_PREFERENCE,
    examples=examples,
)
