"""DxDispatch resources: every initializer kind, FLOAT16 truncation, sizes, reinterpretation."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from dml2onnx.core import halfconv
from dml2onnx.core.errors import ModelError
from dml2onnx.formats.dxdispatch import parse


def resource(init: dict[str, Any], tmp_path: Path = Path(".")) -> Any:
    model = parse({"resources": {"r": init}, "dispatchables": {}, "commands": []}, tmp_path)
    return model.resources["r"]


def values(res: Any) -> list[float]:
    return np.frombuffer(res.initial, res.data_type.numpy).tolist()


def test_array_with_special_floats() -> None:
    r = resource({"initialValuesDataType": "FLOAT32", "initialValues": [1, 2.5, "nan", "INF", "-inf"]})
    got = np.frombuffer(r.initial, np.float32)
    assert got[:2].tolist() == [1, 2.5] and np.isnan(got[2]) and got[3] == np.inf and got[4] == -np.inf
    assert r.size == 20


def test_constant_and_size_rounded_to_4() -> None:
    r = resource({"initialValuesDataType": "DML_TENSOR_DATA_TYPE_UINT8", "initialValues": {"valueCount": 5, "value": 7}})
    assert values(r) == [7] * 5 and r.size == 8


def test_explicit_size_in_bytes_kept() -> None:
    r = resource({"initialValuesDataType": "INT16", "initialValues": [1, -2, 3], "sizeInBytes": 10})
    assert r.size == 10 and r.new_buffer() == bytearray(np.array([1, -2, 3, 0, 0], np.int16).tobytes())


def test_sequence_accumulates_in_the_type() -> None:
    r = resource({"initialValuesDataType": "FLOAT32", "initialValues": {"valueCount": 4, "valueStart": 1, "valueDelta": 2.5}})
    assert values(r) == [1, 3.5, 6, 8.5]
    r = resource({"initialValuesDataType": "UINT8", "initialValues": {"valueCount": 4, "valueStart": 254, "valueDelta": 1}})
    assert values(r) == [254, 255, 0, 1]  # wraps in its own width


def test_int64_exact_beyond_2_53() -> None:
    r = resource({"initialValuesDataType": "INT64", "initialValues": [2**62 + 1, -(2**63)]})
    assert values(r) == [2**62 + 1, -(2**63)]
    r = resource({"initialValuesDataType": "UINT64", "initialValues": [2**64 - 1]})
    assert values(r) == [2**64 - 1]


def test_float16_truncates_toward_zero_like_dxdispatch() -> None:
    assert halfconv.to_float16([0.1]).view(np.uint16).tolist() == [0x2E66]  # nearest would be 0x2E66 too
    assert halfconv.to_float16([1 + 2**-11 + 2**-12]).tolist() == [1.0]  # nearest: 1.000977
    assert halfconv.to_float16([65519, 65535, 65536, -70000]).tolist() == [65504, 65504, np.inf, -np.inf]
    assert halfconv.to_float16([-1.0009765625 - 2**-12]).tolist() == [-1.0009765625]
    r = resource({"initialValuesDataType": "FLOAT16", "initialValues": [1, "nan", -2]})
    got = np.frombuffer(r.initial, np.float16)
    assert got[0] == 1 and np.isnan(got[1]) and got[2] == -2


def test_mixed_list() -> None:
    r = resource(
        {
            "initialValuesDataType": "UNKNOWN",
            "initialValues": [{"type": "FLOAT32", "value": -4.5}, {"type": "UINT8", "value": 15}, {"type": "INT16", "value": -3}],
        }
    )
    assert r.data_type is None and len(r.initial) == 7 and r.size == 8
    assert np.frombuffer(r.initial[:4], np.float32)[0] == -4.5 and r.initial[4] == 15
    with pytest.raises(ModelError, match="FLOAT16"):
        resource({"initialValues": [{"type": "FLOAT16", "value": 1}]})


def test_npy_and_dat_files(tmp_path: Path) -> None:
    np.save(tmp_path / "a.npy", np.arange(6, dtype=np.int32).reshape(2, 3))
    r = resource({"initialValues": {"sourcePath": "a.npy"}}, tmp_path)
    assert r.data_type.name == "INT32" and values(r) == list(range(6))
    with pytest.raises(ModelError, match="holds INT32"):
        resource({"initialValuesDataType": "FLOAT32", "initialValues": {"sourcePath": "a.npy"}}, tmp_path)
    np.save(tmp_path / "big.npy", np.array([1, 2], dtype=">f4"))  # big-endian is converted
    assert values(resource({"initialValues": {"sourcePath": "big.npy"}}, tmp_path)) == [1, 2]
    (tmp_path / "b.dat").write_bytes(np.array([1.5, -2], np.float32).tobytes())
    assert values(resource({"initialValuesDataType": "FLOAT32", "initialValues": {"sourcePath": "b.dat"}}, tmp_path)) == [1.5, -2]
    (tmp_path / "bad.npy").write_bytes(b"\x93NUMPY\x01\x00\x05\x00{'de")
    with pytest.raises(ModelError, match=r"not a valid \.npy"):
        resource({"initialValues": {"sourcePath": "bad.npy"}}, tmp_path)
    np.save(tmp_path / "f.npy", np.asfortranarray(np.ones((2, 2), np.float32)))
    with pytest.raises(ModelError, match="Fortran"):
        resource({"initialValues": {"sourcePath": "f.npy"}}, tmp_path)


def test_buffers_are_reinterpreted_by_the_binding_desc(tmp_path: Path) -> None:
    """A FLOAT32-initialised buffer bound as INT32 is read as its bits, as on the GPU."""
    from support import printed, reinterpreting_model, run_cli, write_model

    bits = np.array([1.0, 2.0], np.float32).view(np.int32)
    model = reinterpreting_model()
    status, out, err = run_cli("run", write_model(tmp_path, model))
    assert status == 0, err
    assert printed(out)["y"] == [int(np.argmax(bits))] == [1]


@pytest.mark.parametrize(("start", "delta", "count"), [(1, 0.1, 3000), (-3, 0.7, 300), (60000, 1000, 50), ("nan", 1, 10)])
def test_float16_sequence_is_the_truncated_step_rule(start: float | str, delta: float, count: int) -> None:
    want, v = [], halfconv.to_float16(float(start))[()]
    d = np.float32(halfconv.to_float16(delta)[()])
    for _ in range(count):
        want.append(v)
        with np.errstate(over="ignore", invalid="ignore"):
            v = halfconv.to_float16(np.float32(v) + d)[()]
    r = resource(
        {"initialValuesDataType": "FLOAT16", "initialValues": {"valueCount": count, "valueStart": start, "valueDelta": delta}}
    )
    assert np.frombuffer(r.initial, np.uint16).tolist() == np.array(want, np.float16).view(np.uint16).tolist()


def test_long_sequences_are_vectorized() -> None:
    for dtype in ("FLOAT16", "FLOAT32", "INT64", "UINT8"):
        r = resource(
            {"initialValuesDataType": dtype, "initialValues": {"valueCount": 5_000_000, "valueStart": 1, "valueDelta": 3}}
        )
        assert len(r.initial) == 5_000_000 * np.dtype(dtype.lower()).itemsize
