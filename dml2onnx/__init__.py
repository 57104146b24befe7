"""dml2onnx: DirectML operator descs compiled to ONNX and run on ONNX Runtime."""

__version__ = "0.1.0"
