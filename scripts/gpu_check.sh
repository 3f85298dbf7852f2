#!/usr/bin/env bash
# The ONE prepared run for a lent NVIDIA GPU (issue 38): one command, one global deadline,
# at most three files back. A session with a GPU runs it with the device tool's `run`:
#
#   run(command="bash scripts/gpu_check.sh", carry=["datasets/fashion_mnist"], timeout_s=600)
#
# Data: carry datasets/fashion_mnist/ (git-ignored), the four Fashion-MNIST *-ubyte.gz
# files (~30 MB); the script points KERASISH_DATA_DIR at datasets/ (the lent machine has
# no network: a download would time out). If the folder is not there yet, make it first:
#   apt-get install dataset-fashion-mnist        # -> /usr/share/datasets/fashion-mnist
#   mkdir -p datasets/fashion_mnist && cp /usr/share/datasets/fashion-mnist/*-ubyte.gz datasets/fashion_mnist/
# Without it the replay steps train on seeded noise (they say so) and `train` is skipped.
#
# Nothing is installed: the device image has numba, numba-cuda, cuda-core, torch with CUDA,
# pytest, pytest-xdist and pytest-timeout; the checkout is used through PYTHONPATH.
# Steps, in order; each runs under `timeout -s INT -k 10` (SIGINT: pytest still prints its
# summary) with a limit of min(its share of the deadline, what is left of it):
#   env          nvidia-smi, versions, toolchain paths    (benchmarks.gpu_check.env)
#   doctor       python -m kernels_numba.doctor; the rest is skipped if CUDA is unusable
#   precompile   every registered kernel for this GPU (sm_90 on an H100/H200) into the
#                disk cache, in parallel processes: count, seconds, failures
#   replay       reference CNN, batch 64: weights after 5 steps vs the CPU twin, launches
#                per replayed step (record_launches), ms/step over 200 fit steps
#   graphs       the same with KERASISH_CUDA_GRAPHS=1: ms/step, bit-equal to `replay`,
#                any fallback
#   pytest       pytest -m "(cudasim or gpu) and not slow" -n 8 --timeout 60 on the GPU
#   train        benchmarks.train --device cuda, MLP and CNN on 12,000 images vs PyTorch
#                CUDA on the same GPU
#   gemm         our SGEMM GFLOP/s vs cuBLAS (through PyTorch) at 512/2048/4096
#   determinism  the reference CNN fit twice from one seed: bit-equal weights
# Back in $OUT: summary.txt (a header, then each step's one line, appended as it ends:
# name, PASS/FAIL/TIMEOUT/SKIP/INFO, rc, seconds, its RESULT), logs.tgz (every step's
# log) and results.json (the steps' numbers). Exit status 0 when no step failed.
#
# Dry run: GPU_CHECK_DRY=1 bash scripts/gpu_check.sh runs every step under the CUDA
# simulator (NUMBA_ENABLE_CUDASIM=1) at tiny sizes, the deadline scaled down
# (GPU_CHECK_DEADLINE, default 240 s; precompile builds PTX for a few kernels without
# the simulator, train runs on the CPU). tests/test_gpu_check_dry_run.py runs it in
# scripts/test.sh's simulator stage.
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
DRY=${GPU_CHECK_DRY:-0}
if [ "$DRY" = 1 ]; then DEADLINE=${GPU_CHECK_DEADLINE:-240}; else DEADLINE=${GPU_CHECK_DEADLINE:-540}; fi
OUT=${OUT:-/tmp/kerasish-gpu}
mkdir -p "$OUT"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/gpu_check.XXXXXX")
LOGS=$WORK/logs
mkdir -p "$LOGS"
PY=${PYTHON:-python3}
SUMMARY=$OUT/summary.txt
JSON=$LOGS/results.json
T0=$(date +%s)
GRACE=10    # timeout -k: seconds from SIGINT to SIGKILL
RESERVE=8   # kept back for packing the logs
FAILED=0

export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONUNBUFFERED=1 NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS=0 NUMBA_CUDA_WARN_ON_IMPLICIT_COPY=0
# numba's default cache (next to the sources): precompile fills it for every later step,
# and the dry run finds the CPU twins the test suite already compiled
DATA=0
DATA_DIR=${GPU_CHECK_DATA:-$ROOT/datasets}  # holds fashion_mnist/ (the dry-run test: its own)
if ls "$DATA_DIR"/fashion_mnist/*-ubyte* >/dev/null 2>&1; then
  export KERASISH_DATA_DIR=$DATA_DIR
  DATA=1
fi
if [ "$DRY" = 1 ]; then
  export NUMBA_ENABLE_CUDASIM=1
else
  unset NUMBA_ENABLE_CUDASIM
fi

finish() {  # once, on any exit: pack the logs (the three files back are summary, logs, json)
  trap - EXIT INT TERM
  [ -s "$JSON" ] && cp "$JSON" "$OUT/results.json"
  tar -czf "$OUT/logs.tgz" -C "$WORK" logs 2>/dev/null
  rm -rf "$WORK"
  exit $(( FAILED > 0 ))
}
trap finish EXIT
trap 'echo "gpu_check: interrupted" >>"$SUMMARY"; FAILED=1; finish' INT TERM

line() { echo "$1" | tee -a "$SUMMARY"; }
left() { echo $(( DEADLINE - ($(date +%s) - T0) - GRACE - RESERVE )); }

# step NAME COMMAND...: run COMMAND (logged to $LOGS/NAME.log) for at most SHARE[NAME]
# percent of the deadline and never past it; append its one summary line.
# OK_RC: exit codes that count as PASS besides 0 (the doctor's 2 under the simulator).
step() {
  local name=$1; shift
  local cap=$(( DEADLINE * ${SHARE[$name]} / 100 )) limit t rc verdict key
  limit=$(left)
  [ "$cap" -lt "$limit" ] && limit=$cap
  if [ "$limit" -lt 3 ]; then
    line "$(printf '%-11s %-7s %s' "$name" SKIP "no time left of the ${DEADLINE} s deadline")"
    return 1
  fi
  t=$(date +%s)
  echo "== $name (limit ${limit}s): $*" >"$LOGS/$name.log"
  timeout -s INT -k "$GRACE" "$limit" "$@" >>"$LOGS/$name.log" 2>&1
  rc=$?
  verdict=PASS
  if [ $rc -eq 124 ] || [ $rc -eq 137 ] || [ $rc -eq 130 ]; then verdict=TIMEOUT
  elif [ $rc -ne 0 ] && [[ " ${OK_RC:-} " != *" $rc "* ]]; then verdict=FAIL; fi
  [ "$verdict" = PASS ] || FAILED=$((FAILED + 1))
  key=$(grep -a '^RESULT ' "$LOGS/$name.log" | tail -n 1 | cut -c8-)
  [ -z "$key" ] && key=$(grep -a -E '^CUDA: |[0-9]+ (passed|failed)|no tests ran|error' \
    "$LOGS/$name.log" | grep -v -i warning | tail -n 1)
  [ -z "$key" ] && key=$(grep -a -v '^\s*$' "$LOGS/$name.log" | tail -n 1)
  line "$(printf '%-11s %-7s rc=%-3s %4ss  %s' "$name" "$verdict" "$rc" "$(( $(date +%s) - t ))" "${key:0:220}")"
  [ "$verdict" = PASS ]
}

skip() { line "$(printf '%-11s %-7s %s' "$1" SKIP "$2")"; }

line "kerasish gpu_check $(git rev-parse --short HEAD 2>/dev/null || echo '?') $(date -u +%FT%TZ)$([ "$DRY" = 1 ] && echo ' DRY RUN (simulator)'), deadline ${DEADLINE} s, data: $([ $DATA = 1 ] && echo "$DATA_DIR/fashion_mnist" || echo 'none (seeded noise)')"

# Sizes: the real run, or the dry run's tiny ones (the simulator runs every CUDA thread
# as a Python thread).
# SHARE: each step's cap in percent of the deadline (on hardware ~100 s for precompile,
# ~140 s for the test suite; under the simulator the tiny CNN steps cost the most).
declare -A SHARE
if [ "$DRY" = 1 ]; then
  SHARE=([env]=6 [doctor]=4 [precompile]=10 [replay]=15 [graphs]=15 [pytest]=14 [train]=13
         [gemm]=11 [determinism]=12)
  PRECOMPILE=(--ptx --limit 1 --workers 1)
  REPLAY=(--steps 1 --batch 2 --size 10 --check-steps 1 --warmup-steps 0 --tiny)
  PYTEST_ARGS=(${GPU_CHECK_PYTEST:-tests/kernels_numba/test_grid_limits.py})  # no -n: imports
  TRAIN=(--device cpu --model mlp --images 256 --threads 1)
  GEMM=(--sizes 32 --repeat 1 --simulator)
  DETERM=(--images 2 --batch 2 --size 10 --tiny)
else
  # train: benchmarks.train runs >= 3 fresh-process pairs per model (the isolated harness)
  SHARE=([env]=4 [doctor]=4 [precompile]=15 [replay]=10 [graphs]=8 [pytest]=22 [train]=25
         [gemm]=6 [determinism]=6)
  PRECOMPILE=()
  REPLAY=(--steps 200 --batch 64 --check-steps 5)
  PYTEST_ARGS=(tests -n 8)
  TRAIN=(--device cuda --model both --images 12000)
  GEMM=(--sizes 512,2048,4096 --repeat 10)
  DETERM=(--images 200)
fi

step env "$PY" -m benchmarks.gpu_check.env --json "$JSON"
timeout 20 nvidia-smi >"$LOGS/nvidia-smi.txt" 2>&1 || true
if [ "$DRY" = 1 ]; then DOCTOR_OK="2"; else DOCTOR_OK=""; fi
if ! OK_RC=$DOCTOR_OK step doctor "$PY" -m kernels_numba.doctor; then
  for s in precompile replay graphs pytest train gemm determinism; do
    skip $s "CUDA unusable here (see the doctor's line)"
  done
  exit
fi
# the simulator compiles nothing: the dry run's precompile builds PTX, without it
step precompile env -u NUMBA_ENABLE_CUDASIM "$PY" -m benchmarks.gpu_check.precompile \
  "${PRECOMPILE[@]}" --json "$JSON"
step replay "$PY" -m benchmarks.gpu_check.replay "${REPLAY[@]}" --save "$WORK/replay.npz" \
  --json "$JSON"
if [ -s "$WORK/replay.npz" ]; then
  step graphs env KERASISH_CUDA_GRAPHS=1 "$PY" -m benchmarks.gpu_check.replay "${REPLAY[@]}" \
    --compare "$WORK/replay.npz" --json "$JSON"
else
  skip graphs "no replay weights to compare with (the replay step did not finish)"
fi
PYTEST=("$PY" -m pytest -q -rfE -p no:cacheprovider -o addopts= -m "(cudasim or gpu) and not slow")
if "$PY" -c "import pytest_timeout" 2>/dev/null; then PYTEST+=(--timeout 60)
else echo "pytest-timeout is not installed: no per-test timeout" >>"$LOGS/notes.txt"; fi
"$PY" -c "import xdist" 2>/dev/null || PYTEST_ARGS=("${PYTEST_ARGS[0]}")  # no -n without xdist
step pytest "${PYTEST[@]}" "${PYTEST_ARGS[@]}"
if [ $DATA = 0 ]; then
  skip train "no datasets/fashion_mnist (carry it: see this script's header)"
elif [ "$DRY" != 1 ] && ! timeout 60 "$PY" -c \
    "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" 2>/dev/null; then
  skip train "torch with CUDA is not importable"
else
  step train "$PY" -m benchmarks.train "${TRAIN[@]}" --repeats 3 --epochs 2 \
    --no-compile-time --no-profile --json "$LOGS/train.json"
fi
step gemm "$PY" benchmarks/bench_gemm.py --cuda-only "${GEMM[@]}"
step determinism env KERASISH_DEVICE=cuda "$PY" -m benchmarks.gpu_check.determinism \
  "${DETERM[@]}" --json "$JSON"
line "total $(( $(date +%s) - T0 )) s; $FAILED step(s) not PASS"
