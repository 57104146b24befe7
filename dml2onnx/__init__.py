"""dml2onnx: DirectML operator descs compiled to ONNX and run on ONNX Runtime."""

__version__ = "0.1.0"

# The schema first: it completes its table from operator_table.py, which imports it (schema._adopt).
from . import schema as _schema  # noqa: F401
