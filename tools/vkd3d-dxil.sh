#!/usr/bin/env bash
# Builds vkd3d-dxil.dll: vkd3d 1.14 (Direct3D 12 on Vulkan) as a Windows DLL, with its DXIL
# (shader model 6) front end enabled, from the vkd3d copy in Debian's wine 10 source package.
#
# Why: Wine 8's d3d12.dll bundles vkd3d 1.6, which compiles only DXBC shaders, and DirectML has
# some kernels only as DXIL (two-input Add/Sub/Mul/Div on FLOAT32, GatherElements on an inner
# axis...): sessions using them fail (`Skipping DXIL shader model 6+ code chunk`). vkd3d 1.14 has
# a DXIL parser that upstream builds only with -DVKD3D_SHADER_UNSUPPORTED_DXIL; Debian's builds
# leave it out. The host programs (dml2onnx/backends/winhost/host_common.h) create their D3D12 device
# through this DLL when it sits next to them; DXGI and the rest stay Wine's.
#
# No source is patched: the Wine-internal headers vkd3d expects are generated here (widl from
# Wine's .idl files, the Khronos Vulkan headers behind <wine/vulkan.h>), and the host programs
# work around vkd3d 1.14's EnumerateMetaCommands stub themselves.
#
#   tools/vkd3d-dxil.sh DEST_DIR        (dml-setup.sh calls it; DEST_DIR/vkd3d-dxil.dll)
#
# Cached: DEST_DIR/vkd3d-dxil.key holds a hash of the source tarball's sha256 and this script;
# when it matches, nothing is done. Needs (Debian 12): gcc-mingw-w64-x86-64, mingw-w64-tools
# (widl), bison, flex, libvulkan-dev (headers), and deb.debian.org for the 28 MB tarball, which
# is kept in DEST_DIR/src.
set -euo pipefail

WINE_ORIG=wine_10.0~repack.orig.tar.xz # of wine 10.0~repack-6 (trixie), -12 (sid)
WINE_ORIG_SHA256=e87ff2971c9b2e79fc63341f044d7513e66f3c3782b49609746428caa87c6ee6
WINE_ORIG_URL=${DML2ONNX_DEBIAN_MIRROR:-http://deb.debian.org/debian}/pool/main/w/wine/$WINE_ORIG
TOP=wine-10.0

DEST=${1:?usage: $0 DEST_DIR}
say() { echo "vkd3d-dxil: $*"; }
die() { echo "vkd3d-dxil: $*" >&2; exit 1; }

KEY=$( (echo "$WINE_ORIG_SHA256" && cat "$0") | sha256sum | cut -c1-16)
if [ -f "$DEST/vkd3d-dxil.dll" ] && [ "$(cat "$DEST/vkd3d-dxil.key" 2>/dev/null)" = "$KEY" ]; then
    say "up to date ($DEST/vkd3d-dxil.dll)"
    exit 0
fi

for tool in x86_64-w64-mingw32-gcc x86_64-w64-mingw32-widl bison flex; do
    command -v "$tool" >/dev/null || die "'$tool' is not installed"
done
[ -f /usr/include/vulkan/vulkan.h ] || die "the Vulkan headers (/usr/include/vulkan/vulkan.h, libvulkan-dev) are not installed"

start=$(date +%s)
mkdir -p "$DEST/src"
tarball=$DEST/src/$WINE_ORIG
if [ ! -f "$tarball" ] || [ "$(sha256sum "$tarball" | cut -d' ' -f1)" != "$WINE_ORIG_SHA256" ]; then
    say "downloading $WINE_ORIG_URL"
    PY=${PY:-python3}
    "$PY" - "$WINE_ORIG_URL" "$tarball.tmp" <<'EOF' || { rm -f "$tarball.tmp"; die "download failed: $WINE_ORIG_URL"; }
import shutil, sys, urllib.request
try:
    with urllib.request.urlopen(sys.argv[1], timeout=120) as r, open(sys.argv[2], "wb") as f:
        shutil.copyfileobj(r, f)
except OSError as e:
    sys.exit(f"vkd3d-dxil: {e}")
EOF
    got=$(sha256sum "$tarball.tmp" | cut -d' ' -f1)
    [ "$got" = "$WINE_ORIG_SHA256" ] || { rm -f "$tarball.tmp"; die "$WINE_ORIG has sha256 $got, expected $WINE_ORIG_SHA256"; }
    mv "$tarball.tmp" "$tarball"
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
say "extracting vkd3d from $WINE_ORIG"
tar -xJf "$tarball" --wildcards "$TOP/libs/vkd3d" "$TOP/include/*.idl" "$TOP/include/wine/list.h" \
    "$TOP/include/wine/rbtree.h"
S=$work/$TOP/libs/vkd3d
version=$(sed -n 's/^#define PACKAGE_VERSION "\(.*\)"/\1/p' "$S/config.h")
grep -q VKD3D_SHADER_UNSUPPORTED_DXIL "$S/libs/vkd3d-shader/vkd3d_shader_main.c" \
    || die "vkd3d $version has no VKD3D_SHADER_UNSUPPORTED_DXIL switch"

# Headers: Wine's D3D12 interfaces (newer than mingw-w64's), with the named unions (`u`) that
# Wine's code uses; <wine/vulkan.h> as the Khronos header for Win32.
mkdir -p inc/wine obj
for idl in d3d12 d3d12shader d3dcommon d3d12sdklayers; do
    x86_64-w64-mingw32-widl -h -o "inc/$idl.h" -I "$TOP/include" "$TOP/include/$idl.idl"
done
sed -i 's/\b__C89_NAMELESSUNIONNAME\([0-9]*\)\b/u\1/g; s/\b__C89_NAMELESSSTRUCTNAME\([0-9]*\)\b/s\1/g' inc/*.h
cp "$TOP/include/wine/list.h" "$TOP/include/wine/rbtree.h" inc/wine/
printf '#define VK_USE_PLATFORM_WIN32_KHR\n#include <vulkan/vulkan.h>\n' >inc/wine/vulkan.h
ln -s /usr/include/vulkan inc/vulkan
[ ! -d /usr/include/vk_video ] || ln -s /usr/include/vk_video inc/vk_video
# The interface IDs (Wine links them from its uuid library).
printf '#include <windows.h>\n#include <initguid.h>\n#include <d3d12.h>\n#include <d3d12shader.h>\n#include <d3dcommon.h>\n#include <d3d12sdklayers.h>\n' >obj/guids.c

say "building vkd3d $version (DXIL enabled) with mingw-w64"
(cd obj && bison -o hlsl.tab.c -d "$S/libs/vkd3d-shader/hlsl.y" && bison -o preproc.tab.c -d "$S/libs/vkd3d-shader/preproc.y" \
    && flex -o hlsl.yy.c "$S/libs/vkd3d-shader/hlsl.l" && flex -o preproc.yy.c "$S/libs/vkd3d-shader/preproc.l")
CFLAGS=(-O2 -DWINE_NO_NAMELESS_EXTENSION -DNONAMELESSUNION -DLIBVKD3D_SOURCE -DLIBVKD3D_SHADER_SOURCE
    -DLIBVKD3D_UTILS_SOURCE -DVKD3D_SHADER_UNSUPPORTED_DXIL -I"$work/obj" -I"$work/inc" -I"$S"
    -I"$S/include" -I"$S/include/private" -I"$S/libs/vkd3d" -I"$S/libs/vkd3d-shader")
export CFLAGS_LINE="${CFLAGS[*]}"
ls "$S"/libs/vkd3d-common/*.c "$S"/libs/vkd3d-shader/*.c "$S"/libs/vkd3d/*.c obj/*.c \
    | xargs -P"$(nproc)" -I{} sh -c 'x86_64-w64-mingw32-gcc $CFLAGS_LINE -w -c "{}" -o "obj/$(basename "{}" .c).o"' \
    || die "compiling vkd3d $version failed"
x86_64-w64-mingw32-gcc -shared -o vkd3d-dxil.dll obj/*.o -static -static-libgcc -luuid \
    || die "linking vkd3d-dxil.dll failed"
exports=$(x86_64-w64-mingw32-objdump -p vkd3d-dxil.dll)
grep -q '\] vkd3d_create_device$' <<<"$exports" || die "vkd3d-dxil.dll does not export vkd3d_create_device"
mv vkd3d-dxil.dll "$DEST/vkd3d-dxil.dll"
echo "$KEY" >"$DEST/vkd3d-dxil.key"
say "built $DEST/vkd3d-dxil.dll (vkd3d $version) in $(($(date +%s) - start)) s"
