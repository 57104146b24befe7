#!/usr/bin/env bash
# DirectML (ONNX Runtime's DirectML EP and DirectML's own API) under Wine on the GPU machine's
# NVIDIA Vulkan driver, from the bundle that tools/gpu-dml-bundle.sh makes here (.dmlgpu/pN).
#
# On the device machine (see ../shared/GPU.md for the device calls; the bundle is one or more
# parts, carried as .dmlgpu/pN):
#   bash tools/gpu-dml.sh collect      # a call that only carries a part: copies it to /tmp/dmlparts
#   bash tools/gpu-dml.sh              # reassembles, unpacks to /tmp/dmlgpu, runs everything below
#   bash tools/gpu-dml.sh bench        # only the timing (the bundle already unpacked)
# Here, to check the bundle before spending device time (lavapipe instead of NVIDIA, with the
# system's Wine, Xvfb and xkb hidden in a mount namespace):
#   bash tools/gpu-dml.sh --local
#
# Writes under $OUT: dml-device.txt (versions, Vulkan/adapter evidence), dml-check.txt
# (dml2onnx check on models/*.json), dml-run.txt (run outputs, dml vs cpu), dml-bench.json and
# dml-bench.log (tools/gpu_dml_bench.py), dml-wine.log (Wine/vkd3d stderr of the evidence run).
# Python runs the project snapshot inside the bundle (git archive HEAD at bundle time).
set -uo pipefail
HERE=$(cd "$(dirname "$0")/.." && pwd)
MODE=${1:-all}
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
B=${DMLGPU_DIR:-/tmp/dmlgpu}
PARTS=/tmp/dmlparts
PY=${PY:-python3}

if [ "$MODE" = --local ]; then
    # Hide the system's Wine, Xvfb, xkbcomp so that only the bundle can serve.
    mkdir -p /tmp/dmlgpu-empty
    export DMLGPU_DIR=/tmp/dmlgpu-local DMLGPU_LOCAL=1 OUT
    [ -n "${DMLGPU_KEEP:-}" ] || rm -rf /tmp/dmlgpu-local
    exec unshare -m bash -c '
        for d in /usr/lib/wine /usr/lib/x86_64-linux-gnu/wine /usr/share/wine /usr/share/X11/xkb; do mount --bind /tmp/dmlgpu-empty $d; done
        for f in /usr/bin/Xvfb /usr/bin/xkbcomp /usr/bin/wine /usr/bin/wine64 /usr/bin/wineserver; do [ -e $f ] && mount --bind /dev/null $f; done
        exec bash "$0" all' "$0"
fi

if [ "$MODE" = collect ]; then
    mkdir -p "$PARTS" && cp "$HERE"/.dmlgpu/p*/part.* "$PARTS"/ && ls -la "$PARTS"
    cp "$HERE"/.dmlgpu/p*/SHA256 "$PARTS"/ 2>/dev/null
    exit 0
fi

# ---- reassemble and unpack -----------------------------------------------------------------------
if [ ! -x "$B/usr/lib/wine/wine64" ]; then
    mkdir -p "$PARTS"
    [ -d "$HERE/.dmlgpu" ] && cp "$HERE"/.dmlgpu/p*/part.* "$PARTS"/ 2>/dev/null
    cp "$HERE"/.dmlgpu/p*/SHA256 "$PARTS"/ 2>/dev/null
    [ -f "$PARTS/SHA256" ] || { echo "gpu-dml: no SHA256 among the parts"; exit 1; }
    want=$(cat "$PARTS/SHA256")
    got=$(cat "$PARTS"/part.* | sha256sum | cut -d' ' -f1)
    [ "$got" = "$want" ] || { echo "gpu-dml: parts sha256 $got, expected $want (parts: $(ls "$PARTS"))"; exit 1; }
    mkdir -p "$(dirname "$B")" /tmp/dmlgpu-unpack
    cat "$PARTS"/part.* | xz -dc -T0 | tar -x -C /tmp/dmlgpu-unpack || { echo "gpu-dml: unpack failed"; exit 1; }
    rm -rf "$B" && mv /tmp/dmlgpu-unpack/dmlgpu "$B" && rmdir /tmp/dmlgpu-unpack
    echo "gpu-dml: unpacked into $B ($(du -sh "$B" | cut -f1))"
fi

# libraries NVIDIA's Vulkan driver (libGLX_nvidia) loads, added after the first device try
# (.dmlgpu/extra/extra-libs.tgz: glvnd's EGL/OpenGL, the xcb extensions; tools/gpu-dml-bundle.sh
# now packs them too)
[ -f "$HERE/.dmlgpu/extra/extra-libs.tgz" ] && tar -C "$B" -xzf "$HERE/.dmlgpu/extra/extra-libs.tgz"

# ---- environment: wrappers that give Wine and Xvfb the bundle's libraries --------------------------
mkdir -p "$B/wbin"
cat >"$B/wbin/wine" <<EOF
#!/bin/sh
export LD_LIBRARY_PATH="$B/lib\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}"
export WINELOADER="$B/usr/lib/wine/wine64" WINESERVER="$B/usr/lib/wine/wineserver64"
exec "$B/usr/lib/wine/wine64" "\$@"
EOF
cat >"$B/wbin/Xvfb" <<EOF
#!/bin/sh
export LD_LIBRARY_PATH="$B/lib\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}"
exec "$B/bin/Xvfb" "\$@"
EOF
cat >"$B/wbin/wineserver" <<EOF
#!/bin/sh
export LD_LIBRARY_PATH="$B/lib\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}"
exec "$B/usr/lib/wine/wineserver64" "\$@"
EOF
chmod +x "$B/wbin/"*
# Xvfb looks for its keymaps and xkbcomp at the paths it was built with.
if [ -z "${DMLGPU_LOCAL:-}" ]; then
    [ -d /usr/share/X11/xkb/rules ] || { mkdir -p /usr/share/X11 && cp -a "$B/share/X11/xkb" /usr/share/X11/; }
    [ -x /usr/bin/xkbcomp ] || cat >/usr/bin/xkbcomp <<EOF
#!/bin/sh
LD_LIBRARY_PATH="$B/lib" exec "$B/bin/xkbcomp" "\$@"
EOF
    chmod +x /usr/bin/xkbcomp
    mkdir -p /var/lib/xkb
    # glvnd where the system's loader looks (the image has none; as the device notes' .gl debs do)
    for l in libGLdispatch.so.0 libGLX.so.0 libGL.so.1 libEGL.so.1 libOpenGL.so.0; do
        [ -e /usr/lib/x86_64-linux-gnu/$l ] || cp "$B/lib/$l" /usr/lib/x86_64-linux-gnu/ 2>/dev/null
    done
    ldconfig
else
    # here: the namespace hid them; give Xvfb the bundle's copies at the same paths
    mount --bind "$B/share/X11/xkb" /usr/share/X11/xkb
    printf '#!/bin/sh\nLD_LIBRARY_PATH="%s/lib" exec "%s/bin/xkbcomp" "$@"\n' "$B" "$B" >"$B/wbin/xkbcomp"
    chmod +x "$B/wbin/xkbcomp"
    mount --bind "$B/wbin/xkbcomp" /usr/bin/xkbcomp
fi
NV_ICD=""
for j in /usr/share/vulkan/icd.d/nvidia_icd.json /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json /etc/vulkan/icd.d/nvidia_icd.json; do
    [ -f "$j" ] && { NV_ICD=$j; break; }
done
if [ -z "${DMLGPU_LOCAL:-}" ] && [ -n "$NV_ICD" ]; then
    export VK_ICD_FILENAMES=$NV_ICD VK_DRIVER_FILES=$NV_ICD
fi
export PATH="$B/wbin:$PATH" DML2ONNX_DML_HOME="$B/home"
SITE=""
[ -d /tmp/site/onnxruntime ] && SITE=/tmp/site:
export PYTHONPATH="$SITE$B/src" PYTHONUNBUFFERED=1
cd "$B/src" || exit 1

device_info() {
    {
        echo "date: $(date -u +%Y-%m-%dT%H:%MZ)  host: $(hostname)  $(grep PRETTY_NAME /etc/os-release 2>/dev/null)"
        echo "project snapshot: $(cat "$B/src/COMMIT")"
        nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 || true
        echo "VK_ICD_FILENAMES=${VK_ICD_FILENAMES:-} ; icd: $NV_ICD -> $( [ -n "$NV_ICD" ] && cat "$NV_ICD" | tr -d '\n ' )"
        echo "system libvulkan: $(ldconfig -p | grep -c libvulkan) entries; libGLX_nvidia: $(ldconfig -p | grep -c libGLX_nvidia)"
        echo "wine: $("$B/wbin/wine" --version 2>&1)"
        "$PY" -c "import onnxruntime as o, onnx, numpy, sys; print('python', sys.version.split()[0], 'onnxruntime', o.__version__, o.get_available_providers(), 'onnx', onnx.__version__, 'numpy', numpy.__version__)" 2>&1
    } >"$OUT/dml-device.txt" 2>&1
    cat "$OUT/dml-device.txt"
}

evidence() {
    # DirectML's own API once with vkd3d's trace on: the Vulkan device vkd3d picked, DXGI's adapter.
    echo "== evidence: which Vulkan device vkd3d and DXGI use"
    VKD3D_DEBUG=trace DML2ONNX_WINE_STDERR=1 DML2ONNX_WINEDEBUG="err+all,fixme+d3d,fixme+d3d12,+dxgi" \
        timeout 180 "$PY" -m dml2onnx run models/argmax.json --ep directml >"$OUT/dml-evidence.txt" 2>"$OUT/dml-wine.log"
    EVIDENCE_RC=$?
    echo "exit $EVIDENCE_RC" >>"$OUT/dml-evidence.txt"
    grep -a -i -E 'device name|devicename|vendor id|device id|driver version|api version|physical device|adapter|GPU description|ready|nvidia|llvmpipe|error|err:' "$OUT/dml-wine.log" \
        | grep -v -i 'skip_dword' | awk '!seen[$0]++' | head -40
    tail -5 "$OUT/dml-evidence.txt"
    # keep the log small enough to come back
    if [ "$(stat -c %s "$OUT/dml-wine.log")" -gt 8000000 ]; then
        head -c 4000000 "$OUT/dml-wine.log" >"$OUT/dml-wine.head" && tail -c 2000000 "$OUT/dml-wine.log" >>"$OUT/dml-wine.head" && mv "$OUT/dml-wine.head" "$OUT/dml-wine.log"
    fi
    "$PY" - <<'EOF' 2>&1 | tee -a "$OUT/dml-device.txt"
from dml2onnx.backends import dmlapi, winhost
d = dmlapi.host()
print("DirectML API: DXGI adapter:", repr(d.device.adapter), "max DML feature level:", d.device.max_feature_level, "error:", d.device.error or "none")
h = winhost.host()
print("DirectML EP host: onnxruntime.dll", h.version, "mode", h.ep)
EOF
}

checks() {
    echo "== dml2onnx check models/*.json --ep cpu --ep dml --ep directml"
    : >"$OUT/dml-check.txt"
    for m in models/*.json; do
        echo "== $m" >>"$OUT/dml-check.txt"
        timeout 150 "$PY" -m dml2onnx check "$m" --ep cpu --ep dml --ep directml >>"$OUT/dml-check.txt" 2>&1
        echo "exit $?" >>"$OUT/dml-check.txt"
        echo "== $m --target dml" >>"$OUT/dml-check.txt"
        timeout 150 "$PY" -m dml2onnx check "$m" --ep dml --target dml >>"$OUT/dml-check.txt" 2>&1
        echo "exit $?" >>"$OUT/dml-check.txt"
    done
    grep -E '^==|checks on|^exit|error' "$OUT/dml-check.txt"
    for ep in cpu dml directml; do
        for m in models/*.json; do echo "== $m"; timeout 90 "$PY" -m dml2onnx run "$m" --ep $ep -q 2>&1 || echo "FAILED $m"; done >"$OUT/dml-run.$ep.txt"
    done
    for ep in dml directml; do
        if cmp -s "$OUT/dml-run.$ep.txt" "$OUT/dml-run.cpu.txt"; then echo "models/ run: $ep prints what cpu prints"
        else echo "models/ run: $ep DIFFERS from cpu:"; diff "$OUT/dml-run.$ep.txt" "$OUT/dml-run.cpu.txt" | head -20; fi
    done
    cat "$OUT"/dml-run.dml.txt "$OUT"/dml-run.directml.txt >"$OUT/dml-run.txt" && rm -f "$OUT"/dml-run.dml.txt "$OUT"/dml-run.directml.txt "$OUT"/dml-run.cpu.txt
}

timing() {
    echo "== timing (tools/gpu_dml_bench.py ${BENCH_ARGS:-})"
    timeout "${BENCH_TIMEOUT:-400}" "$PY" tools/gpu_dml_bench.py ${BENCH_ARGS:-} >"$OUT/dml-bench.json" 2>"$OUT/dml-bench.log"
    echo "bench exit $?"
    grep -v '^\[wine\]' "$OUT/dml-bench.log" | tail -30
}

# tools/gpu_dml_bench.py comes from the working tree if the snapshot lacks it
[ -f tools/gpu_dml_bench.py ] || cp "$HERE/tools/gpu_dml_bench.py" tools/ 2>/dev/null

case "$MODE" in
all)
    device_info; evidence
    if [ "$EVIDENCE_RC" != 0 ]; then
        echo "gpu-dml: the evidence run failed (exit $EVIDENCE_RC): one check for its error, then stop"
        timeout 150 "$PY" -m dml2onnx check models/argmax.json --ep dml --ep directml 2>&1 | tee "$OUT/dml-check.txt" | tail -20
        tail -40 "$OUT/dml-wine.log"
        exit 1
    fi
    checks; timing ;;
evidence) device_info; evidence ;;
bench) device_info; timing ;;
*) echo "gpu-dml: unknown mode $MODE"; exit 2 ;;
esac
