"""Images in DxDispatch models: image initializers and `writeFile` to an image, decoded and
encoded with Pillow (the optional extra: `pip install 'dml2onnx[images]'`).

DxDispatch does this with Windows Imaging Component (WIC). What it does, from its source
(microsoft/DirectML, DxDispatch/src/model/JsonParsers.cpp, src/model/ImageReaderWriter.cpp,
src/dxdispatch/Executor.cpp), and how closely dml2onnx follows:

Reading (`"initialValues": {"sourcePath": "x.jpg"}`, `resampleSize`, `resampleMode`):
- Only a `sourcePath` whose extension is `.jpg` or `.png` (any case) is decoded; JsonParsers.cpp
  reads every other name as raw bytes. dml2onnx refuses the other image names (`.jpeg`, `.bmp`,
  ...) instead of reading an image's bytes as tensor data. WIC picks its decoder from the
  content, so a PNG named `.jpg` decodes; dml2onnx likewise decodes PNG, JPEG, BMP and GIF
  content whatever the name.
- `resampleSize` is `[N, C, H, W]` (UINT32s): JsonParsers.cpp wants 4 values ("N must be 1",
  which it does not check; dml2onnx does). Without it DxDispatch asks WIC for a 0x0 image and
  fails, so dml2onnx requires it. C = 3 decodes to RGB (WIC's 24bppRGB), any other C to RGBA
  (32bppRGBA) copied with a C-bytes-a-pixel stride, which works only for C = 4: dml2onnx allows
  3 and 4. The alpha of an image without one is 255.
- `resampleMode` defaults to "scale" and must be "scale" (case-sensitive).
- The image is converted to RGB(A) first, then scaled to W x H only if its size differs, with
  WICBitmapInterpolationModeHighQualityCubic: a bicubic kernel widened by the scale factor when
  shrinking. Pillow's BICUBIC resize (a = -0.5, its support widened the same way) is the nearest
  equivalent, on 8-bit values as WIC's scaler. Scaled results are close to WIC's, not
  bit-identical (WIC's exact kernel is not documented); each channel is scaled on its own, alpha
  included (no premultiplication). Unscaled images are exact for PNG; JPEG decoders (WIC's and
  libjpeg-turbo's IDCT and chroma upsampling) may differ by a level or so.
- Elements are NCHW, RGB(A) order, `byte / 255.0f` in FLOAT32 (0..1); FLOAT16 takes that FLOAT32
  value truncated toward zero (half.hpp's round_indeterminate, as everywhere in DxDispatch).
  ReadTensorFromImage accepts `initialValuesDataType` FLOAT32 and FLOAT16 only: every other type
  (the integers included) is refused.
- 16-bit samples (16-bit PNGs) keep their high byte, as Pillow reads 16-bit RGB; WIC may round.

Writing (`writeFile` to `x.png` / `x.jpg`, any case; other image names are refused):
- The resource's `initialValuesDataType` must be FLOAT32 or FLOAT16.
- `dimensions` `[N, C, H, W]`: C, H and W default to 1 when missing (so no `dimensions` writes a
  1x1 gray image, as DxDispatch does); N is not used (dml2onnx requires 1, and at most 4 values).
  C is 1 (8bppGray), 3 (24bppRGB) or 4 (32bppRGBA): Executor.cpp refuses other counts.
- The first C*H*W elements, NCHW, become bytes as ConvertTensorToPixels does: min(1, x), then
  max(0, .) in std::min/std::max's argument order (so NaN is 1, -inf 0), times 255.0f in
  FLOAT32, truncated toward zero: 0.5 gives 127. A FLOAT32 image read and written back is
  unchanged; FLOAT16 loses one level for bytes 1..254 (two truncations).
- PNG is lossless, so the bytes are exactly those; JPEG is written at quality 90 (WIC's default
  ImageQuality 0.9), alpha dropped: close to WIC's file, not byte-identical.
"""

from __future__ import annotations

import io
import math
import warnings
from dataclasses import dataclass
from pathlib import PurePath
from types import ModuleType
from typing import Any, Protocol

import numpy as np

from dml2onnx.core import dtypes, files, halfconv, limits
from dml2onnx.core.errors import JsonPath, ModelError
from dml2onnx.core.jsonvalues import expect_array, expect_string, expect_uint32


class WrittenResource(Protocol):
    """What check_write reads of a resource (resources.Resource)."""

    name: str
    deferred: bool
    data_type: dtypes.DataType | None
    size: int


# The extensions DxDispatch decodes and encodes (its tests lower-case the extension).
SUFFIXES = (".jpg", ".png")
# Other image names: DxDispatch would read or write raw bytes under them; dml2onnx refuses.
OTHER_SUFFIXES = (".jpeg", ".jpe", ".bmp", ".dib", ".gif", ".tif", ".tiff", ".webp", ".ico", ".jxr", ".heic", ".avif")
KEYS = ("resampleSize", "resampleMode")
TYPES = (dtypes.FLOAT32, dtypes.FLOAT16)
# WIC's own decoders that Pillow has too; Pillow tries no other plugin on a model's file.
_FORMATS = ("PNG", "JPEG", "BMP", "GIF")
_JPEG_MAX_SIDE = 65500  # libjpeg's JPEG_MAX_DIMENSION
_JPEG_QUALITY = 90  # WIC's JPEG encoder default ImageQuality, 0.9
_HINT = "pip install 'dml2onnx[images]'"


def suffix(name: str | PurePath) -> str:
    return PurePath(name).suffix.lower()


def is_image(name: str | PurePath) -> bool:
    """True for the names DxDispatch decodes and encodes as images."""
    return suffix(name) in SUFFIXES


def names_image(init: Any) -> bool:
    """True when an `initialValues` value is a file initializer naming a .jpg or .png."""
    return isinstance(init, dict) and isinstance(init.get("sourcePath"), str) and is_image(init["sourcePath"])


def refuse_other(name: str, path: JsonPath, writing: bool) -> None:
    """Refuses an image name DxDispatch does not treat as an image (it would use raw bytes)."""
    ext = suffix(name)
    if ext in OTHER_SUFFIXES:
        if writing:
            would, fix = "write raw bytes under this name", "name a .png or .jpg, or a .npy or raw file"
        else:
            would, fix = f"read this {ext} file's bytes as raw data", "convert it to .png or .jpg"
        raise ModelError(path, f"DxDispatch treats only .jpg and .png names as images (it would {would}): {fix}")


def refuse_keys(resource: dict[str, Any], path: JsonPath) -> None:
    """resampleSize and resampleMode on a resource that is not an image initializer: refused
    (DxDispatch ignores them), after the image names it does not decode."""
    init = resource["initialValues"]
    if isinstance(init, dict) and isinstance(init.get("sourcePath"), str):
        refuse_other(init["sourcePath"], path + ("initialValues", "sourcePath"), writing=False)
    for key in KEYS:
        if key in resource:
            raise ModelError(path + (key,), "applies to image initializers only (a sourcePath naming a .jpg or .png)")


def pillow(path: JsonPath, action: str) -> ModuleType:
    """Pillow's Image module, or an exit-2 error saying how to install it."""
    try:
        from PIL import Image
    except ImportError:
        raise ModelError(path, f"{action} images needs Pillow, which is not installed: {_HINT}") from None
    return Image


@dataclass(frozen=True)
class ImageShape:
    """The tensor an image initializer becomes: NCHW with N = 1."""

    data_type: dtypes.DataType
    channels: int
    height: int
    width: int

    @property
    def mode(self) -> str:
        return "RGB" if self.channels == 3 else "RGBA"

    @property
    def size_in_bytes(self) -> int:
        return self.channels * self.height * self.width * self.data_type.size


def _check_type(dtype: dtypes.DataType | None, path: JsonPath, what: str) -> dtypes.DataType:
    allowed = " or ".join(t.name for t in TYPES)
    if dtype is None:
        raise ModelError(path, f"{what} needs a data type: {allowed}")
    if dtype not in TYPES:
        raise ModelError(path, f"{what} must be {allowed} (DxDispatch's ImageReaderWriter.cpp), not {dtype}")
    return dtype


_SIDE = math.isqrt(limits.MAX_IMAGE_PIXELS)
_PIXEL_LIMIT = f"the limit of {limits.MAX_IMAGE_PIXELS} pixels ({_SIDE}x{_SIDE})"


def _check_pixels(height: int, width: int, path: JsonPath, what: str) -> None:
    if height * width > limits.MAX_IMAGE_PIXELS:
        raise ModelError(path, f"{what} is {width}x{height} pixels, more than {_PIXEL_LIMIT}")


def parse_resample(resource: dict[str, Any], dtype: dtypes.DataType | None, path: JsonPath) -> ImageShape:
    """An image initializer's `initialValuesDataType`, `resampleSize` and `resampleMode`, checked
    (`path` is the resource's)."""
    dtype = _check_type(dtype, path + ("initialValuesDataType",), "an image initializer")
    p = path + ("resampleSize",)
    if "resampleSize" not in resource:
        raise ModelError(p, "an image initializer needs resampleSize [1, C, H, W]: DxDispatch decodes only to a given size")
    size = [expect_uint32(v, p + (i,)) for i, v in enumerate(expect_array(resource["resampleSize"], p))]
    if len(size) != 4:
        raise ModelError(p, f"must be [N, C, H, W] (4 values), not {len(size)} values")
    n, channels, height, width = size
    if n != 1:
        raise ModelError(p + (0,), f"N must be 1 (an image file holds one image), not {n}")
    if channels not in (3, 4):
        raise ModelError(p + (1,), f"C must be 3 (RGB) or 4 (RGBA), the channels DxDispatch decodes to, not {channels}")
    for i, v in ((2, height), (3, width)):
        if v == 0:
            raise ModelError(p + (i,), "must be at least 1")
    _check_pixels(height, width, p, "an image")
    shape = ImageShape(dtype, channels, height, width)
    if shape.size_in_bytes > limits.max_bytes():
        raise ModelError(p, f"{shape.size_in_bytes} bytes of {dtype} exceed the {limits.text('buffer')}")
    if "resampleMode" in resource:
        mp = path + ("resampleMode",)
        mode = expect_string(resource["resampleMode"], mp)
        if mode != "scale":
            raise ModelError(mp, f"must be 'scale' (the only mode DxDispatch has), not {mode!r}")
    return shape


def decode(raw: bytes, source: str, shape: ImageShape, path: JsonPath) -> bytes:
    """The initializer's bytes: the image decoded, converted, scaled and laid out as DxDispatch's
    ReadTensorFromImage does (module docstring). `path` is the sourcePath's."""
    image_module = pillow(path, "decoding")
    pixels = _decoded_pixels(image_module, raw, source, shape, path)  # H x W x C bytes
    chw = np.ascontiguousarray(pixels.transpose(2, 0, 1))
    values = chw.astype(np.float32) / np.float32(255)
    if shape.data_type == dtypes.FLOAT16:
        return halfconv.to_float16(values).tobytes()
    return values.tobytes()


def _decoded_pixels(image_module: ModuleType, raw: bytes, source: str, shape: ImageShape, path: JsonPath) -> np.ndarray:
    def bad(why: str) -> ModelError:
        return ModelError(path, f"{files.shown(source)} is not an image dml2onnx can decode: {why}")

    with warnings.catch_warnings():
        # Pillow warns on stderr (past its own pixel limit, which ours is below; on palette
        # transparency, odd metadata): the output is one line or a result, never its notes.
        warnings.simplefilter("ignore")
        try:
            image = image_module.open(io.BytesIO(raw), formats=_FORMATS)
        except image_module.DecompressionBombError:  # past twice Pillow's limit, far past ours
            raise ModelError(path, f"{files.shown(source)} is larger than {_PIXEL_LIMIT}") from None
        except image_module.UnidentifiedImageError:
            raise bad("not a PNG, JPEG, BMP or GIF file") from None
        except Exception as e:  # an undecodable file is the model's fault, whatever Pillow raises
            raise bad(_reason(e)) from None
        width, height = image.size
        _check_pixels(height, width, path, files.shown(source))
        try:
            image.load()  # the first frame, as WIC's GetFrame(0)
            image = _to_mode(image_module, image, shape.mode)
            image = _resample(image_module, image, shape.width, shape.height)
        except Exception as e:
            raise bad(_reason(e)) from None
    return np.asarray(image, dtype=np.uint8).reshape(shape.height, shape.width, shape.channels)


def _reason(e: Exception) -> str:
    return str(e) or type(e).__name__


def _to_mode(image_module: ModuleType, image: Any, mode: str) -> Any:
    """RGB or RGBA, as WIC's format converter gives them (gray repeated, palette looked up,
    alpha 255 where the image has none). 16-bit gray keeps its high byte."""
    if image.mode.startswith("I"):  # I;16 and I: 16-bit gray PNGs
        high = (np.asarray(image).astype(np.int64).clip(0, 65535) >> 8).astype(np.uint8)
        image = image_module.fromarray(high)  # 2-D bytes: mode L
    return image if image.mode == mode else image.convert(mode)


def _resample(image_module: ModuleType, image: Any, width: int, height: int) -> Any:
    """DxDispatch scales only when the size differs (WIC's high-quality cubic; Pillow's BICUBIC
    is its nearest equivalent). Channels are scaled one by one: Pillow would premultiply RGBA."""
    if image.size == (width, height):
        return image
    bicubic = image_module.Resampling.BICUBIC
    return image_module.merge(image.mode, [band.resize((width, height), bicubic) for band in image.split()])


@dataclass(frozen=True)
class WriteShape:
    """An image writeFile's channels, height and width (from `dimensions`)."""

    channels: int
    height: int
    width: int

    @property
    def elements(self) -> int:
        return self.channels * self.height * self.width


def write_shape(dims: tuple[int, ...] | None) -> WriteShape:
    """Executor.cpp's reading of `dimensions`: [N, C, H, W], a missing one being 1."""
    d = tuple(dims or ())
    return WriteShape(*(d[i] if len(d) > i else 1 for i in (1, 2, 3)))


def check_write(target: str, res: WrittenResource, dims: tuple[int, ...] | None, path: JsonPath) -> None:
    """A writeFile to an image, checked before anything runs (`path` is the command's): the
    resource's data type, the dimensions, and that the resource holds that many elements."""
    name, rp = res.name, path + ("resource",)
    if res.deferred:  # DxDispatch would take the dimensions from the output bound to it
        raise ModelError(rp, f"resource '{name}' is deferred: dml2onnx does not write deferred resources as images yet")
    dtype = _check_type(res.data_type, rp, f"resource '{name}', written as an image,")
    p = path + ("dimensions",)
    if dims is not None:
        if len(dims) > 4:
            raise ModelError(p, f"an image's dimensions are [N, C, H, W], not {len(dims)} values")
        if dims and dims[0] != 1:
            raise ModelError(p + (0,), f"N must be 1 (an image file holds one image), not {dims[0]}")
        for i, v in enumerate(dims[2:], start=2):
            if v == 0:
                raise ModelError(p + (i,), "must be at least 1")
    shape = write_shape(dims)
    if shape.channels not in (1, 3, 4):
        raise ModelError(p + (1,), f"an image has 1 (gray), 3 (RGB) or 4 (RGBA) channels, not {shape.channels}")
    _check_pixels(shape.height, shape.width, p, "an image")
    if suffix(target) == ".jpg" and max(shape.height, shape.width) > _JPEG_MAX_SIDE:
        raise ModelError(p, f"a JPEG image is at most {_JPEG_MAX_SIDE} pixels wide and high")
    need = shape.elements * dtype.size
    if need > res.size:
        raise ModelError(p, f"{list(dims or ())} needs {need} bytes, more than the {res.size} bytes of resource '{name}'")


def to_pixels(chw: np.ndarray) -> np.ndarray:
    """FLOAT32 (or FLOAT16) values, C x H x W, as the H x W x C bytes ConvertTensorToPixels makes:
    std::max(0.0f, std::min(1.0f, x)) * 255.0f, truncated (NaN -> 255, -inf -> 0)."""
    v = chw.astype(np.float32)
    with np.errstate(invalid="ignore"):
        v = np.where(v < 1, v, np.float32(1))  # std::min(1, x): x only if x < 1, so NaN -> 1
        v = np.where(np.float32(0) < v, v, np.float32(0))  # std::max(0, x): x only if 0 < x
    return (v * np.float32(255)).astype(np.uint8).transpose(1, 2, 0)


def encode(
    buffer: bytes | bytearray, data_type: dtypes.DataType, dims: tuple[int, ...] | None, target: str, path: JsonPath
) -> bytes:
    """The image file's bytes for a checked writeFile (`check_write`) to `target`."""
    image_module = pillow(path, "writing")
    shape = write_shape(dims)
    values = np.frombuffer(buffer, dtype=data_type.numpy, count=shape.elements)
    pixels = to_pixels(values.reshape(shape.channels, shape.height, shape.width))
    # Bytes H x W (mode L: WIC's 8bppGray), H x W x 3 (RGB) or H x W x 4 (RGBA)
    image = image_module.fromarray(np.ascontiguousarray(pixels if shape.channels > 1 else pixels[:, :, 0]))
    out = io.BytesIO()
    if suffix(target) == ".jpg":
        if image.mode == "RGBA":  # JPEG has no alpha: WIC's encoder converts to 24bpp, dropping it
            image = image.convert("RGB")
        image.save(out, "JPEG", quality=_JPEG_QUALITY)
    else:
        image.save(out, "PNG")
    return out.getvalue()
