"""Lowering targets: which ONNX patterns each execution provider runs natively. This table is
the one place where the lowerings choose between patterns.

`portable` is what the CPU, CUDA and DirectML EPs all run without falling back to the CPU; the
other targets use an EP's better patterns (on DirectML, ONNX Hardmax / ArgMax(select_last_index)
/ OneHot map back to the original DirectML operators)."""

from __future__ import annotations

from dataclasses import dataclass

from . import dtypes


@dataclass(frozen=True)
class Target:
    name: str
    runs_on: tuple[str, ...]  # the EPs the graph must run on without CPU fallback
    native_hardmax: bool  # ONNX Hardmax-13
    argmax_select_last: bool  # ArgMax(select_last_index=1)
    argmax_types: tuple[dtypes.DataType, ...]  # input types ONNX ArgMax takes
    one_hot_any_type: bool  # OneHot with any index type of DML and any value type
    log_softmax_exact: bool  # LogSoftmax keeps x - max exact even when |max| is large
    argmax_double: bool = False  # ArgMax on DOUBLE: exact for every 32-bit integer
    # ArgMax/ArgMin over an outer axis may answer 2**31 - 1 when every value is -inf (CUDA EP)
    arg_outer_axis_guard: bool = False


TARGETS: dict[str, Target] = {
    t.name: t
    for t in (
        Target("portable", ("cpu", "cuda", "dml"), False, False, dtypes.FLOATS, False, False, arg_outer_axis_guard=True),
        Target("cpu", ("cpu",), True, True, (*dtypes.FLOATS, dtypes.INT64, dtypes.INT32, dtypes.INT8, dtypes.UINT8), False, True),
        # The CUDA EP has no Hardmax, no select_last_index and no ArgMax on integers (GPU.md), and
        # its LogSoftmax computes x - (max + log(sum)): 2e-3 off for |max| = 5e4 (H200).
        Target("cuda", ("cuda",), False, False, dtypes.FLOATS, False, False, argmax_double=True, arg_outer_axis_guard=True),
        # The DirectML EP registers Hardmax, ArgMax on every integer type with select_last_index,
        # and OneHot with INT32/INT64/UINT32/UINT64 indices and any value type (dml_ep_registry).
        Target("dml", ("dml",), True, True, dtypes.FLOATS + dtypes.INTEGERS, True, False),
    )
}
NAMES = tuple(TARGETS)
