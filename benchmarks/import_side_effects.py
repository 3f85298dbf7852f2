"""Does `import kerasish` slow the other libraries in the same process? (issue 35)

    python -m benchmarks.import_side_effects [--pairs 3] [--blas split,native]
        [--size 2048] [--samples 1280] [--units 64] [--what matmul,gru]

Two workloads, each in fresh processes that alternate (benchmarks/isolated.py): with
`import kerasish` first, then without, then without / with, ...: a NumPy float32
SIZE x SIZE matmul (median of 5 after one warm-up) and a small PyTorch GRU epoch
(SAMPLES rows of 28 x 28, GRU(UNITS) -> Linear(10), Adam, batch 64; the second of two
epochs timed). Both sides get the same environment (this checkout on PYTHONPATH,
KERNELS_NUMBA_BLAS from --blas); only the import differs. Prints each ratio with /
without (target: within 5%, i.e. <= 1.05) and the CPU.

Before issue 35's fix, a 2048^2 matmul took 1.96x as long after `import kerasish`
(NumPy's OpenBLAS set to one thread at import), and a GRU epoch ~2x with
KERNELS_NUMBA_BLAS=native (OMP_WAIT_POLICY=PASSIVE left in the environment for torch's
libgomp). kernels_numba/first_use.py says what is changed now, and when.
"""

import argparse
import sys
import time

from benchmarks import isolated

TARGET = 1.05


def _matmul(args):
    import numpy as np

    a = np.random.default_rng(0).random((args.size, args.size), dtype=np.float32)
    a @ a
    times = []
    for _ in range(5):
        t0 = time.perf_counter()
        a @ a
        times.append(time.perf_counter() - t0)
    return sorted(times)[2]


def _gru(args):
    import numpy as np
    import torch

    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    x = torch.from_numpy(rng.random((args.samples, 28, 28), dtype=np.float32))
    y = torch.from_numpy(rng.integers(0, 10, args.samples))
    rnn, fc = torch.nn.GRU(28, args.units, batch_first=True), torch.nn.Linear(args.units, 10)
    params = list(rnn.parameters()) + list(fc.parameters())
    opt = torch.optim.Adam(params, 1e-3)
    seconds = None
    for _ in range(2):  # the second epoch is timed
        t0 = time.perf_counter()
        for i in range(0, args.samples, 64):
            opt.zero_grad()
            out, _ = rnn(x[i:i + 64])
            torch.nn.functional.cross_entropy(fc(out[:, -1]), y[i:i + 64]).backward()
            opt.step()
        seconds = time.perf_counter() - t0
    return seconds


def _blas_threads():
    """NumPy's BLAS threads as threadpoolctl sees them (None without threadpoolctl): the
    cause of a slowdown, where the timings on a loaded machine are noise."""
    try:
        import threadpoolctl
    except ImportError:
        return None
    return [p["num_threads"] for p in threadpoolctl.threadpool_info() if p["user_api"] == "blas"]


def worker(args):
    said = None
    import numpy  # noqa: F401  (its BLAS loaded before kerasish, as in a user's script)

    if args.with_kerasish:
        import kerasish  # noqa: F401
        import kernels_numba

        first_use = getattr(kernels_numba, "first_use", None)  # (older trees lack it)
        said = first_use.report() if first_use else kernels_numba.BLAS_THREADS
    threads = _blas_threads()
    seconds = (_matmul if args.worker == "matmul" else _gru)(args)
    isolated.reply(epoch_s=seconds, kerasish=said, blas_threads=threads)
    return 0


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--pairs", type=int, default=3)
    p.add_argument("--blas", default="split,native", help="KERNELS_NUMBA_BLAS modes to run")
    p.add_argument("--what", default="matmul,gru")
    p.add_argument("--size", type=int, default=2048)
    p.add_argument("--samples", type=int, default=1280)
    p.add_argument("--units", type=int, default=64)
    p.add_argument("--worker", choices=("matmul", "gru"), help=argparse.SUPPRESS)
    p.add_argument("--with-kerasish", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        return worker(args)
    worst = 0.0
    for mode in args.blas.split(","):
        env = isolated.our_env({"KERNELS_NUMBA_BLAS": mode})
        for what in args.what.split(","):
            base = [sys.executable, "-m", "benchmarks.import_side_effects", "--worker", what,
                    "--size", str(args.size), "--samples", str(args.samples), "--units",
                    str(args.units)]
            res = isolated.alternate({"with import kerasish": (base + ["--with-kerasish"], env,
                                                               False),
                                      "without": (base, env, False)}, args.pairs)
            label = (f"NumPy float32 {args.size}^2 matmul" if what == "matmul" else
                     f"PyTorch GRU({args.units}) epoch, {args.samples} samples")
            timed = "median of 5 after a warm-up" if what == "matmul" else "2nd epoch timed"
            print(isolated.result_line(f"{label}, KERNELS_NUMBA_BLAS={mode}", res,
                                       timed=timed) +
                  f"; target <= {TARGET}: {'met' if res['ratio'] <= TARGET else 'NOT met'}",
                  flush=True)
            print(isolated.times_line(res), flush=True)
            print("  NumPy's BLAS threads at the timing: " + ", ".join(
                f"{name} {res['results'][name][0]['blas_threads']}" for name in res["names"]),
                flush=True)
            worst = max(worst, res["ratio"])
    print(f"worst ratio with / without import kerasish: {worst:.3f} (target <= {TARGET})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
