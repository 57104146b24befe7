"""DML_OPERATOR_ADAM_OPTIMIZER: one step of Adam. With X, M, V, G the input parameters, first and
second moments and gradient, T the training step and Beta1, Beta2, LearningRate, Epsilon the
desc's FLOATs, the page computes

    M' = Beta1 * M + (1 - Beta1) * G                        -> OutputFirstMomentTensor
    V' = Beta2 * V + (1 - Beta2) * G * G                    -> OutputSecondMomentTensor
    Alpha = sqrt(1 - Beta2^T) / (1 - Beta1^T)
    X' = X - LearningRate * Alpha * M' / (sqrt(V') + Epsilon) -> OutputParametersTensor

element by element. The fields: the seven parameter and moment tensors have one DataType (FLOAT32
or FLOAT16) and one Sizes, 4 dimensions (the page's table); TrainingStepTensor holds the step
count, every size 1. Its data type: the page's table and its constraints list it with the others
(FLOAT32, FLOAT16, the parameters' type), but its field text says "must be ... UINT32", and
DirectML's CreateOperator returns E_INVALIDARG for a FLOAT32 or FLOAT16 step (with FLOAT32 or
FLOAT16 parameters alike) and takes UINT32 (INT32 refused too): UINT32 here, as the field text.
The step is not updated by the operator (the page: add 1 yourself). Beta1 and Beta2 must be
finite (the page: "should be between 0.0 and 1.0"; DirectML's moment update is not the page's
formula at an infinite Beta, giving -inf where the formula's inf - inf is NaN); LearningRate and
Epsilon are any FLOAT. Each output may alias an input when bound (in-place): the graphs have
separate outputs. The generated table (tools/directml_docs.txt) gives TrainingStepTensor UINT32.

What the page leaves open, as DirectML's own API computed it (the DirectML.dll of
onnxruntime-directml 1.24.4 under Wine; tests/ops/test_adam_optimizer.py; the 66 matrix cases match the
reference through its API, and every third through the DirectML EP):
- T = 0 (where the page says training typically starts) gives Alpha = 1, not the formula's
  0 / 0 = NaN: no bias correction at step 0, whatever the Betas (Beta1 = Beta2 = 1 included);
- Beta^T is taken for T >= 1 as exp(T * ln(Beta)): a negative Beta gives NaN (even for an even T),
  Beta = 0 gives 0, Beta > 1 its power (so Alpha may be negative or NaN: sqrt of a negative);
- Epsilon is added after the square root (sqrt(V') + Epsilon), as the page writes it; the step is
  read as a FLOAT32 (T up to 2**32 - 1: Beta^T is 0 there for Beta < 1 anyway);
- FLOAT16 is computed in FLOAT32 and rounded once (DirectML too, within one FLOAT16 ulp).
The page accepts rank 4 only and so does the schema here; DirectML's API also takes 1 to 8
dimensions (and a step of rank 1).

Lowering ("elementwise", FLOAT32; FLOAT16 cast there and back): Mul and Add for the moments, Cast
of the step, Beta^T as Exp(T * ln(Beta)) (ln(Beta) a FLOAT32 constant, NaN for a negative Beta),
Sub, Sqrt, Div, and Where(T == 0, 1, Alpha); the CPU, CUDA and DirectML EPs all run these nodes
in FLOAT32. No ONNX node maps onto this operator on the DirectML EP (ONNX Runtime's training
AdamOptimizer/AdamW kernels are outside its registrations): every target takes this graph."""

from __future__ import annotations

import math

import numpy as np

from dml2onnx.core import dtypes
from dml2onnx.core.desc import OperatorDesc
from dml2onnx.core.errors import ModelError
from dml2onnx.core.schema import OperatorSchema
from dml2onnx.graph.builder import GraphBuilder
from dml2onnx.ops import common
from dml2onnx.ops.batch_normalization_grad import in_float32, in_type
from dml2onnx.ops.family import Family

F32 = dtypes.FLOAT32
CANDIDATES = ("elementwise",)  # choices.py
PARAMETERS = (
    "InputParametersTensor",
    "InputFirstMomentTensor",
    "InputSecondMomentTensor",
    "GradientTensor",
    "OutputParametersTensor",
    "OutputFirstMomentTensor",
    "OutputSecondMomentTensor",
)
STEP = "TrainingStepTensor"
STEP_TYPE = dtypes.UINT32


def validate(desc: OperatorDesc) -> None:
    for name in PARAMETERS[1:]:
        common.check_same_type(desc, name, PARAMETERS[0])
        common.check_same_sizes(desc, name, PARAMETERS[0])
    step = desc.tensor(STEP)
    if step.data_type != STEP_TYPE:
        raise ModelError(
            desc.at(STEP, "DataType"),
            f"must be UINT32 (the page's field text; DirectML refuses {step.data_type} with E_INVALIDARG), not {step.data_type}",
        )
    for i, s in enumerate(step.sizes):
        if s != 1:
            raise ModelError(desc.at(STEP, "Sizes", i), f"the training step is a scalar: every size 1, not {s}")
    for name in ("Beta1", "Beta2"):
        with np.errstate(over="ignore"):  # beyond FLOAT32's range: infinite, as DirectML reads it
            finite = math.isfinite(np.float32(desc[name]))
        if not finite:
            raise ModelError(desc.at(name), f"must be finite (the page: between 0.0 and 1.0), not {desc[name]}")


def _f32(desc: OperatorDesc, name: str) -> np.float32:
    """A FLOAT field as DirectML reads it."""
    return np.float32(desc[name])


def log_beta(beta: np.float32) -> np.float32:
    """ln(Beta) in FLOAT32: NaN for a negative Beta (Beta^T is NaN there, as DirectML's), -inf for 0."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.float32(np.log(np.float64(beta)))


def _moment(b: GraphBuilder, prior: str, new: str, beta: np.float32, step: str, doc: str) -> str:
    """beta * prior + (1 - beta) * new."""
    kept = b.node("Mul", [prior, b.scalar(float(beta), F32, f"{step}_beta")], f"{step}_kept", f"Beta * {doc}")
    rest = b.scalar(float(np.float32(1) - beta), F32, f"{step}_one_minus_beta")
    added = b.node("Mul", [new, rest], f"{step}_added", "(1 - Beta) * ...")
    return b.node("Add", [kept, added], step, f"the updated {doc}")


def _power(b: GraphBuilder, t: str, beta: np.float32, step: str) -> str:
    """Beta^T as exp(T * ln(Beta))."""
    scaled = b.node("Mul", [t, b.scalar(float(log_beta(beta)), F32, f"{step}_log")], f"{step}_exponent", "T * ln(Beta)")
    return b.node("Exp", [scaled], step, "Beta^T")


def lower(desc: OperatorDesc, b: GraphBuilder, inputs: dict[str, str]) -> dict[str, str]:
    dtype = desc.tensor(PARAMETERS[0]).data_type
    x, m, v, g = in_float32(b, inputs, PARAMETERS[:4], dtype)
    beta1, beta2 = _f32(desc, "Beta1"), _f32(desc, "Beta2")
    first = _moment(b, m, g, beta1, "first_moment", "first moment")
    square = b.node("Mul", [g, g], "gradient_squared", "G * G")
    second = _moment(b, v, square, beta2, "second_moment", "second moment")
    t = b.cast(inputs[STEP], F32, "step", "the training step T in FLOAT32")
    one = b.scalar(1.0, F32, "one")
    unbiased2 = b.node("Sub", [one, _power(b, t, beta2, "beta2_power")], "one_minus_beta2_power", "1 - Beta2^T")
    unbiased1 = b.node("Sub", [one, _power(b, t, beta1, "beta1_power")], "one_minus_beta1_power", "1 - Beta1^T")
    root = b.node("Sqrt", [unbiased2], "root", "sqrt(1 - Beta2^T)")
    alpha = b.node("Div", [root, unbiased1], "correction", "sqrt(1 - Beta2^T) / (1 - Beta1^T)")
    first_step = b.node("Equal", [t, b.scalar(0.0, F32, "zero")], "first_step", "T == 0")
    alpha = b.node("Where", [first_step, one, alpha], "alpha", "Alpha: 1 at T = 0 (DirectML), else the bias correction")
    lr = b.scalar(float(_f32(desc, "LearningRate")), F32, "learning_rate")
    rate = b.node("Mul", [alpha, lr], "rate", "LearningRate * Alpha")
    eps = b.scalar(float(_f32(desc, "Epsilon")), F32, "epsilon")
    denominator = b.node("Add", [b.node("Sqrt", [second], "second_root", "sqrt(V')"), eps], "denominator", "sqrt(V') + Epsilon")
    ratio = b.node("Div", [first, denominator], "ratio", "M' / (sqrt(V') + Epsilon)")
    update = b.node("Mul", [ratio, rate], "update", "LearningRate * Alpha * M' / (sqrt(V') + Epsilon)")
    params = b.node("Sub", [x, update], "parameters", "X - the update")
    outputs = {"OutputParametersTensor": params, "OutputFirstMomentTensor": first, "OutputSecondMomentTensor": second}
    return in_type(b, outputs, dtype)


def reference(desc: OperatorDesc, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The page's formula in FLOAT64, with Alpha = 1 at T = 0 and Beta^T NaN for a negative Beta
    (as DirectML computes)."""
    out_type = inputs[PARAMETERS[0]].dtype
    x, m, v, g = (inputs[n].astype(np.float64) for n in PARAMETERS[:4])
    t = float(np.asarray(inputs[STEP]).ravel()[0])
    beta1, beta2 = (np.float64(_f32(desc, n)) for n in ("Beta1", "Beta2"))
    lr, eps = (np.float64(_f32(desc, n)) for n in ("LearningRate", "Epsilon"))
    with np.errstate(all="ignore"):
        first = beta1 * m + (1 - beta1) * g
        second = beta2 * v + (1 - beta2) * g * g
        if t == 0:
            alpha = np.float64(1)
        else:
            p1, p2 = (np.nan if beta < 0 else beta**t for beta in (beta1, beta2))
            alpha = np.sqrt(1 - p2) / (1 - p1)
        params = x - lr * alpha * first / (np.sqrt(second) + eps)
    return dict(zip(PARAMETERS[4:], (r.astype(out_type) for r in (params, first, second)), strict=True))


def examples(op: OperatorSchema) -> list[common.Example]:
    """onnx_ops: each type."""
    out = []
    for t in common.example_types(op, PARAMETERS[0]):
        desc: common.Example = {n: common.example_tensor(t, [2, 3, 4, 5]) for n in PARAMETERS}
        desc[STEP] = common.example_tensor(STEP_TYPE.name, [1, 1, 1, 1])
        out.append(desc | {"LearningRate": 0.001, "Beta1": 0.9, "Beta2": 0.999, "Epsilon": 1e-8})
    return out


OPERATOR_FAMILY = Family(("ADAM_OPTIMIZER",), validate, lower, reference, CANDIDATES, examples=examples)
