"""The Python halves of scripts/gpu_check.sh's steps (the one prepared run on a lent
GPU), one module per step: `env` (versions, toolchain paths), `precompile` (every
registered kernel into the disk cache, in parallel processes), `replay` (the reference
CNN's replayed step: ms/step, launches, weights against the CPU twin; with
KERASISH_CUDA_GRAPHS=1 the same as one CUDA graph, bit for bit) and `determinism` (two
runs bit-equal). The other steps are kernels_numba.doctor, pytest, benchmarks.train and
benchmarks/bench_gemm.py. Each module's last line starts with `RESULT `: the summary
line the script keeps. `--json FILE` merges a step's numbers into FILE under its name.
"""
