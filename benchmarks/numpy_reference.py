"""NumPy's own timings of the dense shapes bench_gemm.py compares against, in a process
that never imports kernels_numba, so NumPy's BLAS keeps its default threading
(kernels_numba sets OpenBLAS to one thread per call and splits GEMMs itself).

    python -m benchmarks.numpy_reference --repeat 20   # prints a JSON dict name -> seconds
"""

import argparse
import json
import time

import numpy as np

N, F_IN, F_OUT = 64, 784, 256


def median_seconds(fn, repeat):
    fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def timings(repeat):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((N, F_IN)).astype(np.float32)
    w = (rng.standard_normal((F_IN, F_OUT)) * 0.05).astype(np.float32)
    b = rng.standard_normal(F_OUT).astype(np.float32)
    dy = rng.standard_normal((N, F_OUT)).astype(np.float32)
    dw, db = np.zeros((F_IN, F_OUT), np.float32), np.zeros(F_OUT, np.float32)

    def backward():
        g = dy @ w.T
        dw[...] += x.T @ dy
        db[...] += dy.sum(axis=0)
        return g

    return {
        "matmul": median_seconds(lambda: x @ w, repeat),
        "dense_forward": median_seconds(lambda: np.maximum(x @ w + b, 0), repeat),
        "dense_backward": median_seconds(backward, repeat),
        "matmul_acc": median_seconds(lambda: np.add(dw, x.T @ dy, out=dw), repeat),
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=20)
    print(json.dumps(timings(parser.parse_args().repeat)))
