#!/usr/bin/env bash
# The ONE prepared run for a lent NVIDIA GPU (issue 17, item 5). Steps, each with its
# own timeout (worst case ~9.5 min in all), then one short summary:
#   install   the package + the `cuda` extra (offline machines: the image's own stack,
#             plus any wheels carried in .whl/)
#   doctor    python -m kernels_numba.doctor (driver, runtime, NVVM, NVRTC, nvJitLink,
#             probe kernel)
#   ops       every op on the hardware vs the CPU twin: pytest -m "cudasim or gpu"
#             without the simulator (the `device` fixture's cuda cases run on the GPU)
#             (this includes the launch-count, launch-plan replay, fused-loss and
#             split-K determinism tests: they are cudasim-marked)
#   determ    the determinism test on CUDA (a whole reference-CNN fit, twice)
#   host      our Python per training step with launches stubbed, live vs replayed
#             (python -m benchmarks.host_overhead, on real device arrays)
#   gemm      our SGEMM vs cuBLAS (benchmarks/bench_gemm.py)
#   train     reference CNN/MLP epoch time vs PyTorch eager CUDA (python -m benchmarks.train)
# Usage: bash scripts/gpu_check.sh [--dry-run]   (logs in ${OUT:-/tmp/kerasish-gpu})
# --dry-run (or DRY_RUN=1) runs what needs no GPU (install check, doctor, imports of
# every step's entry point) and prints SKIP for the GPU steps: for trying it anywhere.
set -uo pipefail
cd "$(dirname "$0")/.."
DRY=${DRY_RUN:-0}
[ "${1:-}" = "--dry-run" ] && DRY=1
OUT=${OUT:-/tmp/kerasish-gpu}; mkdir -p "$OUT"
PY=${PYTHON:-python3}
export PYTHONUNBUFFERED=1 NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS=0 NUMBA_CUDA_WARN_ON_IMPLICIT_COPY=0
unset NUMBA_ENABLE_CUDASIM
SUMMARY=()
T0=$(date +%s)

# step NAME TIMEOUT_S COMMAND...: runs it (a command or a function of this script),
# logs to $OUT/NAME.log, records one summary line. INFO_RC=1: exit 1 is reported as
# INFO, not FAIL (the doctor on a machine without a GPU, in a dry run).
step() {
  local name=$1 limit=$2; shift 2
  local t=$(date +%s) rc
  echo "== $name (timeout ${limit}s): $*"
  timeout --kill-after=10 "$limit" bash -c '"$@"' _ "$@" >"$OUT/$name.log" 2>&1
  rc=$?
  tail -n 25 "$OUT/$name.log"
  local took=$(( $(date +%s) - t )) verdict=PASS
  [ $rc -ne 0 ] && verdict=FAIL
  [ $rc -eq 1 ] && [ "${INFO_RC:-0}" = 1 ] && verdict=INFO
  { [ $rc -eq 124 ] || [ $rc -eq 137 ]; } && verdict="TIMEOUT"
  # the most telling line: pytest's closing line, a verdict, or the last line
  local key
  key=$(grep -v WARNING "$OUT/$name.log" | grep -E "passed|failed|error|CUDA: |GFLOP/s|ratio|epoch" | tail -n 1)
  [ -z "$key" ] && key=$(grep -v WARNING "$OUT/$name.log" | tail -n 1)
  SUMMARY+=("$(printf '%-8s %-7s rc=%-3s %4ss  %s' "$name" "$verdict" "$rc" "$took" "${key:0:150}")")
}

skip() { SUMMARY+=("$(printf '%-8s %-7s %s' "$1" SKIP "$2")"); }

install() {
  # Carried wheels first (the lent machine reaches no registry), then the cuda extra;
  # offline, the editable package alone on the image's numba-cuda stack.
  if ls .whl/*.whl >/dev/null 2>&1; then
    "$PY" -m pip install -q --no-index --no-deps --upgrade .whl/*.whl || return 1
  fi
  if ! "$PY" -m pip install -q --retries 0 --timeout 5 -e '.[cuda]' 2>/dev/null; then
    echo "cuda extra not installable here (offline?): using the installed stack"
    "$PY" -m pip install -q --no-deps --no-build-isolation -e . || return 1
  fi
  "$PY" -m pip list 2>/dev/null | grep -i -E "^(numba|numba-cuda|cuda-bindings|nvidia-nvvm|nvidia-cuda-nvrtc|nvidia-nvjitlink|torch) "
}

entry_points() {  # the dry run's stand-in for the GPU steps: every entry point imports
  "$PY" - <<'EOF'
import importlib, pathlib
for mod in ("benchmarks.bench_gemm", "benchmarks.train", "benchmarks.host_overhead",
            "kernels_numba.doctor"):
    importlib.import_module(mod)
for test in ("tests/kernels_numba/test_gpu_suite.py", "tests/kerasish/test_determinism.py"):
    assert pathlib.Path(test).exists(), test
print("entry points import; test files present")
EOF
}

export PY
export -f install entry_points

if [ "$DRY" = 1 ]; then
  step install 120 "$PY" -m pip install -q --no-deps --no-build-isolation -e .
else
  step install 60 install
fi
INFO_RC=$DRY step doctor 45 "$PY" -m kernels_numba.doctor
DOCTOR_OK=0; grep -q "^CUDA: usable" "$OUT/doctor.log" && DOCTOR_OK=1

if [ "$DRY" = 1 ]; then
  step entry 60 entry_points
  for s in ops determ host gemm train; do skip $s "dry run"; done
elif [ $DOCTOR_OK = 0 ]; then
  for s in ops determ host gemm train; do skip $s "CUDA unusable (see doctor)"; done
else
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv >"$OUT/nvidia-smi.txt" 2>&1
  # no -x: the summary lists every failing op
  step ops 200 "$PY" -m pytest tests -q -m "cudasim or gpu" -o addopts="" -p no:cacheprovider
  step determ 90 env KERASISH_TEST_DEVICE=cuda "$PY" -m pytest -q -s \
    tests/kerasish/test_determinism.py -o addopts="" -p no:cacheprovider
  step host 40 "$PY" -m benchmarks.host_overhead --steps 200 --repeats 3
  step gemm 45 "$PY" benchmarks/bench_gemm.py --repeat 10 --sizes 512,2048,4096
  if "$PY" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" 2>/dev/null; then
    step train 300 "$PY" -m benchmarks.train --device cuda --quick --no-compile-time \
      --json "$OUT/train-cuda.json"
  else
    skip train "torch with CUDA not importable"
  fi
fi

echo
echo "==== kerasish GPU check summary ($(( $(date +%s) - T0 ))s; logs in $OUT)"
[ -s "$OUT/nvidia-smi.txt" ] && tail -n 1 "$OUT/nvidia-smi.txt"
grep -E "^  (driver|nvJitLink|NVVM emits)" "$OUT/doctor.log" 2>/dev/null
for line in "${SUMMARY[@]}"; do echo "$line"; done
grep -E "^(FAILED|ERROR) " "$OUT/ops.log" 2>/dev/null | head -n 15
! printf '%s\n' "${SUMMARY[@]}" | grep -q -E " (FAIL|TIMEOUT) "
