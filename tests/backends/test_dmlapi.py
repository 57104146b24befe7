"""DirectML itself as the reference (dml2onnx/backends/dmlapi.py, dml2onnx/backends/descpack.py, dml_exec.c).

Three layers:
- the packer's C layouts against a table recorded from Microsoft's DirectML.h compiled by
  mingw-w64's gcc (x64 Windows ABI) — always run;
- the same check live, with _Static_asserts compiled against a DirectML.h (DML2ONNX_DIRECTML_H,
  or mingw-w64's own directml.h where it ships one) — skipped without one;
- descs executed with DirectML's API (dml_exec.exe under Wine, `make dml-setup`) and compared
  with the numpy references — skipped when that is not set up. The FINDINGS tests pin down what
  DirectML computes where it disagrees with the references.
"""

from __future__ import annotations

import os
import re
import shutil
import struct
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import dml_findings
from dml2onnx.backends import descpack, dmlapi
from dml2onnx.core import operator_table, schema
from dml2onnx.core.desc import parse_operator_desc
from dml2onnx.core.errors import RuntimeFailure
from dml2onnx.core.schema import Kind
from dml2onnx.lowering import tolerances
from dml2onnx.ops import registry
from support import make_desc, mismatches, tensor

# sizeof and offsetof of each DML_<op>_OPERATOR_DESC, printed by a program compiled with
# x86_64-w64-mingw32-gcc 12 from microsoft/DirectX-Headers' include/directx/DirectML.h
# (DML_TARGET_VERSION 0x6400; commit 443ff511) and run under Wine.
WINDOW_ARRAYS = ("InputWindowOffsets", "InputWindowSizes", "InputWindowStrides")  # SLICE1, SLICE_GRAD
_OUT24 = {"OutputTensor": 24}  # QUANTIZE, DEQUANTIZE: OutputTensor after the quantization tensors
_ADAM_TENSORS = "InputParametersTensor InputFirstMomentTensor InputSecondMomentTensor GradientTensor TrainingStepTensor OutputParametersTensor OutputFirstMomentTensor OutputSecondMomentTensor"  # noqa: E501
_BN_GRAD_TENSORS = "InputTensor InputGradientTensor MeanTensor VarianceTensor ScaleTensor OutputGradientTensor OutputScaleGradientTensor OutputBiasGradientTensor"  # noqa: E501
_WINDOW = ("WindowSizes", "Strides", "Dilations", "StartPadding", "EndPadding")
RECORDED: dict[str, tuple[int, dict[str, int]]] = {
    "ACTIVATION_HARDMAX": (16, {"InputTensor": 0, "OutputTensor": 8}),
    "ACTIVATION_LOG_SOFTMAX": (16, {"InputTensor": 0, "OutputTensor": 8}),
    "ACTIVATION_SOFTMAX": (16, {"InputTensor": 0, "OutputTensor": 8}),
    "ACTIVATION_HARDMAX1": (32, {"InputTensor": 0, "OutputTensor": 8, "AxisCount": 16, "Axes": 24}),
    "ACTIVATION_LOG_SOFTMAX1": (32, {"InputTensor": 0, "OutputTensor": 8, "AxisCount": 16, "Axes": 24}),
    "ACTIVATION_SOFTMAX1": (32, {"InputTensor": 0, "OutputTensor": 8, "AxisCount": 16, "Axes": 24}),
    "MEAN_VARIANCE_NORMALIZATION": (
        56,
        {"InputTensor": 0, "ScaleTensor": 8, "BiasTensor": 16, "OutputTensor": 24, "CrossChannel": 32}
        | {"NormalizeVariance": 36, "Epsilon": 40, "FusedActivation": 48},
    ),
    "MEAN_VARIANCE_NORMALIZATION1": (
        64,
        {"InputTensor": 0, "ScaleTensor": 8, "BiasTensor": 16, "OutputTensor": 24, "AxisCount": 32, "Axes": 40}
        | {"NormalizeVariance": 48, "Epsilon": 52, "FusedActivation": 56},
    ),
    "MEAN_VARIANCE_NORMALIZATION2": (
        72,
        {"InputTensor": 0, "ScaleTensor": 8, "BiasTensor": 16, "OutputTensor": 24, "AxisCount": 32, "Axes": 40}
        | {"UseMean": 48, "UseVariance": 52, "Epsilon": 56, "FusedActivation": 64},
    ),
    "ARGMAX": (40, {"InputTensor": 0, "OutputTensor": 8, "AxisCount": 16, "Axes": 24, "AxisDirection": 32}),
    "ARGMIN": (40, {"InputTensor": 0, "OutputTensor": 8, "AxisCount": 16, "Axes": 24, "AxisDirection": 32}),
    "REDUCE": (40, {"Function": 0, "InputTensor": 8, "OutputTensor": 16, "AxisCount": 24, "Axes": 32}),
    "ONE_HOT": (32, {"IndicesTensor": 0, "ValuesTensor": 8, "OutputTensor": 16, "Axis": 24}),
    "ACTIVATION_LINEAR": (24, {"InputTensor": 0, "OutputTensor": 8, "Alpha": 16, "Beta": 20}),
    "ACTIVATION_SIGMOID": (16, {"InputTensor": 0, "OutputTensor": 8}),
    "ACTIVATION_HARD_SIGMOID": (24, {"InputTensor": 0, "OutputTensor": 8, "Alpha": 16, "Beta": 20}),
    "ACTIVATION_TANH": (16, {"InputTensor": 0, "OutputTensor": 8}),
    "ACTIVATION_SCALED_TANH": (24, {"InputTensor": 0, "OutputTensor": 8, "Alpha": 16, "Beta": 20}),
    "ACTIVATION_RELU": (16, {"InputTensor": 0, "OutputTensor": 8}),
    "ACTIVATION_LEAKY_RELU": (24, {"InputTensor": 0, "OutputTensor": 8, "Alpha": 16}),
    "ACTIVATION_THRESHOLDED_RELU": (24, {"InputTensor": 0, "OutputTensor": 8, "Alpha": 16}),
    "ACTIVATION_ELU": (24, {"InputTensor": 0, "OutputTensor": 8, "Alpha": 16}),
    "ACTIVATION_CELU": (24, {"InputTensor": 0, "OutputTensor": 8, "Alpha": 16}),
    "ACTIVATION_SCALED_ELU": (24, {"InputTensor": 0, "OutputTensor": 8, "Alpha": 16, "Gamma": 20}),
    "ACTIVATION_SOFTPLUS": (24, {"InputTensor": 0, "OutputTensor": 8, "Steepness": 16}),
    "ACTIVATION_PARAMETRIC_SOFTPLUS": (24, {"InputTensor": 0, "OutputTensor": 8, "Alpha": 16, "Beta": 20}),
    "ACTIVATION_SOFTSIGN": (16, {"InputTensor": 0, "OutputTensor": 8}),
    "ACTIVATION_IDENTITY": (16, {"InputTensor": 0, "OutputTensor": 8}),
    "ACTIVATION_SHRINK": (24, {"InputTensor": 0, "OutputTensor": 8, "Bias": 16, "Threshold": 20}),
    "ACTIVATION_GELU": (16, {"InputTensor": 0, "OutputTensor": 8}),
    **{
        f"ELEMENT_WISE_{n}": (24, {"InputTensor": 0, "OutputTensor": 8, "ScaleBias": 16})
        for n in ("IDENTITY", "ABS", "EXP", "LOG", "SQRT", "RECIP", "CEIL", "FLOOR", "ERF", "TANH", "SIN", "COS")
    },
    **{
        f"ELEMENT_WISE_{n}": (24, {"ATensor": 0, "BTensor": 8, "OutputTensor": 16})
        for n in ("ADD", "SUBTRACT", "MULTIPLY", "DIVIDE", "MAX", "MIN", "MEAN", "DIFFERENCE_SQUARE")
        + ("MODULUS_TRUNCATE", "MODULUS_FLOOR")
    },
    "ELEMENT_WISE_ADD1": (32, {"ATensor": 0, "BTensor": 8, "OutputTensor": 16, "FusedActivation": 24}),
    "ELEMENT_WISE_NEGATE": (16, {"InputTensor": 0, "OutputTensor": 8}),
    "ELEMENT_WISE_SIGN": (16, {"InputTensor": 0, "OutputTensor": 8}),
    "ELEMENT_WISE_ROUND": (24, {"InputTensor": 0, "OutputTensor": 8, "RoundingMode": 16}),
    "ELEMENT_WISE_CLIP": (32, {"InputTensor": 0, "OutputTensor": 8, "ScaleBias": 16, "Min": 24, "Max": 28}),
    "ELEMENT_WISE_CLIP1": (
        48,
        {"InputTensor": 0, "OutputTensor": 8, "ScaleBias": 16, "MinMaxDataType": 24, "Min": 32, "Max": 40},
    ),
    "ELEMENT_WISE_THRESHOLD": (32, {"InputTensor": 0, "OutputTensor": 8, "ScaleBias": 16, "Min": 24}),
    **{
        f"ELEMENT_WISE_LOGICAL_{n}": (24, {"ATensor": 0, "BTensor": 8, "OutputTensor": 16})
        for n in ("EQUALS", "GREATER_THAN", "GREATER_THAN_OR_EQUAL", "LESS_THAN", "LESS_THAN_OR_EQUAL", "AND", "OR", "XOR")
    },
    "ELEMENT_WISE_LOGICAL_NOT": (16, {"InputTensor": 0, "OutputTensor": 8}),
    "ELEMENT_WISE_IS_NAN": (16, {"InputTensor": 0, "OutputTensor": 8}),
    "ELEMENT_WISE_IS_INFINITY": (24, {"InputTensor": 0, "OutputTensor": 8, "InfinityMode": 16}),
    **{
        f"ELEMENT_WISE_BIT_{n}": (24, {"ATensor": 0, "BTensor": 8, "OutputTensor": 16})
        for n in ("AND", "OR", "XOR", "SHIFT_LEFT", "SHIFT_RIGHT")
    },
    **{f"ELEMENT_WISE_BIT_{n}": (16, {"InputTensor": 0, "OutputTensor": 8}) for n in ("NOT", "COUNT")},
    **{
        f"ELEMENT_WISE_{n}": (24, {"InputTensor": 0, "OutputTensor": 8, "ScaleBias": 16})
        for n in ("ACOS", "ACOSH", "ASIN", "ASINH", "ATAN", "ATANH", "TAN", "SINH", "COSH")
    }
    | {"ELEMENT_WISE_ATAN_YX": (24, {"ATensor": 0, "BTensor": 8, "OutputTensor": 16})},
    "CAST": (16, {"InputTensor": 0, "OutputTensor": 8}),
    "FILL_VALUE_CONSTANT": (24, {"OutputTensor": 0, "ValueDataType": 8, "Value": 16}),
    "FILL_VALUE_SEQUENCE": (32, {"OutputTensor": 0, "ValueDataType": 8, "ValueStart": 16, "ValueDelta": 24}),
    "ELEMENT_WISE_IF": (32, {"ConditionTensor": 0, "ATensor": 8, "BTensor": 16, "OutputTensor": 24}),
    "DIAGONAL_MATRIX": (16, {"OutputTensor": 0, "Offset": 8, "Value": 12}),
    "DIAGONAL_MATRIX1": (
        40,
        {"InputTensor": 0, "OutputTensor": 8, "ValueDataType": 16, "Value": 24}
        | {"DiagonalFillBegin": 32, "DiagonalFillEnd": 36},
    ),
    "ACTIVATION_HARD_SWISH": (24, {"InputTensor": 0, "OutputTensor": 8, "Alpha": 16, "Beta": 20}),
    "ACTIVATION_SWISH": (24, {"InputTensor": 0, "OutputTensor": 8, "SigmoidInputScale": 16}),
    "ACTIVATION_PARAMETERIZED_RELU": (24, {"InputTensor": 0, "SlopeTensor": 8, "OutputTensor": 16}),
    "ACTIVATION_RELU_GRAD": (24, {"InputTensor": 0, "InputGradientTensor": 8, "OutputGradientTensor": 16}),
    "ELEMENT_WISE_POW": (32, {"InputTensor": 0, "ExponentTensor": 8, "OutputTensor": 16, "ScaleBias": 24}),
    "ELEMENT_WISE_CONSTANT_POW": (32, {"InputTensor": 0, "OutputTensor": 8, "ScaleBias": 16, "Exponent": 24}),
    "ELEMENT_WISE_CLIP_GRAD": (
        32,
        {"InputTensor": 0, "InputGradientTensor": 8, "OutputGradientTensor": 16, "Min": 24, "Max": 28},
    ),
    "ELEMENT_WISE_CLIP_GRAD1": (
        48,
        {"InputTensor": 0, "InputGradientTensor": 8, "OutputGradientTensor": 16, "MinMaxDataType": 24, "Min": 32, "Max": 40},
    ),
    **{
        f"ELEMENT_WISE_{n}_LINEAR": (32, {"InputTensor": 0, "ScaleTensor": 8, "ZeroPointTensor": 16, "OutputTensor": 24})
        for n in ("QUANTIZE", "DEQUANTIZE")
    },
    "ELEMENT_WISE_QUANTIZED_LINEAR_ADD": (
        72,
        {"ATensor": 0, "AScaleTensor": 8, "AZeroPointTensor": 16, "BTensor": 24, "BScaleTensor": 32}
        | {"BZeroPointTensor": 40, "OutputScaleTensor": 48, "OutputZeroPointTensor": 56, "OutputTensor": 64},
    ),
    "BATCH_NORMALIZATION": (
        64,
        {"InputTensor": 0, "MeanTensor": 8, "VarianceTensor": 16, "ScaleTensor": 24, "BiasTensor": 32, "OutputTensor": 40}
        | {"Spatial": 48, "Epsilon": 52, "FusedActivation": 56},
    ),
    "BATCH_NORMALIZATION_TRAINING": (
        72,
        {"InputTensor": 0, "ScaleTensor": 8, "BiasTensor": 16, "FusedAddTensor": 24, "OutputTensor": 32}
        | {"OutputMeanTensor": 40, "OutputVarianceTensor": 48, "Epsilon": 56, "FusedActivation": 64},
    ),
    "LOCAL_RESPONSE_NORMALIZATION": (
        40,
        {"InputTensor": 0, "OutputTensor": 8, "CrossChannel": 16, "LocalSize": 20, "Alpha": 24, "Beta": 28, "Bias": 32},
    ),
    "LP_NORMALIZATION": (32, {"InputTensor": 0, "OutputTensor": 8, "Axis": 16, "Epsilon": 20, "P": 24}),
    "CONVOLUTION": (
        104,
        {"InputTensor": 0, "FilterTensor": 8, "BiasTensor": 16, "OutputTensor": 24, "Mode": 32, "Direction": 36}
        | {"DimensionCount": 40, "Strides": 48, "Dilations": 56, "StartPadding": 64, "EndPadding": 72}
        | {"OutputPadding": 80, "GroupCount": 88, "FusedActivation": 96},
    ),
    "GEMM": (
        56,
        {"ATensor": 0, "BTensor": 8, "CTensor": 16, "OutputTensor": 24, "TransA": 32, "TransB": 36}
        | {"Alpha": 40, "Beta": 44, "FusedActivation": 48},
    ),
    **{  # DML_*_POOLING*_OPERATOR_DESC: the tensors, DimensionCount and the window arrays, then the extras
        op: (size, {"InputTensor": 0, "OutputTensor": 8, "DimensionCount": 16, "Strides": 24, "WindowSize": 32} | rest)
        for op, size, rest in (
            ("MAX_POOLING", 56, {"StartPadding": 40, "EndPadding": 48}),
            ("AVERAGE_POOLING", 64, {"StartPadding": 40, "EndPadding": 48, "IncludePadding": 56}),
            ("LP_POOLING", 64, {"StartPadding": 40, "EndPadding": 48, "P": 56}),
            ("AVERAGE_POOLING1", 72, {"StartPadding": 40, "EndPadding": 48, "Dilations": 56, "IncludePadding": 64}),
            ("LP_POOLING1", 72, {"StartPadding": 40, "EndPadding": 48, "Dilations": 56, "P": 64}),
        )
    },
    "MAX_POOLING1": (
        64,
        {"InputTensor": 0, "OutputTensor": 8, "OutputIndicesTensor": 16, "DimensionCount": 24, "Strides": 32}
        | {"WindowSize": 40, "StartPadding": 48, "EndPadding": 56},
    ),
    "MAX_POOLING2": (
        72,
        {"InputTensor": 0, "OutputTensor": 8, "OutputIndicesTensor": 16, "DimensionCount": 24, "Strides": 32}
        | {"WindowSize": 40, "StartPadding": 48, "EndPadding": 56, "Dilations": 64},
    ),
    "MAX_UNPOOLING": (24, {"InputTensor": 0, "IndicesTensor": 8, "OutputTensor": 16}),
    "CONVOLUTION_INTEGER": (
        88,
        {"InputTensor": 0, "InputZeroPointTensor": 8, "FilterTensor": 16, "FilterZeroPointTensor": 24, "OutputTensor": 32}
        | {"DimensionCount": 40, "Strides": 48, "Dilations": 56, "StartPadding": 64, "EndPadding": 72, "GroupCount": 80},
    ),
    "QUANTIZED_LINEAR_CONVOLUTION": (
        128,
        {"InputTensor": 0, "InputScaleTensor": 8, "InputZeroPointTensor": 16, "FilterTensor": 24, "FilterScaleTensor": 32}
        | {"FilterZeroPointTensor": 40, "BiasTensor": 48, "OutputScaleTensor": 56, "OutputZeroPointTensor": 64}
        | {"OutputTensor": 72, "DimensionCount": 80, "Strides": 88, "Dilations": 96, "StartPadding": 104}
        | {"EndPadding": 112, "GroupCount": 120},
    ),
    "QUANTIZED_LINEAR_AVERAGE_POOLING": (
        104,
        {"InputTensor": 0, "InputScaleTensor": 8, "InputZeroPointTensor": 16, "OutputScaleTensor": 24}
        | {"OutputZeroPointTensor": 32, "OutputTensor": 40, "DimensionCount": 48, "Strides": 56, "WindowSize": 64}
        | {"StartPadding": 72, "EndPadding": 80, "Dilations": 88, "IncludePadding": 96},
    ),
    "GATHER": (32, {"InputTensor": 0, "IndicesTensor": 8, "OutputTensor": 16, "Axis": 24, "IndexDimensions": 28}),
    "GATHER_ELEMENTS": (32, {"InputTensor": 0, "IndicesTensor": 8, "OutputTensor": 16, "Axis": 24}),
    "GATHER_ND": (
        32,
        {"InputTensor": 0, "IndicesTensor": 8, "OutputTensor": 16, "InputDimensionCount": 24, "IndicesDimensionCount": 28},
    ),
    "GATHER_ND1": (
        40,
        {
            "InputTensor": 0,
            "IndicesTensor": 8,
            "OutputTensor": 16,
            "InputDimensionCount": 24,
            "IndicesDimensionCount": 28,
            "BatchDimensionCount": 32,
        },
    ),
    "SCATTER": (40, {"InputTensor": 0, "IndicesTensor": 8, "UpdatesTensor": 16, "OutputTensor": 24, "Axis": 32}),
    "SCATTER_ND": (
        40,
        {
            "InputTensor": 0,
            "IndicesTensor": 8,
            "UpdatesTensor": 16,
            "OutputTensor": 24,
            "InputDimensionCount": 32,
            "IndicesDimensionCount": 36,
        },
    ),
    "JOIN": (32, {"InputCount": 0, "InputTensors": 8, "OutputTensor": 16, "Axis": 24}),
    "SPLIT": (32, {"InputTensor": 0, "OutputCount": 8, "OutputTensors": 16, "Axis": 24}),
    **{
        name: (24, {"InputTensor": 0, "OutputTensor": 8, "BlockSize": 16, **({"Order": 20} if name.endswith("1") else {})})
        for name in ("SPACE_TO_DEPTH", "SPACE_TO_DEPTH1", "DEPTH_TO_SPACE", "DEPTH_TO_SPACE1")
    },
    "CUMULATIVE_SUMMATION": (32, {"InputTensor": 0, "OutputTensor": 8, "Axis": 16, "AxisDirection": 20, "HasExclusiveSum": 24}),
    "CUMULATIVE_PRODUCT": (32, {"InputTensor": 0, "OutputTensor": 8, "Axis": 16, "AxisDirection": 20, "HasExclusiveProduct": 24}),
    "REVERSE_SUBSEQUENCES": (32, {"InputTensor": 0, "SequenceLengthsTensor": 8, "OutputTensor": 16, "Axis": 24}),
    "TOP_K": (32, {"InputTensor": 0, "OutputValueTensor": 8, "OutputIndexTensor": 16, "Axis": 24, "K": 28}),
    "TOP_K1": (40, {"InputTensor": 0, "OutputValueTensor": 8, "OutputIndexTensor": 16, "Axis": 24, "K": 28, "AxisDirection": 32}),
    "NONZERO_COORDINATES": (24, {"InputTensor": 0, "OutputCountTensor": 8, "OutputCoordinatesTensor": 16}),
    "RNN": (
        88,
        {"InputTensor": 0, "WeightTensor": 8, "RecurrenceTensor": 16, "BiasTensor": 24}
        | {"HiddenInitTensor": 32, "SequenceLengthsTensor": 40, "OutputSequenceTensor": 48, "OutputSingleTensor": 56}
        | {"ActivationDescCount": 64, "ActivationDescs": 72, "Direction": 80},
    ),
    "LSTM": (
        120,
        {"InputTensor": 0, "WeightTensor": 8, "RecurrenceTensor": 16, "BiasTensor": 24}
        | {"HiddenInitTensor": 32, "CellMemInitTensor": 40, "SequenceLengthsTensor": 48, "PeepholeTensor": 56}
        | {"OutputSequenceTensor": 64, "OutputSingleTensor": 72, "OutputCellSingleTensor": 80, "ActivationDescCount": 88}
        | {"ActivationDescs": 96, "Direction": 104, "ClipThreshold": 108, "UseClipThreshold": 112}
        | {"CoupleInputForget": 116},
    ),
    "GRU": (
        88,
        {"InputTensor": 0, "WeightTensor": 8, "RecurrenceTensor": 16, "BiasTensor": 24}
        | {"HiddenInitTensor": 32, "SequenceLengthsTensor": 40, "OutputSequenceTensor": 48, "OutputSingleTensor": 56}
        | {"ActivationDescCount": 64, "ActivationDescs": 72, "Direction": 80, "LinearBeforeReset": 84},
    ),
    "ROI_POOLING": (40, {"InputTensor": 0, "ROITensor": 8, "OutputTensor": 16, "SpatialScale": 24, "PooledSize": 28}),
    **{  # DML_ROI_ALIGN(1)_OPERATOR_DESC: four tensors, the enums, the scales, (the offsets,) the rest
        op: (size, {"InputTensor": 0, "ROITensor": 8, "BatchIndicesTensor": 16, "OutputTensor": 24} | rest)
        for op, size, rest in (
            (
                "ROI_ALIGN",
                64,
                {"ReductionFunction": 32, "InterpolationMode": 36, "SpatialScaleX": 40, "SpatialScaleY": 44}
                | {"OutOfBoundsInputValue": 48, "MinimumSamplesPerOutput": 52, "MaximumSamplesPerOutput": 56},
            ),
            (
                "ROI_ALIGN1",
                72,
                {"ReductionFunction": 32, "InterpolationMode": 36, "SpatialScaleX": 40, "SpatialScaleY": 44}
                | {"InputPixelOffset": 48, "OutputPixelOffset": 52, "OutOfBoundsInputValue": 56}
                | {"MinimumSamplesPerOutput": 60, "MaximumSamplesPerOutput": 64, "AlignRegionsToCorners": 68},
            ),
        )
    },
    **{  # DML_MULTIHEAD_ATTENTION(1)_OPERATOR_DESC: the tensors (ATTENTION1's PastSequenceLengthsTensor among them), the rest
        op: (size, {n: 8 * i for i, n in enumerate(tensors)} | rest)
        for op, size, tensors, rest in (
            (
                "MULTIHEAD_ATTENTION",
                128,
                ("QueryTensor", "KeyTensor", "ValueTensor", "StackedQueryKeyTensor", "StackedKeyValueTensor")
                + ("StackedQueryKeyValueTensor", "BiasTensor", "MaskTensor", "RelativePositionBiasTensor", "PastKeyTensor")
                + ("PastValueTensor", "OutputTensor", "OutputPresentKeyTensor", "OutputPresentValueTensor"),
                {"Scale": 112, "MaskFilterValue": 116, "HeadCount": 120, "MaskType": 124},
            ),
            (
                "MULTIHEAD_ATTENTION1",
                144,
                ("QueryTensor", "KeyTensor", "ValueTensor", "StackedQueryKeyTensor", "StackedKeyValueTensor")
                + ("StackedQueryKeyValueTensor", "BiasTensor", "MaskTensor", "RelativePositionBiasTensor", "PastKeyTensor")
                + ("PastValueTensor", "PastSequenceLengthsTensor", "OutputTensor", "OutputPresentKeyTensor")
                + ("OutputPresentValueTensor",),
                {"Scale": 120, "MaskFilterValue": 124, "QueryHeadCount": 128, "KeyValueHeadCount": 132, "MaskType": 136},
            ),
        )
    },
    **{  # DML_SLICE(1)/SLICE_GRAD_OPERATOR_DESC: two tensors, the count, three arrays
        op: (48, {big: 0, small: 8, "DimensionCount": 16} | dict(zip(arrays, (24, 32, 40), strict=True)))
        for op, big, small, arrays in (
            ("SLICE", "InputTensor", "OutputTensor", ("Offsets", "Sizes", "Strides")),
            ("SLICE1", "InputTensor", "OutputTensor", WINDOW_ARRAYS),
            ("SLICE_GRAD", "InputGradientTensor", "OutputGradientTensor", WINDOW_ARRAYS),
        )
    },
    "PADDING": (
        48,
        {"InputTensor": 0, "OutputTensor": 8, "PaddingMode": 16, "PaddingValue": 20}
        | {"DimensionCount": 24, "StartPadding": 32, "EndPadding": 40},
    ),
    "PADDING1": (
        56,
        {"InputTensor": 0, "OutputTensor": 8, "PaddingMode": 16, "PaddingValueDataType": 20, "PaddingValue": 24}
        | {"DimensionCount": 32, "StartPadding": 40, "EndPadding": 48},
    ),
    "TILE": (32, {"InputTensor": 0, "OutputTensor": 8, "RepeatsCount": 16, "Repeats": 24}),
    "UPSAMPLE_2D": (32, {"InputTensor": 0, "OutputTensor": 8, "ScaleSize": 16, "InterpolationMode": 24}),
    "RESAMPLE": (32, {"InputTensor": 0, "OutputTensor": 8, "InterpolationMode": 16, "ScaleCount": 20, "Scales": 24}),
    "RESAMPLE1": (
        48,
        {"InputTensor": 0, "OutputTensor": 8, "InterpolationMode": 16, "DimensionCount": 20, "Scales": 24}
        | {"InputPixelOffsets": 32, "OutputPixelOffsets": 40},
    ),
    "RESAMPLE2": (
        56,
        {"InputTensor": 0, "OutputTensor": 8, "InterpolationMode": 16, "RoundingDirection": 20, "DimensionCount": 24}
        | {"Scales": 32, "InputPixelOffsets": 40, "OutputPixelOffsets": 48},
    ),
    "RESAMPLE3": (
        64,
        {"InputTensor": 0, "OutputTensor": 8, "InterpolationMode": 16, "RoundingDirection": 20, "DimensionCount": 24}
        | {"Scales": 32, "InputPixelOffsets": 40, "OutputPixelOffsets": 48, "Antialiased": 56},
    ),
    **{  # DML_FOLD_OPERATOR_DESC and DML_UNFOLD_OPERATOR_DESC: two tensors, the count, five arrays
        op: (64, {"InputTensor": 0, "OutputTensor": 8, "DimensionCount": 16} | {f: 24 + 8 * i for i, f in enumerate(_WINDOW)})
        for op in ("FOLD", "UNFOLD")
    },
    "VALUE_SCALE_2D": (32, {"InputTensor": 0, "OutputTensor": 8, "Scale": 16, "ChannelCount": 20, "Bias": 24}),
    "ROI_ALIGN_GRAD": (
        88,
        {"InputTensor": 0, "InputGradientTensor": 8, "ROITensor": 16, "BatchIndicesTensor": 24, "OutputGradientTensor": 32}
        | {"OutputROIGradientTensor": 40, "ReductionFunction": 48, "InterpolationMode": 52, "SpatialScaleX": 56}
        | {"SpatialScaleY": 60, "InputPixelOffset": 64, "OutputPixelOffset": 68, "MinimumSamplesPerOutput": 72}
        | {"MaximumSamplesPerOutput": 76, "AlignRegionsToCorners": 80},
    ),
    "RESAMPLE_GRAD": (
        48,
        {"InputGradientTensor": 0, "OutputGradientTensor": 8, "InterpolationMode": 16, "DimensionCount": 20, "Scales": 24}
        | {"InputPixelOffsets": 32, "OutputPixelOffsets": 40},
    ),
    **{  # the integer matrix multiplies: their tensors only, 8 bytes each
        op: (8 * len(names.split()), dict(zip(names.split(), range(0, 8 * len(names.split()), 8), strict=True)))
        for op, names in (
            ("MATRIX_MULTIPLY_INTEGER", "ATensor AZeroPointTensor BTensor BZeroPointTensor OutputTensor"),
            (
                "QUANTIZED_LINEAR_MATRIX_MULTIPLY",
                "ATensor AScaleTensor AZeroPointTensor BTensor BScaleTensor BZeroPointTensor OutputScaleTensor"
                " OutputZeroPointTensor OutputTensor",
            ),
            (
                "MATRIX_MULTIPLY_INTEGER_TO_FLOAT",
                "ATensor AScaleTensor AZeroPointTensor BTensor BScaleTensor BZeroPointTensor BiasTensor OutputTensor",
            ),
        )
    },
    "RESAMPLE_GRAD1": (
        56,
        {"InputGradientTensor": 0, "OutputGradientTensor": 8, "InterpolationMode": 16, "RoundingDirection": 20}
        | {"DimensionCount": 24, "Scales": 32, "InputPixelOffsets": 40, "OutputPixelOffsets": 48},
    ),
    "AVERAGE_POOLING_GRAD": (
        64,
        {"InputGradientTensor": 0, "OutputGradientTensor": 8, "DimensionCount": 16, "Strides": 24, "WindowSize": 32}
        | {"StartPadding": 40, "EndPadding": 48, "IncludePadding": 56},
    ),
    "MAX_POOLING_GRAD": (
        72,
        {"InputTensor": 0, "InputGradientTensor": 8, "OutputGradientTensor": 16, "DimensionCount": 24, "Strides": 32}
        | {"WindowSize": 40, "StartPadding": 48, "EndPadding": 56, "Dilations": 64},
    ),
    "LOCAL_RESPONSE_NORMALIZATION_GRAD": (
        48,
        {"InputTensor": 0, "InputGradientTensor": 8, "OutputGradientTensor": 16, "CrossChannel": 24, "LocalSize": 28}
        | {"Alpha": 32, "Beta": 36, "Bias": 40},
    ),
    "RANDOM_GENERATOR": (32, {"InputStateTensor": 0, "OutputTensor": 8, "OutputStateTensor": 16, "Type": 24}),
    **{  # quantize.py
        op: (32, {"InputTensor": 0, "QuantizationType": 8, "QuantizationTensorCount": 12, "QuantizationTensors": 16} | _OUT24)
        for op in ("QUANTIZE", "DEQUANTIZE")
    },
    "DYNAMIC_QUANTIZE_LINEAR": (32, {"InputTensor": 0, "OutputTensor": 8, "OutputScaleTensor": 16, "OutputZeroPointTensor": 24}),
    **{  # DML_BATCH_NORMALIZATION(_TRAINING)_GRAD_OPERATOR_DESC: eight tensors, then Epsilon
        op: (72, {n: 8 * i for i, n in enumerate(_BN_GRAD_TENSORS.split())} | {"Epsilon": 64})
        for op in ("BATCH_NORMALIZATION_GRAD", "BATCH_NORMALIZATION_TRAINING_GRAD")
    },
    "ADAM_OPTIMIZER": (  # DML_ADAM_OPTIMIZER_OPERATOR_DESC: eight tensors, then the four FLOATs
        80,
        {n: 8 * i for i, n in enumerate(_ADAM_TENSORS.split())} | {"LearningRate": 64, "Beta1": 68, "Beta2": 72, "Epsilon": 76},
    ),
}


# -- layouts -------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(operator_table.OPERATORS))
def test_layout_matches_directml_h(name: str) -> None:
    assert name in RECORDED, f"record DML_{name}_OPERATOR_DESC's layout from DirectML.h (see test_live_layout)"
    assert descpack.layout(operator_table.OPERATORS[name]) == RECORDED[name]
    assert name in descpack.OPERATOR_TYPE


def test_base_struct_layouts() -> None:
    # recorded with the operator descs: sizeof DML_OPERATOR_DESC, DML_TENSOR_DESC 16,
    # DML_BUFFER_TENSOR_DESC 48, DML_SCALAR_UNION 8
    assert (descpack.OPERATOR_DESC_SIZE, descpack.TENSOR_DESC_SIZE, descpack.BUFFER_TENSOR_DESC_SIZE) == (16, 16, 48)
    # offsetof each DML_BUFFER_TENSOR_DESC member, in order
    members = "DataType Flags DimensionCount Sizes Strides TotalTensorSizeInBytes GuaranteedBaseOffsetAlignment"
    offsets = dict(zip(members.split(), (0, 4, 8, 16, 24, 32, 40), strict=True))
    assert list(descpack.BUFFER_TENSOR_DESC_OFFSETS.items()) == list(offsets.items())
    assert descpack.scalar_union(np.float32(1.5)) == struct.pack("<f", 1.5) + b"\0" * 4
    assert descpack.scalar_union(np.int64(-2)) == struct.pack("<q", -2)


def test_kinds_the_schema_may_add() -> None:
    """A Kind named INT packs as a signed 4-byte INT, SCALAR_UNION as DML_SCALAR_UNION (8 bytes,
    8-aligned), as in DML_FILL_VALUE_CONSTANT_OPERATOR_DESC {OutputTensor*, ValueDataType, Value}."""
    from enum import Enum

    class Future(Enum):
        INT = "INT"
        SCALAR_UNION = "scalar union"

    op = schema.OperatorSchema("X", (schema.Field("A", Future.INT), schema.Field("B", Future.SCALAR_UNION)), "1_0")
    assert descpack.layout(op) == (16, {"A": 0, "B": 8})
    fill = schema.OperatorSchema(
        "Y",
        (
            schema.Field("OutputTensor", Kind.OUTPUT),
            schema.Field("ValueDataType", Kind.UINT),
            schema.Field("Value", Future.SCALAR_UNION),
        ),
        "1_0",
    )
    assert descpack.layout(fill) == (24, {"OutputTensor": 0, "ValueDataType": 8, "Value": 16})


def _generic_fields(op: schema.OperatorSchema) -> dict[str, Any]:
    """Any desc of `op` that parses (not necessarily one DirectML takes): for packing only."""
    fields: dict[str, Any] = {}
    for f in op.fields:
        if f.kind in (Kind.INPUT, Kind.OUTPUT):
            fields[f.name] = {"DataType": "FLOAT32", "Sizes": [2, 3], **({"Strides": [1, 2]} if f.optional else {})}
        elif f.kind is Kind.COUNT:
            fields[f.name] = 2
        elif f.kind in (Kind.INPUT_ARRAY, Kind.OUTPUT_ARRAY):  # two elements, as the COUNT says
            fields[f.name] = [{"DataType": "FLOAT32", "Sizes": [2, 3]}, {"DataType": "FLOAT32", "Sizes": [2, 1]}]
        elif f.kind is Kind.UINT_ARRAY:
            fields[f.name] = [1, 0]
        elif f.kind is Kind.INT_ARRAY:
            fields[f.name] = [-1, 2]
        elif f.kind is Kind.FLOAT_ARRAY:
            fields[f.name] = [0.5, -1.25]
        elif f.kind is Kind.UINT:
            fields[f.name] = 7
        elif f.kind is Kind.INT:
            fields[f.name] = -3
        elif f.kind is Kind.ENUM and f.enum == "DML_TENSOR_DATA_TYPE":
            fields[f.name] = "FLOAT32"  # the tensors' type, as CLIP1's MinMaxDataType must be
        elif f.kind is Kind.ENUM:
            assert f.enum is not None
            fields[f.name] = list(operator_table.ENUMS[f.enum])[-1]
        elif f.kind is Kind.SCALAR_UNION:
            fields[f.name] = 1.5
        elif f.kind is Kind.SCALE_BIAS:
            fields[f.name] = {"Scale": 2.0, "Bias": -0.5}
        elif f.kind is Kind.SIZE_2D:
            fields[f.name] = {"Width": 3, "Height": 2}
        elif f.kind is Kind.BOOL:
            fields[f.name] = True
        elif f.kind is Kind.FLOAT:
            fields[f.name] = 0.25
        elif f.kind is Kind.ACTIVATION:
            fields[f.name] = {"Type": "DML_OPERATOR_ACTIVATION_LINEAR", "Desc": {"Alpha": 2.0, "Beta": -1.0}}
        elif f.kind is Kind.ACTIVATION_ARRAY:  # RNN, LSTM, GRU: two, as the COUNT says (packing: test_recurrent.py)
            fields[f.name] = [{"Type": "ACTIVATION_LINEAR", "Alpha": 2.0, "Beta": -1.0}, {"Type": "ACTIVATION_TANH"}]
    return fields


def _walk(packed: descpack.Packed) -> None:
    """Every pointer slot is 8-aligned, inside the blob, and relocated to a target inside it."""
    slots = {at for at, _ in packed.relocations}
    assert len(slots) == len(packed.relocations)
    for at, target in packed.relocations:
        assert at % 8 == 0 and at + 8 <= len(packed.blob) and 0 < target < len(packed.blob)
        assert struct.unpack_from("<Q", packed.blob, at)[0] == target


@pytest.mark.parametrize("name", sorted(operator_table.OPERATORS))
def test_pack_every_operator(name: str) -> None:
    op = operator_table.OPERATORS[name]
    desc = parse_operator_desc(name, _generic_fields(op), ("desc",), ("type",))
    packed = descpack.pack(desc)
    _walk(packed)
    op_type, desc_at = struct.unpack_from("<I4xQ", packed.blob, packed.root)
    assert (op_type, desc_at) == (descpack.OPERATOR_TYPE[name], packed.desc)
    _, offsets = descpack.layout(op)
    for f in op.fields:
        at = desc_at + offsets[f.name]
        value = desc.values[f.name]
        if f.kind in (Kind.INPUT, Kind.OUTPUT):
            (ptr,) = struct.unpack_from("<Q", packed.blob, at)
            assert descpack.unpack_tensor(packed.blob, ptr) == value.__class__(
                value.data_type, value.sizes, value.strides, value.flags, value.size_in_bytes, 0
            )
        elif f.kind in (Kind.INPUT_ARRAY, Kind.OUTPUT_ARRAY):  # DML_TENSOR_DESC[2], 16 bytes each
            (ptr,) = struct.unpack_from("<Q", packed.blob, at)
            for i, t in enumerate(value):
                assert descpack.unpack_tensor(packed.blob, ptr + 16 * i).sizes == t.sizes
        elif f.kind in (Kind.UINT, Kind.COUNT):
            assert struct.unpack_from("<I", packed.blob, at)[0] == value
        elif f.kind is Kind.INT:
            assert struct.unpack_from("<i", packed.blob, at)[0] == value == -3
        elif f.kind is Kind.UINT_ARRAY:
            (ptr,) = struct.unpack_from("<Q", packed.blob, at)
            assert struct.unpack_from(f"<{len(value)}I", packed.blob, ptr) == tuple(value)
        elif f.kind is Kind.INT_ARRAY:
            (ptr,) = struct.unpack_from("<Q", packed.blob, at)
            assert struct.unpack_from(f"<{len(value)}i", packed.blob, ptr) == tuple(value) == (-1, 2)
        elif f.kind is Kind.FLOAT_ARRAY:
            (ptr,) = struct.unpack_from("<Q", packed.blob, at)
            assert struct.unpack_from(f"<{len(value)}f", packed.blob, ptr) == tuple(value) == (0.5, -1.25)
        elif f.kind is Kind.ENUM:
            assert f.enum is not None
            assert struct.unpack_from("<I", packed.blob, at)[0] == operator_table.ENUMS[f.enum][value]
        elif f.kind is Kind.BOOL:
            assert struct.unpack_from("<i", packed.blob, at)[0] == 1
        elif f.kind is Kind.FLOAT:
            assert struct.unpack_from("<f", packed.blob, at)[0] == 0.25
        elif f.kind is Kind.ACTIVATION:
            (ptr,) = struct.unpack_from("<Q", packed.blob, at)
            inner_type, inner_at = struct.unpack_from("<I4xQ", packed.blob, ptr)
            assert inner_type == descpack.OPERATOR_TYPE["ACTIVATION_LINEAR"]
            # the fused activation's tensors are null, then Alpha and Beta
            assert struct.unpack_from("<QQff", packed.blob, inner_at) == (0, 0, 2.0, -1.0)
    assert [b.name for b in packed.inputs] == list(desc.inputs)  # DirectML's binding order: struct order
    assert [b.name for b in packed.outputs] == list(desc.outputs)


def test_pack_optional_tensors_null_and_rebase() -> None:
    desc = make_desc(
        "MEAN_VARIANCE_NORMALIZATION1",
        {
            "InputTensor": tensor("FLOAT32", (2, 3, 4)),
            "OutputTensor": tensor("FLOAT32", (2, 3, 4)),
            "AxisCount": 2,
            "Axes": [1, 2],
            "NormalizeVariance": True,
            "Epsilon": 1e-5,
        },
    )
    packed = descpack.pack(desc)
    _, offsets = descpack.layout(desc.schema)
    scale, bias, fused = (
        struct.unpack_from("<Q", packed.blob, packed.desc + offsets[n])[0]
        for n in ("ScaleTensor", "BiasTensor", "FusedActivation")
    )
    assert (scale, bias, fused) == (0, 0, 0)
    assert [b.tensor is None for b in packed.inputs] == [False, True, True]
    base = 0x1234_0000
    rebased = packed.rebased(base)
    for at, target in packed.relocations:
        assert struct.unpack_from("<Q", rebased, at)[0] == base + target
    inp = descpack.unpack_tensor(packed.blob, struct.unpack_from("<Q", packed.blob, packed.desc)[0])
    assert (inp.sizes, inp.strides, inp.total_size_in_bytes) == ((2, 3, 4), None, 96)


# -- live layout check against a DirectML.h --------------------------------------------------------


def _directml_h() -> Path | None:
    for candidate in (
        os.environ.get("DML2ONNX_DIRECTML_H"),
        "/usr/share/mingw-w64/include/directml.h",
        "/usr/x86_64-w64-mingw32/include/directml.h",
    ):
        if candidate and Path(candidate).is_file():
            return Path(candidate)
    return None


def _layout_program(header: str) -> str:
    """The structs and enums of DirectML.h (a C++ header) as C, plus _Static_asserts of the
    packer's layouts, enum values and field order."""
    body = header[header.index("enum DML_TENSOR_DATA_TYPE") : header.index("struct DML_BINDING_TABLE_DESC")]
    body = re.sub(r"^using (\w+) = (\w+);", r"typedef \2 \1;", body, flags=re.M)
    names = re.findall(r"^(struct|union|enum)\s+(\w+)\s*$", body, re.M)
    lines = [
        "#include <windows.h>",
        "#include <stddef.h>",
        "#include <sal.h>",
        "#ifndef _Maybenull_\n#define _Maybenull_\n#endif",
        "#ifndef _Inexpressible_\n#define _Inexpressible_(x)\n#endif",
        "#define DML_TARGET_VERSION 0x6400",
        *(f"typedef {k} {n} {n};" for k, n in names),
        body,
    ]

    def check(expr: str, what: str) -> None:
        lines.append(f'_Static_assert({expr}, "{what}");')

    for name, op in operator_table.OPERATORS.items():
        struct_name = f"DML_{name}_OPERATOR_DESC"
        size, offsets = descpack.layout(op)
        check(f"sizeof({struct_name}) == {size}", f"sizeof {struct_name}")
        for f, at in offsets.items():
            check(f"offsetof({struct_name}, {f}) == {at}", f"{struct_name}.{f}")
        check(f"DML_OPERATOR_{name} == {descpack.OPERATOR_TYPE[name]}", f"DML_OPERATOR_{name}")
        fields = re.search(rf"^struct {struct_name}\s*\{{(.*?)\}};", header, re.M | re.S)
        assert fields is not None, struct_name
        assert re.findall(r"(\w+);", fields.group(1)) == [f.name for f in op.fields], f"{struct_name}: field order"
    for t, value in descpack.DATA_TYPE.items():
        check(f"DML_TENSOR_DATA_TYPE_{t} == {value}", t)
    for enum, values in schema.ENUMS.items():
        prefix = "DML_TENSOR_FLAG" if enum == "DML_TENSOR_FLAGS" else enum
        for v, number in values.items():
            check(f"{prefix}_{v} == {number}", f"{enum} {v}")
    for f, at in descpack.BUFFER_TENSOR_DESC_OFFSETS.items():
        check(f"offsetof(DML_BUFFER_TENSOR_DESC, {f}) == {at}", f"DML_BUFFER_TENSOR_DESC.{f}")
    check(f"sizeof(DML_BUFFER_TENSOR_DESC) == {descpack.BUFFER_TENSOR_DESC_SIZE}", "DML_BUFFER_TENSOR_DESC")
    check(f"sizeof(DML_TENSOR_DESC) == {descpack.TENSOR_DESC_SIZE}", "DML_TENSOR_DESC")
    check(f"sizeof(DML_OPERATOR_DESC) == {descpack.OPERATOR_DESC_SIZE}", "DML_OPERATOR_DESC")
    check("sizeof(DML_SCALAR_UNION) == 8", "DML_SCALAR_UNION")
    return "\n".join(lines) + "\n"


def test_live_layout(tmp_path: Path) -> None:
    header = _directml_h()
    if header is None:
        pytest.skip("no DirectML.h: set DML2ONNX_DIRECTML_H (microsoft/DirectX-Headers include/directx/DirectML.h)")
    if shutil.which(dmlapi.COMPILER) is None:
        pytest.skip(f"{dmlapi.COMPILER} is not installed (Debian: mingw-w64)")
    source = tmp_path / "layout.c"
    source.write_text(_layout_program(header.read_text()))
    done = subprocess.run([dmlapi.COMPILER, "-fsyntax-only", str(source)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-4000:]


# -- executions through DirectML's API ---------------------------------------------------------------

_why = dmlapi.missing()
live = pytest.mark.skipif(_why is not None, reason=f"DirectML's API under Wine is not set up ({_why}): run `make dml-setup`")
RNG = np.random.default_rng(7)


def _run(op: str, fields: dict[str, Any], feeds: dict[str, np.ndarray], **kw: Any) -> tuple[np.ndarray, np.ndarray]:
    desc = make_desc(op, fields)
    got = dmlapi.execute(desc, feeds, **kw).output
    want = registry.family(desc.schema.name).reference(desc, feeds)
    out = desc.tensor("OutputTensor")
    assert got.dtype == out.data_type.numpy and got.shape == out.sizes
    return got, want


def _assert_close(op: str, got: np.ndarray, want: np.ndarray) -> None:
    from dml2onnx.core import dtypes

    tol = tolerances.tolerance(op, dtypes.BY_NUMPY[got.dtype], "dml")
    c = tolerances.compare(got, want, tol)
    assert c.ok, f"max abs {c.max_abs}, max rel {c.max_rel}\n{got}\n{want}"


def _reduced(shape: tuple[int, ...], axes: list[int]) -> list[int]:
    return [1 if i in axes else s for i, s in enumerate(shape)]


TIES = RNG.integers(0, 3, (2, 3, 4, 5)).astype(np.float32)  # many ties on every axis


@live
@pytest.mark.parametrize("op", ["ARGMAX", "ARGMIN"])
@pytest.mark.parametrize("axes", [[0], [1], [3], [1, 2], [0, 3], [2, 1], [0, 1, 2, 3]])
@pytest.mark.parametrize("direction", ["INCREASING", "DECREASING"])
@pytest.mark.parametrize("out_type", ["UINT32", "INT64"])
def test_arg_with_ties(op: str, axes: list[int], direction: str, out_type: str) -> None:
    fields = {
        "InputTensor": tensor("FLOAT32", TIES.shape),
        "OutputTensor": tensor(out_type, _reduced(TIES.shape, axes)),
        "AxisCount": len(axes),
        "Axes": axes,
        "AxisDirection": direction,
    }
    got, want = _run(op, fields, {"InputTensor": TIES})
    np.testing.assert_array_equal(got, want)


@live
def test_argmax_int64_input_beyond_32_bits() -> None:
    x = np.array([[2**40, 5, 2**33, 1], [-(2**40), -1, -(2**35), -7], [2**32 + 1, 2**32, 3, 2**32 + 2]], np.int64)
    fields = {"InputTensor": tensor("INT64", x.shape), "OutputTensor": tensor("UINT32", (3, 1)), "AxisCount": 1, "Axes": [1]}
    for op in ("ARGMAX", "ARGMIN"):
        got, want = _run(op, fields | {"AxisDirection": "INCREASING"}, {"InputTensor": x})
        np.testing.assert_array_equal(got, want)


@live
@pytest.mark.parametrize("op", ["ACTIVATION_LOG_SOFTMAX1", "ACTIVATION_SOFTMAX1", "ACTIVATION_HARDMAX1"])
@pytest.mark.parametrize("axes", [[3], [1], [0, 2], [1, 2, 3], [0, 1, 2, 3]])
def test_softmax_family(op: str, axes: list[int]) -> None:
    x = TIES if op == "ACTIVATION_HARDMAX1" else RNG.standard_normal((2, 3, 4, 5)).astype(np.float32) * 4
    fields = {
        "InputTensor": tensor("FLOAT32", x.shape),
        "OutputTensor": tensor("FLOAT32", x.shape),
        "AxisCount": len(axes),
        "Axes": axes,
    }
    got, want = _run(op, fields, {"InputTensor": x})
    _assert_close(op, got, want)


@live
@pytest.mark.parametrize(
    ("index_type", "indices"),
    [
        ("UINT32", [0, 1, 2, 3, 4, 7, 1000, 2**32 - 1]),
        ("INT32", [0, 1, 3, -1, -4, -5, 4, -(2**31)]),
        ("INT64", [0, -1, 4, -5, 2**31 - 1, -(2**31), 3, 2]),
        ("UINT64", [2**32 + 1, 2**40 + 2, 3, 5, 7, 2**31, 2**64 - 1, 2**63]),
    ],
)
@pytest.mark.parametrize("value_type", ["FLOAT32", "INT8", "INT64"])
def test_one_hot_out_of_range(index_type: str, indices: list[int], value_type: str) -> None:
    np_index = {"UINT32": np.uint32, "INT32": np.int32, "INT64": np.int64, "UINT64": np.uint64}[index_type]
    values = {"FLOAT32": np.array([[-1.5, 2.5]], np.float32), "INT8": np.array([[3, -7]], np.int8)}
    values["INT64"] = np.array([[5, 2**40]], np.int64)
    fields = {
        "IndicesTensor": tensor(index_type, (8, 1)),
        "ValuesTensor": tensor(value_type, (1, 2)),
        "OutputTensor": tensor(value_type, (8, 4)),
        "Axis": 1,
    }
    feeds = {"IndicesTensor": np.array(indices, np_index).reshape(8, 1), "ValuesTensor": values[value_type]}
    got, want = _run("ONE_HOT", fields, feeds)
    np.testing.assert_array_equal(got, want)


CONSTANT_PLANE = RNG.standard_normal((2, 3, 4, 5)).astype(np.float32)
CONSTANT_PLANE[0, 0] = 7.0  # variance 0: only Epsilon keeps it finite


def _check_on_constant_plane(op: str, **fields: Any) -> None:
    """`op` (a MEAN_VARIANCE_NORMALIZATION) on CONSTANT_PLANE, FLOAT32 in and out, against its reference."""
    x = CONSTANT_PLANE
    io = {"InputTensor": tensor("FLOAT32", x.shape), "OutputTensor": tensor("FLOAT32", x.shape)}
    got, want = _run(op, io | fields, {"InputTensor": x})
    _assert_close(op, got, want)


@live
@pytest.mark.parametrize("epsilon", [1e-5, 0.5])
@pytest.mark.parametrize("cross_channel", [False, True])
@pytest.mark.parametrize("normalize_variance", [False, True])
def test_mvn_epsilon(epsilon: float, cross_channel: bool, normalize_variance: bool) -> None:
    _check_on_constant_plane(
        "MEAN_VARIANCE_NORMALIZATION", CrossChannel=cross_channel, NormalizeVariance=normalize_variance, Epsilon=epsilon
    )


@live
@pytest.mark.parametrize("axes", [[3], [2, 3], [1, 2, 3], [0], [0, 2]])
@pytest.mark.parametrize("epsilon", [1e-5, 0.25])
def test_mvn1_epsilon(axes: list[int], epsilon: float) -> None:
    _check_on_constant_plane(
        "MEAN_VARIANCE_NORMALIZATION1", AxisCount=len(axes), Axes=axes, NormalizeVariance=True, Epsilon=epsilon
    )


@live
def test_mvn_scale_bias_and_fused_activation() -> None:
    x = CONSTANT_PLANE
    s, b = RNG.standard_normal((2, 1, 1, 5)).astype(np.float32), RNG.standard_normal((2, 1, 1, 5)).astype(np.float32)
    common = {
        "InputTensor": tensor("FLOAT32", x.shape),
        "ScaleTensor": tensor("FLOAT32", s.shape),
        "BiasTensor": tensor("FLOAT32", b.shape),
        "OutputTensor": tensor("FLOAT32", x.shape),
        "AxisCount": 2,
        "Axes": [1, 2],
        "Epsilon": 1e-3,
    }
    feeds = {"InputTensor": x, "ScaleTensor": s, "BiasTensor": b}
    leaky = {"Type": "DML_OPERATOR_ACTIVATION_LEAKY_RELU", "Desc": {"Alpha": 0.1}}
    got, want = _run("MEAN_VARIANCE_NORMALIZATION1", common | {"NormalizeVariance": True, "FusedActivation": leaky}, feeds)
    _assert_close("MEAN_VARIANCE_NORMALIZATION1", got, want)
    for use_mean, use_variance in ((True, True), (False, True), (True, False), (False, False)):
        fields = common | {
            "UseMean": use_mean,
            "UseVariance": use_variance,
            "FusedActivation": {"Type": "DML_OPERATOR_ACTIVATION_SIGMOID"},
        }
        got, want = _run("MEAN_VARIANCE_NORMALIZATION2", fields, feeds)
        _assert_close("MEAN_VARIANCE_NORMALIZATION2", got, want)


@live
def test_strided_tensors() -> None:
    x = RNG.standard_normal((4, 6)).astype(np.float32)
    fields = {
        "InputTensor": {"DataType": "FLOAT32", "Sizes": [4, 6], "Strides": [1, 4]},  # transposed
        "OutputTensor": {"DataType": "FLOAT32", "Sizes": [4, 6], "Strides": [8, 1]},  # padded rows
        "AxisCount": 1,
        "Axes": [1],
    }
    got, want = _run("ACTIVATION_SOFTMAX1", fields, {"InputTensor": x})
    _assert_close("ACTIVATION_SOFTMAX1", got, want)


@live
def test_refusal_is_an_error_with_its_hresult() -> None:
    # Axes [5] of a 2-D input: dml2onnx's validation would refuse it; DirectML does too.
    bad = parse_operator_desc(
        "ARGMAX",
        {"InputTensor": tensor("FLOAT32", (2, 3)), "OutputTensor": tensor("UINT32", (2, 1)), "AxisCount": 1, "Axes": [5]}
        | {"AxisDirection": "INCREASING"},
        (),
        (),
    )
    with pytest.raises(dmlapi.DmlApiError) as e:
        dmlapi.execute(bad, {"InputTensor": np.zeros((2, 3), np.float32)})
    assert e.value.hresult == 0x80070057 and "CreateOperator" in e.value.text
    x = RNG.standard_normal((3, 4)).astype(np.float32)  # the host lives on
    got, want = _run(
        "ACTIVATION_RELU",
        {"InputTensor": tensor("FLOAT32", x.shape), "OutputTensor": tensor("FLOAT32", x.shape)},
        {"InputTensor": x},
    )
    np.testing.assert_array_equal(got, want)


# -- FINDINGS: where DirectML (1.15 from onnxruntime-directml 1.24.4, on vkd3d 1.6 + lavapipe)
# computes something other than dml2onnx's numpy references. Each test asserts what DirectML gave.

NAN, INF = np.nan, np.inf
NAN_ROWS = np.array(
    [[1, NAN, 3, 2], [NAN, 1, 5, 5], [-INF, -INF, -INF, -INF], [INF, 1, INF, 2], [NAN, NAN, NAN, NAN], [0, -0.0, 0, 1]],
    np.float32,
)


def _row_fields(op: str, out_type: str, **extra: Any) -> dict[str, Any]:
    out = (6, 1) if op in ("ARGMAX", "ARGMIN", "REDUCE") else NAN_ROWS.shape
    return {
        "InputTensor": tensor("FLOAT32", NAN_ROWS.shape),
        "OutputTensor": tensor(out_type, out),
        "AxisCount": 1,
        "Axes": [1],
        **extra,
    }


@live
def test_finding_arg_ops_skip_nan_unless_first() -> None:
    """DirectML scans forward keeping the first element, replacing it by a strictly greater one
    (INCREASING) or a greater-or-equal one (DECREASING): a NaN never wins unless it is first.
    The references (np.argmax/np.argmin) return the first NaN."""
    seen = {}
    for op in ("ARGMAX", "ARGMIN"):
        for direction in ("INCREASING", "DECREASING"):
            got, want = _run(op, _row_fields(op, "UINT32", AxisDirection=direction), {"InputTensor": NAN_ROWS})
            seen[op, direction] = (got.ravel().tolist(), want.ravel().tolist())
    assert seen == {
        ("ARGMAX", "INCREASING"): ([2, 0, 0, 0, 0, 3], [1, 0, 0, 0, 0, 3]),
        ("ARGMAX", "DECREASING"): ([2, 0, 3, 2, 0, 3], [1, 0, 3, 2, 3, 3]),
        ("ARGMIN", "INCREASING"): ([0, 0, 0, 1, 0, 0], [1, 0, 0, 1, 0, 0]),
        ("ARGMIN", "DECREASING"): ([0, 0, 3, 1, 0, 2], [1, 0, 3, 1, 3, 2]),
    }
    got, want = _run("REDUCE", _row_fields("REDUCE", "UINT32", Function="ARGMAX"), {"InputTensor": NAN_ROWS})
    assert (got.ravel().tolist(), want.ravel().tolist()) == ([2, 0, 0, 0, 0, 3], [1, 0, 0, 0, 0, 3])
    got, want = _run("ACTIVATION_HARDMAX1", _row_fields("ACTIVATION_HARDMAX1", "FLOAT32"), {"InputTensor": NAN_ROWS})
    assert (got.argmax(1).tolist(), want.argmax(1).tolist()) == ([2, 0, 0, 0, 0, 3], [1, 0, 0, 0, 0, 3])


@live
def test_finding_reduce_max_min_ignore_nan() -> None:
    """REDUCE MAX/MIN skip NaN (fmax/fmin); an all-NaN row gives -inf (MAX) / +inf (MIN).
    The reference propagates NaN. SUM propagates NaN as the reference does."""
    got, want = _run("REDUCE", _row_fields("REDUCE", "FLOAT32", Function="MAX"), {"InputTensor": NAN_ROWS})
    np.testing.assert_array_equal(got.ravel(), [3, 5, -INF, INF, -INF, 1])
    np.testing.assert_array_equal(want.ravel(), [NAN, NAN, -INF, INF, NAN, 1])
    got, _ = _run("REDUCE", _row_fields("REDUCE", "FLOAT32", Function="MIN"), {"InputTensor": NAN_ROWS})
    np.testing.assert_array_equal(got.ravel(), [1, 1, -INF, 1, INF, 0])
    got, want = _run("REDUCE", _row_fields("REDUCE", "FLOAT32", Function="SUM"), {"InputTensor": NAN_ROWS})
    np.testing.assert_array_equal(got, want)


@live
def test_finding_log_softmax1_nan_and_inf() -> None:
    """LOG_SOFTMAX1 over a row with a NaN gives finite numbers for the other elements
    (x + 43.0517...) instead of NaN; over [inf, 1, inf, 2] it gives [nan, -inf, nan, -inf] where
    the reference gives NaN everywhere. SOFTMAX1 agrees with the reference (NaN rows)."""
    got, want = _run("ACTIVATION_LOG_SOFTMAX1", _row_fields("ACTIVATION_LOG_SOFTMAX1", "FLOAT32"), {"InputTensor": NAN_ROWS})
    assert np.isnan(want[:5]).all()
    np.testing.assert_allclose(got[0], [44.0517, NAN, 46.0517, 45.0517], rtol=1e-5)
    np.testing.assert_allclose(got[1], [NAN, 42.0517, 46.0517, 46.0517], rtol=1e-5)
    assert np.isnan(got[2]).all() and np.isnan(got[4]).all()
    np.testing.assert_array_equal(got[3], [NAN, -INF, NAN, -INF])
    _assert_close("ACTIVATION_LOG_SOFTMAX1", got[5:], want[5:])
    got, want = _run("ACTIVATION_SOFTMAX1", _row_fields("ACTIVATION_SOFTMAX1", "FLOAT32"), {"InputTensor": NAN_ROWS})
    _assert_close("ACTIVATION_SOFTMAX1", got, want)


@live
@pytest.mark.parametrize("hide_int64", [False, True])
def test_finding_one_hot_int64_indices_use_low_32_bits(hide_int64: bool) -> None:
    """INT64 indices outside the INT32 range: DirectML compares the low 32 bits (unsigned) with
    the positions, adding the depth when the INT64 is negative; the reference (exact integers)
    gives OffValue everywhere. The same with Int64ShaderOps hidden from DirectML."""
    indices = [2**32 + 1, 2**40 + 2, 2**33 + 3, -(2**32) + 1, -(2**32) - 1, 2**31, -(2**31) - 1, 2**63 - 1]
    fields = {
        "IndicesTensor": tensor("INT64", (8, 1)),
        "ValuesTensor": tensor("FLOAT32", (1, 2)),
        "OutputTensor": tensor("FLOAT32", (8, 4)),
        "Axis": 1,
    }
    feeds = {"IndicesTensor": np.array(indices, np.int64).reshape(8, 1), "ValuesTensor": np.array([[0, 1]], np.float32)}
    desc = make_desc("ONE_HOT", fields)
    got = dmlapi.execute(desc, feeds, hide_int64=hide_int64).output
    want = registry.family("ONE_HOT").reference(desc, feeds)
    assert not want.any()
    hot = [int(r.argmax()) if r.any() else None for r in got]
    # low 32 bits: 1, 2, 3, 1 (+4 as negative: 5, out), 0xFFFFFFFF (-1 +4: 3), 2**31 (out), ...
    assert hot == [1, 2, 3, None, 3, None, None, None]


ACTIVATION_PARAMS: dict[str, dict[str, float]] = {
    "LINEAR": {"Alpha": 1.5, "Beta": -0.5},
    "SIGMOID": {},
    "HARD_SIGMOID": {"Alpha": 0.2, "Beta": 0.5},
    "TANH": {},
    "SCALED_TANH": {"Alpha": 1.0, "Beta": 1.0},
    "RELU": {},
    "LEAKY_RELU": {"Alpha": 0.1},
    "THRESHOLDED_RELU": {"Alpha": 0.5},
    "ELU": {"Alpha": 1.0},
    "CELU": {"Alpha": 1.0},
    "SCALED_ELU": {"Alpha": 1.0, "Gamma": 1.0},
    "SOFTPLUS": {"Steepness": 2.0},
    "PARAMETRIC_SOFTPLUS": {"Alpha": 0.5, "Beta": 1.5},
    "SOFTSIGN": {},
    "IDENTITY": {},
    "SHRINK": {"Bias": 0.3, "Threshold": 0.5},
    "GELU": {},
}


def _activation(name: str, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    fields = {"InputTensor": tensor("FLOAT32", x.shape), "OutputTensor": tensor("FLOAT32", x.shape), **ACTIVATION_PARAMS[name]}
    return _run(f"ACTIVATION_{name}", fields, {"InputTensor": x})


@live
@pytest.mark.parametrize("name", sorted(ACTIVATION_PARAMS))
def test_activations(name: str) -> None:
    x = (RNG.standard_normal((3, 17)) * 3).astype(np.float32)
    got, want = _activation(name, x)
    _assert_close(f"ACTIVATION_{name}", got, want)


@live
def test_finding_activations_nan_and_signed_zero() -> None:
    """NaN in: HARD_SIGMOID, RELU and CELU give 0 (the references NaN), THRESHOLDED_RELU gives
    NaN (its reference 0). -0.0 in: RELU, TANH and SCALED_TANH give +0.0 (references -0.0),
    SCALED_ELU gives -0.0 (reference +0.0). Every other activation agrees on both."""
    x = np.array([[np.nan, -0.0]], np.float32)
    differ = {}
    for name in ACTIVATION_PARAMS:
        got, want = _activation(name, x)
        for i, label in enumerate(("nan", "-0")):
            g, w = got.ravel()[i], want.ravel()[i]
            same = (np.isnan(g) and np.isnan(w)) or (g == w and np.signbit(g) == np.signbit(w))
            if not same:
                differ[name, label] = (repr(float(g)), repr(float(w)))
    assert differ == {
        ("HARD_SIGMOID", "nan"): ("0.0", "nan"),
        ("RELU", "nan"): ("0.0", "nan"),
        ("CELU", "nan"): ("0.0", "nan"),
        ("THRESHOLDED_RELU", "nan"): ("nan", "0.0"),
        ("RELU", "-0"): ("0.0", "-0.0"),
        ("TANH", "-0"): ("0.0", "-0.0"),
        ("SCALED_TANH", "-0"): ("0.0", "-0.0"),
        ("SCALED_ELU", "-0"): ("-0.0", "0.0"),
    }


@live
def test_finding_tanh_and_elu_lose_small_inputs() -> None:
    """Near 0, DirectML's TANH (and SCALED_TANH) and the negative branch of ELU/CELU/SCALED_ELU
    lose all relative precision (a FLOAT32 formula through exp: cancellation), which the absolute
    tolerance (1e-5) of the comparisons hides: tanh(1e-8) = 0, tanh(1e-6) = 1.0729e-6,
    elu(-1e-8) = -5.96e-8."""
    x = np.array([[1e-8, 1e-6, -1e-6, -1e-8]], np.float32)
    tanh, want = _activation("TANH", x)
    np.testing.assert_allclose(want.ravel(), [1e-8, 1e-6, -1e-6, -1e-8], rtol=1e-6)
    np.testing.assert_array_equal(tanh.ravel(), np.array([0.0, 1.0728836059570312e-06, -9.5367431640625e-07, 0.0], np.float32))
    elu, want = _activation("ELU", x)
    np.testing.assert_allclose(want.ravel(), [1e-8, 1e-6, -1e-6, -1e-8], rtol=1e-6)
    np.testing.assert_array_equal(elu.ravel()[2:], np.array([-1.0728836059570312e-06, -5.960464477539063e-08], np.float32))


@live
def test_int64_products_need_int64_shader_ops_hidden() -> None:
    """REDUCE MULTIPLY / SUM_SQUARE on INT64: with vkd3d's Int64ShaderOps visible DirectML picks
    a DXIL-only kernel, which vkd3d 1.6 cannot compile ("Failed to create Vulkan compute pipeline",
    caught from stderr) and vkd3d-dxil.dll (vkd3d 1.14, DXIL front end) runs, matching; hidden (the
    default here), DirectML's kernel matches the reference, wrapping included."""
    from dml2onnx.backends import winhost

    x = np.array([[2**62, 2**62, 5], [3**39, 3, 1]], np.int64)
    for function in ("MULTIPLY", "SUM_SQUARE"):
        fields = {"Function": function, "InputTensor": tensor("INT64", x.shape), "OutputTensor": tensor("INT64", (2, 1))}
        fields |= {"AxisCount": 1, "Axes": [1]}
        got, want = _run("REDUCE", fields, {"InputTensor": x})
        np.testing.assert_array_equal(got, want)
        if winhost.dxil_vkd3d():
            np.testing.assert_array_equal(_run("REDUCE", fields, {"InputTensor": x}, hide_int64=False)[0], want)
            continue
        with pytest.raises(RuntimeFailure, match="Failed to create Vulkan compute pipeline"):
            _run("REDUCE", fields, {"InputTensor": x}, hide_int64=False)


INT64_ROWS = np.array(
    [[0, 4294967293, 2147483649, 5], [2147483649, 0, 7, 9], [0, 2**31, 1, 2], [2**32 + 2**31, 2**32, 3, 4]], np.int64
)


@live
@pytest.mark.parametrize("hide_int64", [True, False])
def test_finding_int64_order_compares_low_halves_signed(hide_int64: bool) -> None:
    """INT64 inputs of ARGMAX, ARGMIN and REDUCE MAX/MIN (and REDUCE ARGMIN/ARGMAX): values are
    ordered as if the low 32-bit half were a signed INT32, so 0x80000001 counts as less than 0 and
    2**32 + 2**31 as less than 2**32 (the high halves compare correctly). Values whose low halves
    are below 2**31 order correctly (test_argmax_int64_input_beyond_32_bits). Same with
    Int64ShaderOps visible."""
    seen = {}
    for op, extra, out_type in (
        ("ARGMAX", {"AxisDirection": "INCREASING"}, "UINT32"),
        ("ARGMIN", {"AxisDirection": "INCREASING"}, "UINT32"),
        ("REDUCE", {"Function": "MAX"}, "INT64"),
        ("REDUCE", {"Function": "MIN"}, "INT64"),
    ):
        fields = {"InputTensor": tensor("INT64", INT64_ROWS.shape), "OutputTensor": tensor(out_type, (4, 1)), "AxisCount": 1}
        got, want = _run(op, fields | {"Axes": [1], **extra}, {"InputTensor": INT64_ROWS}, hide_int64=hide_int64)
        seen[f"{op} {extra}"] = (got.ravel().tolist(), want.ravel().tolist())
    assert seen == {
        "ARGMAX {'AxisDirection': 'INCREASING'}": ([3, 3, 3, 1], [1, 0, 1, 0]),
        "ARGMIN {'AxisDirection': 'INCREASING'}": ([2, 0, 1, 2], [0, 1, 0, 2]),
        "REDUCE {'Function': 'MAX'}": ([5, 9, 2, 2**32], [4294967293, 2147483649, 2147483648, 2**32 + 2**31]),
        "REDUCE {'Function': 'MIN'}": ([2147483649, 2147483649, 2147483648, 3], [0, 0, 0, 3]),
    }


@live
def test_finding_reduce_log_sum_exp_is_not_stabilized() -> None:
    """REDUCE LOG_SUM_EXP computes log(sum(exp(x))) without taking the maximum out: any element
    above ~88.7 (FLOAT32) gives +inf, a row of elements below ~-104 gives -inf."""
    x = np.array([[100.0, 0.0], [-200.0, -200.0], [88.0, 89.0], [1.0, 2.0]], np.float32)
    fields = {"Function": "LOG_SUM_EXP", "InputTensor": tensor("FLOAT32", x.shape), "OutputTensor": tensor("FLOAT32", (4, 1))}
    got, want = _run("REDUCE", fields | {"AxisCount": 1, "Axes": [1]}, {"InputTensor": x})
    np.testing.assert_array_equal(got.ravel()[:3], [np.inf, -np.inf, np.inf])
    np.testing.assert_allclose(want.ravel(), [100.0, -199.30685, 89.31326, 2.3132617], rtol=1e-6)
    np.testing.assert_allclose(got.ravel()[3], want.ravel()[3], rtol=1e-6)


@live
def test_finding_float16_overflow_saturates() -> None:
    """FLOAT16 results beyond the type's range come out as +-65504 (its largest finite value),
    not +-inf as the references (computing wider, then casting) give: REDUCE SUM, MULTIPLY, L2,
    ACTIVATION_LINEAR, ..."""
    x = np.array([[60000, 60000], [-60000, -10000]], np.float16)
    fields = {"Function": "SUM", "InputTensor": tensor("FLOAT16", x.shape), "OutputTensor": tensor("FLOAT16", (2, 1))}
    got, want = _run("REDUCE", fields | {"AxisCount": 1, "Axes": [1]}, {"InputTensor": x})
    np.testing.assert_array_equal(got.ravel(), np.array([65504, -65504], np.float16))
    np.testing.assert_array_equal(want.ravel(), np.array([np.inf, -np.inf], np.float16))
    fields = {"InputTensor": tensor("FLOAT16", x.shape), "OutputTensor": tensor("FLOAT16", x.shape), "Alpha": 1.5, "Beta": 0.0}
    got, want = _run("ACTIVATION_LINEAR", fields, {"InputTensor": x})
    np.testing.assert_array_equal(got.ravel(), np.array([65504, 65504, -65504, -15000], np.float16))
    np.testing.assert_array_equal(want.ravel(), np.array([np.inf, np.inf, -np.inf, -15000], np.float16))


@live
def test_integer_shrink_is_float32_arithmetic_rounded_half_to_even() -> None:
    """SHRINK on integer tensors: DirectML converts x to FLOAT32, subtracts/adds Bias, rounds half
    to even and saturates to the type's range; the reference (and the lowering) were changed to
    that from rounding toward zero in exact arithmetic, which DirectML never did."""
    x = np.array([[-3, -2, -1, 0, 1, 2, 3, 16777217, 2147483647, -2147483648]], np.int32)
    fields = {"InputTensor": tensor("INT32", x.shape), "OutputTensor": tensor("INT32", x.shape), "Bias": 0.5, "Threshold": 0.0}
    got, want = _run("ACTIVATION_SHRINK", fields, {"InputTensor": x})
    assert got.ravel().tolist() == want.ravel().tolist() == [-2, -2, 0, 0, 0, 2, 2, 16777216, 2147483647, -2147483648]


@live
def test_finding_float16_mvn_loses_precision_with_an_offset() -> None:
    """FLOAT16 MVN1 of rows with mean ~100: errors ~0.04 against the FLOAT64 reference (rounded to
    FLOAT16), ten times the FLOAT16 tolerance (4e-3); FLOAT32 stays within its 5e-5."""
    rng = np.random.default_rng(3)
    errors = {}
    for t in ("FLOAT16", "FLOAT32"):
        x = (rng.standard_normal((2, 64)) + 100).astype(t.lower())
        fields = {"InputTensor": tensor(t, x.shape), "OutputTensor": tensor(t, x.shape), "AxisCount": 1, "Axes": [1]}
        got, want = _run(
            "MEAN_VARIANCE_NORMALIZATION1", fields | {"NormalizeVariance": True, "Epsilon": 1e-5}, {"InputTensor": x}
        )
        errors[t] = float(np.max(np.abs(got.astype(np.float64) - want.astype(np.float64))))
    assert errors["FLOAT16"] > 0.02 and errors["FLOAT32"] < 5e-5, errors


@live
@pytest.mark.dml  # two minutes of DirectML under Wine: make test-dml, beside the DirectML EP's matrix
def test_matrix_through_directml_api() -> None:
    """dml2onnx/cases/'s every case through DirectML's API: each either matches the reference
    within tolerances.py or falls in a known category of disagreement above, and every category
    still occurs (a category DirectML no longer shows must be removed, with its README entry)."""
    from dml2onnx.cases import all_cases

    unexplained, seen, dxil = [], set(), set()
    for case in all_cases():
        desc = make_desc(case.op, case.fields)
        try:
            got = dmlapi.execute(desc, case.inputs).outputs
        except RuntimeFailure as e:
            why = dml_findings.dxil_only(case.id)
            if why is None or "DXIL-only" not in str(e):
                raise
            dxil.add(why)
            continue
        if mismatches(desc, got, registry.reference_outputs(desc, case.inputs), "dml"):
            why = dml_findings.known_disagreement(case.id)
            if why is None:
                unexplained.append(case.id)
            seen.add(why)
    assert unexplained == []
    assert seen == {why for _, why in dml_findings.KNOWN_DISAGREEMENTS}
    # vkd3d-dxil.dll (vkd3d 1.14 with its DXIL front end) compiles those kernels: none fails there
    from dml2onnx.backends import winhost

    assert dxil == (set() if winhost.dxil_vkd3d() else {why for _, why in dml_findings.DXIL_ONLY})


@live
def test_owned_by_dml_inputs_are_bound_at_initialization() -> None:
    """DML_TENSOR_FLAG_OWNED_BY_DML inputs go to the operator initializer (a buffer-array binding)
    and DirectML keeps them in its persistent resource."""
    x = RNG.standard_normal((2, 3, 4, 5)).astype(np.float32)
    s, b = np.array([1.0, 2.0, 3.0], np.float32).reshape(1, 3, 1, 1), np.array([0.5, -1.0, 2.0], np.float32).reshape(1, 3, 1, 1)
    owned = {"DataType": "FLOAT32", "Sizes": [1, 3, 1, 1], "Flags": "DML_TENSOR_FLAG_OWNED_BY_DML"}
    fields = {
        "InputTensor": tensor("FLOAT32", x.shape),
        "ScaleTensor": owned,
        "BiasTensor": owned,
        "OutputTensor": tensor("FLOAT32", x.shape),
    }
    desc = make_desc(
        "MEAN_VARIANCE_NORMALIZATION1", fields | {"AxisCount": 2, "Axes": [2, 3], "NormalizeVariance": True, "Epsilon": 1e-5}
    )
    feeds = {"InputTensor": x, "ScaleTensor": s, "BiasTensor": b}
    result = dmlapi.execute(desc, feeds)
    assert result.stats["persistent_bytes"] > 0
    _assert_close(
        "MEAN_VARIANCE_NORMALIZATION1", result.output, registry.family("MEAN_VARIANCE_NORMALIZATION1").reference(desc, feeds)
    )


@live
def test_padded_buffers_keep_their_tail() -> None:
    """TotalTensorSizeInBytes beyond the elements: DirectML writes only the elements; the rest of
    the output buffer keeps the 0xCD fill."""
    x = np.arange(-5, 7, dtype=np.float32).reshape(3, 4)
    fields = {
        "InputTensor": {
            "DataType": "FLOAT32",
            "Sizes": [3, 4],
            "TotalTensorSizeInBytes": 256,
            "GuaranteedBaseOffsetAlignment": 256,
        },
        "OutputTensor": {"DataType": "FLOAT32", "Sizes": [3, 4], "TotalTensorSizeInBytes": 64},
    }
    result = dmlapi.execute(make_desc("ACTIVATION_RELU", fields), {"InputTensor": x})
    np.testing.assert_array_equal(result.output, np.maximum(x, 0))
    assert result.raw["OutputTensor"][48:] == b"\xcd" * 16


# --- tests/formats/test_invalid_models.py's desc rules through DirectML's own validation ----------------

# Where dml2onnx refuses a desc that DirectML.dll (of onnxruntime-directml 1.24.4) creates and
# runs, with what it computed on all-ones inputs. Each is a validation disagreement to settle
# (README): until then this pins it, so that a change on either side is seen.
DIRECTML_ACCEPTS = {
    "hardmax-duplicate-axis": [1.0, 0.0, 1.0, 0.0, 1.0, 0.0, 1.0, 0.0],  # Axes [2, 2]: as Axes [2]
    "hardmax-no-axes": [1.0] * 8,  # AxisCount 0: every element its own row
    "mvn-softplus-steepness": [float("inf")] * 8,  # Steepness 0: softplus divides by it
}


def _desc_cases() -> list[tuple[str, dict[str, Any]]]:
    """The invalid-model cases whose fault is in the desc: parsed, but refused by validate()."""
    import copy

    from dml2onnx import lowering
    from dml2onnx.core.errors import Dml2OnnxError
    from invalid_models import CASES, base_models

    out = []
    for name, base, mutate, _, _ in CASES:
        model = copy.deepcopy(base_models()[base])
        mutate(model)
        d = model["dispatchables"]["op"]
        try:
            desc = parse_operator_desc(d["type"].removeprefix("DML_OPERATOR_"), d["desc"], ("desc",), ("type",))
        except Dml2OnnxError:
            continue  # refused while parsing: no desc to hand to DirectML
        try:
            lowering.validate(desc)
        except Dml2OnnxError:
            out.append((name, d))
    return out


DESC_CASES = _desc_cases()


@live
@pytest.mark.parametrize(("name", "dispatchable"), DESC_CASES, ids=[n for n, _ in DESC_CASES])
def test_invalid_descs_through_directml_validation(name: str, dispatchable: dict[str, Any]) -> None:
    """DirectML refuses (CreateOperator's E_INVALIDARG) every desc dml2onnx refuses, except the
    ones in DIRECTML_ACCEPTS, which it runs with the values recorded there."""
    desc = parse_operator_desc(dispatchable["type"].removeprefix("DML_OPERATOR_"), dispatchable["desc"], ("desc",), ("type",))
    feeds = {
        f.name: np.ones(t.sizes, t.data_type.numpy)
        for f in desc.schema.fields
        if f.kind == Kind.INPUT and (t := desc.optional_tensor(f.name)) is not None
    }
    if name in DIRECTML_ACCEPTS:
        got = dmlapi.execute(desc, feeds).output.ravel()[:8].tolist()
        assert got == DIRECTML_ACCEPTS[name]
        return
    with pytest.raises(dmlapi.DmlApiError) as refused:
        dmlapi.execute(desc, feeds)
    assert refused.value.hresult == 0x80070057, str(refused.value)


def test_the_desc_cases_cover_every_operator_rule() -> None:
    assert len(DESC_CASES) >= 20 and set(DIRECTML_ACCEPTS) <= {n for n, _ in DESC_CASES}
