"""gpu_check steps `replay` and `graphs`: the reference CNN at batch 64 on CUDA, kernels
running (not stubbed, unlike benchmarks/host_overhead.py, so numba-cuda's own per-launch
cost is in): weights after `--check-steps` steps against the CPU twin, kernel launches per
replayed step (kernels_numba.record_launches, which replay honours), then ms/step over
`--steps` steps of `fit` (the replayed launch plan; input copies included).

    python -m benchmarks.gpu_check.replay [--steps 200] [--batch 64] [--size 28]
        [--check-steps 5] [--warmup-steps 3] [--tiny] [--save W.npz | --compare W.npz]
        [--json FILE]

Run again with KERASISH_CUDA_GRAPHS=1 and `--compare` the first run's `--save`: the same
steps replayed as one CUDA graph must give the same weights bit for bit; a graph
failure turns graphs off with a RuntimeWarning (reported as a fallback).
"""

import argparse
import sys
import time
import warnings

import numpy as np

from benchmarks.gpu_check._common import TINY, images, reference_cnn, result


def _weights_after(model, x, y, batch, steps):
    for i in range(steps):
        model.train_on_batch(x[i * batch:(i + 1) * batch], y[i * batch:(i + 1) * batch])
    return model.get_weights()


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--size", type=int, default=28, help="image side (the dry run: small)")
    p.add_argument("--check-steps", type=int, default=5)
    p.add_argument("--warmup-steps", type=int, default=3, help="a fit before the timed one")
    p.add_argument("--tiny", action="store_true", help=f"widths {TINY} (the dry run)")
    p.add_argument("--save", default=None)
    p.add_argument("--compare", default=None)
    p.add_argument("--json", default=None)
    args = p.parse_args(argv)
    import kernels_numba
    from kerasish import config
    from kernels_numba import _cuda

    graphs_asked = _cuda.CUDA_GRAPHS
    kernels_numba.check_cuda_available()
    n = args.batch * max(args.steps, args.check_steps, args.warmup_steps)
    x, y, source = images(n, args.size)
    print(f"data: {source}; {n} images of {args.size}x{args.size}, batch {args.batch}; "
          f"CUDA graphs {'on' if graphs_asked else 'off'}"
          f"{' (the simulator has none)' if _cuda.SIMULATOR else ''}", flush=True)

    # 1. the CUDA kernels against the CPU twin: same seed, same batches
    widths = TINY if args.tiny else (32, 64, 64)
    cpu = _weights_after(reference_cnn(args.size, device="cpu", widths=widths), x, y,
                         args.batch, args.check_steps)
    model = reference_cnn(args.size, device="cuda", widths=widths)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", RuntimeWarning)
        gpu = _weights_after(model, x, y, args.batch, args.check_steps)
        worst = max(float(np.max(np.abs(a.astype(np.float64) - b)) / (1 + float(np.max(np.abs(b)))))
                    for a, b in zip(gpu, cpu))
        print(f"weights after {args.check_steps} steps vs the CPU twin: max relative diff "
              f"{worst:.2e}", flush=True)

        # 2. launches of one replayed step (the plan replays from the third step on)
        xb, yb = x[:args.batch], y[:args.batch]
        with kernels_numba.record_launches() as calls:
            model.train_on_batch(xb, yb)
        launches = len(calls)

        # 3. ms/step of fit over --steps batches (after a warm-up fit builds its plan)
        config.set_device("cuda")
        warm = args.warmup_steps * args.batch
        if warm:
            model.fit(x[:warm], y[:warm], batch_size=args.batch, epochs=1, shuffle=False,
                      verbose=0)
        kernels_numba.synchronize()
        t0 = time.perf_counter()
        model.fit(x[:args.steps * args.batch], y[:args.steps * args.batch],
                  batch_size=args.batch, epochs=1, shuffle=False, verbose=0)
        kernels_numba.synchronize()
        ms = 1e3 * (time.perf_counter() - t0) / args.steps
    fallbacks = [str(w.message) for w in caught if "CUDA graph" in str(w.message)]
    for text in fallbacks:
        print(f"fallback: {text}")
    final = model.get_weights()
    equal = None
    if args.save:
        np.savez(args.save, *final)
    if args.compare:
        with np.load(args.compare) as ref:
            equal = all(np.array_equal(a, ref[f"arr_{i}"]) for i, a in enumerate(final))
    ok = worst <= 1e-3 and (equal is not False) and not fallbacks
    graphs = ("graphs on" if _cuda.CUDA_GRAPHS else
              "graphs OFF after a fallback" if graphs_asked else "graphs off")
    text = (f"{ms:.2f} ms/step over {args.steps} fit steps ({graphs}); {launches} launches "
            f"per replayed step; vs CPU twin after {args.check_steps} steps: max rel diff "
            f"{worst:.1e}" + ("" if equal is None else
                              f"; bit-equal to the run without graphs: {equal}"))
    result(text, args.json, "graphs" if graphs_asked or args.compare else "replay",
           {"ms_per_step": ms, "steps": args.steps, "launches_per_step": launches,
            "max_rel_diff_vs_cpu": worst, "bit_equal": equal, "fallbacks": fallbacks,
            "graphs": bool(_cuda.CUDA_GRAPHS), "data": source})
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
