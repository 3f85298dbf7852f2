"""GEMM / dense benchmarks: our ops against NumPy (CPU) and cuBLAS (CUDA, when available).

CPU: matmul, dense_forward and dense_backward at the MNIST-MLP shape
(64x784)·(784x256), timed against the NumPy expressions a user would write;
"speed" is numpy_time / our_time (aim: >= 0.8). CUDA (only on a real GPU): GFLOP/s
of our tiled SGEMM at 512^3, 2048^3, 4096^3 and both tile sizes, against cuBLAS via
cupy or torch when one is importable. Every result is checked before it is timed.

    python benchmarks/bench_gemm.py [--repeat 20] [--sizes 512,2048,4096] [--cuda-only]
"""

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run from a checkout, uninstalled
import kernels_numba as kn  # noqa: E402
from kernels_numba import ops  # noqa: E402


def _time(fn, repeat, sync=None):
    """Median seconds per call after one warm-up call (which also compiles)."""
    fn()
    if sync:
        sync()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        if sync:
            sync()
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def _numpy_reference(repeat):
    """NumPy's timings from a process without kernels_numba (its BLAS threads as usual)."""
    out = subprocess.run([sys.executable, "-m", "benchmarks.numpy_reference", "--repeat",
                          str(repeat)], cwd=ROOT, capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def _check(name, got, expected, rtol=1e-4):
    err = np.max(np.abs(got - expected)) / max(1e-30, np.max(np.abs(expected)))
    if err > rtol:
        raise SystemExit(f"{name}: wrong result (max error {err:.2e} relative to max |expected|)")


def _row(name, times, ref_name="numpy"):
    ours, ref = times
    print(f"  {name:<34s} ours {ours * 1e3:8.3f} ms   {ref_name} {ref * 1e3:8.3f} ms   "
          f"speed {ref / ours:5.2f}x")


def bench_cpu(repeat, rounds=3, n=64, f_in=784, f_out=256):
    print(f"CPU ({os.cpu_count()} cores; kernels_numba BLAS: {kn.BLAS_THREADS}), "
          f"x ({n}x{f_in}) w ({f_in}x{f_out}); NumPy timed in its own process, "
          f"median of {rounds} alternating rounds:")
    rng = np.random.default_rng(0)
    x = rng.standard_normal((n, f_in)).astype(np.float32)
    w = (rng.standard_normal((f_in, f_out)) * 0.05).astype(np.float32)
    b = rng.standard_normal(f_out).astype(np.float32)
    dy = rng.standard_normal((n, f_out)).astype(np.float32)
    y = np.empty((n, f_out), np.float32)
    dx = np.empty((n, f_in), np.float32)
    dw = np.zeros((f_in, f_out), np.float32)
    db = np.zeros(f_out, np.float32)

    ops.matmul(y, x, w)
    _check("matmul", y, x @ w)
    ops.dense_forward(y, x, w, b, activation="relu")
    _check("dense_forward", y, np.maximum(x @ w + b, 0))
    dw0, db0 = dw.copy(), db.copy()
    ops.dense_backward(dx, dw, db, dy, x, w)
    _check("dense_backward dx", dx, dy @ w.T)
    _check("dense_backward dw", dw, dw0 + x.T @ dy)
    _check("dense_backward db", db, db0 + dy.sum(axis=0))

    cases = {
        "matmul": ("matmul  y = x @ w", lambda: ops.matmul(y, x, w)),
        "dense_forward": ("dense_forward relu(x @ w + b)",
                          lambda: ops.dense_forward(y, x, w, b, activation="relu")),
        "dense_backward": ("dense_backward (dx, dw+=, db+=)",
                           lambda: ops.dense_backward(dx, dw, db, dy, x, w)),
        "matmul_acc": ("matmul  dw += x.T @ dy (beta=1)",
                       lambda: ops.matmul(dw, x, dy, trans_a=True, beta=1.0)),
    }
    ours = {key: [] for key in cases}
    ref = {key: [] for key in cases}
    for _ in range(rounds):
        with kn.cpu_work():  # as in training: NumPy's OpenBLAS at one thread
            for key, (_, fn) in cases.items():
                ours[key].append(_time(fn, repeat))
        for key, seconds in _numpy_reference(repeat).items():
            ref[key].append(seconds)
    for key, (label, _) in cases.items():
        _row(label, (float(np.median(ours[key])), float(np.median(ref[key]))))


def _cublas():
    """(name, matmul(a, b), synchronize, host->device, device->host) via cupy or torch, or None."""
    try:
        import cupy

        return ("cupy", lambda a, b: a @ b, cupy.cuda.Device().synchronize, cupy.asarray,
                cupy.asnumpy)
    except Exception:  # noqa: BLE001 - any failure means "not usable"
        pass
    try:
        import torch

        if torch.cuda.is_available():
            torch.backends.cuda.matmul.allow_tf32 = False  # a fair float32 comparison
            return ("torch", lambda a, b: a @ b, torch.cuda.synchronize,
                    lambda h: torch.from_numpy(h).cuda(), lambda d: d.cpu().numpy())
    except Exception:  # noqa: BLE001
        pass
    return None


def bench_cuda(repeat, sizes):
    from kernels_numba.gpu import dense as gpu_dense

    sync = kn.synchronize
    ref = _cublas()
    print(f"CUDA SGEMM (reference: {'cuBLAS via ' + ref[0] if ref else 'none: no cupy/torch'}):")
    rng = np.random.default_rng(0)
    rows = []  # (size, our GFLOP/s, cuBLAS GFLOP/s or None)
    for s in sizes:
        a_h = rng.standard_normal((s, s)).astype(np.float32)
        b_h = rng.standard_normal((s, s)).astype(np.float32)
        a, b = kn.to_device(a_h, "cuda"), kn.to_device(b_h, "cuda")
        c = kn.empty((s, s), device="cuda")
        flops = 2.0 * s ** 3
        expected = None
        if ref:
            ra, rb = ref[3](a_h), ref[3](b_h)
            t_ref = _time(lambda: ref[1](ra, rb), repeat, ref[2])
            expected = ref[4](ref[1](ra, rb))
        elif s <= 2048:
            expected = a_h.astype(np.float64) @ b_h
        line = f"  {s:5d}^3"
        for tile in gpu_dense.TILES:
            gpu_dense.gemm(c, a, b, tile=tile)
            if expected is not None:
                _check(f"gemm {s} {tile}", kn.to_host(c), expected, rtol=1e-3)
            t = _time(lambda tile=tile: gpu_dense.gemm(c, a, b, tile=tile), repeat, sync)
            line += f"   {tile} {flops / t / 1e9:8.0f} GFLOP/s"
        t_ops = _time(lambda: ops.matmul(c, a, b), repeat, sync)
        line += f"   ops.matmul {flops / t_ops / 1e9:8.0f} GFLOP/s"
        if ref:
            line += f"   cuBLAS {flops / t_ref / 1e9:8.0f} GFLOP/s   ({t_ref / t_ops:4.2f}x)"
        print(line)
        rows.append((s, flops / t_ops / 1e9, flops / t_ref / 1e9 if ref else None))

    if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
        return rows  # the MLP-shape dense below takes minutes under the simulator
    n, f_in, f_out = 64, 784, 256
    x, w = kn.to_device(rng.standard_normal((n, f_in)).astype(np.float32), "cuda"), \
        kn.to_device(rng.standard_normal((f_in, f_out)).astype(np.float32), "cuda")
    bias, dy = kn.zeros(f_out, device="cuda"), kn.zeros((n, f_out), device="cuda")
    y, dx = kn.empty((n, f_out), device="cuda"), kn.empty((n, f_in), device="cuda")
    dw, db = kn.zeros((f_in, f_out), device="cuda"), kn.zeros(f_out, device="cuda")
    t_f = _time(lambda: ops.dense_forward(y, x, w, bias, activation="relu"), repeat, sync)
    t_b = _time(lambda: ops.dense_backward(dx, dw, db, dy, x, w), repeat, sync)
    print(f"  dense ({n}x{f_in})·({f_in}x{f_out}): forward {t_f * 1e6:7.1f} us, "
          f"backward {t_b * 1e6:7.1f} us (launch overhead included)")
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--sizes", default="512,2048,4096")
    parser.add_argument("--cuda-only", action="store_true", help="skip the CPU benchmarks")
    parser.add_argument("--simulator", action="store_true",
                        help="run the CUDA part under NUMBA_ENABLE_CUDASIM=1 too (tiny sizes: "
                             "scripts/gpu_check.sh's dry run; its numbers mean nothing)")
    args = parser.parse_args()
    if not args.cuda_only:
        bench_cpu(args.repeat)
    simulated = os.environ.get("NUMBA_ENABLE_CUDASIM") == "1"
    if (simulated and not args.simulator) or not kn.cuda_available():
        print("CUDA: skipped (no GPU; the simulator is not worth timing)")
        return 1 if args.cuda_only else 0
    rows = bench_cuda(args.repeat, [int(s) for s in args.sizes.split(",")])
    summary = "; ".join(f"{s}^3 {ours:.0f} GFLOP/s" + (f" vs cuBLAS {ref:.0f} ({ours / ref:.2f}x)"
                                                      if ref else "")
                        for s, ours, ref in rows)
    print(f"RESULT SGEMM (ops.matmul) {summary}" + (" [simulator]" if simulated else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
