"""The benchmark suite (run on the GPU machine; see benchmarks/README.md).

For each case it times every candidate lowering (dml2onnx/lowering/choices.py), the one chosen, and the
PyTorch eager equivalent of the same semantics, all in one run, with inputs and outputs resident
on the GPU. Writes JSON to stdout; tools/benchmarks_report.py turns it into docs/benchmarks.md.

    python3 benchmarks/suite.py [--quick] > results.json
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from dml2onnx import lowering  # noqa: E402
from dml2onnx.backends import runtime  # noqa: E402
from dml2onnx.commands import bench  # noqa: E402
from dml2onnx.core.desc import OperatorDesc, parse_operator_desc  # noqa: E402
from dml2onnx.core.operator_table import OPERATORS  # noqa: E402
from dml2onnx.core.schema import Kind  # noqa: E402
from dml2onnx.lowering import choices  # noqa: E402

# ArgMax both ways
DIRECTIONS_TOO = ("trailing-64M", "leading-64M", "trailing-64M-fp16", "leading-64M-fp16", "trailing-64M-short")
SIZES = {"64K": (256, 256), "1M": (1024, 1024), "16M": (4096, 4096), "64M": (4096, 16384), "256M": (16384, 16384)}


@dataclass
class Case:
    name: str
    group: str  # operator / pattern for the report
    elements: int
    desc: OperatorDesc
    inputs: dict[str, np.ndarray]
    torch_fn: Callable[[dict[str, Any]], Any]
    buffers: bool = False  # inputs are DirectML buffers (lowering's buffer_inputs): broadcasts stay compact
    torch_inputs: dict[str, np.ndarray] | None = None  # PyTorch's (shaped) inputs, where not `inputs`
    flops: int = 0  # the operator's floating-point operations (GEMM, convolution): TFLOP/s too
    baseline: str = ""  # what PyTorch runs, where it is not the same operation (part 4)


def t(dtype: str, sizes: tuple[int, ...] | list[int]) -> dict[str, Any]:
    return {"DataType": dtype, "Sizes": list(sizes)}


def desc(op: str, fields: dict[str, Any]) -> OperatorDesc:
    d = parse_operator_desc(op, fields, ("desc",), ("type",))
    lowering.validate(d)
    return d


def reduce_cases(quick: bool) -> Iterator[Case]:
    import torch

    rng = np.random.default_rng(0)
    layouts: list[tuple[str, tuple[int, ...], list[int], str]] = []
    for size, shape in SIZES.items():
        if quick and size not in ("1M", "64M"):
            continue
        layouts += [(f"trailing-{size}", shape, [1], "FLOAT32"), (f"leading-{size}", shape, [0], "FLOAT32")]
    layouts += [
        ("trailing-64M-fp16", SIZES["64M"], [1], "FLOAT16"),
        ("leading-64M-fp16", SIZES["64M"], [0], "FLOAT16"),
        # rows of 1024: the CUDA EP's warp-per-row LogSoftmax kernel (targets.cuda_warp_softmax)
        ("trailing-64M-short", (65536, 1024), [1], "FLOAT32"),
        ("leading-64M-short", (1024, 65536), [0], "FLOAT32"),
        # few long rows: ArgMax per chunk (two_stage), LogSoftmax's chunked_chain
        ("trailing-64M-4rows", (4, 2**24), [1], "FLOAT32"),
        ("trailing-64M-16rows", (16, 2**22), [1], "FLOAT32"),
        ("trailing-64M-64rows", (64, 2**20), [1], "FLOAT32"),
        ("trailing-64M-256rows", (256, 2**18), [1], "FLOAT32"),
        ("middle-64M", (64, 4096, 256), [1], "FLOAT32"),
        ("several-64M", (256, 1024, 256), [2, 0], "FLOAT32"),
        # several axes whose innermost run is short (inner_first's rows of 64)
        ("several-short-64M", (256, 4096, 64), [2, 0], "FLOAT32"),
        # several axes, the last run not innermost (no inner_first)
        ("several-kept-64M", (64, 1024, 256, 4), [2, 0], "FLOAT32"),
        ("all-64M", SIZES["64M"], [0, 1], "FLOAT32"),
    ]
    for label, shape, axes, dtype in layouts:
        n = int(np.prod(shape))
        x = rng.standard_normal(shape).astype(np.float16 if dtype == "FLOAT16" else np.float32)
        fields = {"InputTensor": t(dtype, shape), "OutputTensor": t(dtype, shape), "AxisCount": len(axes), "Axes": axes}
        dims = sorted(axes)

        def torch_log_softmax(v: dict[str, Any], dims: list[int] = dims) -> Any:
            x = v["InputTensor"]
            return torch.log_softmax(x, dims[0]) if len(dims) == 1 else x - torch.logsumexp(x, dims, keepdim=True)

        def torch_hardmax(v: dict[str, Any], dims: list[int] = dims) -> Any:
            x = v["InputTensor"]
            if len(dims) == 1:
                return torch.zeros_like(x).scatter_(dims[0], x.argmax(dims[0], keepdim=True), 1)
            kept = [i for i in range(x.dim()) if i not in dims]
            moved = x.permute(*kept, *dims)
            flat = moved.reshape(*moved.shape[: len(kept)], -1)
            hot = torch.zeros_like(flat).scatter_(-1, flat.argmax(-1, keepdim=True), 1).reshape(moved.shape)
            return hot.permute(*np.argsort(kept + dims).tolist())

        yield Case(
            f"LOG_SOFTMAX1 {label}",
            f"LOG_SOFTMAX1 {label.split('-')[0]}",
            n,
            desc("ACTIVATION_LOG_SOFTMAX1", fields),
            {"InputTensor": x},
            torch_log_softmax,
        )
        yield Case(
            f"HARDMAX1 {label}",
            f"HARDMAX1 {label.split('-')[0]}",
            n,
            desc("ACTIVATION_HARDMAX1", fields),
            {"InputTensor": x},
            torch_hardmax,
        )
        for direction in ("INCREASING", "DECREASING") if label in DIRECTIONS_TOO else ("INCREASING",):
            out_shape = [1 if i in axes else s for i, s in enumerate(shape)]
            afields = {
                "InputTensor": t(dtype, shape),
                "OutputTensor": t("INT64", out_shape),
                "AxisCount": len(axes),
                "Axes": axes,
                "AxisDirection": direction,
            }

            def torch_argmax(v: dict[str, Any], dims: list[int] = dims, last: bool = direction == "DECREASING") -> Any:
                x = v["InputTensor"]
                kept = [i for i in range(x.dim()) if i not in dims]
                flat = x.permute(*kept, *dims).reshape(*[x.shape[i] for i in kept], -1)
                if last:
                    return flat.shape[-1] - 1 - flat.flip(-1).argmax(-1)
                return flat.argmax(-1)

            yield Case(
                f"ARGMAX {label} {direction}",
                f"ARGMAX {label.split('-')[0]}",
                n,
                desc("ARGMAX", afields),
                {"InputTensor": x},
                torch_argmax,
            )
    for itype, direction in (("INT32", "INCREASING"), ("INT64", "INCREASING"), ("INT64", "DECREASING")):
        shape = SIZES["16M"] if quick else SIZES["64M"]
        x = rng.integers(-1000, 1000, size=shape).astype(itype.lower())
        afields = {
            "InputTensor": t(itype, shape),
            "OutputTensor": t("INT64", [shape[0], 1]),
            "AxisCount": 1,
            "Axes": [1],
            "AxisDirection": direction,
        }

        def torch_int_argmax(v: dict[str, Any], last: bool = direction == "DECREASING") -> Any:
            x = v["InputTensor"]
            return x.shape[1] - 1 - x.flip(1).argmax(1, keepdim=True) if last else x.argmax(1, keepdim=True)

        yield Case(
            f"ARGMAX trailing-{'16M' if quick else '64M'}-{itype.lower()}" + (" DECREASING" if direction == "DECREASING" else ""),
            "ARGMAX integers",
            x.size,
            desc("ARGMAX", afields),
            {"InputTensor": x},
            torch_int_argmax,
        )


def one_hot_cases(quick: bool) -> Iterator[Case]:
    import torch

    rng = np.random.default_rng(1)
    total = 2**26  # 64M output elements
    for depth in (16, 256, 4096, 65536) if not quick else (16, 4096):
        rows = total // depth
        for axis in (1, 0):
            index_shape = [rows, 1] if axis == 1 else [1, rows]
            out_shape = [rows, depth] if axis == 1 else [depth, rows]
            idx = rng.integers(0, depth, size=index_shape).astype(np.int32)
            fields = {
                "IndicesTensor": t("INT32", index_shape),
                "ValuesTensor": t("FLOAT32", [1, 2]),
                "OutputTensor": t("FLOAT32", out_shape),
                "Axis": axis,
            }

            def torch_one_hot(v: dict[str, Any], axis: int = axis, depth: int = depth) -> Any:
                i = v["IndicesTensor"]
                i = torch.where(i < 0, i + depth, i)
                shape = [1, 1]
                shape[axis] = depth
                positions = torch.arange(depth, device=i.device, dtype=i.dtype).view(shape)
                values = v["ValuesTensor"].reshape(-1)
                return torch.where(i == positions, values[1], values[0])

            yield Case(
                f"ONE_HOT depth {depth} axis {axis}",
                f"ONE_HOT axis {axis}",
                total,
                desc("ONE_HOT", fields),
                {"IndicesTensor": idx, "ValuesTensor": np.array([[0, 1]], np.float32)},
                torch_one_hot,
            )


def mvn_cases(quick: bool) -> Iterator[Case]:
    import torch
    import torch.nn.functional as F

    rng = np.random.default_rng(2)
    shapes = [(32, 64, 128, 128)] if quick else [(32, 64, 128, 128), (64, 64, 128, 128)]
    for shape in shapes:
        for cross in (False, True):
            for extras in (False, True):
                for dtype in ("FLOAT32", "FLOAT16") if not cross and not extras else ("FLOAT32",):
                    npt = np.float16 if dtype == "FLOAT16" else np.float32
                    fields: dict[str, Any] = {
                        "InputTensor": t(dtype, shape),
                        "OutputTensor": t(dtype, shape),
                        "CrossChannel": cross,
                        "NormalizeVariance": True,
                        "Epsilon": 1e-5,
                    }
                    inputs = {"InputTensor": rng.standard_normal(shape).astype(npt)}
                    if extras:
                        c = [1, shape[1], 1, 1]
                        fields |= {
                            "ScaleTensor": t(dtype, c),
                            "BiasTensor": t(dtype, c),
                            "FusedActivation": {"Type": "ACTIVATION_RELU"},
                        }
                        inputs |= {
                            "ScaleTensor": rng.uniform(0.5, 2, c).astype(npt),
                            "BiasTensor": rng.uniform(-1, 1, c).astype(npt),
                        }

                    def torch_mvn(v: dict[str, Any], cross: bool = cross, extras: bool = extras) -> Any:
                        x = v["InputTensor"]
                        y = F.layer_norm(x, x.shape[1:], eps=1e-5) if cross else F.instance_norm(x, eps=1e-5)
                        if extras:
                            y = torch.relu(y * v["ScaleTensor"] + v["BiasTensor"])
                        return y

                    label = f"{'cross' if cross else 'per-channel'}{' +scale/bias/relu' if extras else ''}"
                    yield Case(
                        f"MVN {label} {'x'.join(map(str, shape))} {dtype.lower()}",
                        f"MVN {label}",
                        int(np.prod(shape)),
                        desc("MEAN_VARIANCE_NORMALIZATION", fields),
                        inputs,
                        torch_mvn,
                    )


# The element-wise operators at 64M FLOAT32 elements (4096 x 16384): (label, operator, extra
# fields, the input's DataType, the output's, input value range, PyTorch's equivalent).
ELEMENT_WISE: list[tuple[str, str, dict[str, Any], str, str, tuple[float, float], Callable[..., Any]]] = [
    ("IDENTITY", "ELEMENT_WISE_IDENTITY", {}, "FLOAT32", "FLOAT32", (-2, 2), lambda x: x.clone()),
    ("ABS", "ELEMENT_WISE_ABS", {}, "FLOAT32", "FLOAT32", (-2, 2), lambda x: x.abs()),
    ("EXP", "ELEMENT_WISE_EXP", {}, "FLOAT32", "FLOAT32", (-2, 2), lambda x: x.exp()),
    ("LOG", "ELEMENT_WISE_LOG", {}, "FLOAT32", "FLOAT32", (0.5, 2), lambda x: x.log()),
    ("SQRT", "ELEMENT_WISE_SQRT", {}, "FLOAT32", "FLOAT32", (0.5, 2), lambda x: x.sqrt()),
    ("TANH", "ELEMENT_WISE_TANH", {}, "FLOAT32", "FLOAT32", (-2, 2), lambda x: x.tanh()),
    ("SIGN", "ELEMENT_WISE_SIGN", {}, "FLOAT32", "FLOAT32", (-2, 2), lambda x: x.sign()),
    (
        "ROUND",
        "ELEMENT_WISE_ROUND",
        {"RoundingMode": "HALVES_TO_NEAREST_EVEN"},
        "FLOAT32",
        "FLOAT32",
        (-9, 9),
        lambda x: x.round(),
    ),
    (
        "EXP ScaleBias",
        "ELEMENT_WISE_EXP",
        {"ScaleBias": {"Scale": 0.5, "Bias": 0.25}},
        "FLOAT32",
        "FLOAT32",
        (-2, 2),
        lambda x: (x * 0.5 + 0.25).exp(),
    ),
    ("CLIP", "ELEMENT_WISE_CLIP", {"Min": -1.0, "Max": 1.0}, "FLOAT32", "FLOAT32", (-2, 2), lambda x: x.clamp(-1, 1)),
    ("RELU", "ACTIVATION_RELU", {}, "FLOAT32", "FLOAT32", (-2, 2), lambda x: x.relu()),
    ("CAST to FLOAT16", "CAST", {}, "FLOAT32", "FLOAT16", (-2, 2), lambda x: x.half()),
    ("ADD", "ELEMENT_WISE_ADD", {}, "FLOAT32", "FLOAT32", (-2, 2), lambda a, b: a + b),
    ("SUBTRACT", "ELEMENT_WISE_SUBTRACT", {}, "FLOAT32", "FLOAT32", (-2, 2), lambda a, b: a - b),
    ("MULTIPLY", "ELEMENT_WISE_MULTIPLY", {}, "FLOAT32", "FLOAT32", (-2, 2), lambda a, b: a * b),
    ("DIVIDE", "ELEMENT_WISE_DIVIDE", {}, "FLOAT32", "FLOAT32", (0.5, 2), lambda a, b: a / b),
    ("MAX", "ELEMENT_WISE_MAX", {}, "FLOAT32", "FLOAT32", (-2, 2), lambda a, b: torch_module().maximum(a, b)),
    ("MEAN", "ELEMENT_WISE_MEAN", {}, "FLOAT32", "FLOAT32", (-2, 2), lambda a, b: (a + b) * 0.5),
    (
        "ADD1 + RELU",
        "ELEMENT_WISE_ADD1",
        {"FusedActivation": {"Type": "ACTIVATION_RELU"}},
        "FLOAT32",
        "FLOAT32",
        (-2, 2),
        lambda a, b: (a + b).relu(),
    ),
    (
        "MODULUS_FLOOR",
        "ELEMENT_WISE_MODULUS_FLOOR",
        {},
        "FLOAT32",
        "FLOAT32",
        (0.5, 9),
        lambda a, b: torch_module().remainder(a, b),
    ),
    (
        "GREATER_THAN",
        "ELEMENT_WISE_LOGICAL_GREATER_THAN",
        {},
        "FLOAT32",
        "UINT8",
        (-2, 2),
        lambda a, b: (a > b).to(torch_module().uint8),
    ),
    ("ADD int32", "ELEMENT_WISE_ADD", {}, "INT32", "INT32", (-1000, 1000), lambda a, b: a + b),
]
# Broadcast layouts of the second input of a two-input operator (DirectML's zero strides).
BROADCASTS = {"row": ([1, 16384], [0, 1]), "column": ([4096, 1], [1, 0]), "scalar": ([1, 1], [0, 0])}


def torch_module() -> Any:
    import torch

    return torch


def element_wise_cases(quick: bool) -> Iterator[Case]:
    rng = np.random.default_rng(3)
    shape = SIZES["16M"] if quick else SIZES["64M"]
    n = int(np.prod(shape))

    def values(dtype: str, low: float, high: float, sizes: tuple[int, ...] | list[int]) -> np.ndarray:
        if dtype.startswith("INT"):
            return rng.integers(int(low), int(high), size=sizes).astype(dtype.lower())
        return rng.uniform(low, high, size=sizes).astype(np.float32)

    for label, op, extra, dtype, out, (low, high), fn in ELEMENT_WISE:
        two = fn.__code__.co_argcount == 2
        names = ["ATensor", "BTensor"] if two else ["InputTensor"]
        layouts: list[tuple[str, Any]] = [("", None)]
        if two and label in ("ADD", "MULTIPLY"):
            layouts += list(BROADCASTS.items())
        for where, broadcast in layouts:
            fields = {name: t(dtype, shape) for name in names} | {"OutputTensor": t(out, shape)} | extra
            inputs = {name: values(dtype, low, high, shape) for name in names}
            if broadcast is not None:
                compact, strides = broadcast
                compact = [1 if c == 1 else s for c, s in zip(compact, shape, strict=True)]
                fields["BTensor"] = t(dtype, shape) | {"Strides": strides}
                inputs["BTensor"] = values(dtype, low, high, compact)

            def torch_fn(v: dict[str, Any], fn: Callable[..., Any] = fn, names: list[str] = names) -> Any:
                return fn(*(v[name] for name in names))

            yield Case(
                f"{label} {'broadcast ' + where + ' ' if where else ''}{'x'.join(map(str, shape))} {dtype.lower()}",
                f"element-wise {'broadcast' if where else 'two inputs' if two else 'one input'}",
                n,
                desc(op, fields),
                # the buffers: a broadcast input is its compact buffer, dense ones their elements
                {k: a.ravel() for k, a in inputs.items()},
                torch_fn,
                buffers=True,
                torch_inputs=inputs,  # PyTorch broadcasts the compact input itself
            )


# More element-wise operators at 64M elements, with their own inputs: (label, operator, extra
# fields, {input: (DataType, low, high, broadcast layout or None)}, the output's DataType, PyTorch's
# equivalent over the inputs in order).
Inputs = dict[str, tuple[str, float, float, str | None]]
F32_IN: Inputs = {"InputTensor": ("FLOAT32", -2, 2, None)}
MORE_ELEMENT_WISE: list[tuple[str, str, dict[str, Any], Inputs, str, Callable[..., Any]]] = [
    ("ACOS", "ELEMENT_WISE_ACOS", {}, {"InputTensor": ("FLOAT32", -1, 1, None)}, "FLOAT32", lambda x: x.acos()),
    ("SINH", "ELEMENT_WISE_SINH", {}, F32_IN, "FLOAT32", lambda x: x.sinh()),
    (
        "ATAN_YX",
        "ELEMENT_WISE_ATAN_YX",
        {},
        {"ATensor": ("FLOAT32", -2, 2, None), "BTensor": ("FLOAT32", -2, 2, None)},
        "FLOAT32",
        lambda a, b: torch_module().atan2(a, b),
    ),
    (
        "POW",
        "ELEMENT_WISE_POW",
        {},
        {"InputTensor": ("FLOAT32", 0.5, 2, None), "ExponentTensor": ("FLOAT32", -2, 2, None)},
        "FLOAT32",
        lambda x, e: x.pow(e),
    ),
    ("CONSTANT_POW 2", "ELEMENT_WISE_CONSTANT_POW", {"Exponent": 2.0}, F32_IN, "FLOAT32", lambda x: x * x),
    (
        "QUANTIZE_LINEAR row scales",
        "ELEMENT_WISE_QUANTIZE_LINEAR",
        {},
        {
            "InputTensor": ("FLOAT32", -2, 2, None),
            "ScaleTensor": ("FLOAT32", 0.01, 0.1, "row"),
            "ZeroPointTensor": ("UINT8", 100, 150, "row"),
        },
        "UINT8",
        lambda x, s, z: (x / s).round().add(z).clamp(0, 255).to(torch_module().uint8),
    ),
    (
        "IF",
        "ELEMENT_WISE_IF",
        {},
        {"ConditionTensor": ("UINT8", 0, 2, None), "ATensor": ("FLOAT32", -2, 2, None), "BTensor": ("FLOAT32", -2, 2, None)},
        "FLOAT32",
        lambda c, a, b: torch_module().where(c != 0, a, b),
    ),
    ("SWISH", "ACTIVATION_SWISH", {"SigmoidInputScale": 1.0}, F32_IN, "FLOAT32", lambda x: x * x.sigmoid()),
    (
        "HARD_SWISH",
        "ACTIVATION_HARD_SWISH",
        {"Alpha": 1 / 6, "Beta": 0.5},
        F32_IN,
        "FLOAT32",
        lambda x: torch_module().nn.functional.hardswish(x),
    ),
    (
        "PARAMETERIZED_RELU row slopes",
        "ACTIVATION_PARAMETERIZED_RELU",
        {},
        {"InputTensor": ("FLOAT32", -2, 2, None), "SlopeTensor": ("FLOAT32", 0, 0.5, "row")},
        "FLOAT32",
        lambda x, a: torch_module().where(x >= 0, x, a * x),
    ),
    (
        "RELU_GRAD",
        "ACTIVATION_RELU_GRAD",
        {},
        {"InputTensor": ("FLOAT32", -2, 2, None), "InputGradientTensor": ("FLOAT32", -2, 2, None)},
        "FLOAT32",
        lambda x, dy: torch_module().where(x > 0, dy, 0.0),
    ),
]


def more_element_wise_cases(quick: bool) -> Iterator[Case]:
    rng = np.random.default_rng(4)
    shape = SIZES["16M"] if quick else SIZES["64M"]
    for label, op, extra, spec, out, fn in MORE_ELEMENT_WISE:
        fields: dict[str, Any] = dict(extra)
        inputs = {}
        for name, (dtype, low, high, layout) in spec.items():
            fields[name] = t(dtype, shape)
            sizes = list(shape)
            if layout is not None:
                compact, strides = BROADCASTS[layout]
                sizes = [1 if c == 1 else s for c, s in zip(compact, shape, strict=True)]
                fields[name] |= {"Strides": strides}
            if dtype.startswith(("INT", "UINT")):
                inputs[name] = rng.integers(int(low), int(high), size=sizes).astype(dtype.lower())
            else:
                inputs[name] = rng.uniform(low, high, size=sizes).astype(np.float32)
        d = desc(op, fields | {schema_output(op): t(out, shape)})

        def torch_fn(v: dict[str, Any], fn: Callable[..., Any] = fn, names: tuple[str, ...] = tuple(spec)) -> Any:
            return fn(*(v[name] for name in names))

        yield Case(
            f"{label} {'x'.join(map(str, shape))} float32",
            "element-wise more",
            int(np.prod(shape)),
            d,
            {k: a.ravel() for k, a in inputs.items()},
            torch_fn,
            buffers=True,
            torch_inputs=inputs,
        )


def schema_output(op: str) -> str:
    """The operator's output field: OutputTensor, or OutputGradientTensor (RELU_GRAD)."""
    return OPERATORS[op].tensor_of(Kind.OUTPUT)[0].name


def gemm_cases(quick: bool) -> Iterator[Case]:
    """GEMM at 4096 x 4096 x 4096 in FLOAT32 and FLOAT16, and batched (8 x 4 of 1024^3), against
    PyTorch's matmul (cuBLAS), as TFLOP/s (2 M N K per matrix)."""
    import torch

    if "GEMM" not in OPERATORS:
        return
    rng = np.random.default_rng(5)
    n = 2048 if quick else 4096
    for label, batch, (m, k, nn), dtype in (
        ("GEMM", (1, 1), (n, n, n), "FLOAT32"),
        ("GEMM", (1, 1), (n, n, n), "FLOAT16"),
        ("GEMM batched", (8, 4), (1024, 1024, 1024), "FLOAT32"),
        ("GEMM batched", (8, 4), (1024, 1024, 1024), "FLOAT16"),
    ):
        npt = np.float16 if dtype == "FLOAT16" else np.float32
        a = rng.standard_normal((*batch, m, k)).astype(npt)
        b = rng.standard_normal((*batch, k, nn)).astype(npt)
        fields = {
            "ATensor": t(dtype, a.shape),
            "BTensor": t(dtype, b.shape),
            "OutputTensor": t(dtype, (*batch, m, nn)),
            "TransA": "DML_MATRIX_TRANSFORM_NONE",
            "TransB": "DML_MATRIX_TRANSFORM_NONE",
            "Alpha": 1.0,
            "Beta": 0.0,
        }
        yield Case(
            f"{label} {'x'.join(map(str, (*batch, m, k, nn)))} {dtype.lower()}",
            "GEMM",
            m * nn * batch[0] * batch[1],
            desc("GEMM", fields),
            {"ATensor": a, "BTensor": b},
            lambda v: torch.matmul(v["ATensor"], v["BTensor"]),
            flops=2 * m * nn * k * batch[0] * batch[1],
        )


def convolution_cases(quick: bool) -> Iterator[Case]:
    """Convolutions against PyTorch's (cuDNN), as TFLOP/s (2 x output elements x C/G x kernel
    volume): a ResNet-50 3x3 layer, a 1x1 layer, a depthwise layer, a transposed convolution and a
    3-D convolution."""
    import torch.nn.functional as F

    if "CONVOLUTION" not in OPERATORS:
        return
    rng = np.random.default_rng(6)
    batch = 8 if quick else 32
    layers = [
        # label, input sizes, filter sizes, group, stride, padding, direction
        ("3x3 (ResNet-50 conv3)", (batch, 128, 28, 28), (128, 128, 3, 3), 1, 1, 1, "FORWARD"),
        ("1x1 (ResNet-50 conv2)", (batch, 256, 56, 56), (64, 256, 1, 1), 1, 1, 0, "FORWARD"),
        ("depthwise 3x3", (batch, 256, 56, 56), (256, 1, 3, 3), 256, 1, 1, "FORWARD"),
        ("transposed 2x2 stride 2", (batch, 128, 28, 28), (128, 64, 2, 2), 1, 2, 0, "BACKWARD"),
        ("3-D 3x3x3", (batch // 4, 32, 16, 56, 56), (32, 32, 3, 3, 3), 1, 1, 1, "FORWARD"),
    ]
    for label, x_sizes, w_sizes, group, stride, pad, direction in layers:
        spatial = len(x_sizes) - 2
        x = rng.standard_normal(x_sizes).astype(np.float32)
        w = (rng.standard_normal(w_sizes) * 0.1).astype(np.float32)
        if direction == "FORWARD":
            out_c = w_sizes[0]
            out_sp = [(s + 2 * pad - k) // stride + 1 for s, k in zip(x_sizes[2:], w_sizes[2:], strict=True)]
        else:
            out_c = w_sizes[1] * group
            out_sp = [(s - 1) * stride - 2 * pad + k for s, k in zip(x_sizes[2:], w_sizes[2:], strict=True)]
        out_sizes = (x_sizes[0], out_c, *out_sp)
        fields = {
            "InputTensor": t("FLOAT32", x_sizes),
            "FilterTensor": t("FLOAT32", w_sizes),
            "OutputTensor": t("FLOAT32", out_sizes),
            "Mode": "DML_CONVOLUTION_MODE_CROSS_CORRELATION",
            "Direction": f"DML_CONVOLUTION_DIRECTION_{direction}",
            "DimensionCount": spatial,
            "Strides": [stride] * spatial,
            "Dilations": [1] * spatial,
            "StartPadding": [pad] * spatial,
            "EndPadding": [pad] * spatial,
            "OutputPadding": [0] * spatial,
            "GroupCount": group,
        }
        macs_per_output = (w_sizes[1] if direction == "FORWARD" else x_sizes[1] // group) * int(np.prod(w_sizes[2:]))
        if direction == "BACKWARD":  # each input element scatters into a kernel window
            flops = 2 * int(np.prod(x_sizes)) * w_sizes[1] * int(np.prod(w_sizes[2:]))
        else:
            flops = 2 * int(np.prod(out_sizes)) * macs_per_output

        def torch_conv(
            v: dict[str, Any],
            spatial: int = spatial,
            stride: int = stride,
            pad: int = pad,
            group: int = group,
            direction: str = direction,
        ) -> Any:
            if direction == "BACKWARD":
                return F.conv_transpose2d(v["InputTensor"], v["FilterTensor"], stride=stride, padding=pad, groups=group)
            conv = F.conv3d if spatial == 3 else F.conv2d
            return conv(v["InputTensor"], v["FilterTensor"], stride=stride, padding=pad, groups=group)

        yield Case(
            f"CONVOLUTION {label} {'x'.join(map(str, x_sizes))} float32",
            "CONVOLUTION",
            int(np.prod(out_sizes)),
            desc("CONVOLUTION", fields),
            {"InputTensor": x, "FilterTensor": w},
            torch_conv,
            flops=flops,
        )


def pooling_normalization_cases(quick: bool) -> Iterator[Case]:
    """ResNet-50's max pooling (3x3, stride 2) and global average pooling, batch normalization
    (inference, fused ReLU), AlexNet's local response normalization and an L2 normalization over
    channels, against PyTorch's, as GB/s against the copy bandwidth (they read and write memory
    once: no FLOP/s to speak of)."""
    import torch
    import torch.nn.functional as F

    rng = np.random.default_rng(7)
    batch = 8 if quick else 32

    def pool(op: str, label: str, sizes: tuple[int, ...], window: int, stride: int, pad: int, **more: Any) -> Case:
        out = (*sizes[:2], *[(s + 2 * pad - window) // stride + 1 for s in sizes[2:]])
        fields = {
            "InputTensor": t("FLOAT32", sizes),
            "OutputTensor": t("FLOAT32", out),
            "DimensionCount": 2,
            "Strides": [stride] * 2,
            "WindowSize": [window] * 2,
            "StartPadding": [pad] * 2,
            "EndPadding": [pad] * 2,
        } | more

        def torch_pool(v: dict[str, Any]) -> Any:
            if op == "MAX_POOLING1":
                return F.max_pool2d(v["InputTensor"], window, stride, pad)
            return F.avg_pool2d(v["InputTensor"], window, stride, pad, count_include_pad=False)

        x = rng.standard_normal(sizes).astype(np.float32)
        return Case(
            f"{op} {label} {'x'.join(map(str, sizes))} float32",
            op,
            int(np.prod(out)),
            desc(op, fields),
            {"InputTensor": x},
            torch_pool,
        )

    yield pool("MAX_POOLING1", "3x3 stride 2 (ResNet-50 stem)", (batch, 64, 112, 112), 3, 2, 1)
    yield pool(
        "AVERAGE_POOLING1", "global 7x7 (ResNet-50 head)", (batch, 2048, 7, 7), 7, 1, 0, Dilations=[1, 1], IncludePadding=False
    )

    sizes = (batch, 256, 56, 56)
    channel = (1, 256, 1, 1)
    for dtype in ("FLOAT32", "FLOAT16"):
        npt = np.float16 if dtype == "FLOAT16" else np.float32
        params = {
            name: rng.uniform(0.5, 1.5, channel).astype(npt)
            for name in ("MeanTensor", "VarianceTensor", "ScaleTensor", "BiasTensor")
        }
        fields = {"InputTensor": t(dtype, sizes), "OutputTensor": t(dtype, sizes), "Spatial": True, "Epsilon": 1e-5}
        fields |= {name: t(dtype, channel) for name in params} | {"FusedActivation": {"Type": "ACTIVATION_RELU"}}

        def torch_bn(v: dict[str, Any]) -> Any:
            flat = {k: v[k].reshape(-1) for k in ("MeanTensor", "VarianceTensor", "ScaleTensor", "BiasTensor")}
            y = F.batch_norm(
                v["InputTensor"], flat["MeanTensor"], flat["VarianceTensor"], flat["ScaleTensor"], flat["BiasTensor"], eps=1e-5
            )
            return torch.relu(y)

        inputs = {"InputTensor": rng.standard_normal(sizes).astype(npt)} | params
        yield Case(
            f"BATCH_NORMALIZATION +relu {'x'.join(map(str, sizes))} {dtype.lower()}",
            "BATCH_NORMALIZATION",
            int(np.prod(sizes)),
            desc("BATCH_NORMALIZATION", fields),
            inputs,
            torch_bn,
        )

    lrn = (batch, 96, 55, 55)
    fields = {"InputTensor": t("FLOAT32", lrn), "OutputTensor": t("FLOAT32", lrn), "CrossChannel": True, "LocalSize": 5}
    fields |= {"Alpha": 1e-4, "Beta": 0.75, "Bias": 2.0}
    yield Case(
        f"LOCAL_RESPONSE_NORMALIZATION across 5 channels (AlexNet) {'x'.join(map(str, lrn))} float32",
        "LOCAL_RESPONSE_NORMALIZATION",
        int(np.prod(lrn)),
        desc("LOCAL_RESPONSE_NORMALIZATION", fields),
        {"InputTensor": rng.standard_normal(lrn).astype(np.float32)},
        lambda v: F.local_response_norm(v["InputTensor"], 5, alpha=1e-4, beta=0.75, k=2.0),
    )
    fields = {"InputTensor": t("FLOAT32", sizes), "OutputTensor": t("FLOAT32", sizes), "Axis": 1, "Epsilon": 1e-5, "P": 2}
    yield Case(
        f"LP_NORMALIZATION L2 over channels {'x'.join(map(str, sizes))} float32",
        "LP_NORMALIZATION",
        int(np.prod(sizes)),
        desc("LP_NORMALIZATION", fields),
        {"InputTensor": rng.standard_normal(sizes).astype(np.float32)},
        lambda v: F.normalize(v["InputTensor"], p=2.0, dim=1, eps=1e-5),
    )


def data_movement_cases(quick: bool) -> Iterator[Case]:
    """Part 3's data movement at 64M elements (2M with --quick) FLOAT32, against PyTorch's own
    (cat, split, pixel_shuffle, cumsum), as GB/s against the copy bandwidth: the issue asks 70% of
    it for moving data, 50% for cumulative sums."""
    import torch
    import torch.nn.functional as F

    rng = np.random.default_rng(8)
    n, c, h, w = (2, 32, 128, 256) if quick else (8, 64, 256, 512)  # 2M or 64M elements
    x = rng.standard_normal((n, c, h, w)).astype(np.float32)
    half = c // 2
    if "JOIN" in OPERATORS:
        parts = [x[:, :half].copy(), x[:, half:].copy()]
        fields = {
            "InputCount": 2,
            "InputTensors": [t("FLOAT32", p.shape) for p in parts],
            "OutputTensor": t("FLOAT32", x.shape),
            "Axis": 1,
        }
        yield Case(
            f"JOIN two halves along channels {'x'.join(map(str, x.shape))} float32",
            "JOIN",
            x.size,
            desc("JOIN", fields),
            {"InputTensors[0]": parts[0], "InputTensors[1]": parts[1]},
            lambda v: torch.cat([v["InputTensors[0]"], v["InputTensors[1]"]], dim=1),
        )
    if "SPLIT" in OPERATORS:
        fields = {
            "InputTensor": t("FLOAT32", x.shape),
            "OutputCount": 2,
            "OutputTensors": [t("FLOAT32", (n, half, h, w))] * 2,
            "Axis": 1,
        }
        yield Case(
            f"SPLIT into two along channels {'x'.join(map(str, x.shape))} float32",
            "SPLIT",
            x.size,
            desc("SPLIT", fields),
            {"InputTensor": x},
            lambda v: [p.contiguous() for p in torch.split(v["InputTensor"], half, dim=1)],
        )
    if "DEPTH_TO_SPACE1" in OPERATORS:
        fields = {
            "InputTensor": t("FLOAT32", x.shape),
            "OutputTensor": t("FLOAT32", (n, c // 4, h * 2, w * 2)),
            "BlockSize": 2,
            "Order": "DML_DEPTH_SPACE_ORDER_COLUMN_ROW_DEPTH",
        }
        yield Case(
            f"DEPTH_TO_SPACE1 block 2 (pixel shuffle) {'x'.join(map(str, x.shape))} float32",
            "DEPTH_TO_SPACE1",
            x.size,
            desc("DEPTH_TO_SPACE1", fields),
            {"InputTensor": x},
            lambda v: F.pixel_shuffle(v["InputTensor"], 2),
        )
    if "SLICE1" in OPERATORS:  # the second half of the last axis, reversed
        fields = {
            "InputTensor": t("FLOAT32", x.shape),
            "OutputTensor": t("FLOAT32", (n, c, h, w // 2)),
            "DimensionCount": 4,
            "InputWindowOffsets": [0, 0, 0, w // 2],
            "InputWindowSizes": [n, c, h, w // 2],
            "InputWindowStrides": [1, 1, 1, -1],
        }
        yield Case(
            f"SLICE1 half of the last axis, reversed {'x'.join(map(str, x.shape))} float32",
            "SLICE1",
            x.size // 2,
            desc("SLICE1", fields),
            {"InputTensor": x},
            lambda v: torch.flip(v["InputTensor"][..., w // 2 :], dims=[3]),
        )
    if "PADDING1" in OPERATORS:  # reflection by 1 on both spatial axes
        fields = {
            "InputTensor": t("FLOAT32", x.shape),
            "OutputTensor": t("FLOAT32", (n, c, h + 2, w + 2)),
            "PaddingMode": "DML_PADDING_MODE_REFLECTION",
            "PaddingValueDataType": "FLOAT32",
            "PaddingValue": 0.0,
            "DimensionCount": 4,
            "StartPadding": [0, 0, 1, 1],
            "EndPadding": [0, 0, 1, 1],
        }
        yield Case(
            f"PADDING1 reflection by 1 {'x'.join(map(str, x.shape))} float32",
            "PADDING1",
            n * c * (h + 2) * (w + 2),
            desc("PADDING1", fields),
            {"InputTensor": x},
            lambda v: F.pad(v["InputTensor"], (1, 1, 1, 1), mode="reflect"),
        )
    if "TILE" in OPERATORS:  # a quarter of the tensor repeated twice along two axes
        quarter = x[:, :, : h // 2, : w // 2].copy()
        fields = {
            "InputTensor": t("FLOAT32", quarter.shape),
            "OutputTensor": t("FLOAT32", x.shape),
            "RepeatsCount": 4,
            "Repeats": [1, 1, 2, 2],
        }
        yield Case(
            f"TILE 2x2 {'x'.join(map(str, quarter.shape))} float32",
            "TILE",
            x.size,
            desc("TILE", fields),
            {"InputTensor": quarter},
            lambda v: v["InputTensor"].repeat(1, 1, 2, 2),
        )
    if "TOP_K1" in OPERATORS:  # the 8 largest of each row of 512: PyTorch's topk is the bar
        rows = x.reshape(-1, w)
        fields = {
            "InputTensor": t("FLOAT32", (1, 1, *rows.shape)),
            "OutputValueTensor": t("FLOAT32", (1, 1, rows.shape[0], 8)),
            "OutputIndexTensor": t("UINT32", (1, 1, rows.shape[0], 8)),
            "Axis": 3,
            "K": 8,
            "AxisDirection": "DML_AXIS_DIRECTION_DECREASING",
        }
        yield Case(
            f"TOP_K1 8 of each row of {w} {rows.shape[0]}x{w} float32",
            "TOP_K1",
            rows.size,
            desc("TOP_K1", fields),
            {"InputTensor": rows.reshape(1, 1, *rows.shape)},
            lambda v: torch.topk(v["InputTensor"], 8, dim=3),
        )
    if "CUMULATIVE_SUMMATION" in OPERATORS:
        fields = {
            "InputTensor": t("FLOAT32", x.shape),
            "OutputTensor": t("FLOAT32", x.shape),
            "Axis": 3,
            "AxisDirection": "DML_AXIS_DIRECTION_INCREASING",
            "HasExclusiveSum": False,
        }
        yield Case(
            f"CUMULATIVE_SUMMATION along the last axis ({w}) {'x'.join(map(str, x.shape))} float32",
            "CUMULATIVE_SUMMATION",
            x.size,
            desc("CUMULATIVE_SUMMATION", fields),
            {"InputTensor": x},
            lambda v: torch.cumsum(v["InputTensor"], dim=3),
        )
    if "GATHER" in OPERATORS:  # the channels in a random order: index_select
        order = rng.permutation(c).astype(np.int32)
        fields = {
            "InputTensor": t("FLOAT32", x.shape),
            "IndicesTensor": t("INT32", (1, 1, 1, c)),
            "OutputTensor": t("FLOAT32", x.shape),
            "Axis": 1,
            "IndexDimensions": 1,
        }
        yield Case(
            f"GATHER channels in a random order {'x'.join(map(str, x.shape))} float32",
            "GATHER",
            x.size,
            desc("GATHER", fields),
            {"InputTensor": x, "IndicesTensor": order.reshape(1, 1, 1, c)},
            lambda v: torch.index_select(v["InputTensor"], 1, v["IndicesTensor"].reshape(-1)),
        )
    # Each row of the last axis in its own random order, as INT32 indices the size of the tensor
    rows = np.argsort(rng.random((n * c * h // 8, w)), axis=1).astype(np.int32)
    shuffle = np.tile(rows, (8, 1)).reshape(x.shape)
    if "GATHER_ELEMENTS" in OPERATORS:
        fields = {
            "InputTensor": t("FLOAT32", x.shape),
            "IndicesTensor": t("INT32", x.shape),
            "OutputTensor": t("FLOAT32", x.shape),
            "Axis": 3,
        }
        yield Case(
            f"GATHER_ELEMENTS rows shuffled {'x'.join(map(str, x.shape))} float32",
            "GATHER_ELEMENTS",
            x.size,
            desc("GATHER_ELEMENTS", fields),
            {"InputTensor": x, "IndicesTensor": shuffle},
            lambda v: torch.gather(v["InputTensor"], 3, v["IndicesTensor"].long()),
        )
    if "SCATTER" in OPERATORS:
        fields = {
            "InputTensor": t("FLOAT32", x.shape),
            "IndicesTensor": t("INT32", x.shape),
            "UpdatesTensor": t("FLOAT32", x.shape),
            "OutputTensor": t("FLOAT32", x.shape),
            "Axis": 3,
        }
        yield Case(
            f"SCATTER rows shuffled {'x'.join(map(str, x.shape))} float32",
            "SCATTER",
            x.size,
            desc("SCATTER", fields),
            {"InputTensor": x, "IndicesTensor": shuffle, "UpdatesTensor": x[::-1].copy()},
            lambda v: v["InputTensor"].scatter(3, v["IndicesTensor"].long(), v["UpdatesTensor"]),
        )
    small = x[:, :, : h // 2, : w // 2].copy()  # doubled to 64M
    for mode, torch_mode in (("NEAREST_NEIGHBOR", "nearest"), ("LINEAR", "bilinear")):
        if "RESAMPLE" not in OPERATORS:
            break
        fields = {
            "InputTensor": t("FLOAT32", small.shape),
            "OutputTensor": t("FLOAT32", x.shape),
            "InterpolationMode": f"DML_INTERPOLATION_MODE_{mode}",
            "ScaleCount": 4,
            "Scales": [1.0, 1.0, 2.0, 2.0],
        }
        yield Case(
            f"RESAMPLE {mode.lower()} 2x {'x'.join(map(str, small.shape))} float32",
            "RESAMPLE",
            x.size,
            desc("RESAMPLE", fields),
            {"InputTensor": small},
            lambda v, m=torch_mode: F.interpolate(v["InputTensor"], scale_factor=2, mode=m),
        )
    if "CUMULATIVE_PRODUCT" in OPERATORS:
        fields = {
            "InputTensor": t("FLOAT32", x.shape),
            "OutputTensor": t("FLOAT32", x.shape),
            "Axis": 1,
            "AxisDirection": "DML_AXIS_DIRECTION_DECREASING",
            "HasExclusiveProduct": True,
        }
        yield Case(
            f"CUMULATIVE_PRODUCT exclusive, backwards along channels {'x'.join(map(str, x.shape))} float32",
            "CUMULATIVE_PRODUCT",
            x.size,
            desc("CUMULATIVE_PRODUCT", fields),
            {"InputTensor": x},
            lambda v: torch.cat(
                [
                    torch.flip(torch.cumprod(torch.flip(v["InputTensor"][:, 1:], [1]), 1), [1]),
                    torch.ones_like(v["InputTensor"][:, :1]),
                ],
                1,
            ),
        )


def part4_cases(quick: bool) -> Iterator[Case]:
    """Part 4 (issue 23): the integer matrix multiply and convolution as TOPS (2 x multiply-adds)
    beside the GPU's INT8 peak, LSTM and GRU against torch.nn.LSTM/GRU (cuDNN, FLOAT32), the
    pooling and batch normalization gradients and RANDOM_GENERATOR as GB/s against the copy
    bandwidth. Each case's `baseline` says what PyTorch runs: it has no eager int8 convolution on
    CUDA (FLOAT32's instead) and torch._int_mm only for INT8 x INT8 (a float matmul where it is
    missing). Builds without PyTorch (`--list`): it is imported where a baseline runs."""
    rng = np.random.default_rng(23)
    yield from integer_cases(rng, quick)
    yield from recurrent_cases(rng, quick)
    yield from gradient_cases(rng, quick)
    n = 1 << 20 if quick else 1 << 26
    sizes = (1, 1, 4096, n // 4096)
    state = np.array([[[[1, 2, 3, 4, 0x12345678, 0x9ABCDEF0]]]], np.uint32)
    fields = {
        "InputStateTensor": t("UINT32", state.shape),
        "OutputTensor": t("UINT32", sizes),
        "OutputStateTensor": t("UINT32", state.shape),
        "Type": "DML_RANDOM_GENERATOR_TYPE_PHILOX_4X32_10",
    }

    def torch_random(v: dict[str, Any], sizes: tuple[int, ...] = sizes) -> Any:
        import torch

        # Philox 4x32-10 too (CUDA's default generator); random_() on INT32 fills 31 random bits
        return torch.empty(sizes, dtype=torch.int32, device="cuda").random_()

    yield Case(
        f"RANDOM_GENERATOR philox {'x'.join(map(str, sizes))} uint32",
        "RANDOM_GENERATOR",
        n,
        desc("RANDOM_GENERATOR", fields),
        {"InputStateTensor": state},
        torch_random,
        baseline="torch.Tensor.random_ (INT32, CUDA's Philox 4x32-10)",
    )


def int_mm() -> Callable[[Any, Any], Any] | None:
    """torch._int_mm (INT8 x INT8 -> INT32 on the tensor cores; M > 16, K and N multiples of 8), or
    None where this PyTorch lacks it."""
    import torch

    return getattr(torch, "_int_mm", None)


def integer_cases(rng: np.random.Generator, quick: bool) -> Iterator[Case]:
    """MATRIX_MULTIPLY_INTEGER INT8 and QUANTIZED_LINEAR_MATRIX_MULTIPLY UINT8 at 4096^3 (256^3
    with --quick), CONVOLUTION_INTEGER INT8 on ResNet-50's 3x3 layer."""
    n = 256 if quick else 4096
    a = rng.integers(-128, 128, (n, n), dtype=np.int8)
    b = rng.integers(-128, 128, (n, n), dtype=np.int8)
    fields = {"ATensor": t("INT8", a.shape), "BTensor": t("INT8", b.shape), "OutputTensor": t("INT32", (n, n))}

    def torch_mm(v: dict[str, Any]) -> Any:
        mm = int_mm()
        if mm is None:  # said in the case's baseline
            return v["ATensor"].float() @ v["BTensor"].float()
        return mm(v["ATensor"], v["BTensor"])

    try:
        has_int_mm = int_mm() is not None
    except ImportError:  # --list without PyTorch
        has_int_mm = True
    mm_baseline = "torch._int_mm (INT8 -> INT32)" if has_int_mm else "FLOAT32 matmul (this PyTorch has no torch._int_mm)"
    yield Case(
        f"MATRIX_MULTIPLY_INTEGER {n}x{n}x{n} int8",
        "MATRIX_MULTIPLY_INTEGER",
        n * n,
        desc("MATRIX_MULTIPLY_INTEGER", fields),
        {"ATensor": a, "BTensor": b},
        torch_mm,
        flops=2 * n**3,
        baseline=mm_baseline,
    )

    # UINT8 with zero points 128: A - 128 and B - 128 are INT8, which is what PyTorch multiplies
    # (b ^ 0x80 read as INT8 is b - 128), then requantizes as the desc does.
    scales = {"AScaleTensor": 0.02, "BScaleTensor": 0.02, "OutputScaleTensor": 3.0}
    one = (1, 1)
    qa = rng.integers(0, 256, (n, n), dtype=np.uint8)
    qb = rng.integers(0, 256, (n, n), dtype=np.uint8)
    inputs = {"ATensor": qa, "BTensor": qb} | {k: np.full(one, s, np.float32) for k, s in scales.items()}
    inputs |= {k: np.full(one, 128, np.uint8) for k in ("AZeroPointTensor", "BZeroPointTensor", "OutputZeroPointTensor")}
    fields = {k: t("FLOAT32" if "Scale" in k else "UINT8", v.shape) for k, v in inputs.items()}
    fields["OutputTensor"] = t("UINT8", (n, n))
    multiplier = scales["AScaleTensor"] / scales["OutputScaleTensor"] * scales["BScaleTensor"]

    def torch_qmm(v: dict[str, Any], multiplier: float = multiplier) -> Any:
        import torch

        a8 = torch.bitwise_xor(v["ATensor"].view(torch.int8), -128)
        b8 = torch.bitwise_xor(v["BTensor"].view(torch.int8), -128)
        mm = int_mm()
        acc = mm(a8, b8).float() if mm is not None else a8.float() @ b8.float()
        return torch.clamp(torch.round(acc * multiplier) + 128, 0, 255).to(torch.uint8)

    yield Case(
        f"QUANTIZED_LINEAR_MATRIX_MULTIPLY {n}x{n}x{n} uint8",
        "QUANTIZED_LINEAR_MATRIX_MULTIPLY",
        n * n,
        desc("QUANTIZED_LINEAR_MATRIX_MULTIPLY", fields),
        inputs,
        torch_qmm,
        flops=2 * n**3,
        baseline=f"{mm_baseline} on A - 128, B - 128, then round, + 128, clamp in torch ops",
    )

    x_sizes, w_sizes = (2 if quick else 32, 128, 28, 28), (128, 128, 3, 3)
    x = rng.integers(-128, 128, x_sizes, dtype=np.int8)
    w = rng.integers(-128, 128, w_sizes, dtype=np.int8)
    out_sizes = (x_sizes[0], 128, 28, 28)
    fields = {
        "InputTensor": t("INT8", x_sizes),
        "FilterTensor": t("INT8", w_sizes),
        "OutputTensor": t("INT32", out_sizes),
        "DimensionCount": 2,
        "Strides": [1, 1],
        "Dilations": [1, 1],
        "StartPadding": [1, 1],
        "EndPadding": [1, 1],
        "GroupCount": 1,
    }

    def torch_conv(v: dict[str, Any]) -> Any:
        import torch.nn.functional as F

        return F.conv2d(v["InputTensor"], v["FilterTensor"], padding=1)

    yield Case(
        f"CONVOLUTION_INTEGER 3x3 (ResNet-50 conv3) {'x'.join(map(str, x_sizes))} int8",
        "CONVOLUTION_INTEGER",
        int(np.prod(out_sizes)),
        desc("CONVOLUTION_INTEGER", fields),
        {"InputTensor": x, "FilterTensor": w},
        torch_conv,
        torch_inputs={"InputTensor": x.astype(np.float32), "FilterTensor": w.astype(np.float32)},
        flops=2 * int(np.prod(out_sizes)) * 128 * 9,
        baseline="FLOAT32 conv2d (cuDNN; PyTorch has no eager INT8 convolution on CUDA)",
    )

    # UINT8 x INT8 with per-row and per-column zero points: the costliest form of the "integer"
    # lowering (A - 128 made INT8, its row and B's column sums, two [M, N] corrections)
    ua = rng.integers(0, 256, (n, n), dtype=np.uint8)
    zero_a, zero_b = rng.integers(0, 256, (n, 1), dtype=np.uint8), rng.integers(-128, 128, (1, n), dtype=np.int8)
    zp_inputs = {"ATensor": ua, "AZeroPointTensor": zero_a, "BTensor": b, "BZeroPointTensor": zero_b}
    fields = {k: t("UINT8" if k.startswith("A") else "INT8", v.shape) for k, v in zp_inputs.items()}
    fields["OutputTensor"] = t("INT32", (n, n))

    def torch_zp_mm(v: dict[str, Any], k: int = n) -> Any:
        import torch

        a8, b8 = torch.bitwise_xor(v["ATensor"].view(torch.int8), -128), v["BTensor"]
        o_a, o_b = v["AZeroPointTensor"].int() - 128, v["BZeroPointTensor"].int()
        mm = int_mm()
        p = mm(a8, b8) if mm is not None else (a8.float() @ b8.float()).int()
        rows, cols = a8.sum(1, keepdim=True, dtype=torch.int32), b8.sum(0, keepdim=True, dtype=torch.int32)
        return p - rows * o_b - o_a * (cols - k * o_b)

    yield Case(
        f"MATRIX_MULTIPLY_INTEGER {n}x{n}x{n} uint8 x int8 zero points per row and column",
        "MATRIX_MULTIPLY_INTEGER",
        n * n,
        desc("MATRIX_MULTIPLY_INTEGER", fields),
        zp_inputs,
        torch_zp_mm,
        flops=2 * n**3,
        baseline=f"{mm_baseline} on A - 128 and B, the zero points folded in torch ops",
    )


# DirectML's gate order -> PyTorch's: LSTM i o f c -> i f g(c) o; GRU z r h -> r z n(h)
TORCH_GATES = {"LSTM": (0, 2, 3, 1), "GRU": (1, 0, 2)}


def torch_weights(op: str, weights: np.ndarray) -> np.ndarray:
    """A DirectML [G*hidden, ...] weight (or [G*hidden] bias) with its gates in PyTorch's order."""
    blocks = np.split(weights, len(TORCH_GATES[op]))
    return np.concatenate([blocks[g] for g in TORCH_GATES[op]])


def recurrent_cases(rng: np.random.Generator, quick: bool) -> Iterator[Case]:
    """LSTM and GRU, one forward layer, seq 64 x batch 64, input and hidden 512 (4 x 4 x 32 x 32
    with --quick), the default activations (sigmoid, tanh, tanh) and biases, against torch.nn.LSTM
    and torch.nn.GRU (cuDNN) given the same weights in PyTorch's gate order. GRU has
    LinearBeforeReset, the formula cuDNN and PyTorch compute."""
    seq, batch, size, hidden = (4, 4, 32, 32) if quick else (64, 64, 512, 512)
    x = rng.standard_normal((1, seq, batch, size)).astype(np.float32)
    for op, gates, activations in (("LSTM", 4, ("SIGMOID", "TANH", "TANH")), ("GRU", 3, ("SIGMOID", "TANH"))):
        bound = 1 / np.sqrt(hidden)  # PyTorch's own initialization range
        w = rng.uniform(-bound, bound, (1, 1, gates * hidden, size)).astype(np.float32)
        r = rng.uniform(-bound, bound, (1, 1, gates * hidden, hidden)).astype(np.float32)
        bias = rng.uniform(-bound, bound, (1, 1, 1, 2 * gates * hidden)).astype(np.float32)
        outputs = {"OutputSequenceTensor": (seq, 1, batch, hidden), "OutputSingleTensor": (1, 1, batch, hidden)}
        if op == "LSTM":
            outputs["OutputCellSingleTensor"] = (1, 1, batch, hidden)
        fields = {
            "InputTensor": t("FLOAT32", x.shape),
            "WeightTensor": t("FLOAT32", w.shape),
            "RecurrenceTensor": t("FLOAT32", r.shape),
            "BiasTensor": t("FLOAT32", bias.shape),
            "ActivationDescCount": len(activations),
            "ActivationDescs": [{"Type": f"ACTIVATION_{a}"} for a in activations],
            "Direction": "DML_RECURRENT_NETWORK_DIRECTION_FORWARD",
        } | {k: t("FLOAT32", s) for k, s in outputs.items()}
        fields |= {"ClipThreshold": 0.0, "UseClipThreshold": False, "CoupleInputForget": False} if op == "LSTM" else {}
        fields |= {"LinearBeforeReset": True} if op == "GRU" else {}
        b_ih, b_hh = np.split(bias.reshape(-1), 2)
        torch_inputs = {
            "x": x[0],
            "weight_ih_l0": torch_weights(op, w[0, 0]),
            "weight_hh_l0": torch_weights(op, r[0, 0]),
            "bias_ih_l0": torch_weights(op, b_ih),
            "bias_hh_l0": torch_weights(op, b_hh),
        }
        yield Case(
            f"{op} forward seq {seq} batch {batch} input {size} hidden {hidden} float32",
            op,
            seq * batch * hidden,
            desc(op, fields),
            {"InputTensor": x, "WeightTensor": w, "RecurrenceTensor": r, "BiasTensor": bias},
            torch_rnn(op, size, hidden),
            torch_inputs=torch_inputs,
            flops=2 * seq * batch * gates * hidden * (size + hidden),
            baseline=f"torch.nn.{op} (cuDNN, FLOAT32, no_grad), the same weights in PyTorch's gate order",
        )


def torch_rnn(op: str, size: int, hidden: int) -> Callable[[dict[str, Any]], Any]:
    """torch.nn.LSTM/GRU's forward on the case's weights: the module is built at the first call
    (an untimed warm-up) and kept, its weights flattened once as cuDNN wants them."""
    modules: list[Any] = []

    def run(v: dict[str, Any]) -> Any:
        import torch

        with torch.no_grad():
            if not modules:
                module = getattr(torch.nn, op)(size, hidden).cuda().eval()
                for name, param in module.named_parameters():
                    param.copy_(v[name])
                module.flatten_parameters()
                modules.append(module)
            return modules[0](v["x"])

    return run


def gradient_cases(rng: np.random.Generator, quick: bool) -> Iterator[Case]:
    """AVERAGE_POOLING_GRAD and MAX_POOLING_GRAD of ResNet-50's 3x3 stride-2 stem pooling at
    32 x 64 x 112 x 112, BATCH_NORMALIZATION_TRAINING_GRAD at 32 x 256 x 56 x 56, against the
    backward kernels PyTorch's autograd calls (aten's *_backward ops, timed alone)."""
    sizes = (2, 8, 32, 32) if quick else (32, 64, 112, 112)
    pooled = (*sizes[:2], *[(s + 2 - 3) // 2 + 1 for s in sizes[2:]])
    window = {"DimensionCount": 2, "Strides": [2, 2], "WindowSize": [3, 3], "StartPadding": [1, 1], "EndPadding": [1, 1]}
    x = rng.standard_normal(sizes).astype(np.float32)
    dy = rng.standard_normal(pooled).astype(np.float32)
    label = f"3x3 stride 2 (ResNet-50 stem) {'x'.join(map(str, sizes))} float32"
    fields = {"InputGradientTensor": t("FLOAT32", pooled), "OutputGradientTensor": t("FLOAT32", sizes)} | window

    def torch_avg(v: dict[str, Any]) -> Any:
        import torch

        return torch.ops.aten.avg_pool2d_backward(v["InputGradientTensor"], v["x"], [3, 3], [2, 2], [1, 1], False, False, None)

    yield Case(
        f"AVERAGE_POOLING_GRAD {label}",
        "AVERAGE_POOLING_GRAD",
        x.size,
        desc("AVERAGE_POOLING_GRAD", fields | {"IncludePadding": False}),
        {"InputGradientTensor": dy},
        torch_avg,
        torch_inputs={"InputGradientTensor": dy, "x": x},
        baseline="aten.avg_pool2d_backward (avg_pool2d's autograd backward, count_include_pad=False)",
    )
    indices: list[Any] = []

    def torch_max(v: dict[str, Any]) -> Any:
        import torch
        import torch.nn.functional as F

        if not indices:  # the forward's indices, at the first (untimed) call
            indices.append(F.max_pool2d(v["InputTensor"], 3, 2, 1, return_indices=True)[1])
        return torch.ops.aten.max_pool2d_with_indices_backward(
            v["InputGradientTensor"], v["InputTensor"], [3, 3], [2, 2], [1, 1], [1, 1], False, indices[0]
        )

    fields = {"InputTensor": t("FLOAT32", sizes)} | fields | {"Dilations": [1, 1]}
    yield Case(
        f"MAX_POOLING_GRAD {label}",
        "MAX_POOLING_GRAD",
        x.size,
        desc("MAX_POOLING_GRAD", fields),
        {"InputTensor": x, "InputGradientTensor": dy},
        torch_max,
        baseline="aten.max_pool2d_with_indices_backward (max_pool2d's autograd backward; PyTorch reads "
        "the forward's saved indices, 8 bytes per pooled element, not the input)",
    )

    sizes = (2, 16, 16, 16) if quick else (32, 256, 56, 56)
    channel = (1, sizes[1], 1, 1)
    epsilon = 1e-5
    x = rng.standard_normal(sizes).astype(np.float32)
    inputs = {
        "InputTensor": x,
        "InputGradientTensor": rng.standard_normal(sizes).astype(np.float32),
        "MeanTensor": rng.uniform(-0.1, 0.1, channel).astype(np.float32),
        "VarianceTensor": rng.uniform(0.9, 1.1, channel).astype(np.float32),
        "ScaleTensor": rng.uniform(0.5, 1.5, channel).astype(np.float32),
    }
    fields = {k: t("FLOAT32", v.shape) for k, v in inputs.items()} | {"Epsilon": epsilon}
    fields |= {"OutputGradientTensor": t("FLOAT32", sizes)}
    fields |= {k: t("FLOAT32", channel) for k in ("OutputScaleGradientTensor", "OutputBiasGradientTensor")}
    torch_inputs = {
        "InputGradientTensor": inputs["InputGradientTensor"],
        "InputTensor": x,
        "weight": inputs["ScaleTensor"].reshape(-1),
        "save_mean": inputs["MeanTensor"].reshape(-1),
        "save_invstd": (1 / np.sqrt(inputs["VarianceTensor"] + np.float32(epsilon))).reshape(-1),
    }

    def torch_bn(v: dict[str, Any], epsilon: float = epsilon) -> Any:
        import torch

        return torch.ops.aten.native_batch_norm_backward(
            v["InputGradientTensor"], v["InputTensor"], v["weight"], None, None,
            v["save_mean"], v["save_invstd"], True, epsilon, [True, True, True],
        )  # fmt: skip

    yield Case(
        f"BATCH_NORMALIZATION_TRAINING_GRAD {'x'.join(map(str, sizes))} float32",
        "BATCH_NORMALIZATION_TRAINING_GRAD",
        x.size,
        desc("BATCH_NORMALIZATION_TRAINING_GRAD", fields),
        inputs,
        torch_bn,
        torch_inputs=torch_inputs,
        baseline="aten.native_batch_norm_backward (training: the batch's saved mean and 1 / sqrt(var + eps))",
    )


def time_torch(fn: Callable[[dict[str, Any]], Any], inputs: dict[str, np.ndarray], iterations: int) -> tuple[float, float]:
    import torch

    values = {k: torch.from_numpy(np.ascontiguousarray(v)).cuda() for k, v in inputs.items()}
    for _ in range(3):
        fn(values)
    torch.cuda.synchronize()
    samples = []
    for _ in range(iterations):
        start = time.perf_counter()
        fn(values)
        torch.cuda.synchronize()
        samples.append((time.perf_counter() - start) * 1e3)
    return statistics.median(samples), min(samples)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("-i", "--iterations", type=int, default=20)
    parser.add_argument("--only", default="", help="the cases whose name holds one of these '|'-separated parts")
    parser.add_argument("--kernels", action="store_true", help="record the CUDA kernels of each case's chosen lowering")
    parser.add_argument("--list", action="store_true", help="build the cases and print their names; run nothing")
    parser.add_argument("--out", help="write the JSON here after every case (default: stdout, at the end)")
    args = parser.parse_args()
    groups = (
        reduce_cases,
        one_hot_cases,
        mvn_cases,
        element_wise_cases,
        more_element_wise_cases,
        gemm_cases,
        convolution_cases,
        pooling_normalization_cases,
        data_movement_cases,
        part4_cases,
    )
    if args.list:
        for group in groups:
            try:
                names = [c.name for c in group(args.quick) if any(part in c.name for part in args.only.split("|"))]
            except ModuleNotFoundError as e:  # the earlier groups import PyTorch to build
                print(f"# {group.__name__}: not built ({e})")
                continue
            print("\n".join(names), end="\n" if names else "")
        return
    import torch

    ep = "cuda"
    # Full FLOAT32 on both sides, as DirectML computes (runtime.py turns the CUDA EP's TF32 off)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    copy = bench.copy_bandwidth(ep, 50)
    print(f"copy bandwidth {copy:.0f} GB/s", file=sys.stderr)
    results: list[dict[str, Any]] = []

    def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
        return {
            "copy_gb_per_s": copy,
            "onnxruntime": runtime.version(),
            "torch": torch.__version__,
            "device": torch.cuda.get_device_name(0),
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "iterations": args.iterations,
            "first_lower_and_check_ms": cold_ms,
            "results": rows,
        }

    # filtered as they are built: a case left out frees its inputs at once (the full suite holds GBs)
    cases = [c for group in groups for c in group(args.quick) if any(part in c.name for part in args.only.split("|"))]
    if not cases:
        parser.error(f"no case's name holds any of {args.only!r}")
    # The first lowering in a process also loads onnx's checker and schemas: timed apart.
    start = time.perf_counter()
    lowering.lower(cases[0].desc, "warm_up", target="cuda")
    cold_ms = (time.perf_counter() - start) * 1e3
    for k, case in enumerate(cases):
        outs = [case.desc.tensor(f) for f in case.desc.outputs]  # every output (SPLIT's, indices)
        nbytes = sum(a.nbytes for a in case.inputs.values()) + sum(t.element_count * t.data_type.size for t in outs)
        row: dict[str, Any] = {
            "case": case.name,
            "group": case.group,
            "elements": case.elements,
            "bytes": nbytes,
            "candidates": {},
            "chosen": choices.choose(case.desc, "cuda", 17),
        }
        if case.baseline:
            row["torch_baseline"] = case.baseline
        for variant in choices.available(case.desc, 17, "cuda"):
            start = time.perf_counter()
            model = lowering.lower(case.desc, "bench", target="cuda", variant=variant, buffer_inputs=case.buffers)
            lower_ms = (time.perf_counter() - start) * 1e3
            start = time.perf_counter()
            try:
                session = runtime.create(model, "bench", ep)
            except Exception as e:  # recorded: a candidate the EP cannot run
                row["candidates"][variant] = {"error": str(e)[:300]}
                continue
            session_ms = (time.perf_counter() - start) * 1e3
            bound = bench.Bound(session, case.inputs, bench.graph_outputs(case.desc))
            timing = bound.time(args.iterations)
            if variant == row["chosen"]:  # the ONNX nodes the CUDA EP runs (If's branches not counted)
                row["onnx_ops"] = dict(sorted(Counter(node.op_type for node in model.graph.node).items()))
            if args.kernels and variant == row["chosen"]:
                from kernels import breakdown

                row["kernels"] = breakdown(bound.run_once)
            row["candidates"][variant] = {
                "median_ms": timing.median_ms,
                "min_ms": timing.min_ms,
                "gb_per_s": timing.gb_per_s,
                "tflops": case.flops / (timing.median_ms * 1e-3) / 1e12,
                "lower_and_check_ms": lower_ms,
                "session_ms": session_ms,
                "nodes_off_gpu": len(session.nodes_off_ep()),
            }
            del session
            gc.collect()
        try:
            median, minimum = time_torch(case.torch_fn, case.torch_inputs or case.inputs, args.iterations)
            row["torch"] = {
                "median_ms": median,
                "min_ms": minimum,
                "gb_per_s": nbytes / (median * 1e-3) / 1e9,
                "tflops": case.flops / (median * 1e-3) / 1e12,
            }
        except Exception as e:
            row["torch"] = {"error": str(e)[:300]}
        torch.cuda.empty_cache()
        results.append(row)
        best = min(
            ((c["median_ms"], v) for v, c in row["candidates"].items() if "median_ms" in c), default=(float("inf"), "none")
        )
        print(
            f"[{k + 1}/{len(cases)}] {case.name}: best {best[1]} {nbytes / best[0] / 1e6:.0f} GB/s, "
            f"torch {row['torch'].get('gb_per_s', 0):.0f} GB/s",
            file=sys.stderr,
            flush=True,
        )
        if args.out:  # rewritten after every case: a run cut short by its time limit keeps what it timed
            Path(args.out).write_text(json.dumps(summary(results), indent=1))
    if not args.out:
        json.dump(summary(results), sys.stdout, indent=1)


if __name__ == "__main__":
    main()
