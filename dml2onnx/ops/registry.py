"""Every operator family, one typed row each (family.Family), listed explicitly: the one place that
says which module lowers a DirectML operator type. Adding an operator is one row here (or one more
name in a row) and its module under ops/, plus its matrix cases (dml2onnx/cases/).

    family("ARGMAX").lower(desc, builder, inputs)
    reference_outputs(desc, inputs)          # every output the desc sets, from the numpy reference
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

import numpy as np

from dml2onnx.ops import (
    activation_more,
    adam_optimizer,
    argmax,
    batch_normalization,
    batch_normalization_grad,
    batch_normalization_training,
    cast,
    convolution,
    convolution_integer,
    cumulative,
    diagonal_matrix,
    element_wise,
    element_wise_activation,
    element_wise_arithmetic,
    element_wise_bits,
    element_wise_if,
    element_wise_logical,
    element_wise_pow,
    element_wise_quantized,
    element_wise_trig,
    fill_value,
    fold,
    gather,
    gemm,
    gradients,
    hardmax,
    hardmax1,
    join,
    local_response_normalization,
    local_response_normalization_grad,
    log_softmax1,
    lp_normalization,
    matrix_multiply_integer,
    max_unpooling,
    mean_variance_normalization,
    multihead_attention,
    nonzero_coordinates,
    one_hot,
    padding,
    pooling,
    pooling_grad,
    quantize,
    quantized_pooling,
    random_generator,
    recurrent,
    reduce,
    resample,
    resample_grad,
    reverse_subsequences,
    roi,
    roi_align_grad,
    scatter,
    slice,
    softmax1,
    space_depth,
    split,
    tile,
    top_k,
    value_scale_2d,
)
from dml2onnx.ops.family import Family

FAMILIES: tuple[Family, ...] = (
    hardmax.OPERATOR_FAMILY,
    hardmax1.OPERATOR_FAMILY,
    hardmax.LOG_SOFTMAX,
    log_softmax1.OPERATOR_FAMILY,
    hardmax.SOFTMAX,
    softmax1.OPERATOR_FAMILY,
    mean_variance_normalization.OPERATOR_FAMILY,
    mean_variance_normalization.MEAN_VARIANCE_NORMALIZATION1,
    argmax.OPERATOR_FAMILY,
    argmax.ARGMIN,
    reduce.OPERATOR_FAMILY,
    one_hot.OPERATOR_FAMILY,
    element_wise_activation.OPERATOR_FAMILY,
    element_wise.OPERATOR_FAMILY,
    element_wise_arithmetic.OPERATOR_FAMILY,
    cast.OPERATOR_FAMILY,
    fill_value.OPERATOR_FAMILY,
    element_wise_logical.OPERATOR_FAMILY,
    element_wise_bits.OPERATOR_FAMILY,
    element_wise_if.OPERATOR_FAMILY,
    diagonal_matrix.OPERATOR_FAMILY,
    activation_more.OPERATOR_FAMILY,
    gradients.OPERATOR_FAMILY,
    element_wise_pow.OPERATOR_FAMILY,
    element_wise_trig.OPERATOR_FAMILY,
    element_wise_quantized.OPERATOR_FAMILY,
    batch_normalization.OPERATOR_FAMILY,
    batch_normalization_training.OPERATOR_FAMILY,
    local_response_normalization.OPERATOR_FAMILY,
    lp_normalization.OPERATOR_FAMILY,
    gemm.OPERATOR_FAMILY,
    pooling.OPERATOR_FAMILY,
    convolution.OPERATOR_FAMILY,
    roi.OPERATOR_FAMILY,
    max_unpooling.OPERATOR_FAMILY,
    gather.OPERATOR_FAMILY,
    scatter.OPERATOR_FAMILY,
    join.OPERATOR_FAMILY,
    split.OPERATOR_FAMILY,
    multihead_attention.OPERATOR_FAMILY,
    slice.OPERATOR_FAMILY,
    padding.OPERATOR_FAMILY,
    tile.OPERATOR_FAMILY,
    space_depth.OPERATOR_FAMILY,
    cumulative.OPERATOR_FAMILY,
    reverse_subsequences.OPERATOR_FAMILY,
    resample.OPERATOR_FAMILY,
    fold.OPERATOR_FAMILY,
    resample_grad.OPERATOR_FAMILY,
    value_scale_2d.OPERATOR_FAMILY,
    top_k.OPERATOR_FAMILY,
    nonzero_coordinates.OPERATOR_FAMILY,
    recurrent.OPERATOR_FAMILY,
    quantize.OPERATOR_FAMILY,
    convolution_integer.OPERATOR_FAMILY,
    quantized_pooling.OPERATOR_FAMILY,
    random_generator.OPERATOR_FAMILY,
    batch_normalization_grad.OPERATOR_FAMILY,
    adam_optimizer.OPERATOR_FAMILY,
    pooling_grad.OPERATOR_FAMILY,
    local_response_normalization_grad.OPERATOR_FAMILY,
    roi_align_grad.OPERATOR_FAMILY,
    matrix_multiply_integer.OPERATOR_FAMILY,
)

BY_OPERATOR: dict[str, Family] = {name: f for f in FAMILIES for name in f.operators}


def family(name: str) -> Family:
    """The family lowering operator type `name` (short form: `ARGMAX`)."""
    return BY_OPERATOR[name]


T = TypeVar("T")


def by_output(desc: Any, result: T | Mapping[str, T]) -> dict[str, T]:
    """A family's lower() or reference() result as {output field: value}, checked against the
    desc's set outputs."""
    got = dict(result) if isinstance(result, Mapping) else {desc.output: result}
    if set(got) != set(desc.outputs):
        raise AssertionError(f"{desc.schema.name} gave outputs {sorted(got)}, its desc sets {list(desc.outputs)}")
    return {name: got[name] for name in desc.outputs}


def reference_outputs(desc: Any, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The numpy reference of every output the desc sets."""
    return by_output(desc, family(desc.schema.name).reference(desc, dict(inputs)))
