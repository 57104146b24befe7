"""Lowering targets: which ONNX patterns each execution provider runs natively. This table is
the one place where the lowerings choose between patterns.

`portable` is what the CPU, CUDA and DirectML EPs all run without falling back to the CPU; the
other targets use an EP's better patterns (on DirectML, ONNX Hardmax / ArgMax(select_last_index)
/ OneHot map back to the original DirectML operators)."""

from __future__ import annotations

from dataclasses import dataclass

from dml2onnx.core import dtypes


@dataclass(frozen=True)
class Target:
    name: str
    runs_on: tuple[str, ...]  # the EPs the graph must run on without CPU fallback
    native_hardmax: bool  # ONNX Hardmax-13
    argmax_select_last: bool  # ArgMax(select_last_index=1)
    argmax_types: tuple[dtypes.DataType, ...]  # input types ONNX ArgMax takes
    one_hot_any_type: bool  # OneHot with any index type of DML and any value type
    log_softmax_exact: bool  # LogSoftmax keeps x - max exact even when |max| is large, on any shape
    argmax_double: bool = False  # ArgMax on DOUBLE: exact for every 32-bit integer
    # ArgMax/ArgMin over an outer axis may answer 2**31 - 1 when every value is -inf (CUDA EP)
    arg_outer_axis_guard: bool = False
    # LogSoftmax is exact where the CUDA EP runs its block-per-row kernel (long rows), which
    # computes (x - max) - log(sum); its warp-per-row kernel computes x - (max + log(sum)).
    log_softmax_exact_on_long_rows: bool = False
    # The ONNX node the DirectML EP maps straight back onto the DirectML operator (its
    # DmlOperatorElementWise.cpp: Abs -> ELEMENT_WISE_ABS, Cast -> CAST, ...) computes exactly that
    # operator there, every DirectML rule of integers and rounding included: emit it as it is.
    dml_nodes: bool = False
    # Sign of a NaN is 0, as DirectML's SIGN gives (the CUDA EP computes (0 < x) - (x < 0)); the
    # CPU EP keeps a FLOAT32 NaN, so elsewhere a select makes it 0
    sign_of_nan_is_zero: bool = False
    # MaxPool takes FLOAT16 (the CUDA EP's cuDNN kernel; the CPU EP's takes FLOAT32 and 8-bit integers)
    max_pool_half: bool = False
    # AveragePool takes FLOAT16 and computes it as FLOAT32 does, rounding once (the CUDA EP's cuDNN
    # kernel: bit for bit the FLOAT32 pool rounded back, windows of 3x3 to 56x56 measured on an H200)
    average_pool_half: bool = False
    # Clip takes INT8 and UINT8 (the CPU and CUDA EPs' Clip-13; the DirectML EP's takes floats only)
    clip_8bit: bool = False

    def log_softmax_exact_for(self, length: int, rows: int, itemsize: int) -> bool:
        """Whether the EP's own LogSoftmax over rows of `length` elements (`rows` of them, each
        element `itemsize` bytes) is exact, so that the lowering need not subtract the max first."""
        return self.log_softmax_exact or (self.log_softmax_exact_on_long_rows and not cuda_warp_softmax(length, rows, itemsize))


def cuda_warp_softmax(length: int, rows: int, itemsize: int) -> bool:
    """Where the CUDA EP's (Log)Softmax takes its warp-per-row kernel (SoftMaxComputeHelper in
    onnxruntime/core/providers/cuda/math/softmax.cc): rows of up to 1024 elements and 4 KiB, and
    rows of 1025-2048 elements and up to 4 KiB (FLOAT16) when there are 8192 rows or more.
    tests/ops/test_log_softmax_kernels.py checks the exactness on both sides of these bounds on the GPU."""
    fits = length * itemsize <= 4096
    return fits and (length <= 1024 or (length <= 2048 and rows >= 8192))


TARGETS: dict[str, Target] = {
    t.name: t
    for t in (
        Target("portable", ("cpu", "cuda", "dml"), False, False, dtypes.FLOATS, False, False, arg_outer_axis_guard=True),
        Target("cpu", ("cpu",), True, True, (*dtypes.FLOATS, dtypes.INT64, dtypes.INT32, dtypes.INT8, dtypes.UINT8), False, True),
        # The CUDA EP has no Hardmax, no select_last_index and no ArgMax on integers (GPU.md), and
        # on short rows its LogSoftmax computes x - (max + log(sum)): 2e-3 off for |max| = 5e4 (H200).
        Target(
            "cuda",
            ("cuda",),
            False,
            False,
            dtypes.FLOATS,
            False,
            False,
            argmax_double=True,
            arg_outer_axis_guard=True,
            log_softmax_exact_on_long_rows=True,
            sign_of_nan_is_zero=True,
            max_pool_half=True,
            average_pool_half=True,
            clip_8bit=True,
        ),
        # The DirectML EP registers Hardmax, ArgMax on every integer type with select_last_index,
        # and OneHot with INT32/INT64/UINT32/UINT64 indices and any value type (dml_ep_registry).
        Target("dml", ("dml",), True, True, dtypes.FLOATS + dtypes.INTEGERS, True, False, dml_nodes=True),
    )
}
NAMES = tuple(TARGETS)
# The doc string of a node emitted for Target.dml_nodes: it computes DirectML's semantics on the
# DirectML EP only (elsewhere ONNX's: a FLOAT32 -> INT8 Cast wraps on the CPU EP, saturates there).
DML_NODE_DOC = "the node the DirectML EP maps back onto the DirectML operator"

# The target each engine runs unless --target says otherwise (run, check, bench): the graphs built for
# that EP. DirectML's API and the numpy reference run the descs themselves; export and inspect have no
# engine: `portable`, the graphs every EP runs.
ENGINE_TARGETS = {"cpu": "cpu", "cuda": "cuda", "dml": "dml"}


def for_engine(ep: str) -> str:
    return ENGINE_TARGETS.get(ep, "portable")
