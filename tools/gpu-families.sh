#!/usr/bin/env bash
# Runs on the device machine once onnxruntime-gpu is unpacked in /tmp/site (../shared/GPU.md) and
# .gpudeps/ (hypothesis's wheels) is carried: the GPU tests of some operator families (matrix cases
# for the `portable` and `cuda` targets with CPU fallback off, and the families' property tests on
# the CUDA EP), then benchmark cases beside PyTorch. Results go to $OUT.
#   bash tools/gpu-families.sh 'MATRIX -k EXPRESSION' 'SUITE --only EXPRESSION' FAMILY_TEST_FILE...
# The matrix and target tests run the operators the -k expression selects (one test per operator); the family test files
# run whole (their GPU-marked tests).
set -uo pipefail
OUT="${OUT:-/tmp/out}"; mkdir -p "$OUT"
selection="$1"; bench="$2"; shift 2
mkdir -p /tmp/deps && for w in .gpudeps/*.whl; do python3 -m zipfile -e "$w" /tmp/deps >/dev/null; done
export PYTHONPATH=/tmp/site:/tmp/deps:$PWD
{
  echo "date: $(date -u +%Y-%m-%dT%H:%MZ)"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  python3 -c "import onnxruntime as o, onnx, numpy, torch; print('onnxruntime', o.__version__, o.get_available_providers()); print('onnx', onnx.__version__, 'numpy', numpy.__version__, 'torch', torch.__version__)"
} > "$OUT/device.txt" 2>&1
cat "$OUT/device.txt"
if [ -n "$bench" ]; then
  timeout "${BENCH_TIMEOUT:-240}" python3 benchmarks/suite.py --only "$bench" > "$OUT/benchmarks.json" 2> "$OUT/benchmarks.log"
  echo "suite exit $?"; tail -40 "$OUT/benchmarks.log"
fi
timeout "${TEST_TIMEOUT:-240}" python3 -m pytest -m gpu -q -p no:cacheprovider -k "$selection" tests/lowering/test_matrix.py tests/graph/test_targets.py > "$OUT/pytest-matrix.txt" 2>&1
echo "matrix pytest exit $?"; tail -15 "$OUT/pytest-matrix.txt"
timeout "${TEST_TIMEOUT:-240}" python3 -m pytest -m gpu -q -p no:cacheprovider "$@" > "$OUT/pytest-families.txt" 2>&1
echo "families pytest exit $?"; tail -15 "$OUT/pytest-families.txt"
