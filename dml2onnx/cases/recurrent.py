"""Matrix cases for DML_OPERATOR_RNN, LSTM and GRU (dml2onnx/ops/recurrent.py): both data types,
every direction, with every optional input set (biases, initial states, peepholes, sequence
lengths including 0, the full length and beyond it) or none, every output or one; each fusable activation
(with the matrix's parameters) as every activation of the cell, but CELU in GRU and LSTM
(DirectML refuses it there); GRU's LinearBeforeReset, LSTM's clip and coupled input and forget
gates. Shapes stay within tolerances.recurrent's bounds: seq_length <= 4, input + hidden <= 8,
values within +-1/2."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from dml2onnx.cases.common import ACTIVATIONS, Case, tensor_of
from dml2onnx.core import dtypes
from dml2onnx.lowering.tolerances import RECURRENT_STEPS
from dml2onnx.ops.recurrent_reference import CELLS, REFUSED_ACTIVATIONS

DEFAULTS = {
    "RNN": ("ACTIVATION_TANH",),
    "GRU": ("ACTIVATION_SIGMOID", "ACTIVATION_TANH"),
    "LSTM": ("ACTIVATION_SIGMOID", "ACTIVATION_TANH", "ACTIVATION_TANH"),
}
DIRECTIONS = ("FORWARD", "BACKWARD", "BIDIRECTIONAL")


def recurrent_case(
    rng: np.random.Generator,
    op: str,
    dtype: dtypes.DataType,
    direction: str,
    *,
    seq: int = RECURRENT_STEPS,
    batch: int = 3,
    input_size: int = 3,
    hidden: int = 2,
    optional: bool = True,
    peephole: bool = True,
    lengths: list[int] | None = None,
    outputs: tuple[str, ...] = ("OutputSequenceTensor", "OutputSingleTensor", "OutputCellSingleTensor"),
    acts: tuple[dict[str, Any], ...] | None = None,
    extra: dict[str, Any] | None = None,
    name: str = "",
) -> Case:
    """One desc and its feeds (uniform in [-1/2, 1/2]); `optional`: the biases and initial states
    (and LSTM's peepholes where `peephole`)."""
    d, g = 2 if direction == "BIDIRECTIONAL" else 1, CELLS[op].gates
    sizes = {
        "InputTensor": [1, seq, batch, input_size],
        "WeightTensor": [1, d, g * hidden, input_size],
        "RecurrenceTensor": [1, d, g * hidden, hidden],
    }
    if optional:
        sizes |= {"BiasTensor": [1, 1, d, 2 * g * hidden], "HiddenInitTensor": [1, d, batch, hidden]}
        if op == "LSTM":
            sizes["CellMemInitTensor"] = [1, d, batch, hidden]
            if peephole:
                sizes["PeepholeTensor"] = [1, 1, d, 3 * hidden]
    fields: dict[str, Any] = {k: tensor_of(dtype, v) for k, v in sizes.items()}
    feeds = {k: rng.uniform(-0.5, 0.5, v).astype(dtype.numpy) for k, v in sizes.items()}
    if lengths is not None:
        fields["SequenceLengthsTensor"] = tensor_of(dtypes.UINT32, [1, 1, 1, batch])
        feeds["SequenceLengthsTensor"] = np.array(lengths, np.uint32).reshape(1, 1, 1, batch)
    state = [1, d, batch, hidden]
    out_sizes = {"OutputSequenceTensor": [seq, d, batch, hidden], "OutputSingleTensor": state, "OutputCellSingleTensor": state}
    for o in outputs:
        if o != "OutputCellSingleTensor" or op == "LSTM":
            fields[o] = tensor_of(dtype, out_sizes[o])
    per_direction = acts or tuple({"Type": a} for a in DEFAULTS[op])
    fields |= {"ActivationDescCount": len(per_direction) * d, "ActivationDescs": list(per_direction) * d, "Direction": direction}
    if op == "LSTM":
        fields |= {"ClipThreshold": 0.0, "UseClipThreshold": False, "CoupleInputForget": False}
    if op == "GRU":
        fields["LinearBeforeReset"] = False
    fields |= extra or {}
    label = "-".join(p for p in (op, dtype.name, direction, name) if p)
    return Case(label, op, fields, feeds)


def cases() -> Iterator[Case]:
    rng = np.random.default_rng(23)
    for op in CELLS:
        for dtype in dtypes.FLOATS:
            for direction in DIRECTIONS:
                yield recurrent_case(rng, op, dtype, direction, name="all-inputs")
                yield recurrent_case(rng, op, dtype, direction, optional=False, outputs=("OutputSingleTensor",), name="bare")
                yield recurrent_case(rng, op, dtype, direction, lengths=[4, 2, 0], name="lengths-4-2-0")
                yield recurrent_case(
                    rng, op, dtype, direction, batch=2, lengths=[1, 3], outputs=("OutputSequenceTensor",), name="lengths-1-3"
                )
        for act, params in ACTIVATIONS.items():
            if act in REFUSED_ACTIVATIONS.get(op, ()):
                continue
            acts = ({"Type": act, **params},) * CELLS[op].activations
            short = act.removeprefix("ACTIVATION_").lower()
            yield recurrent_case(rng, op, dtypes.FLOAT32, "BIDIRECTIONAL", seq=3, acts=acts, lengths=[3, 1, 2], name=short)
    for dtype in dtypes.FLOATS:
        for direction in DIRECTIONS:
            yield recurrent_case(rng, "GRU", dtype, direction, extra={"LinearBeforeReset": True}, name="linear-before-reset")
            yield recurrent_case(rng, "LSTM", dtype, direction, extra={"CoupleInputForget": True}, name="coupled")
            clip = {"UseClipThreshold": True, "ClipThreshold": 0.25}
            yield recurrent_case(rng, "LSTM", dtype, direction, lengths=[2, 4, 1], extra=clip, name="clip")
    # lengths beyond seq_length (DirectML: seq_length steps, but no forward OutputSingleTensor), 0 and
    # seq_length, with every output and initial states; cells cuDNN computes (the cudnn lowering)
    for op in CELLS:
        for dtype in dtypes.FLOATS:
            for direction in DIRECTIONS:
                extra = {"LinearBeforeReset": True} if op == "GRU" else {}
                yield recurrent_case(
                    rng, op, dtype, direction, batch=4, peephole=False, lengths=[6, 2, 0, 4], extra=extra, name="lengths-beyond"
                )
