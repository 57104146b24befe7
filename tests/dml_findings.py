"""Where DirectML (its API, and the DirectML EP where it runs the case) and the numpy reference are
known to disagree on dml2onnx/cases/'s cases: the README's findings, by case id."""

from __future__ import annotations

import re


def known_disagreement(case_id: str) -> str | None:
    """The category of a matrix case where DirectML and the reference are known to disagree."""
    return next((why for pattern, why in KNOWN_DISAGREEMENTS if re.match(pattern, case_id)), None)


KNOWN_DISAGREEMENTS = (
    (r"^(REDUCE-)?(ARGMAX|ARGMIN)-INT64-", "INT64 order: low halves compared as signed"),
    (r"^(REDUCE-|ELEMENT_WISE_)(MAX|MIN|CLIP1?)-INT64-", "INT64 order: low halves compared as signed"),
    # DirectML's 64-bit division (emulated: Int64ShaderOps hidden) is wrong for negative quotients and x / 0
    (r"^ELEMENT_WISE_DIVIDE-U?INT64-", "64-bit DIVIDE"),
    # NaN among the edges: Direct3D's min/max return the other operand (README: NaN)
    (r"^ELEMENT_WISE_(MAX|MIN|CLIP1?|THRESHOLD)-FLOAT(32|16)-edges", "MAX/MIN, CLIP, THRESHOLD skip NaN"),
    # 3e38 and inf among the edges: DirectML evaluates a - trunc(a / b) * b in FLOAT32 (or FLOAT16)
    (r"^ELEMENT_WISE_MODULUS_(TRUNCATE|FLOOR)-FLOAT(32|16)-edges", "MODULUS of huge or infinite operands"),
    (r"^ELEMENT_WISE_LOGICAL_(GREATER|LESS)_THAN(_OR_EQUAL)?-INT64-", "INT64 order: low halves compared as signed"),
    (r"^REDUCE-LOG_SUM_EXP-", "LOG_SUM_EXP not stabilized"),
    (r"^(REDUCE-(L1|L2|SUM|MULTIPLY|SUM_SQUARE)|ACTIVATION_(LINEAR|SCALED_ELU))-FLOAT16", "FLOAT16 overflow saturates"),
    (r"^MVN[12]?-FLOAT16-", "FLOAT16 MVN precision"),
    # the edges hold 3e38: DirectML's sin/cos are exact to 1e-5 up to 1e6, 1.9 off there (README)
    (r"^ELEMENT_WISE_(SIN|COS)-FLOAT32-edges", "SIN/COS of huge arguments"),
    (r"^CAST-\w+-FLOAT16-", "FLOAT16 overflow saturates"),
    # (x - zero_point) * scale beyond 65504 among the edges: the FLOAT32 result rounds toward zero into FLOAT16
    (r"^ELEMENT_WISE_DEQUANTIZE_LINEAR-\w+-FLOAT16-edges", "FLOAT16 overflow saturates"),
    # DirectML's INT64 emulation (Int64ShaderOps hidden under vkd3d) reads UINT64 as INT64
    (r"^CAST-UINT64-FLOAT(32|16)-", "UINT64 beyond 2**63 converted as INT64"),
    (r"^ELEMENT_WISE_CLIP_GRAD1?-INT64-", "INT64 order: low halves compared as signed"),
    (r"^MAX_POOLING[12]?-INT64-", "INT64 order: low halves compared as signed"),
    (r"^ACTIVATION_PARAMETERIZED_RELU-FLOAT16-", "FLOAT16 overflow saturates"),
    # x * sigmoid(0 * x): NaN for |x| = 3e38 (2e38 gives x / 2): an intermediate overflows; IEEE gives x / 2
    (r"^ACTIVATION_SWISH-FLOAT32-edges-p2", "SWISH with SigmoidInputScale 0 of huge x"),
    # lavapipe's (Mesa's) atan: atan(NaN) = pi/4, atan2 of a NaN is not NaN (its asin/acos/atan
    # are also up to 6.8e-5 off: tolerances.py allows 1e-4 on DirectML); sinh/cosh as
    # (exp(x) +- exp(-x)) / 2 overflow from |x| = 88.73 (README)
    (r"^ELEMENT_WISE_ATAN(_YX)?-FLOAT(32|16)-", "ATAN of NaN (lavapipe)"),
    (r"^ELEMENT_WISE_(SINH|COSH)-FLOAT32-edges", "SINH/COSH overflow from 88.73"),
    (r"^ELEMENT_WISE_TAN-FLOAT32-edges", "SIN/COS of huge arguments"),
    # DirectML's log(x + sqrt(x * x +- 1)): inf for 3e38, -inf for asinh(-1e4) and acosh(-1e4)
    (r"^ELEMENT_WISE_(ASINH|ACOSH)-FLOAT(32|16)-edges", "ASINH/ACOSH overflow and cancellation"),
    # DirectML takes a FLOAT16 LP norm in FLOAT16: squared norms past 65504 saturate (P 2) or overflow
    # (P 1: x / inf = 0), squares of 1e-3 are FLOAT16 subnormals (README: LP_NORMALIZATION)
    (r"^LP_NORMALIZATION-FLOAT16-.*-(large|eps0\.0-small)$", "FLOAT16 LP norm computed in FLOAT16"),
    # UINT64 indices of 2**32 and more: DirectML reads their low 32 bits (2**32 + 1 writes at 1)
    (r"^MAX_UNPOOLING-\w+-UINT64-wide$", "MAX_UNPOOLING's UINT64 indices read by their low 32 bits"),
    # an offset past the input reads the buffer's last 4-byte word: its padding bytes (0 here) for 8/16-bit types
    (
        r"^GATHER(_ELEMENTS|_ND1?)?-(FLOAT16|U?INT(8|16))-.+-out_of_range$",
        "GATHER past the end of an 8/16-bit input reads padding",
    ),
    # UINT64 lengths of 2**32 and more: DirectML reads their low 32 bits (2**32 + 2 reverses 2 elements)
    (r"^REVERSE_SUBSEQUENCES-\w+-UINT64-wide-", "REVERSE_SUBSEQUENCES' UINT64 lengths read by their low 32 bits"),
    # the page adds RelativePositionBias after Scale; with a BOOLEAN mask DirectML computes
    # (Q x K^T + bias) * Scale + mask (NaN at Scale 0): the graphs keep the page's order (README)
    (r"^MULTIHEAD_ATTENTION1?-FLOAT(32|16)-mask_boolean-rpb$", "BOOLEAN mask with RelativePositionBias: the bias scaled"),
    # NaN in a sequence: DirectML's comparisons order nothing then (finite values of the top K are
    # left out); dml2onnx ranks NaN above +inf (README: TOP_K)
    (r"^TOP_K1?-FLOAT(32|16)-nan-", "TOP_K with NaN: no meaningful order"),
    # INT8/UINT8 (6_2) NEAREST_NEIGHBOR of RESAMPLE and RESAMPLE1: DirectML floors the coordinate (0.75
    # reads element 0) where its floats take the nearest element, halves up; the graphs keep the page's nearest
    (r"^RESAMPLE1?-U?INT8-rank\d-NEAREST_NEIGHBOR-", "8-bit RESAMPLE(1) NEAREST_NEIGHBOR floors the coordinate"),
    # FLOAT16 outputs: lavapipe converts the dequantized values and the result to FLOAT16 toward zero
    (r"^MATRIX_MULTIPLY_INTEGER_TO_FLOAT-\w+-FLOAT16-", "INTEGER_TO_FLOAT's FLOAT16 conversions toward zero"),
    # a window entirely in padding without IncludePadding: 0 / 0; DirectML's NaN becomes the minimum with
    # per-tensor zero points, 0 or the maximum with others (its kernels differ); the graphs give the minimum
    (r"^QUANTIZED_LINEAR_AVERAGE_POOLING-\w+-2d-wide-pad-exclude-(channel|none)-", "QUANTIZED AVERAGE_POOLING of empty windows"),
)


def dxil_only(case_id: str) -> str | None:
    """Why DirectML cannot run a matrix case under vkd3d 1.6, where that is known."""
    return next((why for pattern, why in DXIL_ONLY if re.match(pattern, case_id)), None)


# DirectML picks a kernel it has only as DXIL (shader model 6), which Wine's vkd3d 1.6 cannot
# compile (README: DirectML on Linux): the case fails loudly instead of running.
DXIL_ONLY = ((r"^ELEMENT_WISE_ADD-", "two-input ADD of a multiple of 4 elements: a DXIL-only kernel"),)
