#!/usr/bin/env bash
# Set up and run every test: the CPU suite, the CUDA kernels under the simulator,
# and the PTX compile check (separate processes: the simulator and compile_ptx
# cannot share one). This is the README's test command and what .ci/run calls.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}

"$PY" -m pip install -q -e '.[test,notebooks,tensorboard]'
# Real data for the slow end-to-end tests (skipped with a reason when absent).
if [ ! -d /usr/share/datasets/fashion-mnist ] && command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
  (apt-get install -y -q dataset-fashion-mnist >/dev/null 2>&1 ||
   (apt-get update -q >/dev/null 2>&1 && apt-get install -y -q dataset-fashion-mnist >/dev/null 2>&1)) ||
    echo "note: dataset-fashion-mnist could not be installed; its tests will skip"
fi
# MPI for the data-parallel tests (tests/kerasish/test_distribute.py skip without it):
# Open MPI from Debian, then the `mpi` extra (mpi4py). Idempotent; a note when not root,
# without apt-get, or offline.
if ! command -v mpirun >/dev/null; then
  if command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
    (apt-get install -y -q openmpi-bin libopenmpi-dev >/dev/null 2>&1 ||
     (apt-get update -q >/dev/null 2>&1 &&
      apt-get install -y -q openmpi-bin libopenmpi-dev >/dev/null 2>&1)) ||
      echo "note: Open MPI could not be installed; the MPI tests will skip"
  else
    echo "note: no mpirun and no root apt-get to install Open MPI; the MPI tests will skip"
  fi
fi
if command -v mpirun >/dev/null && ! "$PY" -c "import mpi4py" >/dev/null 2>&1; then
  "$PY" -m pip install -q -e '.[mpi]' >/dev/null 2>&1 ||
    echo "note: mpi4py could not be installed (offline?); the MPI tests will skip"
fi

export NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS=0 NUMBA_CUDA_WARN_ON_IMPLICIT_COPY=0
status=0
echo "== 1/3 CPU suite"
"$PY" -m pytest tests -m "not cudasim and not ptx and not gpu and not conformance" "$@" || status=1
echo "== 2/3 CUDA kernels under the Numba simulator"
# model-level cases marked slow re-run kernels the kernel tests already cover op by op.
# Two workers (pytest-xdist): the simulator runs each CUDA thread in Python on one core.
# tests.sim_kernel_coverage fails the stage if a registered kernel ran in no selected test.
NUMBA_ENABLE_CUDASIM=1 "$PY" -m pytest tests -m "cudasim and not slow" -n 2 \
  -p tests.sim_kernel_coverage "$@" || status=1
echo "== 3/3 PTX compile for sm_80/sm_90 + float64 scan"
"$PY" -m pytest tests -m ptx "$@" || status=1
echo "== conformance: the case corpus and the generated models on real Keras 3 and kerasish"
# Real Keras runs only for cases tests/conformance/keras_results.json has no current result for
# (and for loading kerasish's files); CONFORMANCE_REFRESH=1 re-runs all, CONFORMANCE_EXAMPLES=N
# draws more generated models.
"$PY" -m pytest tests/conformance -m conformance -q "$@" || status=1
exit $status
