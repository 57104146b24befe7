"""DML_OPERATOR_SPACE_TO_DEPTH, …_SPACE_TO_DEPTH1, …_DEPTH_TO_SPACE, …_DEPTH_TO_SPACE1: 4-D
(NCHW) rearrangements of BlockSize x BlockSize blocks between the channels and the spatial axes.
The depth tensor [N, C * BlockSize**2, H, W] and the space tensor [N, C, H * BlockSize, W *
BlockSize] are read with the layouts of DML_DEPTH_SPACE_ORDER (the dimensions in parentheses
flattened together):

- DEPTH_COLUMN_ROW: depth [N, (BlockHeight, BlockWidth, C), H, W], space [N, C, (H, BlockHeight),
  (W, BlockWidth)] (ONNX DepthToSpace's DCR mode; the operators without an Order use it);
- COLUMN_ROW_DEPTH: depth [N, (C, BlockHeight, BlockWidth), H, W], the same space (ONNX's CRD).

What the pages leave open, as DirectML's own API showed it: BlockSize 0 is refused (E_INVALIDARG),
BlockSize 1 copies; an output of other Sizes or DataType is refused; every type (FLOAT64, the
64-bit integers beyond 2**53 included) is moved bit for bit.

The lowerings (byte moves, exact). "transpose": Reshape to 6-D, one Transpose, Reshape back: every
type (the CPU, CUDA and DirectML EPs register Reshape and Transpose for all of them). "native": ONNX
DepthToSpace (DCR or CRD, the desc's Order) or SpaceToDepth (DCR order only: SPACE_TO_DEPTH1 with
COLUMN_ROW_DEPTH keeps "transpose"). The DirectML EP maps them back onto DML_DEPTH_TO_SPACE1 /
DML_SPACE_TO_DEPTH1 (DmlOperatorDepthToSpace.cpp, DmlOperatorSpaceToDepth.cpp; every type there,
_T6 of dml_ep_registry): the `dml` target emits them (DML_PREFERENCE). Elsewhere "native" takes
FLOAT32 and FLOAT64 only (NATIVE_TYPES), "transpose" the others: the CUDA EP registers the two ops
for float, double and MLFloat16 (cuda/tensor/space_depth_ops.cc), the CPU EP (ORT 1.31.1) for
float, double, FLOAT16, INT8 and UINT8, and its FLOAT16 kernels quiet a signaling NaN (0x7D01
becomes 0x7F01, measured), as its Tile and Pad do.

The rule (choose, the `portable` and `cuda` targets): "native" where it applies to the type. On
the CUDA EP (H100, ORT 1.31.1, FLOAT32 8x64x256x512, DEPTH_TO_SPACE1 BlockSize 2) DepthToSpace
(CRD) moves 1857 GB/s, "transpose" 1124-1157 GB/s (torch.pixel_shuffle 2057; copy 2706).
"""

from __future__ import annotations

import numpy as np

from dml2onnx.core import dtypes
from dml2onnx.core.desc import OperatorDesc
from dml2onnx.core.errors import ModelError
from dml2onnx.core.schema import OperatorSchema
from dml2onnx.graph.builder import GraphBuilder
from dml2onnx.graph.targets import DML_NODE_DOC
from dml2onnx.ops import common
from dml2onnx.ops.family import Family

CANDIDATES = ("transpose", "native")  # choices.py
DML_PREFERENCE = ("native",)  # the DirectML EP maps DepthToSpace / SpaceToDepth onto the operators
# The types whose DepthToSpace / SpaceToDepth the CPU, CUDA and DirectML EPs all move bit for bit
NATIVE_TYPES = (dtypes.FLOAT32, dtypes.FLOAT64)
ROWS = ("SPACE_TO_DEPTH", "SPACE_TO_DEPTH1", "DEPTH_TO_SPACE", "DEPTH_TO_SPACE1")


def _to_space(desc: OperatorDesc) -> bool:
    return desc.schema.name.startswith("DEPTH_TO_SPACE")


def order(desc: OperatorDesc) -> str:
    """The DML_DEPTH_SPACE_ORDER (the first operators have DEPTH_COLUMN_ROW's)."""
    return desc["Order"] if "Order" in (f.name for f in desc.schema.fields) else "DEPTH_COLUMN_ROW"


def output_sizes(desc: OperatorDesc) -> tuple[int, ...] | None:
    """The output's Sizes the page gives, or None where the input's cannot be divided."""
    n, c, h, w = desc.tensor("InputTensor").sizes
    bs = desc["BlockSize"]
    if _to_space(desc):
        return None if c % (bs * bs) else (n, c // (bs * bs), h * bs, w * bs)
    return None if h % bs or w % bs else (n, c * bs * bs, h // bs, w // bs)


def validate(desc: OperatorDesc) -> None:
    bs = desc["BlockSize"]
    if bs < 1:  # DirectML refuses 0 (E_INVALIDARG, measured)
        raise ModelError(desc.at("BlockSize"), "must be at least 1")
    common.check_same_type(desc, "OutputTensor", "InputTensor")
    sizes = output_sizes(desc)
    if sizes is None:
        what = "the channel count by BlockSize**2" if _to_space(desc) else "the height and width by BlockSize"
        raise ModelError(desc.at("InputTensor", "Sizes"), f"must divide {what} ({bs})")
    out = desc.tensor("OutputTensor").sizes
    if out != sizes:
        raise ModelError(
            desc.at("OutputTensor", "Sizes"), f"must be {list(sizes)} (InputTensor's with BlockSize {bs}), not {list(out)}"
        )


def _depth_layout(c: int, bs: int, mode: str) -> tuple[list[int], tuple[int, int, int]]:
    """The depth axis split as (BlockHeight, BlockWidth, C) or (C, BlockHeight, BlockWidth), and
    where (C, BlockHeight, BlockWidth) sit among those three."""
    if mode == "DEPTH_COLUMN_ROW":
        return [bs, bs, c], (2, 0, 1)
    return [c, bs, bs], (0, 1, 2)


def _perms(mode: str) -> tuple[list[int], list[int]]:
    """(depth -> space, space -> depth) permutations: depth 6-D [N, d0, d1, d2, H, W], space 6-D
    [N, C, H, BlockHeight, W, BlockWidth]."""
    c, by, bx = (1 + i for i in _depth_layout(1, 1, mode)[1])
    to_space = [0, c, 4, by, 5, bx]
    to_depth = [to_space.index(i) for i in range(6)]
    return to_space, to_depth


def _native_form(desc: OperatorDesc) -> bool:
    """Whether ONNX has the operator's layout: DepthToSpace has DCR and CRD, SpaceToDepth DCR only."""
    return _to_space(desc) or order(desc) == "DEPTH_COLUMN_ROW"


def applies(desc: OperatorDesc, candidate: str, opset: int) -> bool:
    return candidate == "transpose" or _native_form(desc)


def choose(desc: OperatorDesc, target: str, options: tuple[str, ...]) -> str:
    """One ONNX node (1857 GB/s against 1124-1157 on the CUDA EP) where every EP of the target moves the type."""
    native = "native" in options and desc.tensor("InputTensor").data_type in NATIVE_TYPES
    return "native" if native else "transpose"


def lower(desc: OperatorDesc, b: GraphBuilder, inputs: dict[str, str]) -> str:
    x = inputs["InputTensor"]
    bs, mode, out = desc["BlockSize"], order(desc), desc.tensor("OutputTensor").sizes
    typed = b.target.dml_nodes or desc.tensor("InputTensor").data_type in NATIVE_TYPES
    if b.variant == "native" and _native_form(desc) and typed:  # else the Transpose below
        doc = DML_NODE_DOC if b.target.dml_nodes else "ONNX's own node: a move, bit for bit on every EP for the type"
        if _to_space(desc):
            onnx_mode = "DCR" if mode == "DEPTH_COLUMN_ROW" else "CRD"
            return b.node("DepthToSpace", [x], "depth_to_space", doc, blocksize=bs, mode=onnx_mode)
        return b.node("SpaceToDepth", [x], "space_to_depth", doc, blocksize=bs)
    to_space, to_depth = _perms(mode)
    if _to_space(desc):
        n, cin, h, w = desc.tensor("InputTensor").sizes
        split, _ = _depth_layout(cin // (bs * bs), bs, mode)
        y = b.reshape(x, [n, *split, h, w], "blocks", f"the depth axis as {mode}")
        y = b.transpose(y, to_space, "to_space", "each block to its spatial place")
    else:
        n, c, h, w = desc.tensor("InputTensor").sizes
        y = b.reshape(x, [n, c, h // bs, bs, w // bs, bs], "blocks", "the space as blocks of BlockSize x BlockSize")
        y = b.transpose(y, to_depth, "to_depth", f"each block into the depth axis ({mode})")
    return b.reshape(y, list(out), "output", "at OutputTensor's Sizes")


def reference(desc: OperatorDesc, inputs: dict[str, np.ndarray]) -> np.ndarray:
    """The page's layouts, element by element: for every space position (n, c, y, x), its depth
    channel under the order."""
    x = np.asarray(inputs["InputTensor"])
    bs, mode = desc["BlockSize"], order(desc)
    out = np.empty(desc.tensor("OutputTensor").sizes, x.dtype)
    space, depth = (out, x) if _to_space(desc) else (x, out)
    _, c, sh, sw = space.shape
    for ch in range(c):
        for by in range(bs):
            for bx in range(bs):
                d = (by * bs + bx) * c + ch if mode == "DEPTH_COLUMN_ROW" else (ch * bs + by) * bs + bx
                if _to_space(desc):
                    space[:, ch, by:sh:bs, bx:sw:bs] = depth[:, d]
                else:
                    depth[:, d] = space[:, ch, by:sh:bs, bx:sw:bs]
    return out


def examples(op: OperatorSchema) -> list[common.Example]:
    """onnx_ops: each type, BlockSize 2 (the …1 operators with each Order)."""
    out: list[common.Example] = []
    orders = ("DEPTH_COLUMN_ROW", "COLUMN_ROW_DEPTH") if op.name.endswith("1") else (None,)
    depth, space = [1, 8, 2, 3], [1, 2, 4, 6]
    src, dst = (depth, space) if op.name.startswith("DEPTH_TO_SPACE") else (space, depth)
    for t in common.example_types(op, "InputTensor"):
        for o in orders:
            ex = {"InputTensor": common.example_tensor(t, src), "OutputTensor": common.example_tensor(t, dst), "BlockSize": 2}
            out.append(ex | ({"Order": o} if o else {}))
    return out


OPERATOR_FAMILY = Family(
    ("SPACE_TO_DEPTH", "SPACE_TO_DEPTH1", "DEPTH_TO_SPACE", "DEPTH_TO_SPACE1"),
    validate,
    lower,
    reference,
    CANDIDATES,
    applies=applies,
    choose=choose,
    dml_preference=DML_PREFERENCE,
    examples=examples,
)
