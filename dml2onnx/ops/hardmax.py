"""DML_OPERATOR_ACTIVATION_HARDMAX: 1 at the first maximum of each row (the last dimension), 0
elsewhere. HARDMAX1 with Axes {DimensionCount - 1}, as its page says; this module holds the rule
the single-axis forms (HARDMAX, SOFTMAX, LOG_SOFTMAX) share."""

from __future__ import annotations

from dml2onnx.core.desc import OperatorDesc
from dml2onnx.core.errors import ModelError
from dml2onnx.core.schema import OperatorSchema
from dml2onnx.ops import common, hardmax1, log_softmax1, softmax1
from dml2onnx.ops.family import Family

CANDIDATES = ("in_place",)  # one axis, the last: HARDMAX1's other candidates build the same graph
lower = hardmax1.lower  # over hardmax1.reduced_axes: the last dimension
reference = hardmax1.reference


def validate(desc: OperatorDesc) -> None:
    check_effective_rank(desc)
    common.check_same_type(desc, "OutputTensor", "InputTensor")
    common.check_same_sizes(desc, "OutputTensor", "InputTensor")


def effective_rank(sizes: tuple[int, ...]) -> int:
    """DimensionCount excluding the leftmost dimensions of size 1 ({1, 1, B, W} has 2)."""
    leading_ones = next((i for i, s in enumerate(sizes) if s != 1), len(sizes))
    return len(sizes) - leading_ones


def check_effective_rank(desc: OperatorDesc) -> None:
    sizes = desc.tensor("InputTensor").sizes
    rank = effective_rank(sizes)
    if rank > 2:
        raise ModelError(
            desc.at("InputTensor", "Sizes"),
            f"InputTensor of DML_{desc.schema.name} must have an effective rank no greater than 2 (DimensionCount "
            f"excluding leftmost dimensions of size 1), not {rank} for Sizes {list(sizes)}",
        )


def examples(op: OperatorSchema) -> list[common.Example]:
    """onnx_ops: a [3, 8] tensor of each type (one axis, the last)."""
    return [
        {"InputTensor": common.example_tensor(t, [3, 8]), "OutputTensor": common.example_tensor(t, [3, 8])}
        for t in common.example_types(op, "InputTensor")
    ]


OPERATOR_FAMILY = Family(("ACTIVATION_HARDMAX",), validate, lower, reference, CANDIDATES, examples=examples)
LOG_SOFTMAX = Family(
    ("ACTIVATION_LOG_SOFTMAX",),
    validate,
    log_softmax1.lower,
    log_softmax1.reference,
    ("in_place", "argmax_max", "reduce_chain"),
    examples=examples,
)
SOFTMAX = Family(
    ("ACTIVATION_SOFTMAX",),
    validate,
    softmax1.lower,
    softmax1.reference,
    ("in_place", "reduce_chain"),
    applies=softmax1.applies,
    examples=examples,
)
