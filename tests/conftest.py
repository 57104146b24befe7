import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from dml2onnx.backends import ort_session

if os.environ.get("PYTEST_XDIST_WORKER"):
    # `make test` runs one worker per core: one ONNX Runtime thread each (measured on the 2-core
    # machine: the fuzzing test 56 s -> 44 s, its CPU time 62 s -> 44 s; spinning pool threads).
    ort_session.INTRA_OP_THREADS = 1
