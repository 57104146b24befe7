"""DML_OPERATOR_BATCH_NORMALIZATION_GRAD and DML_OPERATOR_BATCH_NORMALIZATION_TRAINING_GRAD: the
backpropagation of BATCH_NORMALIZATION (batch_normalization.py) and BATCH_NORMALIZATION_TRAINING
(batch_normalization_training.py). Both take InputTensor (x), InputGradientTensor (dy) and
MeanTensor, VarianceTensor, ScaleTensor (M, V, S), and write three outputs; the sums and means are
taken over the reduced axes, those where MeanTensor's (and so ScaleTensor's) size is 1 (n
elements per sum; batch_normalization_training's axes and length), and
s = 1 / sqrt(V + Epsilon):

    BATCH_NORMALIZATION_GRAD            OutputGradientTensor      = dy * (S * s)
    BATCH_NORMALIZATION_TRAINING_GRAD   OutputGradientTensor      = S * s * ((dy - mean(dy))
                                                                    - (x - M) * mean(dy * (x - M)) / (V + Epsilon))
    both                                OutputScaleGradientTensor = sum(dy * (x - M)) * s
                                        OutputBiasGradientTensor  = sum(dy)

The fields: the eight tensors have one DataType and DimensionCount; x, dy and OutputGradientTensor
one Sizes, M, V, S and the two parameter gradients another (each of M's sizes x's or 1: a size of
1 is a reduced axis, broadcast back where the formula needs it); FLOAT Epsilon. DirectMLSchema.h
(and so DxDispatch's parser) marks BATCH_NORMALIZATION_GRAD's Epsilon optional: omitted, it is
DxDispatch's default 0.0, written into the desc at validation (the graph and the packed desc
read one value). The pages' tables: FLOAT32 and FLOAT16, 1 to 8 dimensions, from feature level
3_1 (GRAD) and 4_1 (TRAINING_GRAD).

What the pages leave open, as DirectML's own API computed it (the DirectML.dll of onnxruntime-directml
1.24.4 under Wine; tests/ops/test_batch_normalization_grad.py; the 186 matrix cases match the reference
through its API, and every sixth through the DirectML EP):
- TRAINING_GRAD's page writes `Coef1 = InputGradient * (Input - mean(Input))` and
  `InputCentered = InputCentered - mean(InputCentered)` (a typo for Input - mean(Input)): DirectML
  takes mean(Input) as MeanTensor, as given (a MeanTensor off the batch's mean changes the result
  as the formula above says, not as the recomputed mean would), and VarianceTensor as given;
  mean(dy) and mean(dy * (x - M)) are the batch's own means over the reduced axes;
- with no reduced axis (M has x's Sizes) each "sum" and "mean" is the element itself: the scale
  gradient is dy * (x - M) * s, the bias gradient dy, TRAINING_GRAD's output
  -S * s * dy * (x - M)^2 / (V + Epsilon);
- NaN and infinities propagate through the formula (a NaN or an infinity of x or dy makes its
  group's sums NaN or infinite; V + Epsilon of 0 gives infinities and 0 * inf NaN; a negative one
  NaN): the reference's IEEE arithmetic throughout;
- FLOAT16: DirectML sums in FLOAT32 (256 gradients 2048, 1, 1, ... sum to 2303, not FLOAT16's
  2048 + 1 = 2048) but keeps TRAINING_GRAD's means in FLOAT16 between its steps (mean(dy) of
  8.996 rounds to 9: a result that cancels to 0 comes out 2**-7); the graphs compute in FLOAT32
  and round once (tolerances.batch_normalization_grad).

Lowering ("reduce_chain", FLOAT32; FLOAT16 cast there and back): Sub, Mul, ReduceSum over the
reduced axes (none where nothing is reduced), Add, Sqrt, Div, and for TRAINING_GRAD the means as
the sums divided by n. No ONNX node maps onto these operators on the DirectML EP (ONNX Runtime's
BatchNormalizationGrad is a training kernel outside its registrations): every target takes this
graph, whose nodes the CPU, CUDA and DirectML EPs all run in FLOAT32.

The candidate "leading_first" (every target; `choose` takes it where it applies: 0.69 ms against
reduce_chain's 1.71 on the H100, benchmarks/results/h100-part4-2026-11-23.md) is the same graph with
each of its two sums taken in two ReduceSums: first over the run of reduced axes from axis 0 (N of a
per-channel NCHW sum), then over the other reduced axes of that N-times smaller result. The CUDA
EP's ReduceSum takes its own row-reduction kernel (reduce_matrix_rows: ReduceSum sets
fast_reduction_, reduction_ops.cc and reduction_functions.cc's get_applicable_matrix_reduction) only
where the reduced axes, those of size 1 aside, are a leading run; axes (0, 2, 3) of NCHW go to
cuDNN's reduce_tensor_kernel (986 us of the 1363 on the H200 for 32x256x56x56,
benchmarks/results/h200-part4-2026-11-23.md). It applies where both runs hold an axis of more than
one element (`split_axes`); the sums' order changes, which tolerances.batch_normalization_grad's
bound allows (any order), and every formula step stays as above (the DirectML EP under Wine ran 31
of its 62 matrix cases, every node on it, matching). Nodes (TRAINING_GRAD, per channel): Add, Sqrt,
Sub, Mul, ReduceSum x4, Div x5, Sub, Mul, Sub, Mul."""

from __future__ import annotations

import itertools

import numpy as np

from dml2onnx.core import dtypes
from dml2onnx.core.desc import OperatorDesc
from dml2onnx.core.errors import ModelError
from dml2onnx.core.schema import OperatorSchema
from dml2onnx.graph.builder import GraphBuilder
from dml2onnx.ops import common
from dml2onnx.ops.batch_normalization_training import axes, length  # ScaleTensor's axes of size 1: MeanTensor's (same Sizes)
from dml2onnx.ops.family import Family

F32 = dtypes.FLOAT32
CANDIDATES = ("reduce_chain", "leading_first")  # choices.py
ROWS = ("BATCH_NORMALIZATION_GRAD", "BATCH_NORMALIZATION_TRAINING_GRAD")
INPUTS = ("InputTensor", "InputGradientTensor", "MeanTensor", "VarianceTensor", "ScaleTensor")
STATISTICS = ("MeanTensor", "VarianceTensor", "ScaleTensor", "OutputScaleGradientTensor", "OutputBiasGradientTensor")
ELEMENTS = ("InputTensor", "InputGradientTensor", "OutputGradientTensor")
DXDISPATCH_EPSILON = 0.0  # ParseFloat32Field's default for an omitted optional FLOAT


def validate(desc: OperatorDesc) -> None:
    for name in (*ELEMENTS[1:], *STATISTICS):
        common.check_same_type(desc, name, "InputTensor")
        common.check_same_rank(desc, name, "InputTensor")
    x, mean = desc.tensor("InputTensor"), desc.tensor("MeanTensor")
    for i, (s, full) in enumerate(zip(mean.sizes, x.sizes, strict=True)):
        if s not in (1, full):
            rule = f"must be {full} (InputTensor.Sizes[{i}]) or 1 to broadcast, not {s}"
            raise ModelError(desc.at("MeanTensor", "Sizes", i), rule)
    for name in STATISTICS[1:]:
        common.check_same_sizes(desc, name, "MeanTensor")
    for name in ELEMENTS[1:]:
        common.check_same_sizes(desc, name, "InputTensor")
    if desc["Epsilon"] is None:  # BATCH_NORMALIZATION_GRAD's optional Epsilon: DxDispatch's default
        desc.values["Epsilon"] = DXDISPATCH_EPSILON


def _epsilon(desc: OperatorDesc) -> np.float32:
    eps = desc["Epsilon"]
    return np.float32(DXDISPATCH_EPSILON if eps is None else eps)


def in_float32(b: GraphBuilder, inputs: dict[str, str], names: tuple[str, ...], dtype: dtypes.DataType) -> list[str]:
    """The named inputs in FLOAT32 (FLOAT16 cast; the graphs compute in FLOAT32 and round once)."""
    if dtype != dtypes.FLOAT16:
        return [inputs[n] for n in names]
    return [b.cast(inputs[n], F32, f"{n}_to_float32", f"{n} in FLOAT32") for n in names]


def in_type(b: GraphBuilder, outputs: dict[str, str], dtype: dtypes.DataType) -> dict[str, str]:
    """FLOAT32 results back in the tensors' `dtype` (one rounding for FLOAT16)."""
    if dtype != dtypes.FLOAT16:
        return outputs
    return {k: b.cast(v, dtype, f"{k}_to_float16", f"{k} in FLOAT16") for k, v in outputs.items()}


def split_axes(desc: OperatorDesc) -> tuple[list[int], list[int]] | None:
    """leading_first's two ReduceSums: the run of reduced axes from axis 0, then the other reduced
    axes; None where that is not two reductions of axes of more than one element each (the CUDA
    EP's fast row reduction takes a leading run alone, reduction_ops.cc; axes of size 1 aside)."""
    ax, sizes = axes(desc), desc.tensor("InputTensor").sizes
    lead = list(itertools.takewhile(lambda a: a[0] == a[1], enumerate(ax)))
    first = [a for _, a in lead]
    rest = [a for a in ax if a not in first]
    if any(sizes[a] > 1 for a in first) and any(sizes[a] > 1 for a in rest):
        return first, rest
    return None


def applies(desc: OperatorDesc, candidate: str, opset: int) -> bool:
    return candidate != "leading_first" or split_axes(desc) is not None


def choose(desc: OperatorDesc, target: str, options: tuple[str, ...]) -> str:
    """leading_first wherever it applies: on the H100, BATCH_NORMALIZATION_TRAINING_GRAD over
    32x256x56x56 FLOAT32 took 0.69 ms against reduce_chain's 1.71 (PyTorch's backward 0.31;
    benchmarks/results/h100-part4-2026-11-23.md). The other operator reduces the same axes."""
    return "leading_first" if "leading_first" in options else options[0]


def lower(desc: OperatorDesc, b: GraphBuilder, inputs: dict[str, str]) -> dict[str, str]:
    dtype = desc.tensor("InputTensor").data_type
    ax, n = axes(desc), length(desc)
    over = f"axes {ax}" if ax else "no axis (MeanTensor has the input's Sizes): the element itself"
    split = split_axes(desc) if b.variant == "leading_first" else None

    def total(v: str, step: str, doc: str) -> str:
        if split is not None:  # leading_first: the leading run (a row reduction), then the rest
            v = b.reduce("ReduceSum", v, split[0], f"{step}_leading", f"{doc} over the leading axes {split[0]}")
            return b.reduce("ReduceSum", v, split[1], step, f"{doc} over the other axes {split[1]}")
        return b.reduce("ReduceSum", v, ax, step, f"{doc} over {over}") if ax else v

    x, dy, mean, var, scale = in_float32(b, inputs, INPUTS, dtype)
    var_eps = b.node("Add", [var, b.scalar(float(_epsilon(desc)), F32, "epsilon")], "plus_epsilon", "V + Epsilon")
    std = b.node("Sqrt", [var_eps], "std", "sqrt(V + Epsilon)")
    centered = b.node("Sub", [x, mean], "centered", "x - M, M broadcast")
    product = b.node("Mul", [dy, centered], "dy_centered", "dy * (x - M)")
    dy_sum = total(dy, "bias_gradient", "sum(dy)")
    product_sum = total(product, "product_sum", "sum(dy * (x - M))")
    scale_grad = b.node("Div", [product_sum, std], "scale_gradient", "sum(dy * (x - M)) / sqrt(V + Epsilon)")
    factor = b.node("Div", [scale, std], "scale_over_std", "S / sqrt(V + Epsilon)")
    if desc.schema.name == "BATCH_NORMALIZATION_GRAD":
        grad = b.node("Mul", [dy, factor], "gradient", "dy * S / sqrt(V + Epsilon)")
    else:
        count = b.scalar(float(n), F32, "count")
        dy_mean = b.node("Div", [dy_sum, count], "dy_mean", "mean(dy)")
        product_mean = b.node("Div", [product_sum, count], "product_mean", "mean(dy * (x - M))")
        k = b.node("Div", [product_mean, var_eps], "projection", "mean(dy * (x - M)) / (V + Epsilon)")
        dy_centered = b.node("Sub", [dy, dy_mean], "dy_minus_mean", "dy - mean(dy)")
        along = b.node("Mul", [centered, k], "along_x", "(x - M) * mean(dy * (x - M)) / (V + Epsilon)")
        inner = b.node("Sub", [dy_centered, along], "inner", "dy - mean(dy) - (x - M) * ...")
        grad = b.node("Mul", [inner, factor], "gradient", "S / sqrt(V + Epsilon) * (...)")
    outputs = {"OutputGradientTensor": grad, "OutputScaleGradientTensor": scale_grad, "OutputBiasGradientTensor": dy_sum}
    return in_type(b, outputs, dtype)


def reference(desc: OperatorDesc, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The pages' formulas in FLOAT64 over the axes where MeanTensor is 1 (TRAINING_GRAD's
    mean(Input) being MeanTensor, as DirectML computes)."""
    t = inputs["InputTensor"].dtype
    x, dy, mean, var, scale = (inputs[n].astype(np.float64) for n in INPUTS)
    ax = tuple(axes(desc))
    with np.errstate(all="ignore"):
        var_eps = var + np.float64(_epsilon(desc))
        s = 1 / np.sqrt(var_eps)
        product = dy * (x - mean)
        scale_grad = product.sum(axis=ax, keepdims=True) * s
        bias_grad = dy.sum(axis=ax, keepdims=True)
        if desc.schema.name == "BATCH_NORMALIZATION_GRAD":
            grad = dy * (scale * s)
        else:
            n = length(desc)
            inner = (dy - bias_grad / n) - (x - mean) * (product.sum(axis=ax, keepdims=True) / n) / var_eps
            grad = scale * s * inner
    outputs = {"OutputGradientTensor": grad, "OutputScaleGradientTensor": scale_grad, "OutputBiasGradientTensor": bias_grad}
    return {k: v.astype(t) for k, v in outputs.items()}


def examples(op: OperatorSchema) -> list[common.Example]:
    """onnx_ops: each type, per channel and with nothing reduced."""
    out = []
    for t in common.example_types(op, "InputTensor"):
        x = common.example_tensor(t, [2, 3, 4, 5])
        for sizes in ([1, 3, 1, 1], [2, 3, 4, 5]):
            desc: common.Example = {n: x for n in ELEMENTS}
            desc |= {n: common.example_tensor(t, sizes) for n in STATISTICS} | {"Epsilon": 1e-5}
            out.append(desc)
    return out


OPERATOR_FAMILY = Family(
    ("BATCH_NORMALIZATION_GRAD", "BATCH_NORMALIZATION_TRAINING_GRAD"),
    validate,
    lower,
    reference,
    CANDIDATES,
    applies=applies,
    choose=choose,
    examples=examples,
)
