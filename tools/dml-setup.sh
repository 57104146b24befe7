#!/usr/bin/env bash
# Sets up ONNX Runtime's DirectML EP (Windows build) under Wine for `--ep dml` on Linux
# (Debian 12): Debian packages, the pinned onnxruntime-directml wheel's DLLs, the host program
# built from dml2onnx/backends/winhost/ort_host.c, a Wine prefix, then a known-answer check.
# Idempotent: each step is skipped when its result is already there.
#
#   tools/dml-setup.sh            (or: make dml-setup)
#   DML2ONNX_DML_HOME=/some/dir tools/dml-setup.sh     (default ~/.cache/dml2onnx/directml-<version>)
#   DML2ONNX_VKD3D_DXIL=0 tools/dml-setup.sh           (no vkd3d-dxil.dll: DXIL-only kernels fail)
set -euo pipefail

ORT_VERSION=1.24.4
WHEEL=onnxruntime_directml-${ORT_VERSION}-cp312-cp312-win_amd64.whl
WHEEL_SHA256=f2ecb68b7b7b259d2ef3112ae760149f9b5a1e7c0fbb73d539da6250a648a614
# Debian 12's own lavapipe (Mesa 22.3) lacks VK_EXT_descriptor_indexing: vkd3d then drops every
# descriptor table and DirectML silently returns zeros. bookworm-backports has Mesa 25.
MESA_MIN=23
PACKAGES=(wine wine64 libwine libvkd3d1 xvfb xauth gcc-mingw-w64-x86-64 libvulkan1)
# For vkd3d-dxil.dll (tools/vkd3d-dxil.sh: vkd3d 1.14 with its DXIL front end, for DirectML's
# DXIL-only kernels). Optional: without them, or with DML2ONNX_VKD3D_DXIL=0, Wine's d3d12.dll.
DXIL_PACKAGES=(bison flex mingw-w64-tools libvulkan-dev)

ROOT=$(cd "$(dirname "$0")/.." && pwd)
PY=${PY:-$ROOT/.venv/bin/python}
[ -x "$PY" ] || PY=python3
HOME_DIR=${DML2ONNX_DML_HOME:-$HOME/.cache/dml2onnx/directml-$ORT_VERSION}
SOURCE=$ROOT/dml2onnx/backends/winhost/ort_host.c

say() { echo "dml-setup: $*"; }
die() { echo "dml-setup: $*" >&2; exit 1; }

if [ "$(uname -s)" != Linux ] || [ "$(uname -m)" != x86_64 ]; then
    die "this sets up Wine on x86-64 Linux; on Windows install onnxruntime-directml instead"
fi

# ---- 1. Debian packages --------------------------------------------------------------------------
installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'; }
mesa_version() { dpkg-query -W -f='${Version}' mesa-vulkan-drivers 2>/dev/null || true; }
mesa_ok() {
    local v
    v=$(mesa_version)
    [ -n "$v" ] && [ "${v%%.*}" -ge "$MESA_MIN" ] 2>/dev/null
}

missing=()
for p in "${PACKAGES[@]}"; do installed "$p" || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ] || ! mesa_ok; then
    if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
        [ ${#missing[@]} -gt 0 ] && echo "dml-setup: missing Debian packages: ${missing[*]}" >&2
        mesa_ok || echo "dml-setup: mesa-vulkan-drivers >= $MESA_MIN is needed (have: $(mesa_version || echo none))" >&2
        cat >&2 <<EOF
dml-setup: as root, run:
  printf 'Types: deb\nURIs: http://deb.debian.org/debian\nSuites: bookworm-backports\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' > /etc/apt/sources.list.d/bookworm-backports.sources
  apt-get update
  apt-get install -y --no-install-recommends ${PACKAGES[*]}
  apt-get install -y --no-install-recommends -t bookworm-backports mesa-vulkan-drivers
then run this script again (make dml-setup).
EOF
        exit 1
    fi
    src=/etc/apt/sources.list.d/bookworm-backports.sources
    if ! grep -rqs 'bookworm-backports' /etc/apt/sources.list /etc/apt/sources.list.d/; then
        say "adding the bookworm-backports apt source ($src)"
        printf 'Types: deb\nURIs: http://deb.debian.org/debian\nSuites: bookworm-backports\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' >"$src"
    fi
    say "apt-get update"
    apt-get update -q >/dev/null
    if [ ${#missing[@]} -gt 0 ]; then
        say "installing ${missing[*]}"
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${PACKAGES[@]}" >/dev/null
    fi
    if ! mesa_ok; then
        say "installing mesa-vulkan-drivers from bookworm-backports"
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends -t bookworm-backports \
            mesa-vulkan-drivers >/dev/null
    fi
    mesa_ok || die "mesa-vulkan-drivers is $(mesa_version), $MESA_MIN or later is needed"
fi

# ---- 2. the DLLs from the pinned wheel -----------------------------------------------------------
mkdir -p "$HOME_DIR"
if [ ! -f "$HOME_DIR/onnxruntime.dll" ] || [ ! -f "$HOME_DIR/DirectML.dll" ] \
    || [ "$(cat "$HOME_DIR/wheel.sha256" 2>/dev/null)" != "$WHEEL_SHA256" ]; then
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    say "downloading onnxruntime-directml $ORT_VERSION (win_amd64 wheel)"
    "$PY" -m pip download --quiet --no-deps --only-binary=:all: --platform win_amd64 --python-version 3.12 \
        "onnxruntime-directml==$ORT_VERSION" -d "$tmp" || die "pip download failed"
    [ -f "$tmp/$WHEEL" ] || die "pip did not fetch $WHEEL (got: $(ls "$tmp"))"
    got=$(sha256sum "$tmp/$WHEEL" | cut -d' ' -f1)
    [ "$got" = "$WHEEL_SHA256" ] || die "$WHEEL has sha256 $got, expected $WHEEL_SHA256"
    "$PY" - "$tmp/$WHEEL" "$HOME_DIR" <<'EOF'
import sys, zipfile, pathlib
wheel, dest = sys.argv[1], pathlib.Path(sys.argv[2])
with zipfile.ZipFile(wheel) as z:
    for name in z.namelist():
        if name.startswith("onnxruntime/capi/") and name.endswith(".dll"):
            (dest / pathlib.Path(name).name).write_bytes(z.read(name))
EOF
    echo "$WHEEL_SHA256" >"$HOME_DIR/wheel.sha256"
fi

# ---- 3. the host program (named by a hash of its source: a changed source is rebuilt) -----------
EXE=$("$PY" -c 'import sys; sys.path.insert(0, sys.argv[1]); from dml2onnx.backends import winhost; print(winhost.exe_name())' "$ROOT")
if [ ! -f "$HOME_DIR/$EXE" ]; then
    say "building $EXE from ${SOURCE#"$ROOT"/}"
    x86_64-w64-mingw32-gcc -O2 -Wall -Wextra -o "$HOME_DIR/$EXE.tmp" "$SOURCE" -ld3d12 -ldxgi
    mv "$HOME_DIR/$EXE.tmp" "$HOME_DIR/$EXE"
fi
find "$HOME_DIR" -maxdepth 1 -name 'ort_host-*.exe' ! -name "$EXE" -delete  # builds of older sources

# ---- 3b. dml_exec, which executes descs with DirectML's own API (--ep directml) ---------------
"$PY" -c 'import sys; sys.path.insert(0, sys.argv[1]); from dml2onnx.backends import dmlapi; print("dml-setup: dml_exec:", dmlapi.build())' "$ROOT"

# ---- 3c. vkd3d-dxil.dll: vkd3d 1.14 with its DXIL front end (optional, cached) -----------------------
if [ "${DML2ONNX_VKD3D_DXIL:-1}" != 0 ]; then
    dxil_missing=()
    for p in "${DXIL_PACKAGES[@]}"; do installed "$p" || dxil_missing+=("$p"); done
    if [ ${#dxil_missing[@]} -gt 0 ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        say "installing ${dxil_missing[*]} (to build vkd3d-dxil.dll)"
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${dxil_missing[@]}" >/dev/null \
            || say "installing ${dxil_missing[*]} failed"
    fi
    if ! PY=$PY "$ROOT/tools/vkd3d-dxil.sh" "$HOME_DIR"; then
        say "WARNING: vkd3d-dxil.dll was not built (above: why); the hosts use Wine's d3d12.dll (vkd3d 1.6),"
        say "         and DirectML's DXIL-only kernels (two-input Add/Sub/Mul/Div on FLOAT32, ...) fail"
    fi
fi

# ---- 4. the Wine prefix --------------------------------------------------------------------------
export WINEPREFIX=$HOME_DIR/wineprefix WINEARCH=win64 WINEDEBUG=-all WINEDLLOVERRIDES="mscoree,mshtml="
if [ ! -f "$WINEPREFIX/system.reg" ]; then
    say "creating the Wine prefix $WINEPREFIX"
    wineboot -i >/dev/null 2>&1 || true
    wineserver -w 2>/dev/null || true
    [ -f "$WINEPREFIX/system.reg" ] || die "wineboot did not create $WINEPREFIX"
fi

# ---- 5. known-answer checks ----------------------------------------------------------------------
# First a kernel DirectML has only as DXIL (a two-input Mul of 8 FLOAT32), where vkd3d-dxil.dll is
# there: if it fails, the DLL is set aside (vkd3d-dxil.dll.failed) and the hosts use Wine's d3d12.
if [ -f "$HOME_DIR/vkd3d-dxil.dll" ] && [ "${DML2ONNX_VKD3D_DXIL:-1}" != 0 ]; then
    if ! "$PY" - "$ROOT" <<'EOF'; then
import sys, time
sys.path.insert(0, sys.argv[1])
import numpy as np
from onnx import TensorProto, helper
from dml2onnx.backends import winhost

start = time.perf_counter()
vi = helper.make_tensor_value_info
graph = helper.make_graph(
    [helper.make_node("Mul", ["a", "b"], ["OutputTensor"])], "dxil_only",
    [vi("a", TensorProto.FLOAT, [8]), vi("b", TensorProto.FLOAT, [8])], [vi("OutputTensor", TensorProto.FLOAT, [8])],
)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
a, b = np.arange(8, dtype=np.float32), np.arange(8, 16, dtype=np.float32)
try:
    got = winhost.create(model, "dxil_only").run({"a": a, "b": b})
except Exception as e:
    sys.exit(f"dml-setup: the DXIL-only Mul failed through vkd3d-dxil.dll: {e}")
if not np.array_equal(got, a * b):
    sys.exit(f"dml-setup: the DXIL-only Mul gave {got.tolist()}, expected {(a * b).tolist()}")
print(f"dml-setup: known-answer check of a DXIL-only kernel passed (vkd3d-dxil.dll) in {time.perf_counter() - start:.1f} s")
EOF
        mv -f "$HOME_DIR/vkd3d-dxil.dll" "$HOME_DIR/vkd3d-dxil.dll.failed"
        say "WARNING: vkd3d-dxil.dll set aside ($HOME_DIR/vkd3d-dxil.dll.failed); the hosts use Wine's d3d12.dll"
    fi
fi
"$PY" - "$ROOT" <<'EOF'
import sys, time
sys.path.insert(0, sys.argv[1])
import numpy as np
from onnx import TensorProto, helper
from dml2onnx.backends import winhost

start = time.perf_counter()
host = winhost.host()
graph = helper.make_graph(
    [helper.make_node("Mul", ["x", "two"], ["y"]), helper.make_node("Add", ["y", "one"], ["OutputTensor"])],
    "known_answer",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
    [helper.make_tensor_value_info("OutputTensor", TensorProto.FLOAT, [2, 3])],
    [helper.make_tensor("two", TensorProto.FLOAT, [], [2.0]), helper.make_tensor("one", TensorProto.FLOAT, [], [1.0])],
)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
session = winhost.create(model, "known_answer")
x = np.arange(6, dtype=np.float32).reshape(2, 3)
got = session.run({"x": x})
want = x * 2 + 1
if not np.array_equal(got, want):
    sys.exit(f"dml-setup: known-answer check FAILED: got {got.tolist()}, expected {want.tolist()}")
print(f"dml-setup: known-answer check passed on {host.ep} (onnxruntime {host.version}) "
      f"in {time.perf_counter() - start:.1f} s")
EOF
"$PY" - "$ROOT" <<'EOF'
import sys, time
sys.path.insert(0, sys.argv[1])
import numpy as np
from dml2onnx.backends import dmlapi
from dml2onnx.core.desc import parse_operator_desc

start = time.perf_counter()
t = {"DataType": "FLOAT32", "Sizes": [2, 3]}
desc = parse_operator_desc("ARGMAX", {"InputTensor": t, "OutputTensor": {"DataType": "UINT32", "Sizes": [2, 1]},
                                      "AxisCount": 1, "Axes": [1], "AxisDirection": "INCREASING"}, ("desc",), ("type",))
got = dmlapi.execute(desc, {"InputTensor": np.array([[1, 5, 2], [7, 0, 7]], np.float32)}).output
if got.ravel().tolist() != [1, 0]:
    sys.exit(f"dml-setup: DirectML API known-answer check FAILED: ARGMAX gave {got.ravel().tolist()}, expected [1, 0]")
print(f"dml-setup: known-answer check passed through DirectML's API in {time.perf_counter() - start:.1f} s")
EOF
say "lavapipe: mesa-vulkan-drivers $(mesa_version); wine $(wine --version 2>/dev/null)"
if [ -f "$HOME_DIR/vkd3d-dxil.dll" ] && [ "${DML2ONNX_VKD3D_DXIL:-1}" != 0 ]; then
    say "D3D12 device: vkd3d-dxil.dll (vkd3d 1.14, DXIL front end on); DML2ONNX_VKD3D_DXIL=0 turns it off"
else
    say "D3D12 device: Wine's d3d12.dll (vkd3d 1.6, DXBC only): DirectML's DXIL-only kernels fail"
fi
say "ok ($HOME_DIR)"
