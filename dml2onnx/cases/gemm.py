"""Matrix cases for DML_OPERATOR_GEMM (dml2onnx/ops/gemm.py): both data types at 2, 3 and 4
dimensions (batches of 1 and more), every TransA/TransB pair, Alpha and Beta (1, fractions,
negative, 0), C absent, full, and broadcast through strides of 0 (a row, a column, one value, one
batch), every fused activation, K from 1 to tolerances.GEMM_LENGTH, and special values: inf and
NaN in A, B or C (with Alpha 0 and Beta 0 too), and FLOAT16 sums beyond FLOAT16's range before
Alpha scales them back. Inputs stay within [-1, 1] where tolerances.gemm assumes so."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from dml2onnx.cases.common import ACTIVATIONS, Case, tensor_of
from dml2onnx.core import dtypes
from dml2onnx.lowering import tolerances

OP = "GEMM"
TRANS = ("NONE", "TRANSPOSE")


def _operand(batch: tuple[int, ...], rows: int, cols: int, trans: bool) -> tuple[int, ...]:
    return (*batch, cols, rows) if trans else (*batch, rows, cols)


def _case(
    rng: np.random.Generator,
    dtype: dtypes.DataType,
    batch: tuple[int, ...],
    mkn: tuple[int, int, int],
    trans: tuple[bool, bool] = (False, False),
    alpha: float = 1.0,
    beta: float = 1.0,
    c: str | None = "full",
    activation: str | None = None,
    special: str | None = None,
    name: str = "",
) -> Case:
    m, k, n = mkn
    a_sizes = _operand(batch, m, k, trans[0])
    b_sizes = _operand(batch, k, n, trans[1])
    out = (*batch, m, n)
    fields: dict[str, Any] = {
        "ATensor": tensor_of(dtype, a_sizes),
        "BTensor": tensor_of(dtype, b_sizes),
        "OutputTensor": tensor_of(dtype, out),
        "TransA": TRANS[trans[0]],
        "TransB": TRANS[trans[1]],
        "Alpha": alpha,
        "Beta": beta,
    }
    inputs = {
        "ATensor": rng.uniform(-1, 1, a_sizes).astype(dtype.numpy),
        "BTensor": rng.uniform(-1, 1, b_sizes).astype(dtype.numpy),
    }
    if c is not None:
        # C's own values at the sizes it varies along; the rest broadcast by strides of 0
        varies = {
            "full": out,
            "row": (*(1,) * len(batch), 1, n),
            "column": (*(1,) * len(batch), m, 1),
            "scalar": (1,) * len(out),
            "per_batch": (*batch, 1, 1),
        }[c]
        strides, step = [], 1
        for size in reversed(varies):
            strides.insert(0, step if size > 1 else 0)
            step *= size
        fields["CTensor"] = tensor_of(dtype, out) | ({} if c == "full" else {"Strides": strides})
        inputs["CTensor"] = np.broadcast_to(rng.uniform(-1, 1, varies).astype(dtype.numpy), out).copy()
    if special == "inf_nan":  # an inf in A, a NaN in B, an inf in C: NaN or inf where they reach
        inputs["ATensor"].flat[0] = np.inf
        inputs["BTensor"].flat[-1] = np.nan
        if c is not None:
            inputs["CTensor"].flat[1] = -np.inf
    elif special == "overflow":  # FLOAT16: A x B beyond 65504 before Alpha 1/16 brings it back
        inputs["ATensor"] = np.full(a_sizes, 1.0, dtype.numpy)
        inputs["BTensor"] = np.full(b_sizes, 2000.0, dtype.numpy)
    if activation:
        fields["FusedActivation"] = {"Type": activation, **ACTIVATIONS[activation]}
    parts = [OP, str(dtype), "x".join(map(str, out)), f"k{k}", f"{fields['TransA'][0]}{fields['TransB'][0]}"]
    parts += [f"alpha{alpha}", f"beta{beta}", f"C{c or 'none'}", activation or "none", special or "normal"]
    return Case("-".join(parts + ([name] if name else [])), OP, fields, inputs)


def cases() -> Iterator[Case]:
    rng = np.random.default_rng(20)
    for dtype in dtypes.FLOATS:
        for batch in ((), (3,), (1, 1), (2, 3)):  # 2, 3 and 4 dimensions; 4-D with and without a batch
            for ta in (False, True):
                for tb in (False, True):
                    yield _case(rng, dtype, batch, (3, 5, 4), (ta, tb))
            for c in (None, "row", "column", "scalar", "per_batch"):
                yield _case(rng, dtype, batch, (2, 4, 3), c=c, beta=0.5)
            yield _case(rng, dtype, batch, (4, 1, 2), alpha=-1.5, beta=2.0)  # K = 1
            yield _case(rng, dtype, batch, (2, tolerances.GEMM_LENGTH, 3), (True, False), alpha=0.25)
        for alpha, beta in ((0.0, 1.0), (1.0, 0.0), (0.0, 0.0), (-1.0, -2.0), (2.0, 1.0)):
            yield _case(rng, dtype, (1, 2), (3, 4, 5), alpha=alpha, beta=beta)
            yield _case(rng, dtype, (), (3, 4, 5), alpha=alpha, beta=beta, special="inf_nan")
        yield _case(rng, dtype, (), (3, 4, 5), c=None, beta=3.0, name="beta_without_c")
        for activation in ACTIVATIONS:
            yield _case(rng, dtype, (2, 1), (3, 6, 4), (False, True), alpha=1.5, beta=-1.0, c="row", activation=activation)
    yield _case(rng, dtypes.FLOAT16, (1, 1), (2, 64, 3), alpha=1 / 16, c=None, special="overflow")
