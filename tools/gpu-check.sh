#!/usr/bin/env bash
# Runs on the device machine (see ../shared/GPU.md): the GPU-marked tests on the CUDA EP with CPU
# fallback disabled, and every model in models/ with --ep cuda. Results go to $OUT.
# Needs onnxruntime-gpu unpacked in /tmp/site and the wheels of .gpudeps/ (hypothesis) carried.
set -uo pipefail
OUT="${OUT:-/tmp/out}"; mkdir -p "$OUT"
mkdir -p /tmp/deps && for w in .gpudeps/*.whl; do python3 -m zipfile -e "$w" /tmp/deps >/dev/null; done
export PYTHONPATH=/tmp/site:/tmp/deps:$PWD
{
  echo "date: $(date -u +%Y-%m-%dT%H:%MZ)"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  python3 -c "import onnxruntime as o, onnx, numpy; print('onnxruntime', o.__version__, o.get_available_providers()); print('onnx', onnx.__version__, 'numpy', numpy.__version__)"
} > "$OUT/device.txt" 2>&1
cat "$OUT/device.txt"
for ep in cuda cpu; do
  for m in models/*.json; do echo "== $m"; python3 -m dml2onnx run "$m" --ep $ep -q 2>&1 || echo "FAILED $m"; done > "$OUT/models.$ep.txt"
done
cmp -s "$OUT/models.cuda.txt" "$OUT/models.cpu.txt" && echo "models/: same output on cuda and cpu" || { echo "models/: DIFFERS"; diff "$OUT/models.cuda.txt" "$OUT/models.cpu.txt"; }
python3 tools/gpu_report.py > "$OUT/gpu-report.md"; echo "gpu_report.py exit $?"; head -12 "$OUT/gpu-report.md"
python3 -m pytest -m gpu -q -p no:cacheprovider tests "$@" 2>&1 | tail -25 | tee "$OUT/pytest-gpu.txt"
