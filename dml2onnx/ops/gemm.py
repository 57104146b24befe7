"""DML_OPERATOR_GEMM: OutputTensor = FusedActivation(Alpha * op(A) x op(B) + Beta * C) over the last
two dimensions (2 to 4 of them from feature level 4_0, 4 before; the leading ones are a batch), with
op() the TransA/TransB transform (DML_MATRIX_TRANSFORM_NONE or TRANSPOSE of the last two
dimensions). A is [..., M, K] ([..., K, M] transposed), B [..., K, N] ([..., N, K]), OutputTensor
[..., M, N]; every tensor has OutputTensor's DimensionCount and DataType.

What the page leaves open, as DirectML's own API computed it (README: GEMM):
- without a CTensor, Beta is ignored;
- C's Sizes must be OutputTensor's (DirectML broadcasts C only through its Strides: 0 on an axis);
- A's and B's batch sizes must be OutputTensor's (batch broadcasting is by strides too);
- Alpha 0 still multiplies: 0 * inf and NaN give NaN (no BLAS-style short cut), and likewise Beta 0
  times an infinite or NaN C;
- FLOAT16 accumulates in FLOAT32 (a sum of 3000 ones is 3000, not FLOAT16's 2048; the sum of
  60000, 60000, -60000 and 1 is 60000, not inf), with ALLOW_HALF_PRECISION_COMPUTATION too, and
  Alpha applies before the one rounding to FLOAT16 ((60000 + 60000) * 0.5 is 60000).

The candidate lowerings (choices.py): `gemm` (ONNX Gemm: every batch size 1, the matrices reshaped
to 2-D, TransA/TransB, Alpha, Beta and C in the one node; not with Alpha 0, nor Beta 0 with a C,
which BLAS skips) and `matmul` (MatMul on the batch, a Transpose where TransA/TransB, Mul by Alpha
and Add of Beta * C where they change anything). The
CUDA EP runs both on cuBLAS; Gemm does Alpha, Beta and C in the same call, so it is chosen where
it applies. The DirectML EP maps both straight back onto DML_OPERATOR_GEMM (DmlOperatorGemm.cpp,
DmlOperatorMatMul.cpp): the `dml` target emits them in FLOAT16 as they are. FLOAT16 is computed
in FLOAT32 on `portable` and `cpu` (the CPU EP has no FLOAT16 MatMul or Gemm on x64) and natively
on `cuda` and `dml` (cuBLAS and DirectML accumulate FLOAT16 in FLOAT32).
"""

from __future__ import annotations

import numpy as np

from dml2onnx.core import dtypes
from dml2onnx.core.desc import OperatorDesc
from dml2onnx.core.errors import ModelError
from dml2onnx.core.schema import OperatorSchema
from dml2onnx.graph.builder import GraphBuilder
from dml2onnx.graph.targets import DML_NODE_DOC
from dml2onnx.ops import activations, common
from dml2onnx.ops.family import Family

TENSORS = ("ATensor", "BTensor", "CTensor", "OutputTensor")
CANDIDATES = ("matmul", "gemm")  # choices.py
DML_PREFERENCE = ("gemm", "matmul")  # both map back onto DML_OPERATOR_GEMM; Gemm carries C too


def transposed(desc: OperatorDesc, field: str) -> bool:
    return desc["TransA" if field == "ATensor" else "TransB"] == "TRANSPOSE"


def dims(desc: OperatorDesc) -> tuple[int, int, int]:
    """(M, K, N) as A and B give them."""
    a, b = desc.tensor("ATensor").sizes, desc.tensor("BTensor").sizes
    m, k = (a[-1], a[-2]) if transposed(desc, "ATensor") else (a[-2], a[-1])
    n = b[-2] if transposed(desc, "BTensor") else b[-1]
    return m, k, n


# -- validation -------------------------------------------------------------------------------


def validate(desc: OperatorDesc) -> None:
    for name in TENSORS:
        common.check_same_type(desc, name, "OutputTensor")
        common.check_same_rank(desc, name, "OutputTensor")
    out = desc.tensor("OutputTensor").sizes
    a, b = desc.tensor("ATensor").sizes, desc.tensor("BTensor").sizes
    m, k, n = dims(desc)
    k_at = -1 if transposed(desc, "BTensor") else -2
    if b[k_at] != k:
        where = "second to last" if transposed(desc, "ATensor") else "last"
        raise ModelError(
            desc.at("BTensor", "Sizes", len(b) + k_at),
            f"must be K = {k} (ATensor's {where} size, TransA {desc['TransA']}), not {b[k_at]}",
        )
    rank = len(out)
    for name, sizes in (("ATensor", a), ("BTensor", b)):
        for i in range(rank - 2):
            if sizes[i] != out[i]:
                raise ModelError(
                    desc.at(name, "Sizes", i),
                    f"must be {out[i]} (OutputTensor.Sizes[{i}], the batch; broadcast it with a stride of 0), not {sizes[i]}",
                )
    for i, (want, why) in enumerate(((m, "M, from ATensor"), (n, "N, from BTensor"))):
        if out[rank - 2 + i] != want:
            raise ModelError(desc.at("OutputTensor", "Sizes", rank - 2 + i), f"must be {want} ({why}), not {out[rank - 2 + i]}")
    c = desc.optional_tensor("CTensor")
    if c is not None and c.sizes != out:
        raise ModelError(
            desc.at("CTensor", "Sizes"),
            f"must be OutputTensor's Sizes {list(out)} (broadcast C with strides of 0), not {list(c.sizes)}",
        )
    if desc["FusedActivation"] is not None:
        activations.validate(desc["FusedActivation"], desc.tensor("OutputTensor").sizes)


# -- choice -----------------------------------------------------------------------------------


def applies(desc: OperatorDesc, candidate: str, opset: int) -> bool:
    if candidate == "gemm":
        # ONNX Gemm is 2-D: every batch size must be 1. BLAS reads neither A and B when Alpha is 0
        # nor C when Beta is 0 (the CPU EP's Gemm skips C, cuBLAS may skip both), where DirectML
        # multiplies (NaN from an inf or NaN): MatMul, Mul and Add compute that.
        with_c = desc.optional_tensor("CTensor") is not None
        zero = np.float32(desc["Alpha"]) == 0 or (with_c and np.float32(desc["Beta"]) == 0)
        return not zero and all(s == 1 for s in desc.tensor("OutputTensor").sizes[:-2])
    return True


def choose(desc: OperatorDesc, target: str, options: tuple[str, ...]) -> str:
    """Gemm where it has something to fold: cuBLAS applies Alpha, Beta and C in the GEMM call
    itself, where MatMul takes a Mul and an Add after it (two more passes over the output). With
    Alpha 1 and no C, MatMul alone: 4096^3 on an H100 (ORT 1.31.1) took 0.20 ms as MatMul and
    0.22 ms as Gemm in FLOAT16 (0.99x and 0.89x PyTorch's matmul), 2.71 and 2.75 ms in FLOAT32."""
    bare = np.float32(desc["Alpha"]) == 1 and desc.optional_tensor("CTensor") is None
    return "gemm" if "gemm" in options and not bare else options[0]


# -- lowering ---------------------------------------------------------------------------------


def native_half(desc: OperatorDesc, b: GraphBuilder) -> bool:
    """FLOAT16 as it is: on the CUDA EP (cuBLAS accumulates in FLOAT32) and the DirectML EP (its
    GEMM is DirectML's), where Gemm applies Alpha itself or Alpha is 1 (a FLOAT16 MatMul rounds
    A x B, which may overflow before Alpha scales it back). The CPU EP has no FLOAT16 MatMul or
    Gemm on x64: FLOAT32 there."""
    return b.target.name in ("cuda", "dml") and (b.variant == "gemm" or np.float32(desc["Alpha"]) == 1)


def lower(desc: OperatorDesc, b: GraphBuilder, inputs: dict[str, str]) -> str:
    dtype = desc.tensor("OutputTensor").data_type
    act = desc["FusedActivation"]
    half = dtype == dtypes.FLOAT16
    up = half and not native_half(desc, b)  # FLOAT16 inputs computed in FLOAT32
    compute = dtypes.FLOAT32 if up else dtype
    values = {}
    for name, v in inputs.items():
        values[name] = b.cast(v, dtypes.FLOAT32, f"{name}_to_float32", f"{name} in FLOAT32") if up else v
    c = values.get("CTensor")
    y = _gemm(desc, b, values, c) if b.variant == "gemm" else _matmul(desc, b, values, c, compute)
    if act is not None:
        if compute != dtypes.FLOAT32 and not activations.exact_in_half(act):
            y = b.cast(y, dtypes.FLOAT32, "to_float32", "the activation's input in FLOAT32")
            compute = dtypes.FLOAT32
        prefix = b.prefix
        b.prefix = f"{prefix}/FusedActivation_{act.schema.name.removeprefix('ACTIVATION_')}"
        y = activations.lower(b, y, act, desc.tensor("OutputTensor").sizes)
        b.prefix = prefix
    if compute != dtype:
        y = b.cast(y, dtype, "to_float16", "result in FLOAT16")
    return y


def _gemm(desc: OperatorDesc, b: GraphBuilder, values: dict[str, str], c: str | None) -> str:
    """ONNX Gemm on the matrices (the batch sizes are all 1), back to the output's dimensions."""
    out = desc.tensor("OutputTensor").sizes
    rank = len(out)

    def matrix(name: str) -> str:
        v = values[name]
        sizes = desc.tensor(name).sizes
        return v if rank == 2 else b.reshape(v, sizes[-2:], f"{name}_matrix", f"{name} as a matrix (batch of 1)")

    ins = [matrix("ATensor"), matrix("BTensor")]
    beta = desc["Beta"]
    if c is not None:
        ins.append(matrix("CTensor"))
    y = b.node(
        "Gemm",
        ins,
        "gemm",
        DML_NODE_DOC if b.target.dml_nodes else "Alpha * op(A) x op(B) + Beta * C",
        transA=int(transposed(desc, "ATensor")),
        transB=int(transposed(desc, "BTensor")),
        alpha=float(np.float32(desc["Alpha"])),
        beta=float(np.float32(beta)) if c is not None else 1.0,
    )
    return y if rank == 2 else b.reshape(y, out, "output_sizes", "the result at the output's dimensions")


def _matmul(desc: OperatorDesc, b: GraphBuilder, values: dict[str, str], c: str | None, compute: dtypes.DataType) -> str:
    rank = desc.tensor("OutputTensor").rank
    swap = [*range(rank - 2), rank - 1, rank - 2]
    ab = []
    for name in ("ATensor", "BTensor"):
        v = values[name]
        if transposed(desc, name):
            v = b.transpose(v, swap, f"{name}_transposed", f"{name} with its last two dimensions swapped (Trans)")
        ab.append(v)
    y = b.node("MatMul", ab, "matmul", DML_NODE_DOC if b.target.dml_nodes else "op(A) x op(B)")
    alpha = desc["Alpha"]
    if np.float32(alpha) == 0:
        # 0 * (A x B), NaN where A x B is inf or NaN, as in DirectML: written as (A x B) - (A x B),
        # since ONNX Runtime folds a Mul by a constant into the MatMul (FusedMatMul's alpha), and
        # cuBLAS then skips A x B for alpha 0 (the H100's CUDA EP gave 0 where DirectML gives NaN)
        y = b.node("Sub", [y, y], "alpha_times", "0 * op(A) x op(B): NaN where the product is inf or NaN")
    elif np.float32(alpha) != 1:
        y = b.node("Mul", [y, b.scalar(alpha, compute, "alpha")], "alpha_times", "Alpha * op(A) x op(B)")
    if c is not None:
        beta = desc["Beta"]
        if np.float32(beta) != 1:  # Beta 0 still multiplies (NaN from an infinite C)
            c = b.node("Mul", [c, b.scalar(beta, compute, "beta")], "beta_times", "Beta * C")
        y = b.node("Add", [y, c], "plus_c", "... + Beta * C")
    return y


# -- reference --------------------------------------------------------------------------------


def reference(desc: OperatorDesc, inputs: dict[str, np.ndarray]) -> np.ndarray:
    """In FLOAT64 from the page's formula, rounded once to the output's type."""
    dtype = inputs["ATensor"].dtype
    a = inputs["ATensor"].astype(np.float64)
    bm = inputs["BTensor"].astype(np.float64)
    if transposed(desc, "ATensor"):
        a = np.swapaxes(a, -1, -2)
    if transposed(desc, "BTensor"):
        bm = np.swapaxes(bm, -1, -2)
    with np.errstate(all="ignore"):
        y = np.float64(np.float32(desc["Alpha"])) * _product(a, bm)
        if inputs.get("CTensor") is not None:
            y = y + np.float64(np.float32(desc["Beta"])) * inputs["CTensor"].astype(np.float64)
    if desc["FusedActivation"] is not None:
        y = activations.reference(y, desc["FusedActivation"])
    with np.errstate(all="ignore"):
        y = y.astype(np.float32)  # DirectML's FLOAT32 result, then FLOAT16's rounding of it
        return y.astype(dtype)


def _product(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a x b over the last two dimensions, the sum of the products in FLOAT64 (IEEE: an inf or a
    NaN in a row or column makes that element inf or NaN, as a GPU's sum does; numpy's matmul
    would too, but through BLAS)."""
    return np.sum(a[..., :, :, None] * b[..., None, :, :], axis=-2)


def examples(op: OperatorSchema) -> list[common.Example]:
    """onnx_ops: each type, 2-D with C, TransB, Alpha, Beta and a fused RELU (Gemm applies), and a
    batch of 2 with TransA (MatMul)."""
    out: list[common.Example] = []
    for t in common.example_types(op, "ATensor"):
        out.append(
            {
                "ATensor": common.example_tensor(t, [2, 3]),
                "BTensor": common.example_tensor(t, [4, 3]),
                "CTensor": common.example_tensor(t, [2, 4]),
                "OutputTensor": common.example_tensor(t, [2, 4]),
                "TransA": "DML_MATRIX_TRANSFORM_NONE",
                "TransB": "DML_MATRIX_TRANSFORM_TRANSPOSE",
                "Alpha": 0.5,
                "Beta": 2.0,
                "FusedActivation": {"Type": "ACTIVATION_RELU"},
            }
        )
        out.append(
            {
                "ATensor": common.example_tensor(t, [1, 2, 3, 2]),
                "BTensor": common.example_tensor(t, [1, 2, 3, 4]),
                "OutputTensor": common.example_tensor(t, [1, 2, 2, 4]),
                "TransA": "DML_MATRIX_TRANSFORM_TRANSPOSE",
                "TransB": "DML_MATRIX_TRANSFORM_NONE",
                "Alpha": 1.0,
                "Beta": 0.0,
            }
        )
    return out


OPERATOR_FAMILY = Family(
    ("GEMM",),
    validate,
    lower,
    reference,
    CANDIDATES,
    applies=applies,
    choose=choose,
    dml_preference=DML_PREFERENCE,
    examples=examples,
)
