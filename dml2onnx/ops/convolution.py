"""DML_OPERATOR_CONVOLUTION: a grouped, strided, dilated, padded convolution of InputTensor
{N, C, spatial...} with FilterTensor, plus the optional BiasTensor {1, M, 1...}, then the optional
FusedActivation. DimensionCount is the number of spatial dimensions: the tensors' rank minus 2 (1
for 3-D tensors from feature level 4_0, 2 for 4-D, 3 for 5-D). G = GroupCount divides C and M.

- Direction FORWARD: FilterTensor {M, C/G, k...};
  y[n, g*M/G + m, o] = sum over c < C/G and the kernel positions p of
  x[n, g*C/G + c, o*Stride + p*Dilation - StartPadding] * w[g*M/G + m, c, p] (x is 0 outside);
  computed sizes (in + StartPadding + EndPadding - ((k - 1)*Dilation + 1)) // Stride + 1.
- Direction BACKWARD (the transposed convolution, the gradient of FORWARD with respect to its
  input): FilterTensor {C, M/G, k...}; each input element x[n, g*C/G + c, i] adds
  x * w[g*C/G + c, m, p] to y[n, g*M/G + m, i*Stride + p*Dilation - StartPadding];
  computed sizes (in - 1)*Stride + (k - 1)*Dilation + 1 - StartPadding - EndPadding.
- Mode CONVOLUTION flips the filter along every spatial dimension (the mathematical convolution);
  CROSS_CORRELATION takes it as it is (both Directions).

What the page leaves open, as DirectML's own API computed it (README: CONVOLUTION):
- OutputPadding, in both Directions, appends that many elements at the end of each spatial axis,
  written as 0 (no Bias, no contribution; ONNX ConvTranspose's output_padding computes them), and
  the fused activation then sees those zeros (Linear with Beta 7 gives 7 there). OutputTensor's
  spatial sizes are the computed sizes plus OutputPadding (OutputPadding may exceed the stride),
  or others (below).
- FLOAT16 is accumulated in FLOAT32 and rounded once (1024 + 63 ones is 1087), with or without
  DML_EXECUTION_FLAG_ALLOW_HALF_PRECISION_COMPUTATION.
- GroupCount in BACKWARD: FilterTensor {C, M/G, k...}, group g's input channels feed output
  channels g*M/G .. (g + 1)*M/G - 1, as ONNX ConvTranspose's weight.
- StartPadding/EndPadding in BACKWARD crop the full transposed result at its start and end.
- OutputTensor's spatial sizes need not be the computed sizes above plus OutputPadding (ONNX
  Runtime's DirectML EP writes ConvTranspose's output_padding and output_shape as a larger
  OutputTensor with OutputPadding 0). DirectML's API (dml_exec under Wine; input 1, 2, 3...,
  filter 1, 10, 100..., Bias 1000: tests/ops/test_convolution_output_sizes.py) computes any size
  larger than OutputPadding, larger or smaller than the formula's, in both Directions, 1-D to 3-D:
  the last OutputPadding elements of each axis are 0, the others by the sums above (FORWARD:
  element o sums x[o*Stride + p*Dilation - StartPadding], x being 0 outside the input; BACKWARD:
  element o is the full transposed result's element StartPadding + o, past its end (length
  (in - 1)*Stride + (k - 1)*Dilation + 1) only the Bias), then the fused activation. EndPadding
  changes no value (it only enters the formula), a filter longer than the padded input and a
  StartPadding past the whole transposed result included (3 transposed by Stride 2, 7 long,
  StartPadding 7: Bias, Bias). A size of OutputPadding or less: E_INVALIDARG (dml2onnx refuses it).
- DirectML validates less than dml2onnx (each pinned in tests/ops/test_convolution.py): it accepts
  Strides or Dilations of 0, and a DimensionCount other than the rank minus 2; dml2onnx refuses
  these. It refuses (E_INVALIDARG) what dml2onnx refuses on channels, groups, batch and Bias sizes.

Lowering: ONNX Conv (FORWARD) or ConvTranspose (BACKWARD) with pads, strides, dilations and group
(ConvTranspose's pads symmetric, the rest cropped by a Slice, where the CUDA EP must run it: it
gives asymmetric ones to the CPU EP), Bias as their B input (reshaped to {M}), the filter reversed
by a Slice of step -1 for Mode CONVOLUTION, and a Pad of zeros for OutputPadding. Other
OutputTensor sizes: FORWARD, Conv's end pad reaching the last element's window (or a Slice of the
start of Conv's output); BACKWARD, ConvTranspose's end pad cropping it, or past the full result
its output_padding (ONNX Runtime takes it below the stride) and the rest appended, the Bias
Expanded (0 without Bias) and Concatenated; the Bias alone where StartPadding passes the whole
result. The DirectML EP
maps Conv and ConvTranspose straight back onto DML_OPERATOR_CONVOLUTION (DmlOperatorConvolution.cpp:
Conv is CROSS_CORRELATION FORWARD, ConvTranspose CROSS_CORRELATION BACKWARD with the filter as it
is, the pads as StartPadding and EndPadding, OutputPadding zeroed): on the `dml` target they carry
targets.DML_NODE_DOC. FLOAT16: candidate `native` runs Conv in FLOAT16 (the CUDA EP sets cuDNN's
compute type to FLOAT for HALF: FLOAT32 accumulation, tensor cores), `float32` casts to FLOAT32
and rounds once at the end; a fused activation runs in FLOAT32 (its constants are FLOAT32).
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from dml2onnx.core import dtypes
from dml2onnx.core.desc import OperatorDesc
from dml2onnx.core.errors import ModelError
from dml2onnx.core.schema import OperatorSchema
from dml2onnx.graph.builder import GraphBuilder
from dml2onnx.graph.targets import DML_NODE_DOC
from dml2onnx.ops import activations, common
from dml2onnx.ops.family import Family

TENSORS = ("InputTensor", "FilterTensor", "BiasTensor", "OutputTensor")
ARRAYS = ("Strides", "Dilations", "StartPadding", "EndPadding", "OutputPadding")

# choices.py: `native` computes in the tensors' type (FLOAT16 Conv on the CUDA EP: cuDNN with
# tensor cores); `float32` casts FLOAT16 to FLOAT32 first (the same graph as `native` for FLOAT32).
CANDIDATES = ("native", "float32")
DML_PREFERENCE = ("native",)


def applies(desc: OperatorDesc, candidate: str, opset: int) -> bool:
    return candidate == "native" or desc.tensor("InputTensor").data_type == dtypes.FLOAT16


# -- shapes ---------------------------------------------------------------------------------------


def spatial(desc: OperatorDesc) -> int:
    return desc.tensor("InputTensor").rank - 2


def backward(desc: OperatorDesc) -> bool:
    return desc["Direction"] == "BACKWARD"


def kernel_sizes(desc: OperatorDesc) -> tuple[int, ...]:
    return desc.tensor("FilterTensor").sizes[2:]


def output_sizes(desc: OperatorDesc) -> tuple[int, ...]:
    """The output's spatial sizes from the input, filter and fields (the formulas above); may be
    < 1 for a desc that validate() refuses."""
    ins, ks = desc.tensor("InputTensor").sizes[2:], kernel_sizes(desc)
    out = []
    for i, (n, k) in enumerate(zip(ins, ks, strict=True)):
        s, d = desc["Strides"][i], desc["Dilations"][i]
        start, end, extra = desc["StartPadding"][i], desc["EndPadding"][i], desc["OutputPadding"][i]
        window = (k - 1) * d + 1
        if backward(desc):
            base = (n - 1) * s + window - start - end
        else:
            base = (n + start + end - window) // s + 1 if n + start + end >= window else 0
        out.append(base + extra if base >= 1 else base)
    return tuple(out)


def computed_sizes(desc: OperatorDesc) -> tuple[int, ...]:
    """The output's sizes less OutputPadding: the elements the convolution computes (DirectML
    writes 0 to the OutputPadding elements after them, before the fused activation)."""
    y = desc.tensor("OutputTensor").sizes
    return y[:2] + tuple(o - p for o, p in zip(y[2:], desc["OutputPadding"], strict=True))


def accumulation_length(desc: OperatorDesc) -> int:
    """Products summed into one output element: C/G * kernel volume (FORWARD), or at most
    C/G * kernel volume (BACKWARD: fewer where the stride skips kernel positions)."""
    groups = desc["GroupCount"]
    return desc.tensor("InputTensor").sizes[1] // groups * math.prod(kernel_sizes(desc))


# -- validation -----------------------------------------------------------------------------------


def validate(desc: OperatorDesc) -> None:
    for name in TENSORS:
        common.check_same_type(desc, name, "InputTensor")
        common.check_same_rank(desc, name, "InputTensor")
    dims = desc["DimensionCount"]
    if dims != spatial(desc):
        raise ModelError(
            desc.at("DimensionCount"),
            f"must be {spatial(desc)}: the spatial dimensions of the {desc.tensor('InputTensor').rank}-D tensors "
            f"(their rank minus batch and channel), not {dims}",
        )
    for name in ARRAYS:
        if len(desc[name]) != dims:
            raise ModelError(desc.at(name), f"{name} must have DimensionCount ({dims}) elements, not {len(desc[name])}")
        for i, v in enumerate(desc[name]):
            if name in ("Strides", "Dilations") and v < 1:
                raise ModelError(desc.at(name, i), f"{name} must be at least 1, not {v}")
    common.check_paddings(desc, desc.tensor("InputTensor").sizes[2:])
    _check_channels(desc)
    _check_output_padding(desc)
    if desc["FusedActivation"] is not None:
        activations.validate(desc["FusedActivation"])


def _check_channels(desc: OperatorDesc) -> None:
    x, w, y = (desc.tensor(n) for n in ("InputTensor", "FilterTensor", "OutputTensor"))
    groups = desc["GroupCount"]
    if groups < 1:
        raise ModelError(desc.at("GroupCount"), f"GroupCount must be at least 1, not {groups}")
    c, m = x.sizes[1], y.sizes[1]
    for name, channels in (("InputTensor", c), ("OutputTensor", m)):
        if channels % groups:
            raise ModelError(desc.at(name, "Sizes", 1), f"{channels} channels are not divisible by GroupCount {groups}")
    # FORWARD: {M, C/G, k...}; BACKWARD: {C, M/G, k...}
    want = (c, m // groups) if backward(desc) else (m, c // groups)
    why = ("InputTensor's channels", "OutputTensor's channels / GroupCount")
    if not backward(desc):
        why = ("OutputTensor's channels", "InputTensor's channels / GroupCount")
    for i in (0, 1):
        if w.sizes[i] != want[i]:
            raise ModelError(desc.at("FilterTensor", "Sizes", i), f"must be {want[i]} ({why[i]}), not {w.sizes[i]}")
    if y.sizes[0] != x.sizes[0]:
        raise ModelError(desc.at("OutputTensor", "Sizes", 0), f"must be {x.sizes[0]} (InputTensor's batch), not {y.sizes[0]}")
    bias = desc.optional_tensor("BiasTensor")
    if bias is not None:
        for i, s in enumerate(bias.sizes):
            want_b = m if i == 1 else 1
            if s != want_b:
                raise ModelError(desc.at("BiasTensor", "Sizes", i), f"must be {want_b} (BiasTensor is {{1, M, 1...}}), not {s}")


def _check_output_padding(desc: OperatorDesc) -> None:
    """DirectML takes any OutputTensor spatial size that leaves at least one computed element
    before the OutputPadding zeros; a size of OutputPadding or less fails (E_INVALIDARG)."""
    y = desc.tensor("OutputTensor")
    for i, (got, extra) in enumerate(zip(y.sizes[2:], desc["OutputPadding"], strict=True)):
        if got <= extra:
            raise ModelError(
                desc.at("OutputTensor", "Sizes", i + 2),
                f"must exceed OutputPadding[{i}] ({extra}): a computed element before the OutputPadding zeros, not {got}",
            )


def _check_output(desc: OperatorDesc) -> None:
    """The page's output size rule, exactly: CONVOLUTION_INTEGER's (convolution_integer_reference.py);
    DML_OPERATOR_CONVOLUTION itself takes other sizes (_check_output_padding)."""
    y = desc.tensor("OutputTensor")
    for i, (want, got) in enumerate(zip(output_sizes(desc), y.sizes[2:], strict=True)):
        if want < 1:
            raise ModelError(
                desc.at("OutputTensor", "Sizes", i + 2),
                f"the padded input is smaller than the dilated filter along spatial dimension {i}: no output",
            )
        if got != want:
            raise ModelError(desc.at("OutputTensor", "Sizes", i + 2), f"must be {want} ({_formula(desc, i)}), not {got}")


def _formula(desc: OperatorDesc, i: int) -> str:
    if backward(desc):
        return "(in - 1) * Stride + (k - 1) * Dilation + 1 - StartPadding - EndPadding + OutputPadding"
    return "(in + StartPadding + EndPadding - ((k - 1) * Dilation + 1)) // Stride + 1 + OutputPadding"


# -- lowering -------------------------------------------------------------------------------------


def lower(desc: OperatorDesc, b: GraphBuilder, inputs: dict[str, str]) -> str:
    half = desc.tensor("InputTensor").data_type == dtypes.FLOAT16
    widen = half and b.variant == "float32"  # FLOAT16 computed in FLOAT32, rounded once at the end

    def value(name: str) -> str:
        v = inputs[name]
        return b.cast(v, dtypes.FLOAT32, f"{name}_to_float32", f"{name} in FLOAT32") if widen else v

    x, w = value("InputTensor"), value("FilterTensor")
    dims = spatial(desc)
    if desc["Mode"] == "CONVOLUTION":
        k = kernel_sizes(desc)
        big = -(2**63)
        w = b.node(
            "Slice",
            [
                w,
                b.i64([s - 1 for s in k], "flip_starts"),
                b.i64([big] * dims, "flip_ends"),
                b.i64(list(range(2, 2 + dims)), "flip_axes"),
                b.i64([-1] * dims, "flip_steps"),
            ],
            "flip_filter",
            "the filter reversed along its spatial axes: Mode CONVOLUTION",
        )
    args = [x, w]
    channels = desc.tensor("OutputTensor").sizes[1]
    bias = None
    if desc.optional_tensor("BiasTensor") is not None:
        bias = b.reshape(value("BiasTensor"), [channels], "bias_vector", "BiasTensor {1, M, 1...} as B {M}")
        args.append(bias)
    attrs = {
        "strides": list(desc["Strides"]),
        "dilations": list(desc["Dilations"]),
        "group": desc["GroupCount"],
        "kernel_shape": list(kernel_sizes(desc)),
    }
    dtype = np.dtype(np.float32) if widen else desc.tensor("InputTensor").data_type.numpy
    y = _lower_backward(desc, b, args, attrs, bias, dtype) if backward(desc) else _lower_forward(desc, b, args, attrs)
    extra = list(desc["OutputPadding"])
    if any(extra):  # zeros after the computed elements (not ConvTranspose's output_padding, which computes them)
        rank = desc.tensor("OutputTensor").rank
        pads = b.i64([0] * rank + [0, 0, *extra], "output_padding")
        y = b.node("Pad", [y, pads], "output_padding", "OutputPadding: zeros at the end of each spatial axis")
    act = desc["FusedActivation"]
    if act is not None:
        if half and not widen and not activations.exact_in_half(act):  # the activations' constants are FLOAT32
            y = b.cast(y, dtypes.FLOAT32, "to_float32", "the convolution's FLOAT16 result in FLOAT32")
            widen = True
        prefix = b.prefix
        b.prefix = f"{prefix}/FusedActivation_{act.schema.name.removeprefix('ACTIVATION_')}"
        y = activations.lower(b, y, act)
        b.prefix = prefix
    if widen:
        y = b.cast(y, dtypes.FLOAT16, "to_float16", "result in FLOAT16")
    return y


def _forward_end_padding(desc: OperatorDesc) -> tuple[list[int], bool]:
    """Conv's end pads giving the computed sizes (EndPadding changes no value in DirectML: x is 0
    outside the input): EndPadding where the page's formula gives them, else the pad reaching the
    last computed element; and whether a Slice must cut Conv's output (computed sizes below even
    EndPadding 0's)."""
    ends, cut = [], False
    x, ks, out = desc.tensor("InputTensor").sizes[2:], kernel_sizes(desc), computed_sizes(desc)[2:]
    for i, (n, k, o) in enumerate(zip(x, ks, out, strict=True)):
        s, d, start, end = desc["Strides"][i], desc["Dilations"][i], desc["StartPadding"][i], desc["EndPadding"][i]
        window = (k - 1) * d + 1
        if n + start + end >= window and (n + start + end - window) // s + 1 == o:
            ends.append(end)
            continue
        need = (o - 1) * s + window - n - start  # the last computed element's window ends there
        ends.append(max(need, 0))
        cut |= need < 0
    return ends, cut


def _lower_forward(desc: OperatorDesc, b: GraphBuilder, args: list[str], attrs: dict[str, object]) -> str:
    """Conv from StartPadding to the last computed element (_forward_end_padding)."""
    ends, cut = _forward_end_padding(desc)
    attrs = attrs | {"pads": list(desc["StartPadding"]) + ends}
    y = b.node("Conv", args, "conv", DML_NODE_DOC if b.target.dml_nodes else "DirectML's FORWARD convolution", **attrs)
    if cut:
        sizes = computed_sizes(desc)[2:]
        dims = len(sizes)
        y = b.slice(
            y, range(2, 2 + dims), [0] * dims, sizes, "cut", "OutputTensor smaller than Conv's output: its first elements"
        )
    return y


def transposed_axes(desc: OperatorDesc) -> list[tuple[int, int, int, int]] | None:
    """BACKWARD, per spatial axis: ConvTranspose's (start pad, end pad, output_padding) and the
    Bias-only elements appended after it, together the elements [StartPadding, StartPadding +
    computed size) of the full transposed result (length (in - 1)*Stride + (k - 1)*Dilation + 1)
    continued by elements that nothing reaches (the Bias alone, as DirectML computes them). ONNX
    Runtime takes output_padding below the stride only (its ConvTranspose checks the output's size
    against the input's): the rest is appended. None where StartPadding passes the full result on
    some axis: every element is the Bias alone."""
    out = []
    x, ks, sizes = desc.tensor("InputTensor").sizes[2:], kernel_sizes(desc), computed_sizes(desc)[2:]
    for i, (n, k, o) in enumerate(zip(x, ks, sizes, strict=True)):
        s, d, start = desc["Strides"][i], desc["Dilations"][i], desc["StartPadding"][i]
        full = (n - 1) * s + (k - 1) * d + 1
        if start >= full:
            return None
        if start + o <= full:
            out.append((start, full - start - o, 0, 0))
        else:
            beyond = start + o - full
            extra = min(beyond, s - 1)
            out.append((start, 0, extra, beyond - extra))
    return out


def _bias_block(b: GraphBuilder, bias: str | None, shape: list[int], dtype: np.dtype, step: str) -> str:
    """Elements that no input reaches: the Bias (or 0) broadcast to `shape`."""
    if bias is None:
        return b.filled(shape, 0, dtype, step, "elements nothing reaches, without Bias: 0")
    full = b.reshape(bias, [shape[1]] + [1] * (len(shape) - 2), f"{step}_bias", "the Bias per channel")
    return b.node("Expand", [full, b.i64(shape, f"{step}_shape")], step, "elements nothing reaches: the Bias alone")


def _lower_backward(
    desc: OperatorDesc, b: GraphBuilder, args: list[str], attrs: dict[str, object], bias: str | None, dtype: np.dtype
) -> str:
    """ConvTranspose giving the computed elements (transposed_axes), then the Bias-only ones past
    the full result; `dtype` is the computation's (FLOAT32 for the `float32` candidate)."""
    y_sizes = list(computed_sizes(desc))
    axes = transposed_axes(desc)
    if axes is None:  # StartPadding past the whole transposed result: the Bias alone everywhere
        return _bias_block(b, bias, y_sizes, dtype, "bias_only")
    dims = len(axes)
    start, end = [a[0] for a in axes], [a[1] for a in axes]
    attrs = attrs | {"pads": start + end}
    if any(a[2] for a in axes):
        attrs["output_padding"] = [a[2] for a in axes]
    # the dml target: the node DmlOperatorConvolution.cpp turns back into this operator
    # (CROSS_CORRELATION BACKWARD, output_padding as a larger OutputTensor with OutputPadding 0)
    dml = b.target.dml_nodes
    # The CUDA EP leaves a ConvTranspose with asymmetric pads to the CPU EP (cuDNN pads both ends
    # alike): elsewhere than on the dml target, pad both ends by the smaller of the two and crop
    # the rest with a Slice
    crop = not dml and start != end
    if crop:
        attrs["pads"] = [min(s, e) for s, e in zip(start, end, strict=True)] * 2
    doc = DML_NODE_DOC if dml else "DirectML's BACKWARD convolution (transposed)"
    y = b.node("ConvTranspose", args, "conv_transpose", doc, **attrs)
    sizes = [o - a[3] for o, a in zip(y_sizes[2:], axes, strict=True)]  # ConvTranspose's part
    if crop:
        first = [s - min(s, e) for s, e in zip(start, end, strict=True)]
        ends = [f + n for f, n in zip(first, sizes, strict=True)]
        y = b.slice(y, range(2, 2 + dims), first, ends, "crop", "the rest of the asymmetric StartPadding/EndPadding: cropped")
    shape = y_sizes[:2] + sizes
    for i, (*_, appended) in enumerate(axes):
        if appended:
            block = _bias_block(b, bias, shape[: 2 + i] + [appended] + shape[3 + i :], dtype, f"beyond_{i}")
            y = b.node("Concat", [y, block], f"append_{i}", "OutputTensor past the transposed result: the Bias alone", axis=2 + i)
            shape[2 + i] += appended
    return y


# -- reference ------------------------------------------------------------------------------------


def reference(desc: OperatorDesc, inputs: dict[str, np.ndarray]) -> np.ndarray:
    """Direct sums over the kernel positions in FLOAT64 (exact for the tests' inputs), rounded
    once to the output's type, at every OutputTensor position as DirectML computes it (the module
    docstring): BACKWARD's result zero-extended past its end, FORWARD's input zero-padded as far as
    the last element's window reaches."""
    x = inputs["InputTensor"].astype(np.float64)
    w = inputs["FilterTensor"].astype(np.float64)
    dims, groups = spatial(desc), desc["GroupCount"]
    if desc["Mode"] == "CONVOLUTION":
        w = w[(slice(None), slice(None)) + (slice(None, None, -1),) * dims]
    out_sizes = computed_sizes(desc)
    n, c = x.shape[:2]
    m = out_sizes[1]
    strides, dilations = desc["Strides"], desc["Dilations"]
    start = desc["StartPadding"]
    ks = kernel_sizes(desc)
    xg = x.reshape(n, groups, c // groups, *x.shape[2:])
    if backward(desc):
        # w {C, M/G, k...} -> {G, C/G, M/G, k...}; scatter each input element into a full-size
        # output starting at -StartPadding, then crop
        wg = w.reshape(groups, c // groups, m // groups, *ks)
        full = [(i - 1) * s + (k - 1) * d + 1 for i, s, k, d in zip(x.shape[2:], strides, ks, dilations, strict=True)]
        length = [max(f, st + o) for f, st, o in zip(full, start, out_sizes[2:], strict=True)]
        acc = np.zeros((n, groups, m // groups, *length))
        for p in itertools.product(*(range(k) for k in ks)):
            part = np.einsum("ngc...,gcm->ngm...", xg, wg[(slice(None),) * 3 + p])
            spots = zip(p, dilations, x.shape[2:], strides, strict=True)
            where = tuple(slice(q * d, q * d + (i - 1) * s + 1, s) for q, d, i, s in spots)
            acc[(slice(None),) * 3 + where] += part
        crop = tuple(slice(st, st + o) for st, o in zip(start, out_sizes[2:], strict=True))
        y = acc[(slice(None),) * 3 + crop]
    else:
        # w {M, C/G, k...} -> {G, M/G, C/G, k...}; x zero-padded by StartPadding at the start and
        # at the end as far as the last output element's window reaches (EndPadding changes nothing)
        wg = w.reshape(groups, m // groups, c // groups, *ks)
        reach = zip(out_sizes[2:], strides, ks, dilations, x.shape[2:], start, strict=True)
        ends = [max((o - 1) * s + (k - 1) * d + 1 - i - st, 0) for o, s, k, d, i, st in reach]
        pad = [(0, 0)] * 3 + [(st, en) for st, en in zip(start, ends, strict=True)]
        xp = np.pad(xg, pad)
        y = np.zeros((n, groups, m // groups, *out_sizes[2:]))
        for p in itertools.product(*(range(k) for k in ks)):
            window = tuple(
                slice(q * d, q * d + (o - 1) * s + 1, s) for q, d, o, s in zip(p, dilations, out_sizes[2:], strides, strict=True)
            )
            y += np.einsum("ngc...,gmc->ngm...", xp[(slice(None),) * 3 + window], wg[(slice(None),) * 3 + p])
    y = y.reshape(out_sizes)
    if inputs.get("BiasTensor") is not None:
        y = y + inputs["BiasTensor"].astype(np.float64)
    y = np.pad(y, [(0, 0), (0, 0)] + [(0, p) for p in desc["OutputPadding"]])  # OutputPadding: zeros
    if desc["FusedActivation"] is not None:
        y = activations.reference(y, desc["FusedActivation"])
    return y.astype(inputs["InputTensor"].dtype)


# -- examples (onnx_ops) -------------------------------------------------------------------------


def example(data_type: str, sizes: list[int], filter_sizes: list[int], out_sizes: list[int], **fields: object) -> common.Example:
    dims = len(sizes) - 2
    desc: common.Example = {
        "InputTensor": common.example_tensor(data_type, sizes),
        "FilterTensor": common.example_tensor(data_type, filter_sizes),
        "OutputTensor": common.example_tensor(data_type, out_sizes),
        "Mode": "CROSS_CORRELATION",
        "Direction": "FORWARD",
        "DimensionCount": dims,
        "Strides": [1] * dims,
        "Dilations": [1] * dims,
        "StartPadding": [0] * dims,
        "EndPadding": [0] * dims,
        "OutputPadding": [0] * dims,
        "GroupCount": 1,
    }
    return desc | fields


def examples(op: OperatorSchema) -> list[common.Example]:
    """onnx_ops: each type, with Bias: CROSS_CORRELATION with padding (ONNX's Conv; first, so that
    `ops CONVOLUTION --example` shows it), then with a fused RELU Mode CONVOLUTION (the filter flip)
    and both directions (OutputPadding: the Pad)."""
    out = []
    for t in common.example_types(op, "InputTensor"):
        extra = {"BiasTensor": common.example_tensor(t, [1, 4, 1, 1]), "FusedActivation": {"Type": "ACTIVATION_RELU"}}
        bias = {"BiasTensor": extra["BiasTensor"]}  # ONNX's Conv: bias, no activation
        out.append(example(t, [1, 2, 5, 5], [4, 2, 3, 3], [1, 4, 5, 5], StartPadding=[1, 1], EndPadding=[1, 1], **bias))
        out.append(example(t, [1, 2, 5, 5], [4, 2, 3, 3], [1, 4, 3, 3], Mode="CONVOLUTION", **extra))
        out.append(example(t, [1, 2, 3, 3], [2, 4, 3, 3], [1, 4, 6, 6], Direction="BACKWARD", OutputPadding=[1, 1], **extra))
    return out


OPERATOR_FAMILY = Family(
    ("CONVOLUTION",), validate, lower, reference, CANDIDATES, applies=applies, dml_preference=DML_PREFERENCE, examples=examples
)
