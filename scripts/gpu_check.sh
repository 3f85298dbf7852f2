#!/usr/bin/env bash
# One prepared run for a machine with an NVIDIA GPU (numba-cuda installed): every
# op test on the hardware, the GPU micro-benchmarks, and the training harness on CUDA.
# Writes logs to ${OUT:-/tmp/kerasish-gpu}.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/kerasish-gpu}; mkdir -p "$OUT"
python -m pip install -q --no-deps -e . || exit 1
export PYTHONUNBUFFERED=1 NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS=0
nvidia-smi | tee "$OUT/nvidia-smi.txt"
timeout 300 python -m pytest tests -q -m "cudasim or gpu" -x 2>&1 | tee "$OUT/gpu-tests.log"
timeout 180 python -m benchmarks.train --device cuda --quick 2>&1 | tee "$OUT/train-cuda.log"
