"""Images: image initializers (decode, convert, resample, NCHW / 255) and writeFile to .png/.jpg,
against values worked out here (by hand, numpy, or Pillow called directly), and every refusal.

The rules are DxDispatch's (dml2onnx/formats/images.py cites its source). Pillow is the `images` extra."""

from __future__ import annotations

import io
import json
import os
import struct
import sys
import time
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from PIL import Image

from dml2onnx.core.limits import MAX_IMAGE_PIXELS
from dml2onnx.formats import dxdispatch
from fuzzing import mutated_models
from fuzzing import run_model as fuzz_run
from support import run_cli

DXDISPATCH = Path(__file__).parents[1] / "dxdispatch"
# 2 x 3 pixels, RGB, chosen so that every channel and position differs
PIXELS = np.array(
    [[[255, 0, 51], [1, 2, 3], [128, 64, 32]], [[10, 20, 30], [200, 100, 0], [7, 254, 127]]],
    dtype=np.uint8,
)


def save(folder: Path, name: str, pixels: np.ndarray, fmt: str | None = None) -> Path:
    path = folder / name
    Image.fromarray(pixels).save(path, fmt)
    return path


def image_resource(source: str, size: list[int], dtype: str = "FLOAT32", **extra: Any) -> dict[str, Any]:
    return {"initialValues": {"sourcePath": source}, "initialValuesDataType": dtype, "resampleSize": size, **extra}


def initial(folder: Path, res: dict[str, Any]) -> np.ndarray:
    """The initial elements of resource `res`, parsed as a model in `folder` would be."""
    r = dxdispatch.parse({"resources": {"x": res}, "dispatchables": {}, "commands": []}, folder).resources["x"]
    return np.frombuffer(r.initial, r.data_type.numpy)


def nchw(pixels: np.ndarray) -> np.ndarray:
    """H x W x C bytes as DxDispatch's FLOAT32 elements: NCHW, byte / 255.0f."""
    return (pixels.transpose(2, 0, 1).astype(np.float32) / np.float32(255)).ravel()


def bicubic(pixels: np.ndarray, width: int, height: int) -> np.ndarray:
    """Each channel scaled on its own with Pillow's BICUBIC, H x W x C."""
    bands = [
        np.asarray(Image.fromarray(pixels[:, :, c]).resize((width, height), Image.Resampling.BICUBIC))
        for c in range(pixels.shape[2])
    ]
    return np.stack(bands, axis=2)


def test_png_decodes_to_nchw_rgb_over_255(tmp_path: Path) -> None:
    save(tmp_path, "x.png", PIXELS)
    got = initial(tmp_path, image_resource("x.png", [1, 3, 2, 3], resampleMode="scale"))
    # by hand: R plane first (255 -> 1.0), then G (pixel 0's 0), then B (pixel 0's 51 -> 0.2)
    assert got.dtype == np.float32 and got.size == 18
    assert (got[0], got[6], got[12]) == (np.float32(1.0), np.float32(0.0), np.float32(51) / np.float32(255))
    assert got[1] == np.float32(1) / np.float32(255) and got[17] == np.float32(127) / np.float32(255)
    np.testing.assert_array_equal(got, nchw(PIXELS))


def test_float16_is_truncated_toward_zero(tmp_path: Path) -> None:
    save(tmp_path, "x.png", PIXELS)
    got = initial(tmp_path, image_resource("x.png", [1, 3, 2, 3], "FLOAT16"))
    f = nchw(PIXELS)
    # the largest half not above the FLOAT32 value (all are positive)
    want = f.astype(np.float16)
    want = np.where(want.astype(np.float32) > f, np.nextafter(want, np.float16(0)), want)
    assert got.dtype == np.float16 and got.tobytes() == want.tobytes()
    assert np.any(f.astype(np.float16) != want)  # some of them do round differently to nearest


def test_channels_three_and_four_from_every_mode(tmp_path: Path) -> None:
    rgba = np.dstack([PIXELS, np.array([[0, 9, 255], [128, 1, 77]], np.uint8)])
    save(tmp_path, "rgba.png", rgba)
    save(tmp_path, "rgb.png", PIXELS)
    save(tmp_path, "gray.png", PIXELS[:, :, 0])
    Image.fromarray(PIXELS).convert("P", palette=Image.Palette.ADAPTIVE, colors=8).save(tmp_path / "p.png")
    assert initial(tmp_path, image_resource("rgba.png", [1, 4, 2, 3])).tolist() == nchw(rgba).tolist()
    assert initial(tmp_path, image_resource("rgba.png", [1, 3, 2, 3])).tolist() == nchw(PIXELS).tolist()  # alpha dropped
    opaque = np.dstack([PIXELS, np.full((2, 3), 255, np.uint8)])
    assert initial(tmp_path, image_resource("rgb.png", [1, 4, 2, 3])).tolist() == nchw(opaque).tolist()  # alpha 1.0
    gray = np.repeat(PIXELS[:, :, :1], 3, axis=2)
    assert initial(tmp_path, image_resource("gray.png", [1, 3, 2, 3])).tolist() == nchw(gray).tolist()
    palette = np.asarray(Image.open(tmp_path / "p.png").convert("RGB"))
    assert initial(tmp_path, image_resource("p.png", [1, 3, 2, 3])).tolist() == nchw(palette).tolist()


def test_sixteen_bit_gray_keeps_the_high_byte(tmp_path: Path) -> None:
    Image.fromarray(np.array([[0x1234, 0xFFFF, 0x00FF]], np.uint16)).save(tmp_path / "g16.png")
    got = initial(tmp_path, image_resource("g16.png", [1, 3, 1, 3]))
    assert got.tolist() == (np.array([0x12, 0xFF, 0x00] * 3, np.float32) / np.float32(255)).tolist()


def test_png_content_under_a_jpg_name_decodes(tmp_path: Path) -> None:
    """WIC picks its decoder from the content, not the name; so does dml2onnx."""
    save(tmp_path, "x.jpg", PIXELS, "PNG")
    assert initial(tmp_path, image_resource("x.jpg", [1, 3, 2, 3])).tolist() == nchw(PIXELS).tolist()


def test_resample_is_bicubic_per_channel(tmp_path: Path) -> None:
    rng = np.random.default_rng(22)
    pixels = rng.integers(0, 256, (5, 7, 4), dtype=np.uint8)
    pixels[:, :3, 3] = 0  # transparent pixels with colour: premultiplying would change their neighbours
    save(tmp_path, "x.png", pixels)
    for height, width in ((4, 6), (9, 11), (5, 3)):
        got = initial(tmp_path, image_resource("x.png", [1, 4, height, width]))
        np.testing.assert_array_equal(got, nchw(bicubic(pixels, width, height)))
    premultiplied = np.asarray(Image.fromarray(pixels).resize((6, 4), Image.Resampling.BICUBIC))
    assert nchw(premultiplied).tolist() != initial(tmp_path, image_resource("x.png", [1, 4, 4, 6])).tolist()


def test_resample_keeps_a_uniform_colour(tmp_path: Path) -> None:
    """Bicubic weights sum to 1: a uniform image stays exactly uniform, up or down."""
    save(tmp_path, "x.png", np.full((5, 3, 3), (10, 20, 30), np.uint8))
    for size in ([1, 3, 8, 6], [1, 3, 2, 1]):
        got = initial(tmp_path, image_resource("x.png", size)).reshape(3, -1)
        assert [set(row.tolist()) for row in got] == [{np.float32(v) / np.float32(255)} for v in (10, 20, 30)]


def test_dxdispatch_jpeg_decodes_as_libjpeg_gives_it() -> None:
    """DxDispatch's chihuahua.jpg (re-encoded at 640 x 640 to stay small), unscaled, then scaled."""
    source = DXDISPATCH / "chihuahua.jpg"
    decoded = np.asarray(Image.open(source).convert("RGB"))
    assert decoded.shape == (640, 640, 3)
    np.testing.assert_array_equal(initial(DXDISPATCH, image_resource("chihuahua.jpg", [1, 3, 640, 640])), nchw(decoded))
    got = initial(DXDISPATCH, image_resource("chihuahua.jpg", [1, 3, 512, 512]))
    np.testing.assert_array_equal(got, nchw(bicubic(decoded, 512, 512)))


def test_image_io_runs_unchanged(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """DxDispatch's models/image_io.json: a 1x1 convolution to grayscale, written as output.png."""
    monkeypatch.chdir(tmp_path)
    status, out, err = run_cli("run", str(DXDISPATCH / "image_io.json"))
    assert status == 0 and out == "", err
    assert f"Resource 'output' written to '{tmp_path / 'output.png'}'" in err
    written = Image.open(tmp_path / "output.png")
    assert (written.format, written.mode, written.size) == ("PNG", "L", (512, 512))
    rgb = nchw(bicubic(np.asarray(Image.open(DXDISPATCH / "chihuahua.jpg").convert("RGB")), 512, 512)).reshape(3, 512, 512)
    gray = np.float32(0.2989) * rgb[0] + np.float32(0.5870) * rgb[1] + np.float32(0.1140) * rgb[2]
    want = (np.clip(gray, 0, 1) * np.float32(255)).astype(np.uint8)
    diff = np.abs(np.asarray(written).astype(int) - want)
    # ORT's sum order may round the last bit otherwise, which truncation turns into one level
    assert diff.max() <= 1 and (diff == 0).mean() > 0.99, (diff.max(), (diff == 0).mean())


def write_model(values: list[Any], dtype: str, target: str, dims: list[int] | None) -> dict[str, Any]:
    cmd: dict[str, Any] = {"type": "writeFile", "resource": "x", "targetPath": target}
    if dims is not None:
        cmd["dimensions"] = dims
    return {
        "resources": {"x": {"initialValuesDataType": dtype, "initialValues": values}},
        "dispatchables": {},
        "commands": [cmd],
    }


def run_model(folder: Path, model: dict[str, Any]) -> tuple[int, str, str]:
    (folder / "model.json").write_text(json.dumps(model))
    return run_cli("run", str(folder / "model.json"))


# Each value's byte: clamp to [0, 1] (NaN is 1), * 255, truncated
VALUES = [0.5, 0.25, "nan", "-inf", 2, -0.5, 1, 0, 1 / 255, 0.999, 0.1, "inf"]
BYTES = [127, 63, 255, 0, 255, 0, 255, 0, 1, 254, 25, 255]


@pytest.mark.parametrize(("channels", "mode"), [(1, "L"), (3, "RGB"), (4, "RGBA")])
@pytest.mark.parametrize("dtype", ["FLOAT32", "FLOAT16"])
def test_write_png_bytes(channels: int, mode: str, dtype: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    width = 12 // channels
    status, _, err = run_model(tmp_path, write_model(VALUES, dtype, "out.png", [1, channels, 1, width]))
    assert status == 0, err
    image = Image.open(tmp_path / "out.png")
    assert (image.mode, image.size) == (mode, (width, 1))
    # the file is H x W x C; the buffer was C x H x W
    want = np.array(BYTES, np.uint8)
    if dtype == "FLOAT16":  # 1/255 as a half, truncated, is 0.0039215088: * 255 = 0.99998, so 0
        want[8] = 0
    want = want.reshape(channels, 1, width).transpose(1, 2, 0)
    assert np.asarray(image).reshape(1, width, channels).tolist() == want.tolist()


def test_write_without_dimensions_is_one_gray_pixel(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Executor.cpp takes a missing C, H or W as 1: the first value, as a 1 x 1 gray image."""
    monkeypatch.chdir(tmp_path)
    assert run_model(tmp_path, write_model(VALUES, "FLOAT32", "OUT.PNG", None))[0] == 0
    image = Image.open(tmp_path / "OUT.PNG")
    assert (image.mode, image.size, image.getpixel((0, 0))) == ("L", (1, 1), 127)


def test_write_jpeg(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """JPEG is lossy: a uniform colour comes back within a level or two; alpha is dropped."""
    monkeypatch.chdir(tmp_path)
    values = [0.2] * 64 + [0.6] * 64 + [0.9] * 64 + [0.0] * 64  # RGBA, 8 x 8, alpha 0
    assert run_model(tmp_path, write_model(values, "FLOAT32", "out.jpg", [1, 4, 8, 8]))[0] == 0
    image = Image.open(tmp_path / "out.jpg")
    assert (image.format, image.mode, image.size) == ("JPEG", "RGB", (8, 8))
    got = np.asarray(image).reshape(-1, 3).astype(int)
    assert np.abs(got - [51, 153, 229]).max() <= 2, got[:4]


@pytest.mark.parametrize(("dtype", "loss"), [("FLOAT32", 0), ("FLOAT16", 1)])
def test_read_write_round_trip(dtype: str, loss: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """FLOAT32: p / 255 * 255 truncates back to p for every byte. FLOAT16: truncated twice, one
    level lower for 1..254."""
    monkeypatch.chdir(tmp_path)
    pixels = np.arange(256 * 3, dtype=np.int64).reshape(16, 16, 3).astype(np.uint8)
    save(tmp_path, "in.png", pixels)
    model = {
        "resources": {"x": image_resource("in.png", [1, 3, 16, 16], dtype)},
        "dispatchables": {},
        "commands": [{"type": "writeFile", "resource": "x", "targetPath": "out.png", "dimensions": [1, 3, 16, 16]}],
    }
    assert run_model(tmp_path, model)[0] == 0
    back = np.asarray(Image.open(tmp_path / "out.png")).astype(int)
    want = np.where((pixels > 0) & (pixels < 255), pixels.astype(int) - loss, pixels)
    assert back.tolist() == want.tolist()


def assert_refused(folder: Path, model: dict[str, Any], path: str, rule: str) -> None:
    """Exit 2 with one line naming `path` and holding `rule`, and nothing written."""
    before = set(folder.iterdir())
    status, out, err = run_model(folder, model)
    lines = err.strip().splitlines()
    assert status == 2 and out == "" and len(lines) == 1, (status, out, err)
    assert lines[0].startswith(f"dml2onnx: error: {path}: ") and rule in lines[0], lines[0]
    assert set(folder.iterdir()) - before == {folder / "model.json"} - before


def read_model(res: dict[str, Any]) -> dict[str, Any]:
    return {"resources": {"x": res}, "dispatchables": {}, "commands": [{"type": "print", "resource": "x"}]}


READ_REFUSALS = [
    ("no-resample", {"resampleSize": None}, "resources.x.resampleSize", "needs resampleSize [1, C, H, W]"),
    ("three-values", {"resampleSize": [1, 3, 2]}, "resources.x.resampleSize", "4 values"),
    ("not-array", {"resampleSize": 3}, "resources.x.resampleSize", "expected an array"),
    ("negative", {"resampleSize": [1, 3, -2, 3]}, "resources.x.resampleSize[2]", "does not fit"),
    ("n-two", {"resampleSize": [2, 3, 2, 3]}, "resources.x.resampleSize[0]", "N must be 1"),
    ("gray", {"resampleSize": [1, 1, 2, 3]}, "resources.x.resampleSize[1]", "C must be 3 (RGB) or 4 (RGBA)"),
    ("zero-width", {"resampleSize": [1, 3, 2, 0]}, "resources.x.resampleSize[3]", "at least 1"),
    ("huge", {"resampleSize": [1, 3, 8193, 8192]}, "resources.x.resampleSize", f"limit of {MAX_IMAGE_PIXELS} pixels"),
    ("mode", {"resampleMode": "crop"}, "resources.x.resampleMode", "must be 'scale'"),
    ("mode-case", {"resampleMode": "Scale"}, "resources.x.resampleMode", "must be 'scale'"),
    ("mode-type", {"resampleMode": 1}, "resources.x.resampleMode", "expected a string"),
    ("uint8", {"initialValuesDataType": "UINT8"}, "resources.x.initialValuesDataType", "FLOAT32 or FLOAT16"),
    ("no-type", {"initialValuesDataType": None}, "resources.x.initialValuesDataType", "needs a data type"),
    ("extra", {"initialValues": {"sourcePath": "x.png", "valueCount": 1}}, "resources.x.initialValues.valueCount", "unknown"),
    ("missing", {"initialValues": {"sourcePath": "nope.png"}}, "resources.x.initialValues.sourcePath", "cannot read"),
    ("bmp", {"initialValues": {"sourcePath": "x.bmp"}}, "resources.x.initialValues.sourcePath", "only .jpg and .png"),
    ("jpeg", {"initialValues": {"sourcePath": "x.JPEG"}}, "resources.x.initialValues.sourcePath", "only .jpg and .png"),
    ("array", {"initialValues": [1, 2]}, "resources.x.resampleSize", "applies to image initializers only"),
    ("npy", {"initialValues": {"sourcePath": "x.npy"}}, "resources.x.resampleSize", "applies to image initializers only"),
]


@pytest.mark.parametrize("case", READ_REFUSALS, ids=[c[0] for c in READ_REFUSALS])
def test_image_initializer_refusals(case: tuple[str, dict[str, Any], str, str], tmp_path: Path) -> None:
    _, change, path, rule = case
    save(tmp_path, "x.png", PIXELS)
    np.save(tmp_path / "x.npy", np.zeros(3, np.float32))
    res = image_resource("x.png", [1, 3, 2, 3]) | change
    assert_refused(tmp_path, read_model({k: v for k, v in res.items() if v is not None}), path, rule)


def png_claiming(width: int, height: int) -> bytes:
    """A PNG whose header claims width x height RGB pixels, with 1 KB of compressed zeros."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(bytes(1 << 20))) + chunk(b"IEND", b"")


def truncated_png() -> bytes:
    """Random 32 x 32 pixels (which deflate cannot shrink), cut off in the middle of their data."""
    pixels = np.random.default_rng(1).integers(0, 256, (32, 32, 3), dtype=np.uint8)
    out = io.BytesIO()
    Image.fromarray(pixels).save(out, "PNG")
    return out.getvalue()[:1500]


@pytest.mark.parametrize(
    ("content", "rule"),
    [
        (b"not an image at all", "is not an image dml2onnx can decode: not a PNG, JPEG, BMP or GIF file"),
        (truncated_png(), "is not an image dml2onnx can decode"),
        (png_claiming(9000, 9000), f"is 9000x9000 pixels, more than the limit of {MAX_IMAGE_PIXELS} pixels"),
        (png_claiming(100_000, 100_000), f"is larger than the limit of {MAX_IMAGE_PIXELS} pixels"),  # Pillow's own error
        (b"GIF89a" + bytes(20), "is not an image dml2onnx can decode"),
    ],
    ids=["garbage", "truncated", "bomb", "huge-bomb", "bad-gif"],
)
def test_bad_image_files(content: bytes, rule: str, tmp_path: Path) -> None:
    """Decoded headers first: a decompression bomb is refused in well under a second."""
    (tmp_path / "x.png").write_bytes(content)
    start = time.perf_counter()
    assert_refused(tmp_path, read_model(image_resource("x.png", [1, 3, 2, 3])), "resources.x.initialValues.sourcePath", rule)
    assert time.perf_counter() - start < 2


def test_without_pillow(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Pillow is an optional extra: without it, image models say how to install it."""
    save(tmp_path, "x.png", PIXELS)
    monkeypatch.setitem(sys.modules, "PIL", None)  # `from PIL import Image` raises ImportError
    monkeypatch.setitem(sys.modules, "PIL.Image", None)
    hint = "needs Pillow, which is not installed: pip install 'dml2onnx[images]'"
    model = read_model(image_resource("x.png", [1, 3, 2, 3]))
    assert_refused(tmp_path, model, "resources.x.initialValues.sourcePath", f"decoding images {hint}")
    monkeypatch.chdir(tmp_path)
    assert_refused(tmp_path, write_model([0.5], "FLOAT32", "out.png", None), "commands[0].targetPath", f"writing images {hint}")
    # a model without images needs no Pillow
    assert run_model(tmp_path, write_model([0.5], "FLOAT32", "out.npy", None))[0] == 0


WRITE_REFUSALS = [
    ("uint32", ([1, 2, 3], "UINT32", "out.png", [1, 3, 1, 1]), "commands[0].resource", "must be FLOAT32 or FLOAT16"),
    ("two-channels", ([0.5] * 4, "FLOAT32", "out.png", [1, 2, 1, 2]), "commands[0].dimensions[1]", "1 (gray), 3 (RGB) or 4"),
    ("n-two", ([0.5] * 4, "FLOAT32", "out.png", [2, 1, 1, 2]), "commands[0].dimensions[0]", "N must be 1"),
    ("five-dims", ([0.5] * 4, "FLOAT32", "out.png", [1, 1, 1, 2, 2]), "commands[0].dimensions", "not 5 values"),
    ("zero-height", ([0.5] * 4, "FLOAT32", "out.png", [1, 1, 0, 2]), "commands[0].dimensions[2]", "at least 1"),
    ("too-big", ([0.5] * 4, "FLOAT32", "out.png", [1, 3, 2, 2]), "commands[0].dimensions", "needs 48 bytes, more than the 16"),
    ("huge", ([0.5] * 4, "FLOAT16", "out.png", [1, 1, 9000, 9000]), "commands[0].dimensions", "limit of"),
    ("jpeg-wide", ([0.5] * 4, "FLOAT32", "out.jpg", [1, 1, 1, 70000]), "commands[0].dimensions", "at most 65500"),
    ("bmp", ([0.5] * 4, "FLOAT32", "out.bmp", None), "commands[0].targetPath", "only .jpg and .png names as images"),
    ("jpeg", ([0.5] * 4, "FLOAT32", "out.JPEG", None), "commands[0].targetPath", "would write raw bytes"),
]


@pytest.mark.parametrize("case", WRITE_REFUSALS, ids=[c[0] for c in WRITE_REFUSALS])
def test_write_refusals(case: tuple[str, tuple[Any, ...], str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _, args, path, rule = case
    monkeypatch.chdir(tmp_path)
    assert_refused(tmp_path, write_model(*args), path, rule)


def test_refused_before_anything_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A bad image writeFile after a good one: nothing at all is written."""
    monkeypatch.chdir(tmp_path)
    model = write_model([0.5] * 4, "FLOAT32", "good.png", [1, 1, 2, 2])
    model["commands"].append({"type": "writeFile", "resource": "x", "targetPath": "bad.png", "dimensions": [1, 2, 1, 1]})
    assert_refused(tmp_path, model, "commands[1].dimensions[1]", "channels")


def test_the_test_image_is_small() -> None:
    """DxDispatch's 250 KB chihuahua.jpg is kept here as a 640 x 640 re-encode."""
    assert (DXDISPATCH / "chihuahua.jpg").stat().st_size < 200_000
    assert json.loads((DXDISPATCH / "image_io.json").read_text())["resources"]["input"]["resampleSize"] == [1, 3, 512, 512]


def test_special_files_under_image_names(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Image names go through files.py like any other: a FIFO is not read, a folder not replaced."""
    monkeypatch.chdir(tmp_path)
    os.mkfifo(tmp_path / "fifo.png")
    (tmp_path / "dir.png").mkdir()
    read = read_model(image_resource("fifo.png", [1, 3, 2, 3]))
    assert_refused(tmp_path, read, "resources.x.initialValues.sourcePath", "is a FIFO, not a regular file")
    write = write_model([0.5], "FLOAT32", "dir.png", None)
    assert_refused(tmp_path, write, "commands[0].targetPath", "is a directory; only regular files are replaced")
    # a link is written through: the link stays, its file gets the image
    (tmp_path / "real.png").write_bytes(b"old")
    (tmp_path / "link.png").symlink_to("real.png")
    assert run_model(tmp_path, write_model([0.5], "FLOAT32", "link.png", None))[0] == 0
    assert (tmp_path / "link.png").is_symlink() and Image.open(tmp_path / "real.png").getpixel((0, 0)) == 127


def test_max_bytes_limits_the_decoded_tensor(tmp_path: Path) -> None:
    """--max-bytes bounds what an image becomes (C x H x W elements), before decoding."""
    save(tmp_path, "x.png", PIXELS)
    (tmp_path / "model.json").write_text(json.dumps(read_model(image_resource("x.png", [1, 4, 8, 8]))))
    status, _, err = run_cli("run", str(tmp_path / "model.json"), "--max-bytes", "1000")
    assert status == 2 and "resources.x.resampleSize: 1024 bytes of FLOAT32 exceed the buffer limit of 1000 bytes" in err
    assert run_cli("run", str(tmp_path / "model.json"), "--max-bytes", "1K")[0] == 0  # 4 x 8 x 8 x 4 bytes fit


FUZZ_START = {
    "resources": {
        "x": image_resource("x.png", [1, 3, 4, 4], resampleMode="scale"),
        "y": {"initialValuesDataType": "FLOAT16", "initialValues": [0.5] * 16},
    },
    "dispatchables": {},
    "commands": [
        {"type": "print", "resource": "x"},
        {"type": "writeFile", "resource": "x", "targetPath": "out.png", "dimensions": [1, 3, 4, 4]},
        {"type": "writeFile", "resource": "y", "targetPath": "gray.jpg", "dimensions": [1, 1, 4, 4]},
    ],
}


@pytest.fixture(scope="module")
def image_folder(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    folder = tmp_path_factory.mktemp("images")
    save(folder, "x.png", PIXELS)
    here = Path.cwd()
    os.chdir(folder)  # writeFile targets are relative to the current folder
    try:
        yield folder
    finally:
        os.chdir(here)


@settings(max_examples=300, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(model=mutated_models(start=FUZZ_START))
def test_mutated_image_models_succeed_or_fail_cleanly(model: Any, image_folder: Path) -> None:
    """Any field of an image model replaced, deleted or nudged: a result or a clean exit 2."""
    assert fuzz_run(model, image_folder, write_files=True) in (0, 2)
