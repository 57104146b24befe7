#!/usr/bin/env bash
# Packs the DirectML-under-Wine stack of this (Debian 12) machine into parts the device tool can
# carry (64 MiB a call), for tools/gpu-dml.sh to run on the GPU machine (Ubuntu, NVIDIA Vulkan
# driver, no Wine): a trimmed Wine 8 (the loader, wineserver, the unix .so files, only the PE
# DLLs a DirectML run loads), Xvfb and xkbcomp with the xkb data, the Vulkan loader, the shared
# libraries all of them need (not glibc, libstdc++, libgcc_s), the onnxruntime-directml DLLs, the
# two host programs, a trimmed copy of the Wine prefix (wined3d on Vulkan instead of OpenGL, so
# no Mesa is needed there), and a snapshot of the project (git archive HEAD).
#
#   tools/gpu-dml-bundle.sh          (after `make dml-setup`; writes .dmlgpu/p0, .dmlgpu/p1, ...)
#
# The PE DLL list is what `WINEDEBUG=+loaddll` showed for `dml2onnx check --ep dml --ep
# directml` here (DLLS below); tools/gpu-dml.sh --local runs the bundle here to check it.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
DML_HOME=${DML2ONNX_DML_HOME:-$HOME/.cache/dml2onnx/directml-1.24.4}
OUTDIR=$ROOT/.dmlgpu
STAGE=${STAGE:-/tmp/dmlgpu-stage}
PART_MB=${PART_MB:-60}
W=/usr/lib/x86_64-linux-gnu/wine
LIB=/usr/lib/x86_64-linux-gnu

DLLS="actxprxy.dll advapi32.dll combase.dll concrt140.dll d3d12.dll dbghelp.dll dnsapi.dll
dxgi.dll explorer.exe gdi32.dll imm32.dll iphlpapi.dll kernel32.dll kernelbase.dll msvcp140.dll
msvcp140_1.dll msvcrt.dll nsi.dll ntdll.dll ntoskrnl.exe ole32.dll oleaut32.dll opengl32.dll
plugplay.exe propsys.dll rpcrt4.dll rpcss.exe sechost.dll services.exe setupapi.dll shcore.dll
shell32.dll shlwapi.dll svchost.exe ucrtbase.dll user32.dll userenv.dll uxtheme.dll
vcruntime140.dll vcruntime140_1.dll version.dll vulkan-1.dll wevtsvc.dll win32u.dll
windowscodecs.dll wineboot.exe wined3d.dll winedevice.exe winemenubuilder.exe winevulkan.dll
winex11.drv ws2_32.dll zlib1.dll start.exe conhost.exe cmd.exe
hidclass.sys hidparse.sys mountmgr.sys ndis.sys nsiproxy.sys winebus.sys winehid.sys wineusb.sys
bcrypt.dll crypt32.dll secur32.dll sspicli.dll dwmapi.dll comctl32.dll msacm32.dll winmm.dll
dxcore.dll d3d11.dll d3dcompiler_47.dll apisetschema.dll"
# Shared libraries of Debian 12 that travel (plus their ldd closure): X, Xvfb, the Vulkan loader.
SEED_LIBS="libX11.so.6 libX11-xcb.so.1 libXau.so.6 libXcomposite.so.1 libXcursor.so.1 libXdmcp.so.6
libXext.so.6 libXfixes.so.3 libXi.so.6 libXinerama.so.1 libXrandr.so.2 libXrender.so.1
libXxf86vm.so.1 libxcb.so.1 libvulkan.so.1 libGL.so.1 libGLX.so.0 libGLdispatch.so.0
libEGL.so.1 libOpenGL.so.0 libxcb-dri3.so.0 libxcb-present.so.0 libxcb-randr.so.0
libxcb-sync.so.1 libxcb-xfixes.so.0 libxcb-glx.so.0 libxcb-shm.so.0 libxshmfence.so.1 libwayland-client.so.0
libfontconfig.so.1 libfreetype.so.6 libudev.so.1 libusb-1.0.so.0 libdbus-1.so.3 libunwind.so.8"
# Never carried: the device's own are newer and must serve Python too.
SKIP='^(libc|libm|libdl|librt|libpthread|libresolv|libutil|ld-linux-x86-64|libstdc\+\+|libgcc_s)\.so'

for f in "$DML_HOME/onnxruntime.dll" "$DML_HOME/DirectML.dll" "$DML_HOME/wineprefix/system.reg" /usr/bin/Xvfb /usr/bin/xkbcomp; do
    [ -e "$f" ] || { echo "gpu-dml-bundle: $f is missing (make dml-setup)" >&2; exit 1; }
done
rm -rf "$STAGE" && mkdir -p "$STAGE"
B=$STAGE/dmlgpu
mkdir -p "$B/usr/lib/wine" "$B/usr/lib/x86_64-linux-gnu/wine/x86_64-windows" "$B/usr/share/wine" \
    "$B/lib" "$B/bin" "$B/share/X11" "$B/home" "$B/src"

# -- Wine: loader, server, unix side, data, the PE DLLs used ------------------------------------
cp -a /usr/lib/wine/wine64 /usr/lib/wine/wineserver64 "$B/usr/lib/wine/"
cp -a "$W/x86_64-unix" "$B/usr/lib/x86_64-linux-gnu/wine/"
cp -a /usr/share/wine/nls /usr/share/wine/wine.inf "$B/usr/share/wine/"
for d in $DLLS; do
    if [ -f "$W/x86_64-windows/$d" ]; then cp -a "$W/x86_64-windows/$d" "$B/usr/lib/x86_64-linux-gnu/wine/x86_64-windows/"
    else echo "gpu-dml-bundle: note: no $d in Wine (skipped)"; fi
done

# -- the Wine prefix: all but the copies of builtin DLLs not used; those used are hard links -----
cp -a "$DML_HOME/wineprefix" "$B/home/wineprefix"
find "$B/home/wineprefix" -type s -delete 2>/dev/null || true
rm -f "$B/home/wineprefix/wineserver" 2>/dev/null || true
while IFS= read -r -d '' f; do
    name=$(basename "$f")
    lc=$(echo "$name" | tr 'A-Z' 'a-z')
    if [ -f "$W/x86_64-windows/$lc" ]; then
        if [ -f "$B/usr/lib/x86_64-linux-gnu/wine/x86_64-windows/$lc" ]; then
            ln -f "$B/usr/lib/x86_64-linux-gnu/wine/x86_64-windows/$lc" "$f"
        else
            rm -f "$f"
        fi
    fi
done < <(find "$B/home/wineprefix/drive_c/windows" -type f -print0)
rm -rf "$B/home/wineprefix/drive_c/windows/syswow64"/* "$B/home/wineprefix/drive_c/windows/winsxs"
# Wine must not run `wineboot --update` on the moved install (it would rebuild the prefix).
echo disable >"$B/home/wineprefix/.update-timestamp"
# wined3d (DXGI's adapters) on Vulkan instead of OpenGL: no Mesa OpenGL needed, and the DXGI
# adapter is the Vulkan device (its name is what DXGI's description says).
python3 - "$B/home/wineprefix/user.reg" <<'EOF'
import sys, re
p = sys.argv[1]
t = open(p, encoding="utf-8", errors="surrogateescape").read()
if "[Software\\\\Wine\\\\Direct3D]" not in t:
    t += '\n[Software\\\\Wine\\\\Direct3D] 1795415492\n#time=1dd7b1447da9bb0\n"renderer"="vulkan"\n'
elif '"renderer"=' not in t.split("[Software\\\\Wine\\\\Direct3D]")[1].split("\n[")[0]:
    t = t.replace("[Software\\\\Wine\\\\Direct3D] 1795415492\n", '[Software\\\\Wine\\\\Direct3D] 1795415492\n"renderer"="vulkan"\n')
open(p, "w", encoding="utf-8", errors="surrogateescape").write(t)
EOF
grep -q '"renderer"="vulkan"' "$B/home/wineprefix/user.reg"

# -- the DLLs and host programs ------------------------------------------------------------------
cp -a "$DML_HOME"/*.dll "$DML_HOME"/*.exe "$DML_HOME/wheel.sha256" "$B/home/"

# -- Xvfb, xkbcomp, xkb data ----------------------------------------------------------------------
cp -a /usr/bin/Xvfb /usr/bin/xkbcomp "$B/bin/"
cp -a /usr/share/X11/xkb "$B/share/X11/"
command -v vulkaninfo >/dev/null && cp -a "$(command -v vulkaninfo)" "$B/bin/"

# -- shared libraries: the seeds, and the ldd closure of every ELF file here ----------------------
for l in $SEED_LIBS; do
    if [ -e "$LIB/$l" ]; then cp -L "$LIB/$l" "$B/lib/$l"; else echo "gpu-dml-bundle: note: no $l"; fi
done
for round in 1 2 3; do
    find "$B/usr/lib" "$B/bin" "$B/lib" -type f \( -name '*.so*' -o -perm -u+x \) -print0 \
        | xargs -0 ldd 2>/dev/null | awk '/=> \// {print $1, $3}' | sort -u | while read -r soname path; do
            echo "$soname" | grep -Eq "$SKIP" && continue
            [ -e "$B/lib/$soname" ] || cp -L "$path" "$B/lib/$soname"
        done
done

# -- the project, as committed -------------------------------------------------------------------
git -C "$ROOT" archive HEAD dml2onnx models benchmarks tools pyproject.toml | tar -x -C "$B/src"
git -C "$ROOT" rev-parse HEAD >"$B/src/COMMIT"
# the host programs must match the snapshot's sources (their names hash the sources)
( cd "$B/src" && "${PY:-$ROOT/.venv/bin/python}" -c 'from dml2onnx.backends import winhost, dmlapi; import sys; print(winhost.exe_name())' ) >"$B/EXE" 2>/dev/null || true
[ -s "$B/EXE" ] && [ -f "$B/home/$(cat "$B/EXE")" ] || echo "gpu-dml-bundle: WARNING: host program $(cat "$B/EXE" 2>/dev/null) for the snapshot's source is not in $DML_HOME" >&2

du -sh "$B"
rm -rf "$OUTDIR" && mkdir -p "$OUTDIR"
tar -C "$STAGE" -cf - dmlgpu | xz -9e -T2 >"$OUTDIR/bundle.tar.xz"
( cd "$OUTDIR" && split -b "${PART_MB}M" -d -a 1 bundle.tar.xz part. && rm bundle.tar.xz )
i=0
for p in "$OUTDIR"/part.*; do mkdir -p "$OUTDIR/p$i"; mv "$p" "$OUTDIR/p$i/"; i=$((i + 1)); done
cat "$OUTDIR"/p*/part.* | sha256sum | cut -d' ' -f1 >"$OUTDIR/p$((i - 1))/SHA256"
echo "gpu-dml-bundle: $i part(s) in $OUTDIR: $(du -ch "$OUTDIR"/p*/part.* | tail -1 | cut -f1)"
