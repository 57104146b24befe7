"""core/errors: a library's multi-line error becomes the first line of a one-line message."""

from __future__ import annotations

from dml2onnx.core.errors import first_line


def test_first_line_of_a_library_error() -> None:
    """ONNX Runtime's allocation failure carries a trace after its first line (the fuzzer's 64 GiB
    Conv padding); an empty message gives the exception's type."""
    e = RuntimeError("[ONNXRuntimeError] : 1 : FAIL : Failed to allocate memory for requested buffer\nstack frame 1\n")
    assert first_line(e) == "[ONNXRuntimeError] : 1 : FAIL : Failed to allocate memory for requested buffer"
    assert first_line(ValueError("  ")) == "ValueError"
