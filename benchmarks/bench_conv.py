"""CPU conv2d forward + backward (data + filter) on the seed CNN layers, vs PyTorch.

Usage: python benchmarks/bench_conv.py [--batch 64] [--repeats 20] [--threads 2]

Times kernels_numba's CPU twin (im2col + BLAS) for Conv2D(32, 3x3) on 28x28x1 and
Conv2D(64, 3x3) on 13x13x32 (valid padding) and, when torch is importable,
torch.nn.functional.conv2d forward + backward on the same shapes, printing the ratio.

kernels_numba picks numba's OpenMP wait policy with its BLAS mode (docs/design.md, "CPU
threads"): the default short spin when it splits GEMMs itself, PASSIVE when BLAS threads
itself (KERNELS_NUMBA_BLAS=native). The script reports, never sets, it.
"""

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))


def _parse():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--repeats", type=int, default=20)
    p.add_argument("--threads", type=int, default=2, help="numba, BLAS and torch threads")
    return p.parse_args()


ARGS = _parse()
# Thread counts must be fixed before numpy/numba load their pools.
for var in ("NUMBA_NUM_THREADS", "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(var, str(ARGS.threads))

import numpy as np  # noqa: E402

import kernels_numba  # noqa: E402
from kernels_numba import ops  # noqa: E402

LAYERS = [  # name, x shape (without batch), w shape (HWIO)
    ("Conv2D(32,3x3) on 28x28x1", (28, 28, 1), (3, 3, 1, 32)),
    ("Conv2D(64,3x3) on 13x13x32", (13, 13, 32), (3, 3, 32, 64)),
]


def _best_ms(fn, repeats):
    """Fastest of `repeats` runs (after a warm-up): on a shared machine the minimum is
    the least disturbed by other processes."""
    fn()  # warm-up: compiles / loads caches
    fn()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return 1e3 * min(times)


def _ours(x_shape, w_shape):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(x_shape, dtype=np.float32)
    w = rng.standard_normal(w_shape, dtype=np.float32)
    b = np.zeros(w_shape[3], np.float32)
    y = np.empty(ops.conv2d_output_shape(x_shape, w_shape), np.float32)
    dy = rng.standard_normal(y.shape, dtype=np.float32)
    dx, dw, db = np.empty_like(x), np.zeros_like(w), np.zeros_like(b)
    ws = np.empty(ops.conv2d_workspace_shape(x_shape, w_shape), np.float32)

    def step():
        with kernels_numba.cpu_work():  # as in training: NumPy's OpenBLAS at one thread
            ops.conv2d_forward(y, x, w, b, ws, activation="relu")
            ops.conv2d_backward_data(dx, dy, w, ws)
            ops.conv2d_backward_filter(dw, db, dy, x, ws)

    def in_work(fn):
        def run():
            with kernels_numba.cpu_work():
                fn()
        return run

    parts = {
        "fwd": in_work(lambda: ops.conv2d_forward(y, x, w, b, ws, activation="relu")),
        "bwd_data": in_work(lambda: ops.conv2d_backward_data(dx, dy, w, ws)),
        "bwd_filter": in_work(lambda: ops.conv2d_backward_filter(dw, db, dy, x, ws)),
    }
    return step, parts


def _torch(x_shape, w_shape):
    try:
        import torch
    except ImportError:
        return None
    torch.set_num_threads(ARGS.threads)
    n, h, wd, c = x_shape
    kh, kw, _, f = w_shape
    x = torch.randn(n, c, h, wd, requires_grad=True)
    w = torch.randn(f, c, kh, kw, requires_grad=True)
    b = torch.zeros(f, requires_grad=True)
    dy = torch.randn(n, f, h - kh + 1, wd - kw + 1)

    def step():
        y = torch.relu(torch.nn.functional.conv2d(x, w, b))
        y.backward(dy)
        x.grad = w.grad = b.grad = None

    return step


def main():
    native = kernels_numba.BLAS_THREADS.startswith("native")
    wait = os.environ.get("OMP_WAIT_POLICY") or (
        "PASSIVE for numba's pool only" if native else "default (short spin, then sleep)")
    print(f"batch {ARGS.batch}, {ARGS.threads} threads, best of {ARGS.repeats}, "
          f"OMP_WAIT_POLICY={wait}")
    have_torch = True
    for name, xs, ws in LAYERS:
        x_shape = (ARGS.batch, *xs)
        step, parts = _ours(x_shape, ws)
        ours = _best_ms(step, ARGS.repeats)
        detail = ", ".join(f"{k} {_best_ms(fn, ARGS.repeats):.2f}" for k, fn in parts.items())
        line = f"{name}: kernels_numba {ours:.2f} ms ({detail})"
        tstep = _torch(x_shape, ws) if have_torch else None
        if tstep is None:
            have_torch = False
        else:
            ref = _best_ms(tstep, ARGS.repeats)
            line += f" | torch {ref:.2f} ms | ratio {ours / ref:.2f}x"
        print(line)
    if not have_torch:
        print("torch is not importable: skipped the PyTorch comparison (pip install torch)")


if __name__ == "__main__":
    main()
