"""RNN's, LSTM's and GRU's meaning, apart from their lowering (recurrent.py): the cells (gates and
their order in W, R and the biases), the sizes each tensor must have, validation, and the numpy
reference, step by step in FLOAT32 as DirectML computes it."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dml2onnx.core import dtypes
from dml2onnx.core.desc import OperatorDesc
from dml2onnx.core.errors import ModelError
from dml2onnx.ops import activations, common

F32 = dtypes.FLOAT32


@dataclass(frozen=True)
class Cell:
    gates: int  # G: W's and R's blocks of `hidden` rows
    activations: int  # activation descs per direction
    gate_names: str  # the blocks' order in W, R and the biases


CELLS = {"RNN": Cell(1, 1, "i"), "LSTM": Cell(4, 3, "iofc"), "GRU": Cell(3, 2, "zrh")}
FLOATS = (
    "InputTensor",
    "WeightTensor",
    "RecurrenceTensor",
    "BiasTensor",
    "HiddenInitTensor",
    "CellMemInitTensor",
    "PeepholeTensor",
    "OutputSequenceTensor",
    "OutputSingleTensor",
    "OutputCellSingleTensor",
)


@dataclass(frozen=True)
class Dims:
    seq: int
    batch: int
    input: int
    hidden: int
    directions: int


def cell(desc: OperatorDesc) -> Cell:
    return CELLS[desc.schema.name]


def directions(desc: OperatorDesc) -> int:
    return 2 if desc["Direction"] == "BIDIRECTIONAL" else 1


def dims(desc: OperatorDesc) -> Dims:
    x, r = desc.tensor("InputTensor").sizes, desc.tensor("RecurrenceTensor").sizes
    return Dims(x[1], x[2], x[3], r[3], directions(desc))


def expected_sizes(desc: OperatorDesc) -> dict[str, list[int]]:
    """Every tensor's Sizes as the page gives them, from InputTensor's and RecurrenceTensor's."""
    d, g = dims(desc), cell(desc).gates
    state = [1, d.directions, d.batch, d.hidden]
    return {
        "InputTensor": [1, d.seq, d.batch, d.input],
        "WeightTensor": [1, d.directions, g * d.hidden, d.input],
        "RecurrenceTensor": [1, d.directions, g * d.hidden, d.hidden],
        "BiasTensor": [1, 1, d.directions, 2 * g * d.hidden],
        "HiddenInitTensor": state,
        "CellMemInitTensor": state,
        "SequenceLengthsTensor": [1, 1, 1, d.batch],
        "PeepholeTensor": [1, 1, d.directions, 3 * d.hidden],
        "OutputSequenceTensor": [d.seq, d.directions, d.batch, d.hidden],
        "OutputSingleTensor": state,
        "OutputCellSingleTensor": state,
    }


def validate(desc: OperatorDesc) -> None:
    present = {f.name for f in desc.schema.fields}
    for name in FLOATS:
        if name in present:
            common.check_same_type(desc, name, "InputTensor")
    if desc.tensor("InputTensor").sizes[0] != 1:
        raise ModelError(
            desc.at("InputTensor", "Sizes", 0),
            f"must be 1 ([1, seq_length, batch_size, input_size]), not {desc.tensor('InputTensor').sizes[0]}",
        )
    want = expected_sizes(desc)
    for name, sizes in want.items():
        t = desc.optional_tensor(name) if name in present else None
        if t is not None and list(t.sizes) != sizes:
            shape = _SHAPES[name]
            raise ModelError(desc.at(name, "Sizes"), f"must be {sizes} ({shape}), not {list(t.sizes)}")
    if not desc.outputs:
        raise ModelError(desc.path, "at least one output tensor must be set (OutputSequenceTensor, OutputSingleTensor, ...)")
    per, n = cell(desc).activations, directions(desc)
    if desc["ActivationDescCount"] != per * n:
        rule = f"{per} activation(s) per direction, {n} direction(s)"
        raise ModelError(desc.at("ActivationDescCount"), f"must be {per * n} ({rule}), not {desc['ActivationDescCount']}")
    for i, act in enumerate(desc["ActivationDescs"]):
        activations.validate(act)
        if act.schema.name in REFUSED_ACTIVATIONS.get(desc.schema.name, ()):
            raise ModelError(
                desc.at("ActivationDescs", i, "Type"),
                f"DML_OPERATOR_{act.schema.name} cannot be an activation of DML_OPERATOR_{desc.schema.name} "
                "(DirectML's CompileOperator fails with E_UNEXPECTED)",
            )


# What DirectML's API refuses though the page is silent: CELU (feature level 3_0) in GRU and LSTM.
REFUSED_ACTIVATIONS = {"GRU": ("ACTIVATION_CELU",), "LSTM": ("ACTIVATION_CELU",)}


_SHAPES = {
    "InputTensor": "[1, seq_length, batch_size, input_size]",
    "WeightTensor": "[1, num_directions, gates * hidden_size, input_size]",
    "RecurrenceTensor": "[1, num_directions, gates * hidden_size, hidden_size]",
    "BiasTensor": "[1, 1, num_directions, 2 * gates * hidden_size]",
    "HiddenInitTensor": "[1, num_directions, batch_size, hidden_size]",
    "CellMemInitTensor": "[1, num_directions, batch_size, hidden_size]",
    "SequenceLengthsTensor": "[1, 1, 1, batch_size]",
    "PeepholeTensor": "[1, 1, num_directions, 3 * hidden_size]",
    "OutputSequenceTensor": "[seq_length, num_directions, batch_size, hidden_size]",
    "OutputSingleTensor": "[1, num_directions, batch_size, hidden_size]",
    "OutputCellSingleTensor": "[1, num_directions, batch_size, hidden_size]",
}


# -- reference ------------------------------------------------------------------------------


def reference(desc: OperatorDesc, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The pages' equations in FLOAT64, step by step per direction and batch entry's length."""
    d, c, op = dims(desc), cell(desc), desc.schema.name
    t_out = inputs["InputTensor"].dtype
    f64 = {k: v.astype(np.float64) for k, v in inputs.items() if v is not None and k != "SequenceLengthsTensor"}
    x = f64["InputTensor"][0]  # [T, B, I]
    h_all, single, cell_single = np.zeros((d.seq, d.directions, d.batch, d.hidden)), [], []
    lengths = inputs.get("SequenceLengthsTensor")
    lengths = np.full(d.batch, d.seq, np.int64) if lengths is None else lengths.reshape(-1).astype(np.int64)
    zeros = np.zeros((d.batch, d.hidden))
    acts = desc["ActivationDescs"]
    clip = float(np.float32(desc["ClipThreshold"])) if op == "LSTM" and desc["UseClipThreshold"] else None
    with np.errstate(all="ignore"):
        for k in range(d.directions):
            w, r = f64["WeightTensor"][0, k], f64["RecurrenceTensor"][0, k]
            bias = f64["BiasTensor"][0, 0, k] if "BiasTensor" in f64 else np.zeros(2 * c.gates * d.hidden)
            wb, rb = bias[: c.gates * d.hidden], bias[c.gates * d.hidden :]
            h = f64["HiddenInitTensor"][0, k] if "HiddenInitTensor" in f64 else zeros
            cm = f64["CellMemInitTensor"][0, k] if "CellMemInitTensor" in f64 else zeros
            p = f64["PeepholeTensor"][0, 0, k] if "PeepholeTensor" in f64 else np.zeros(3 * d.hidden)
            fa = acts[k * c.activations : (k + 1) * c.activations]
            backward = desc["Direction"] == "BACKWARD" or k == 1
            # DirectML's forward direction takes its first step whatever the length: a batch entry of
            # length 0 ends with the cell state of step 0 and OutputSingleTensor 0
            steps = lengths if backward else np.maximum(lengths, 1)
            for t in range(d.seq - 1, -1, -1) if backward else range(d.seq):
                live = (t < steps)[:, None]
                h_new, c_new = _step(op, desc, x[t], h, cm, w, r, wb, rb, p, fa, clip)
                h = np.where(live, h_new, h)
                cm = np.where(live, c_new, cm)
                h_all[t, k] = np.where((t < lengths)[:, None], h_new, 0)
            # DirectML's forward OutputSingleTensor holds H after step len - 1, where there is one:
            # 0 for a length of 0 and for one beyond seq_length (the backward direction ends at t = 0)
            single.append(h if backward else np.where(((lengths == 0) | (lengths > d.seq))[:, None], 0, h))
            cell_single.append(cm)
    values = {
        "OutputSequenceTensor": h_all,
        "OutputSingleTensor": np.stack(single)[None],
        "OutputCellSingleTensor": np.stack(cell_single)[None],
    }
    return {k: values[k].astype(t_out) for k in desc.outputs}


def _step(
    op: str,
    desc: OperatorDesc,
    x: np.ndarray,
    h: np.ndarray,
    cm: np.ndarray,
    w: np.ndarray,
    r: np.ndarray,
    wb: np.ndarray,
    rb: np.ndarray,
    p: np.ndarray,
    acts: tuple[OperatorDesc, ...],
    clip: float | None,
) -> tuple[np.ndarray, np.ndarray]:
    """One cell step for one direction: (H_t, C_t) from X_t [B, I], H_{t-1} and C_{t-1}."""
    n = h.shape[1]

    def block(m: np.ndarray, i: int) -> np.ndarray:
        return m[i * n : (i + 1) * n]

    def act(v: np.ndarray, i: int) -> np.ndarray:
        return activations.reference(v, acts[i])

    if op == "RNN":
        return act(x @ w.T + h @ r.T + wb + rb, 0), cm
    if op == "GRU":
        z = act(x @ block(w, 0).T + h @ block(r, 0).T + block(wb, 0) + block(rb, 0), 0)
        rr = act(x @ block(w, 1).T + h @ block(r, 1).T + block(wb, 1) + block(rb, 1), 0)
        if desc["LinearBeforeReset"]:
            hh = act(x @ block(w, 2).T + rr * (h @ block(r, 2).T + block(rb, 2)) + block(wb, 2), 1)
        else:
            hh = act(x @ block(w, 2).T + (rr * h) @ block(r, 2).T + block(rb, 2) + block(wb, 2), 1)
        return (1 - z) * hh + z * h, cm

    def pre(i: int, peep: np.ndarray | None, state: np.ndarray) -> np.ndarray:
        v = x @ block(w, i).T + h @ block(r, i).T + block(wb, i) + block(rb, i)
        if peep is not None:
            v = v + peep * state
        return v if clip is None else np.clip(v, -clip, clip)

    pi, po, pf = (p[j * n : (j + 1) * n] for j in range(3))
    i_gate = act(pre(0, pi, cm), 0)
    f_gate = 1 - i_gate if desc["CoupleInputForget"] else act(pre(2, pf, cm), 0)
    c_gate = act(pre(3, None, cm), 1)
    c_new = f_gate * cm + i_gate * c_gate
    o_gate = act(pre(1, po, c_new), 0)
    return o_gate * act(c_new, 2), c_new
