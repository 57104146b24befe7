#!/usr/bin/env bash
# Runs on the device machine after onnxruntime-gpu is unpacked in /tmp/site (see tools/gpu-check.sh):
# the benchmark suite, JSON to $OUT/benchmarks.json, progress to $OUT/benchmarks.log.
set -uo pipefail
OUT="${OUT:-/tmp/out}"; mkdir -p "$OUT"
export PYTHONPATH=/tmp/site:$PWD
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.memory --format=csv,noheader > "$OUT/device.txt"
python3 benchmarks/suite.py "$@" > "$OUT/benchmarks.json" 2> "$OUT/benchmarks.log"; echo "suite exit $?"
tail -80 "$OUT/benchmarks.log"
