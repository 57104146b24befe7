"""The DirectML execution provider on Linux: ONNX Runtime's Windows build (onnxruntime-directml)
under Wine, over vkd3d (Direct3D 12 on Vulkan) and Mesa's CPU Vulkan driver (lavapipe).

`make dml-setup` (tools/dml-setup.sh) puts the DLLs, a Wine prefix and the host program built
from dml2onnx/backends/winhost/ort_host.c into one cache folder. Here one host process is started lazily
(inside its own Xvfb display, which Wine needs for DXGI) and shared by every session of this
Python process; it speaks the binary protocol described at the top of ort_host.c.

A broken Vulkan stack can make DirectML return wrong numbers without any ONNX Runtime error, so
the host's stderr is watched: a `vkd3d:err` line or a failed Vulkan pipeline during a request
turns that request into a RuntimeFailure.

Costs (Debian 12, Wine 8, Mesa 25 lavapipe): starting the host ~0.5-1.5 s; loading a session
~0.6-4 s and ~1.5 GB of (zeroed) lavapipe memory until it is freed, which happens once Python
drops the session; a request ~0.2-1.5 ms plus the tensor bytes through a pipe.

Settings (environment):
  DML2ONNX_DML_HOME      the cache folder (default ~/.cache/dml2onnx/directml-<version>)
  DML2ONNX_DML_DEVICE    hooked (default: the host's own D3D12 device, Int64ShaderOps hidden
                         from DirectML so that Cast to INT64 gets a kernel vkd3d can build) or
                         ort (ONNX Runtime makes the device)
  DML2ONNX_DML_FUSION=0  DirectML graph fusion off (ONNX Runtime's default is on): each node is
                         its own DirectML operator; sessions load ~2-3x faster here
  DML2ONNX_WINE_DML=0    `dml` is not offered through Wine (runtime.available())
  DML2ONNX_WINE_STDERR=1 echo the host's stderr (Wine, vkd3d, ONNX Runtime) with a [wine] prefix
  DML2ONNX_WINEDEBUG     WINEDEBUG for the host; DML2ONNX_DML_TIMEOUT seconds per request (600)
  DML2ONNX_VKD3D_DXIL=0  the hosts make their D3D12 device with Wine's d3d12.dll (vkd3d 1.6, DXBC
                         only) even where vkd3d-dxil.dll (vkd3d 1.14 with its DXIL front end,
                         tools/vkd3d-dxil.sh) is in the cache folder; see dxil_vkd3d()
  ORT_HOST_HIDE          features the hooked device hides: int64 (default), wave, fp16, double,
                         sm51, none; ORT_HOST_TRACE=1 logs DirectML's feature queries"""

from __future__ import annotations

import atexit
import collections
import functools
import hashlib
import os
import re
import select
import shutil
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar, cast

import numpy as np
import onnx

from dml2onnx.backends import xvfb
from dml2onnx.backends.ort_session import Session
from dml2onnx.core.errors import RuntimeFailure

ORT_VERSION = "1.24.4"
SOURCE = Path(__file__).parent / "winhost" / "ort_host.c"
# What ort_host.c and dml_exec.c share (framing, serving loop, the hooked D3D12 device).
COMMON = Path(__file__).parent / "winhost" / "host_common.h"
SETUP_HINT = "run `make dml-setup` (as root) to install it"
# vkd3d's own format (vkd3d 1.14's, in vkd3d-dxil.dll, with the thread id: `vkd3d:0024:err:...`),
# Wine's format for its vkd3d channel, and vkd3d's pipeline failure (a warning)
BAD_STDERR = re.compile(r"vkd3d:([0-9a-f]+:)?err|err:vkd3d:|Failed to create Vulkan compute pipeline")
# The DXIL-capable vkd3d that tools/vkd3d-dxil.sh builds into the cache folder (host_common.h)
DXIL_VKD3D = "vkd3d-dxil.dll"
REQUEST_TIMEOUT_S = float(os.environ.get("DML2ONNX_DML_TIMEOUT", "600"))

# LOAD flags of the host
FLAG_CPU = 1  # the CPU EP inside the host (tests the host itself)
FLAG_OWN_DEVICE = 2  # DirectML on the host's own D3D12 device, Int64ShaderOps hidden
FLAG_NO_FUSION = 4  # ep.dml.disable_graph_fusion=1

# ONNX element types the host moves (everything numpy has; bfloat16 and strings are not used).
ONNX_TYPES: dict[np.dtype, int] = {
    np.dtype(np.float32): 1,
    np.dtype(np.uint8): 2,
    np.dtype(np.int8): 3,
    np.dtype(np.uint16): 4,
    np.dtype(np.int16): 5,
    np.dtype(np.int32): 6,
    np.dtype(np.int64): 7,
    np.dtype(np.bool_): 9,
    np.dtype(np.float16): 10,
    np.dtype(np.float64): 11,
    np.dtype(np.uint32): 12,
    np.dtype(np.uint64): 13,
}
NUMPY_TYPES = {v: k for k, v in ONNX_TYPES.items()}


class HostError(RuntimeFailure):
    """An error the host answered with (ONNX Runtime's text in `text`); the host lives on."""

    def __init__(self, what: str, text: str) -> None:
        self.text = text
        super().__init__(f"{what}: {text}")


class HostExited(RuntimeFailure):
    """The host process ended while a request waited for its answer."""


def home() -> Path:
    """The cache folder with the DLLs, the host program and the Wine prefix."""
    configured = os.environ.get("DML2ONNX_DML_HOME")
    if configured:
        return Path(configured)
    return Path.home() / ".cache" / "dml2onnx" / f"directml-{ORT_VERSION}"


@functools.cache  # runtime.available() asks on every session; the sources do not change meanwhile
def built_name(source: Path) -> str:
    """A host program's file name, `<stem>-<hash>.exe`: the hash covers its source and
    host_common.h, so a change to either needs a rebuild."""
    digest = hashlib.sha256(source.read_bytes() + COMMON.read_bytes()).hexdigest()[:12]
    return f"{source.stem}-{digest}.exe"


def exe_name() -> str:
    """The host program's file name (a hash of its sources: a changed source needs a rebuild)."""
    return built_name(SOURCE)


def missing_wine(dlls: Sequence[str]) -> str | None:
    """What running a host program under Wine lacks, apart from the program itself: the tools,
    `dlls` in the cache folder, the Wine prefix (None when all are there). Looks at files only."""
    for tool in ("wine", "Xvfb"):
        if shutil.which(tool) is None:
            return f"'{tool}' is not installed"
    h = home()
    for name in dlls:
        if not (h / name).is_file():
            return f"{h / name} is missing"
    if not (h / "wineprefix" / "system.reg").is_file():
        return f"the Wine prefix {h / 'wineprefix'} is not created"
    return None


def dxil_vkd3d() -> Path | None:
    """vkd3d-dxil.dll, through which the hosts make their D3D12 device, so that DirectML's
    DXIL-only kernels (two-input Add/Sub/Mul/Div on FLOAT32, ...) compile; None where it is not
    built or DML2ONNX_VKD3D_DXIL=0 (then Wine's d3d12.dll, vkd3d 1.6, which reads only DXBC)."""
    path = home() / DXIL_VKD3D
    if os.environ.get("DML2ONNX_VKD3D_DXIL") == "0" or not path.is_file():
        return None
    return path


def missing() -> str | None:
    """What the Wine host lacks (None when it is set up). Cheap: looks at files only."""
    if sys.platform == "win32":
        return "the Wine host is for Linux; on Windows install onnxruntime-directml"
    why = missing_wine(("onnxruntime.dll", "DirectML.dll"))
    if why is None and not (home() / exe_name()).is_file():
        why = f"the host program {home() / exe_name()} is not built (or its source changed)"
    return why


def available() -> bool:
    return missing() is None


def missing_message() -> str:
    why = missing() or "unknown"
    return f"the DirectML EP under Wine is not set up ({why}): {SETUP_HINT}"


def wine_env(prefix: Path, display: str | None) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        WINEPREFIX=str(prefix),
        WINEARCH="win64",
        # Wine's own channels off except errors of its d3d12/dxgi/vkd3d parts. vkd3d prints its
        # messages (`vkd3d:err:...`, `vkd3d:warn:...`) itself, by VKD3D_DEBUG, not WINEDEBUG.
        WINEDEBUG=os.environ.get("DML2ONNX_WINEDEBUG", "-all,err+d3d12,err+vkd3d,err+dxgi"),
        WINEDLLOVERRIDES="mscoree,mshtml=",
    )
    # Not VKD3D_CONFIG=virtual_heaps: sessions then load in milliseconds instead of ~1 s with
    # ~1.5 GB of zeroed lavapipe memory each, but most models crash the host (SIGSEGV).
    env.setdefault("VKD3D_DEBUG", "warn")  # "Failed to create Vulkan compute pipeline" is a warning
    if display is not None:
        env["DISPLAY"] = display
    return env


class WineHost:
    """One Wine process of a host program of dml2onnx/backends/winhost/ (ort_host.exe, dml_exec.exe) inside
    its own Xvfb, serving requests one at a time with host_common.h's framing: u64-length-prefixed
    requests and responses, and `<name>: served N` on stderr after each. A BAD_STDERR line during
    a request turns it into a RuntimeFailure: its results cannot be trusted.

    Subclasses name the program (`name`, its stderr prefix; `label`, for messages), the error
    class of error responses (`error`), and may override `started` (the first request, made by
    __init__), `before_request` and `untrusted`."""

    name = "host"
    label = "the Wine host"
    error: type[HostError] = HostError

    def __init__(self, exe: Path, args: Sequence[str] = ()) -> None:
        self.home = home()
        self.lock = threading.Lock()
        self.stderr_lines: collections.deque[str] = collections.deque(maxlen=400)
        self.transcript: list[str] | None = None  # every stderr line while it is a list
        self.bad: list[str] = []
        self.dxil = False  # vkd3d skipped a DXIL shader during the current request
        self.served = 0
        self.requests = 0
        self.reader: threading.Thread | None = None
        self.cond = threading.Condition()
        start = time.perf_counter()
        # Wine has exited, rarely, with status 1 and no output before the program's first answer
        # (seen once in CI among thousands of starts, not reproduced); a start that fails so is
        # made once more. A failure after the first answer is never repeated.
        for attempt in (1, 2):
            self._spawn(exe, args)
            try:
                self.started()
                break
            except HostExited:
                self.close(kill=True)
                if attempt == 2:
                    raise
                assert self.reader is not None
                self.reader.join(timeout=10)  # its last act marks the old process gone
            except BaseException:
                self.close(kill=True)
                raise
        self.start_s = time.perf_counter() - start

    def _spawn(self, exe: Path, args: Sequence[str]) -> None:
        self.xvfb, self.display = xvfb.start()
        try:
            self.proc = subprocess.Popen(
                self.command(exe, args),
                cwd=self.home,
                env=wine_env(self.home / "wineprefix", self.display),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                bufsize=0,
            )
        except BaseException:
            self.xvfb.kill()
            self.xvfb.wait()
            raise
        self.stderr_lines.clear()
        self.served = self.requests = 0
        self.bad = []
        self.reader = threading.Thread(target=self._read_stderr, name=f"{self.name} stderr", daemon=True)
        self.reader.start()

    def command(self, exe: Path, args: Sequence[str]) -> list[str]:
        return ["wine", str(exe), *args]

    def started(self) -> None:
        """The first request, once the process runs (INFO, say); an exception kills the process."""

    def before_request(self) -> None:
        """Runs under the lock before each request (may make requests of its own with _exchange)."""

    def untrusted(self, parts: list[bytes | memoryview], payload: bytearray) -> None:
        """Runs when the Vulkan stack reported errors during this request, before it fails."""

    # -- stderr ------------------------------------------------------------------------------------

    def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        served = f"{self.name}: served "
        for raw in self.proc.stderr:
            line = raw.decode("utf-8", "replace").rstrip("\r\n")
            with self.cond:
                if line.startswith(served):
                    self.served = int(line.split()[-1])
                    self.cond.notify_all()
                    continue
                self.stderr_lines.append(line)
                if self.transcript is not None:
                    self.transcript.append(line)
                if os.environ.get("DML2ONNX_WINE_STDERR"):
                    sys.stderr.write(f"[wine] {line}\n")
                if BAD_STDERR.search(line):
                    self.bad.append(line)
                if "Skipping DXIL" in line:
                    self.dxil = True
        with self.cond:
            self.served = 1 << 62  # the process is gone: nothing more will come
            self.cond.notify_all()

    def _tail(self, n: int = 6) -> str:
        with self.cond:
            lines = [ln for ln in self.stderr_lines if ln.strip()][-n:]
        return " | ".join(lines)

    # -- requests ----------------------------------------------------------------------------------

    def alive(self) -> bool:
        return self.proc.poll() is None

    def _read_exact(self, n: int) -> bytearray:
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        out = bytearray(n)
        view = memoryview(out)
        got = 0
        deadline = time.monotonic() + REQUEST_TIMEOUT_S
        while got < n:
            ready, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                self.close(kill=True)
                raise RuntimeFailure(f"{self.label} did not answer within {REQUEST_TIMEOUT_S:.0f} s")
            k = os.readv(fd, [view[got:]])
            if k == 0:
                self.proc.wait()
                time.sleep(0.2)  # let the stderr reader take the last lines
                raise HostExited(f"{self.label} exited with status {self.proc.returncode}: {self._tail() or 'no output'}")
            got += k
        return out

    def request(self, parts: list[bytes | memoryview], what: str) -> tuple[int, memoryview]:
        """Sends one request, returns (status, payload after the status byte); checks stderr."""
        with self.lock:
            if not self.alive():
                raise RuntimeFailure(f"{self.label} is not running: {self._tail() or 'no output'}")
            self.before_request()
            return self._exchange(parts, what)

    def _exchange(self, parts: list[bytes | memoryview], what: str) -> tuple[int, memoryview]:
        self.requests += 1
        seq = self.requests
        total = sum(len(p) for p in parts)
        assert self.proc.stdin is not None
        try:
            for p in [struct.pack("<Q", total), *parts]:
                view = memoryview(p).cast("B")
                while view:  # a raw pipe may take less than asked
                    view = view[self.proc.stdin.write(view) :]
        except (BrokenPipeError, OSError):
            self._read_exact(1)  # raises with the host's last words
            raise
        (length,) = struct.unpack("<Q", self._read_exact(8))
        payload = self._read_exact(length)
        with self.cond:  # the host marks the end of each request on stderr: wait for it
            self.cond.wait_for(lambda: self.served >= seq, timeout=10)
            bad, self.bad = self.bad, []
            dxil, self.dxil = self.dxil, False
        if bad:
            self.untrusted(parts, payload)
            raise RuntimeFailure(
                f"{what}: the Vulkan stack under DirectML reported errors, results cannot be trusted: {bad[0]}"
                + (f" (and {len(bad) - 1} more)" if len(bad) > 1 else "")
                + (" (DirectML chose a DXIL-only shader, which Wine's vkd3d cannot compile)" if dxil else "")
            )
        return payload[0], memoryview(payload)[1:]

    def _ok(self, status: int, body: memoryview, what: str) -> memoryview:
        if status != 0:
            raise self.error(what, bytes(body).decode("utf-8", "replace").strip())
        return body

    def close(self, kill: bool = False) -> None:
        if self.proc.poll() is None:
            try:
                if kill:
                    raise OSError
                assert self.proc.stdin is not None
                self.proc.stdin.write(struct.pack("<Qc", 1, b"Q"))
                self.proc.stdin.flush()
                self.proc.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired, ValueError):
                self.proc.kill()
                self.proc.wait()
        if self.xvfb.poll() is None:
            self.xvfb.terminate()
            try:
                self.xvfb.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.xvfb.kill()
                self.xvfb.wait()


H = TypeVar("H", bound=WineHost)
_hosts: dict[tuple[Any, ...], WineHost] = {}
_hosts_lock = threading.Lock()


def shared(key: tuple[Any, ...], start: Callable[[], H]) -> H:
    """The shared host process for `key` (the program and its options), started on first use
    (and again if it died) by `start`."""
    with _hosts_lock:
        h = _hosts.get(key)
        if h is not None and h.alive():
            return cast(H, h)
        if h is not None:
            h.close(kill=True)
        started = _hosts[key] = start()
        return started


def shutdown() -> None:
    """Closes every shared host process (ort_host's and dml_exec's)."""
    with _hosts_lock:
        for h in _hosts.values():
            h.close()
        _hosts.clear()


atexit.register(shutdown)


class Host(WineHost):
    """One `wine ort_host.exe` process, with its Xvfb, serving requests one at a time."""

    name = "ort_host"
    label = "the DirectML host (Wine)"

    def __init__(self) -> None:
        if missing() is not None:
            raise RuntimeFailure(missing_message())
        self.pending_free: collections.deque[int] = collections.deque()  # sessions dropped by Python
        super().__init__(home() / exe_name())

    def started(self) -> None:
        self.version, self.ep = self.info()

    def before_request(self) -> None:
        # Sessions Python dropped since the last request: each holds ~1.5 GB of lavapipe memory.
        while self.pending_free:
            self._exchange([b"F", struct.pack("<I", self.pending_free.popleft())], "FREE")

    def untrusted(self, parts: list[bytes | memoryview], payload: bytearray) -> None:
        if parts[0] == b"L" and payload[0] == 0:  # the session loaded: do not keep it
            self.pending_free.append(struct.unpack_from("<I", payload, 1)[0])

    def info(self) -> tuple[str, str]:
        body = self._ok(*self.request([b"V"], "INFO"), "INFO")
        (n,) = struct.unpack_from("<I", body, 0)
        version = bytes(body[4 : 4 + n]).decode()
        (m,) = struct.unpack_from("<I", body, 4 + n)
        ep = bytes(body[8 + n : 8 + n + m]).decode()
        return version, ep

    def load(self, model: bytes, flags: int = 0, what: str = "LOAD") -> int:
        body = self._ok(*self.request([b"L", struct.pack("<I", flags), model], what), what)
        sid, _, _ = struct.unpack_from("<III", body, 0)
        return int(sid)

    def load_path(
        self,
        model: Path,
        folder: Path,
        entries: dict[str, str],
        log_level: int = 3,
        optimized: Path | None = None,
        flags: int = 0,
        what: str = "LOADPATH",
    ) -> tuple[int, list[str]]:
        """A session made from the model file `model` while the host's current folder is `folder`
        (where ONNX Runtime writes what it writes relative to it), with the session config
        `entries` (over those of `flags`), ONNX Runtime's log level `log_level` (0 verbose .. 4
        fatal) and, with `optimized`, ONNX Runtime's optimized model written there: the session's
        id and the host's stderr lines (ONNX Runtime's log among them) during the request."""
        parts: list[bytes | memoryview] = [b"P", struct.pack("<I", flags)]
        for text in (windows_path(model), windows_path(folder), windows_path(optimized) if optimized else ""):
            parts.append(_string(text))
        parts.append(struct.pack("<II", log_level, len(entries)))
        for key, value in entries.items():
            parts += [_string(key), _string(value)]
        with self.cond:
            self.transcript = []
        try:
            status, body = self.request(parts, what)
        finally:
            with self.cond:
                lines, self.transcript = self.transcript or [], None
        body = self._ok(status, body, what)
        sid, _, _ = struct.unpack_from("<III", body, 0)
        return int(sid), lines

    def run(self, sid: int, feeds: dict[str, np.ndarray], outputs: list[str], what: str = "RUN") -> list[np.ndarray]:
        parts: list[bytes | memoryview] = [b"R", struct.pack("<II", sid, len(feeds))]
        for name, value in feeds.items():
            a = np.ascontiguousarray(value)
            if a.dtype not in ONNX_TYPES:
                raise RuntimeFailure(f"{what}: input '{name}' has type {a.dtype}, which the Wine host does not move")
            a = a.astype(a.dtype.newbyteorder("<"), copy=False)
            parts += [_string(name), struct.pack("<II", ONNX_TYPES[a.dtype], a.ndim)]
            parts.append(struct.pack(f"<{a.ndim}q", *a.shape))
            parts.append(struct.pack("<Q", a.nbytes))
            parts.append(memoryview(a.reshape(-1).view(np.uint8)))
        parts.append(struct.pack("<I", len(outputs)))
        for name in outputs:
            parts.append(_string(name))
        body = self._ok(*self.request(parts, what), what)
        (m,) = struct.unpack_from("<I", body, 0)
        at = 4
        results = []
        for _ in range(m):
            elem, rank = struct.unpack_from("<II", body, at)
            at += 8
            dims = struct.unpack_from(f"<{rank}q", body, at)
            at += 8 * rank
            (nbytes,) = struct.unpack_from("<Q", body, at)
            at += 8
            dtype = NUMPY_TYPES.get(elem)
            if dtype is None:
                raise RuntimeFailure(f"{what}: output of ONNX element type {elem} is not supported here")
            results.append(np.frombuffer(body[at : at + nbytes], dtype=dtype.newbyteorder("<")).reshape(dims))
            at += nbytes
        return results

    def free(self, sid: int) -> None:
        if self.alive():
            self._ok(*self.request([b"F", struct.pack("<I", sid)], "FREE"), "FREE")


def _string(text: str) -> bytes:
    """A protocol string: u32 length, UTF-8 bytes."""
    encoded = text.encode()
    return struct.pack(f"<I{len(encoded)}s", len(encoded), encoded)


def windows_path(path: Path) -> str:
    """`path` as the Windows program under Wine names it: Wine's drive Z: is the root folder."""
    return "Z:" + str(Path(path).resolve()).replace("/", "\\")


def host() -> Host:
    """The shared ort_host process, started on first use (and again if it died)."""
    return shared(("ort_host",), Host)


class _HostSession:
    """What `Session.session` holds for a Wine session: the id on the host. It has no
    io_binding: runtime.resolve(..., bound_io=True) keeps bench off the Wine host."""

    def __init__(self, sid: int) -> None:
        self.sid = sid


@dataclass
class WineSession(Session):
    """A session on the DirectML EP inside the Wine host, behind `runtime.Session`'s interface."""

    nodes: list[str] = field(default_factory=list)
    host: Host | None = None
    outputs: list[str] = field(default_factory=lambda: ["OutputTensor"])  # the graph's

    def run_all(self, feeds: dict[str, np.ndarray], names: list[str] | None = None) -> dict[str, np.ndarray]:
        assert self.host is not None
        what = f"dispatchable '{self.name}' failed on DmlExecutionProvider (Wine)"
        names = names or self.outputs
        return dict(zip(names, self.host.run(self.session.sid, feeds, names, what), strict=True))

    def assignment(self) -> dict[str, list[str]]:
        """With session.disable_cpu_ep_fallback=1 a session loads only when DirectML takes every
        node, so every node of the graph is DirectML's (listed as in the model, before ONNX
        Runtime's graph optimizations)."""
        return {"DmlExecutionProvider": list(self.nodes)}

    def nodes_off_ep(self) -> list[str]:
        return []

    def __del__(self) -> None:
        # Not a request from here (the garbage collector may run inside one): the next one frees it.
        if self.host is not None and self.host.alive():
            self.host.pending_free.append(self.session.sid)


def flags() -> int:
    """The LOAD flags the environment asks for: DML2ONNX_DML_DEVICE=ort (ONNX Runtime makes the
    device) or hooked (the default); DML2ONNX_DML_FUSION=0 turns DirectML graph fusion off."""
    out = 0 if os.environ.get("DML2ONNX_DML_DEVICE", "hooked") == "ort" else FLAG_OWN_DEVICE
    if os.environ.get("DML2ONNX_DML_FUSION", "1") == "0":
        out |= FLAG_NO_FUSION
    return out


def create(model: onnx.ModelProto, name: str) -> WineSession:
    h = host()
    try:
        sid = h.load(model.SerializeToString(), flags(), f"dispatchable '{name}'")
    except HostError as e:
        first = e.text.splitlines()[0] if e.text else "unknown error"
        raise RuntimeFailure(
            f"dispatchable '{name}': DmlExecutionProvider (Wine) cannot run the lowered graph: {first}"
        ) from None
    nodes = [f"{n.name} ({n.op_type})" for n in model.graph.node]
    return WineSession(name, "dml", _HostSession(sid), nodes, h, [o.name for o in model.graph.output])
