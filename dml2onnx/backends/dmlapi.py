"""DirectML itself as the reference: operator descs executed with DirectML's own API.

As Microsoft's DxDispatch does on Windows: IDMLDevice::CreateOperator from the desc's C structs
(descpack.py packs them), CompileOperator, the operator initializer, binding tables, the command
recorder, then readback. On Linux this runs in dml_exec.exe (dml2onnx/backends/winhost/dml_exec.c) under
Wine, next to the DirectML.dll of `make dml-setup`'s cache folder, over vkd3d and lavapipe. The
cache folder, Wine environment, Xvfb and the stderr patterns that make results untrustworthy
(`vkd3d:err`, failed Vulkan pipelines) are winhost.py's, and so is the host process itself
(winhost.WineHost, shared with ort_host); `Host` below adds dml_exec's options and opcodes
(`build()` compiles dml_exec.exe with mingw-w64 on first use).

    from dml2onnx.backends import dmlapi
    result = dmlapi.execute(desc, {"InputTensor": x})   # desc: desc.OperatorDesc
    result.output                                       # numpy, OutputTensor's type and Sizes

Inputs are logical arrays (shaped like the tensor's Sizes, as the numpy references take them);
they are written into each tensor's buffer (TotalTensorSizeInBytes) through its Strides, and the
outputs are read back through theirs. Output buffers start filled with `output_fill` bytes
(0xCD by default), so elements DirectML never writes stand out.
"""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from dml2onnx import lowering
from dml2onnx.backends import descpack, winhost
from dml2onnx.core import tensor
from dml2onnx.core.desc import OperatorDesc
from dml2onnx.core.errors import RuntimeFailure
from dml2onnx.core.tensor import TensorDesc
from dml2onnx.formats.dml_graph import ConstantNode, IntermediateEdge, OperatorNode, SerializedGraph

SOURCE = Path(__file__).parent / "winhost" / "dml_exec.c"
COMPILER = "x86_64-w64-mingw32-gcc"
FLAG_OWNED_BY_DML = 1  # DML_TENSOR_FLAG_OWNED_BY_DML


class DmlApiError(winhost.HostError):
    """DirectML (or D3D12) refused or failed; `text` names the call and the HRESULT."""

    @property
    def hresult(self) -> int | None:
        marker = "HRESULT 0x"
        at = self.text.find(marker)
        return int(self.text[at + len(marker) : at + len(marker) + 8], 16) if at >= 0 else None


def exe_name() -> str:
    """dml_exec's file name (a hash of its sources: a changed source needs a rebuild)."""
    return winhost.built_name(SOURCE)


def exe_path() -> Path:
    return winhost.home() / exe_name()


def missing(build_ok: bool = True) -> str | None:
    """What executing descs through DirectML's API lacks (None when ready). Looks at files only.
    With `build_ok`, an unbuilt dml_exec.exe counts as ready when mingw-w64's gcc is there."""
    if sys.platform == "win32":
        return "dml_exec runs under Wine on Linux"
    why = winhost.missing_wine(("DirectML.dll",))
    if why is not None:
        return why
    if not exe_path().is_file() and not (build_ok and shutil.which(COMPILER)):
        return f"{exe_path()} is not built and {COMPILER} is not installed"
    return None


def missing_message() -> str:
    return f"DirectML's API under Wine is not set up ({missing() or 'unknown'}): {winhost.SETUP_HINT}"


def build(force: bool = False) -> Path:
    """Builds dml_exec.exe into the cache folder (next to DirectML.dll) unless it is there."""
    out = exe_path()
    if out.is_file() and not force:
        return out
    if shutil.which(COMPILER) is None:
        raise RuntimeFailure(f"{COMPILER} is not installed (Debian: mingw-w64): {winhost.SETUP_HINT}")
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(f".{os.getpid()}.tmp")
    cmd = [COMPILER, "-O2", "-Wall", "-Wextra", "-o", str(tmp), str(SOURCE), "-ld3d12", "-ldxgi"]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        tmp.unlink(missing_ok=True)
        raise RuntimeFailure(f"building {out.name} failed: {done.stderr.strip()[-2000:]}")
    tmp.replace(out)
    for old in out.parent.glob(f"{SOURCE.stem}-*.exe"):  # builds of older sources
        if old != out:
            old.unlink(missing_ok=True)
    return out


@dataclass
class Info:
    adapter: str
    max_feature_level: str  # "6_4"
    options: int
    error: str  # why the device is missing ("" when there is one)


class Host(winhost.WineHost):
    """One `wine dml_exec.exe` process with its own Xvfb, serving requests one at a time
    (winhost.WineHost: the process, its stderr checks and the framing of host_common.h)."""

    name = "dml_exec"
    label = "dml_exec (Wine)"
    error = DmlApiError

    def __init__(self, hide_int64: bool = True, compute: bool = False) -> None:
        if missing() is not None:
            raise RuntimeFailure(missing_message())
        exe = build()
        self.options = (hide_int64, compute)
        super().__init__(exe, (["--hide-int64"] if hide_int64 else []) + (["--compute"] if compute else []))
        if self.device.error:
            self.close()
            raise RuntimeFailure(f"dml_exec has no DirectML device: {self.device.error}")

    def started(self) -> None:
        self.device = self.info()

    def info(self) -> Info:
        body = self._ok(*self.request([b"V"], "INFO"), "INFO")
        at = 0

        def text() -> str:
            nonlocal at
            (n,) = struct.unpack_from("<I", body, at)
            s = bytes(body[at + 4 : at + 4 + n]).decode("utf-8", "replace")
            at += 4 + n
            return s

        adapter = text()
        level, options = struct.unpack_from("<II", body, at)
        at += 8
        error = text()
        return Info(adapter, f"{level >> 12}_{(level >> 8) & 0xF}" if level else "?", options, error)

    def execute(
        self,
        packed: descpack.Packed,
        inputs: list[tuple[int, bytes | None]],
        outputs: list[tuple[int, bytes | None]],
        flags: int = 0,
        what: str = "EXEC",
    ) -> tuple[list[bytes], dict[str, float]]:
        """inputs: (flags, bytes or None for a null tensor); outputs: (size, initial bytes or None)."""
        parts: list[bytes | memoryview] = [b"X", struct.pack("<I", flags), *_desc_parts(packed)]
        return self._tensors_and_result(parts, inputs, outputs, what)

    def graph(
        self,
        nodes: list[descpack.Packed],
        edges: tuple[list[tuple[int, int, int]], list[tuple[int, int, int]], list[tuple[int, int, int, int]]],
        inputs: list[tuple[int, bytes | None]],
        outputs: list[tuple[int, bytes | None]],
        flags: int = 0,
        what: str = "GRAPH",
    ) -> tuple[list[bytes], dict[str, float]]:
        """A DML_GRAPH_DESC of operator `nodes` and (input, output, intermediate) `edges`, compiled
        by IDMLDevice1::CompileGraph and run as `execute` runs an operator."""
        parts: list[bytes | memoryview] = [b"G", struct.pack("<II", flags, len(nodes))]
        for packed in nodes:
            parts += _desc_parts(packed)
        for group, width in zip(edges, (3, 3, 4), strict=True):
            parts.append(struct.pack("<I", len(group)))
            parts += [struct.pack(f"<{width}I", *edge) for edge in group]
        return self._tensors_and_result(parts, inputs, outputs, what)

    def _tensors_and_result(
        self,
        parts: list[bytes | memoryview],
        inputs: list[tuple[int, bytes | None]],
        outputs: list[tuple[int, bytes | None]],
        what: str,
    ) -> tuple[list[bytes], dict[str, float]]:
        """Appends EXEC's tensors to a request, sends it, and reads EXEC's answer."""
        parts.append(struct.pack("<I", len(inputs)))
        for in_flags, data in inputs:
            parts.append(struct.pack("<IQ", in_flags, 0 if data is None else len(data)))
            if data:
                parts.append(data)
        parts.append(struct.pack("<I", len(outputs)))
        for size, init in outputs:
            parts.append(struct.pack("<QB", size, init is not None))
            if init is not None:
                assert len(init) == size
                parts.append(init)
        body = self._ok(*self.request(parts, what), what)
        (m,) = struct.unpack_from("<I", body, 0)
        at = 4
        out: list[bytes] = []
        for _ in range(m):
            (n,) = struct.unpack_from("<Q", body, at)
            out.append(bytes(body[at + 8 : at + 8 + n]))
            at += 8 + n
        init_desc, exec_desc, temp, persistent = struct.unpack_from("<IIQQ", body, at)
        at += 24
        times = struct.unpack_from("<6d", body, at)
        names = ("create_ms", "compile_ms", "prepare_ms", "initialize_ms", "execute_ms", "total_ms")
        stats = dict(zip(names, times, strict=True))
        stats.update(
            initializer_descriptors=init_desc, operator_descriptors=exec_desc, temporary_bytes=temp, persistent_bytes=persistent
        )
        return out, stats


def _desc_parts(packed: descpack.Packed) -> list[bytes]:
    """A packed desc as a request carries it: its blob, root offset and relocations."""
    return [
        struct.pack("<I", len(packed.blob)),
        packed.blob,
        struct.pack("<II", packed.root, len(packed.relocations)),
        packed.encode_relocations(),
    ]


def host(hide_int64: bool = True, compute: bool = False) -> Host:
    """The shared dml_exec process for these options, started on first use (again if it died)."""
    return winhost.shared(("dml_exec", hide_int64, compute), lambda: Host(hide_int64, compute))


def to_buffer(t: TensorDesc, value: np.ndarray, fill: int = 0) -> bytes:
    """A logical array as the bytes of its tensor's buffer (TotalTensorSizeInBytes), through Strides
    (a 4-bit type's elements packed two a byte, element 2k in the low nibble: tensor.pack)."""
    a = np.asarray(value)
    if tuple(a.shape) != t.sizes:
        a = a.reshape(t.sizes)
    raw = np.full(t.size_in_bytes, fill, np.uint8)
    if t.data_type.is_packed:
        buf = bytearray(raw.tobytes())
        tensor.write(buf, 0, t, a)
        return bytes(buf)
    elements = raw[: t.buffer_elements * t.data_type.size].view(t.data_type.numpy.newbyteorder("<"))
    if t.packed:
        elements[: t.element_count] = a.reshape(-1)
    else:
        elements[t.offsets().reshape(-1)] = a.reshape(-1)
    return raw.tobytes()


def from_buffer(t: TensorDesc, raw: bytes) -> np.ndarray:
    """A tensor's buffer bytes as its logical array (Sizes, through Strides)."""
    if t.data_type.is_packed:
        return tensor.read(raw, 0, t)
    n = t.buffer_elements * t.data_type.size
    elements = np.frombuffer(raw[:n], dtype=t.data_type.numpy.newbyteorder("<")).astype(t.data_type.numpy)
    if t.packed:
        return elements[: t.element_count].reshape(t.sizes).copy()
    return elements[t.offsets()]


@dataclass
class Result:
    outputs: dict[str, np.ndarray]  # by the desc's output field names
    raw: dict[str, bytes]  # each output's whole buffer
    stats: dict[str, float] = field(default_factory=dict)  # times (ms), descriptors, resource sizes
    adapter: str = ""

    @property
    def output(self) -> np.ndarray:
        """OutputTensor, or the one output of an operator whose output field is named otherwise
        (OutputGradientTensor)."""
        return self.outputs["OutputTensor"] if "OutputTensor" in self.outputs else next(iter(self.outputs.values()))


def execute(
    desc: OperatorDesc,
    feeds: dict[str, np.ndarray],
    *,
    flags: int = 0,
    output_fill: int | None = 0xCD,
    hide_int64: bool = True,
    compute: bool = False,
    name: str | None = None,
    initial_outputs: dict[str, bytes] | None = None,
) -> Result:
    """Runs `desc` with DirectML's API (in dml_exec under Wine). `flags`: DML_EXECUTION_FLAGS
    (1 allows half-precision computation, 2 disables meta commands). `hide_int64` hides
    D3D12_OPTIONS1.Int64ShaderOps from DirectML, as winhost's default device does: vkd3d reports
    it, and DirectML then picks kernels vkd3d cannot compile (REDUCE MULTIPLY and SUM_SQUARE on
    INT64 fail with "Failed to create Vulkan compute pipeline"). Raises DmlApiError when
    DirectML refuses (e.g. CreateOperator's E_INVALIDARG), RuntimeFailure when the Vulkan stack
    reports errors (results untrustworthy) or the host dies."""
    packed = descpack.pack(desc)
    ins: list[tuple[int, bytes | None]] = []
    for b in packed.inputs:
        if b.tensor is None:
            ins.append((0, None))
            continue
        if b.name not in feeds or feeds[b.name] is None:
            raise RuntimeFailure(f"no value for {b.name}")
        owned = FLAG_OWNED_BY_DML if b.tensor.flags & 1 else 0
        ins.append((owned, to_buffer(b.tensor, feeds[b.name])))
    outs: list[tuple[int, bytes | None]] = []
    for b in packed.outputs:
        if b.tensor is None:
            outs.append((0, None))
        else:
            size = b.tensor.size_in_bytes
            start = (initial_outputs or {}).get(b.name)
            if start is None:
                start = None if output_fill is None else bytes([output_fill]) * size
            outs.append((size, start))
    h = host(hide_int64, compute)
    what = f"{desc.schema.full_name}" + (f" '{name}'" if name else "")
    raw, stats = h.execute(packed, ins, outs, flags, what)
    outputs, raws = {}, {}
    for b, data in zip(packed.outputs, raw, strict=True):
        if b.tensor is not None:
            raws[b.name] = data
            outputs[b.name] = from_buffer(b.tensor, data)
    return Result(outputs, raws, stats, h.device.adapter)


def execute_graph(
    graph: SerializedGraph, feeds: dict[str, np.ndarray], *, flags: int = 0, name: str | None = None
) -> dict[str, np.ndarray]:
    """A serialized graph compiled whole by DirectML (IDMLDevice1::CompileGraph, as DxDispatch's
    dmlSerializedGraph runs it) and run: `feeds` and the result by graph input / output name, each
    its `graph.inputs` / `graph.outputs` tensor. Constant nodes are bound as graph inputs after the
    graph's own, at initialization where their readers' tensors are OWNED_BY_DML (as DxDispatch
    binds a ConstantName node's file)."""
    operators = list(graph.operators)
    at = {n.index: i for i, n in enumerate(operators)}
    constants = [n for n in graph.nodes if isinstance(n, ConstantNode)]
    constant_input = {n.index: len(graph.input_names) + i for i, n in enumerate(constants)}
    owned = {e.from_node for e in graph.intermediate_edges if e.from_node in constant_input and _owned(graph, e)}
    ins: list[tuple[int, bytes | None]] = []
    for input_name in graph.input_names:
        t = graph.inputs.get(input_name)
        ins.append((0, None) if t is None else (0, to_buffer(t, feeds[input_name])))
    for n in constants:
        size = max(len(n.data), graph.constants[n.index].size_in_bytes)
        ins.append((FLAG_OWNED_BY_DML if n.index in owned else 0, n.data.ljust(size, b"\0")))
    inputs = [(e.graph_input, at[e.to_node], e.to_input) for e in graph.input_edges]
    inputs += [
        (constant_input[e.from_node], at[e.to_node], e.to_input)
        for e in graph.intermediate_edges
        if e.from_node in constant_input
    ]
    middle = [(at[e.from_node], e.from_output, at[e.to_node], e.to_input) for e in graph.intermediate_edges if e.from_node in at]
    outputs = [(at[e.from_node], e.from_output, e.graph_output) for e in graph.output_edges]
    outs: list[tuple[int, bytes | None]] = []
    for output_name in graph.output_names:
        t = graph.outputs.get(output_name)
        outs.append((0, None) if t is None else (t.size_in_bytes, bytes(t.size_in_bytes)))
    what = f"serialized graph {graph.label}" + (f" '{name}'" if name else "")
    raw, _ = host().graph([descpack.pack(n.desc) for n in operators], (inputs, outputs, middle), ins, outs, flags, what)
    return {n: from_buffer(graph.outputs[n], data) for n, data in zip(graph.output_names, raw, strict=True) if n in graph.outputs}


def _owned(graph: SerializedGraph, edge: IntermediateEdge) -> bool:
    """The tensor that reads the edge is flagged DML_TENSOR_FLAG_OWNED_BY_DML."""
    node = graph.nodes[edge.to_node]
    assert isinstance(node, OperatorNode)
    point = node.node.inputs[edge.to_input]
    return point is not None and bool(node.desc.tensor(point).flags & 1)


@dataclass
class DmlApiSession:
    """`runtime.Session`'s interface over DirectML's own API (like runtime.ReferenceSession):
    `run(feeds)` executes the desc itself, not a lowered graph."""

    name: str
    desc: OperatorDesc
    ep: str = "dmlapi"

    def __post_init__(self) -> None:
        host()  # Wine, the device and DirectML start here, not in the first dispatch's time

    def run(self, feeds: dict[str, np.ndarray]) -> np.ndarray:
        return execute(self.desc, feeds, name=self.name).output

    def run_all(self, feeds: dict[str, np.ndarray], initial_outputs: dict[str, bytes] | None = None) -> dict[str, np.ndarray]:
        """Every output, named as the lowered graph names them (lowering.graph_output).
        `initial_outputs`: each output buffer's contents before DirectML writes it (by field: the
        bound resource's bytes, as DxDispatch binds the resource itself), else zeros."""
        # what DirectML leaves unwritten (NONZERO_COORDINATES' rows past the count) keeps the
        # resource's contents, as in DxDispatch; without them, zeros, as the graphs write them
        outputs = execute(self.desc, feeds, name=self.name, output_fill=0, initial_outputs=initial_outputs).outputs
        return {lowering.graph_output(self.desc, f): v for f, v in outputs.items()}
