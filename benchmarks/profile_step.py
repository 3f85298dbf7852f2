"""Where a kerasish CPU training step's time goes, and how close it runs to the CPU's peak.

    python -m benchmarks.profile_step [--model cnn|mlp] [--steps 30] [--threads 2]

`profile(model, x, y, steps)` runs `model.fit` over `steps` copies of the batch (x, y),
the loop benchmarks.train times, `passes` times plain (the step time: the best pass), then
`passes` times with every CPU op wrapped by a timer (in kernels_numba.dispatch's table,
the launch plans captured again so replayed steps call the timed ops) and,
inside the ops, GEMM (kernels_numba.cpu.gemm.gemm and cpu.dense.product as conv2d and
dense call them) and the im2col / col2im loops timed apart. Each timer counts its own
time less the timers nested in it, so the buckets add up: GEMM, im2col, col2im, then each
op family's remaining work (pooling, optimizer, loss, activation, bias/ReLU epilogues...),
and "python" = step - all kernels (fit's per-step Python: loader hand-off, callbacks,
plan replay, argument checks), then every cpu.gemm call by shape with its GFLOP/s and
share of the peak. Each bucket is its best pass (the machine is shared and
noisy: a minimum is the least disturbed measurement). Timers add ~2 us per call; the
shares are from the timed passes, the step time from the plain ones.

`peak(threads)`: the CPU's float32 peak, measured two ways, the larger taken:
  - "fma": a timed FMA loop, one per thread (Python threads, the njit loop releases the
    GIL): 10 (AVX2) or 16 (AVX-512) independent vector accumulators in registers, so
    both FMA pipes stay busy (fewer chains than pipes x latency leave them idle);
  - "gemm": the best GEMM rate, kernels_numba.cpu.gemm.gemm (single-threaded sgemm
    blocks on numba's threads: our tiles on AVX-512 CPUs, else OpenBLAS's) on 1536^3,
    best of 5.
It is measured before and after the passes, the larger of each kept (a shared machine
has slow moments: one sample there would inflate the step's share). On a 2-core AVX2
machine (AMD EPYC Zen 2) both give ~100 GFLOP/s per core when quiet, ~200 for two
(the FMA loop's best 183-185 on 2026-12-01 evening); the report names the vector ISA
found in /proc/cpuinfo and what runs the GEMMs. On the AMD Zen 5 (AVX-512) machine of
2026-12-02 the FMA loop gives 383-507 GFLOP/s for two cores. `step_flops(model, batch)`: multiply-adds x 2 of the forward
(conv/dense), backward data and backward filter GEMMs.
"""

import argparse
import threading
import time
from collections import defaultdict

import numpy as np


class _Timers:
    def __init__(self):
        self.total = defaultdict(float)
        self.calls = defaultdict(int)
        self.shapes, self.shape_calls = defaultdict(float), defaultdict(int)  # gemm() only
        self._stack = []

    def wrap(self, name, fn):
        def timed(*args, **kwargs):
            self._stack.append(0.0)
            t0 = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                spent = time.perf_counter() - t0
                nested = self._stack.pop()
                self.total[name] += spent - nested
                self.calls[name] += 1
                if self._stack:
                    self._stack[-1] += spent

        return timed


def _shape_key(c, a, b, accumulate):
    return (*c.shape, a.shape[1], "T" if a.strides[0] < a.strides[1] else "N",
            "T" if b.strides[0] < b.strides[1] else "N", "+=" if accumulate else "=")


def _by_shape(timers, key, fn):
    """fn, its seconds (nested timers included) also kept under the GEMM shape `key`."""
    def timed(*args, **kwargs):
        t0 = time.perf_counter()
        fn(*args, **kwargs)
        timers.shapes[key] += time.perf_counter() - t0
        timers.shape_calls[key] += 1

    return timed


def _timed_calls(timers, name, make, shapes=False):
    """make(...)'s Bound calls, each run under the timer `name` (and, for gemm_calls, its
    shape: one product is one shape entry however many calls it takes)."""
    from kernels_numba.cpu._parallel import Bound, chain

    def calls(c, a, b, *rest, **kwargs):
        out = [Bound(timers.wrap(name, call), ()) for call in make(c, a, b, *rest, **kwargs)]
        if shapes and out:
            key = _shape_key(c, a, b, kwargs.get("accumulate", False))
            out = [Bound(_by_shape(timers, key, chain(out)), ())]
        return out

    return calls


def _timed_conv_part(timers, conv2d):
    """conv2d's im2col / col2im loops as Bound calls timed under their own names."""
    from kernels_numba.cpu._parallel import Bound

    make = conv2d._conv_part_calls

    def calls(mode, *args):
        name = "col2im" if mode == conv2d.COL2IM else "im2col"
        return [Bound(timers.wrap(name, call), ()) for call in make(mode, *args)]

    return calls


def _timed_grouped(timers, conv2d):
    """conv2d's grouped forward / backward-data (columns or scatter, BLAS and epilogue in one
    part) under their own names, and in the GEMM table as their product's shape, marked
    "grouped"."""
    from kernels_numba.cpu._parallel import Bound

    make = conv2d._grouped_calls

    def calls(mode, col, x4, geom, rows, w2, *rest):
        call = make(mode, col, x4, geom, rows, w2, *rest)
        if call is None:
            return None
        forward = mode == conv2d.FORWARD
        name = "conv2d: grouped " + ("forward" if forward else "backward-data")
        m, k, f = rows.shape[0], w2.shape[0], w2.shape[1]
        key = (m, f, k, "grouped", "", "=") if forward else (m, k, f, "grouped", "", "=")
        return Bound(_by_shape(timers, key, timers.wrap(name, call)), ())

    return calls


def _timed_op(timers, bucket, fn):
    """fn under the timer `bucket`; its bound form (what a replayed plan runs) too."""
    timed = timers.wrap(bucket, fn)
    bind = getattr(fn, "bind", None)
    if bind is not None:
        from kernels_numba.cpu._parallel import Bound

        timed.bind = lambda *args, **kwargs: Bound(timers.wrap(bucket, bind(*args, **kwargs)),
                                                   ())
    return timed


def _patch(timers, model):
    """Install the timers; returns the undo function."""

    from kernels_numba import dispatch
    from kernels_numba.cpu import conv2d, dense

    undo = []

    def setattr_undo(obj, name, value):
        undo.append((obj, name, getattr(obj, name)))
        setattr(obj, name, value)

    for module in (conv2d, dense):  # GEMMs as Bound calls, each timed when it runs
        setattr_undo(module, "gemm_calls", _timed_calls(timers, "gemm", module.gemm_calls, True))
    setattr_undo(dense, "product_calls", _timed_calls(timers, "gemm", dense.product_calls))
    setattr_undo(conv2d, "_conv_part_calls", _timed_conv_part(timers, conv2d))
    setattr_undo(conv2d, "_grouped_calls", _timed_grouped(timers, conv2d))
    # Every CPU implementation the warm-up used, timed in dispatch's table; the captured
    # launch plans are dropped so the steps capture (and replay) the timed ones.
    table = dict(dispatch._cache)
    for (device, family, op), fn in table.items():
        if device == "cpu":
            bucket = f"{family}: other" if family in ("conv2d", "dense") else family
            dispatch._cache[(device, family, op)] = _timed_op(timers, bucket, fn)
    _drop_launch_plans(model)

    def restore():
        for obj, name, value in reversed(undo):
            setattr(obj, name, value)
        dispatch._cache.clear()
        dispatch._cache.update(table)
        _drop_launch_plans(model)

    return restore


def _drop_launch_plans(model):
    for ex in model._executors.values():
        for step in ex.steps.values():
            step.captures.clear()
            step.ready.clear()


def _fit(model, xs, ys, steps):
    """Seconds per step of one fit epoch over the `steps` batches in (xs, ys)."""
    start = time.perf_counter()
    model.fit(xs, ys, batch_size=len(xs) // steps, epochs=1, shuffle=False, verbose=0)
    return (time.perf_counter() - start) / steps


def ab_arguments(doc, argv=None):
    """The alternating A/B benchmarks' (benchmarks/ab_*.py) --rounds, --steps, --threads;
    NUMBA_NUM_THREADS set from --threads, before numba is imported."""
    import os

    p = argparse.ArgumentParser(description=doc.splitlines()[0])
    p.add_argument("--rounds", type=int, default=8)
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--threads", type=int, default=2)
    args = p.parse_args(argv)
    os.environ.setdefault("NUMBA_NUM_THREADS", str(args.threads))
    return args


def print_rounds(times, batch, threads):
    """An alternating A/B's medians (benchmarks/ab_*.py): times = {variant: [ms per round]}."""
    rounds = len(next(iter(times.values()), []))
    print(f"CNN CPU step, batch {batch}, {threads} threads, {rounds} rounds:")
    width = max(len(name) for name in times)
    for name, t in times.items():
        t = sorted(t)
        print(f"  {name:{width}s} median {t[len(t) // 2]:.2f} ms/step (min {t[0]:.2f}, "
              f"max {t[-1]:.2f})")


def profile(model, x, y, steps=30, passes=3):
    """{"step_s": plain step, "timed_step_s", "buckets": {name: (s per step, calls per
    step)}}: fit over `steps` copies of the batch (x, y); each number its best pass."""
    xs, ys = np.concatenate([x] * steps), np.concatenate([y] * steps)
    model.fit(xs[: 3 * len(x)], ys[: 3 * len(y)], batch_size=len(x), epochs=1, shuffle=False,
              verbose=0)  # compile, plan, warm caches
    plain = min(_fit(model, xs, ys, steps) for _ in range(passes))
    best, timed, shapes = {}, float("inf"), {}
    for _ in range(passes):
        timers = _Timers()
        restore = _patch(timers, model)
        try:
            step = _fit(model, xs, ys, steps)
        finally:
            restore()
        timed = min(timed, step)
        kernels = 0.0
        for k, v in timers.total.items():
            per_step = (v / steps, timers.calls[k] / steps)
            kernels += per_step[0]
            if k not in best or per_step[0] < best[k][0]:
                best[k] = per_step
        for k, v in timers.shapes.items():
            if k not in shapes or v / steps < shapes[k][0]:
                shapes[k] = (v / steps, timers.shape_calls[k] / steps)
        python = (max(step - kernels, 0.0), 1.0)
        name = "python (step - kernels)"
        if name not in best or python[0] < best[name][0]:
            best[name] = python
    rows = sorted(([*k, *v] for k, v in shapes.items()), key=lambda r: -r[6])  # JSON-able
    return {"step_s": plain, "timed_step_s": timed, "buckets": best, "gemm_shapes": rows}


def _isa():
    """The widest x86 vector FMA ISA this CPU reports ("avx512f", "avx2", or "?")."""
    try:
        with open("/proc/cpuinfo") as f:
            flags = next((line.split(":", 1)[1].split() for line in f
                          if line.startswith("flags")), [])
    except OSError:
        return "?"
    for isa in ("avx512f", "avx2"):
        if isa in flags and ("fma" in flags or isa == "avx512f"):
            return isa
    return "?"


def _fma_kernel(width):
    import numba

    @numba.njit(fastmath=True, nogil=True)
    def fma_loop(n, a, b):
        # `width` float32 accumulators, fully unrolled into width/8 (AVX2) or width/16
        # (AVX-512) vector registers, each a chain of dependent FMAs
        acc = np.ones(width, np.float32)
        for _ in range(n):
            for i in range(width):
                acc[i] = acc[i] * a + b
        return acc.sum()

    return fma_loop


def fma_peak_gflops(threads, isa=None, seconds=0.2, repeats=3):
    """GFLOP/s of `threads` concurrent FMA loops (best of `repeats`)."""
    width = 256 if (isa or _isa()) == "avx512f" else 80
    loop = _fma_kernel(width)
    a, b = np.float32(0.999), np.float32(0.001)
    loop(10, a, b)  # compile
    t0 = time.perf_counter()
    loop(100_000, a, b)
    n = max(1000, int(100_000 * seconds / max(time.perf_counter() - t0, 1e-6)))
    best = float("inf")
    for _ in range(repeats):
        workers = [threading.Thread(target=loop, args=(n, a, b)) for _ in range(threads)]
        t0 = time.perf_counter()
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        best = min(best, time.perf_counter() - t0)
    return 2 * width * n * threads / best / 1e9


def peak(threads=None, earlier=None):
    """{"gflops": max of the two, "fma": .., "gemm": .., "isa": .., "samples": n} (see the
    module doc); with `earlier` (a peak taken before), each rate is the larger of the two.

    The peak is the machine's, so the best sample is the truest: on a shared machine one
    measurement can land in a slow moment (two threads' FMA loop at one thread's rate was
    seen here), which would overstate a step's share of the peak."""
    import numba

    threads = threads or numba.get_num_threads()
    isa = _isa()
    fma, gemm, samples = fma_peak_gflops(threads, isa), peak_gflops(), 1
    if earlier is not None:
        fma, gemm = max(fma, earlier["fma"]), max(gemm, earlier["gemm"])
        samples += earlier.get("samples", 1)
    return {"gflops": max(fma, gemm), "fma": fma, "gemm": gemm, "isa": isa, "threads": threads,
            "samples": samples}


def describe_peak(p):
    when = " (best of before and after the passes)" if p.get("samples", 1) > 1 else ""
    from kernels_numba import _blas
    from kernels_numba.cpu import gemm

    blas = _blas.blas_kernels()
    return (f"peak {p['gflops']:.0f} GFLOP/s = max(timed FMA loop on {p['threads']} threads "
            f"{p['fma']:.0f}, best GEMM 1536^3 {p['gemm']:.0f}){when}; vector ISA {p['isa']}"
            f"; GEMMs by {gemm.backend()}"
            + (f"; NumPy's OpenBLAS kernels {blas}" if blas and not gemm.TILES else ""))


def peak_gflops(size=1536, repeats=5):
    from kernels_numba.cpu.gemm import gemm

    rng = np.random.default_rng(0)
    a = rng.random((size, size), dtype=np.float32)
    b = rng.random((size, size), dtype=np.float32)
    c = np.empty((size, size), np.float32)
    gemm(c, a, b)
    best = min(_time(lambda: gemm(c, a, b)) for _ in range(repeats))
    return 2 * size ** 3 / best / 1e9


def _time(fn):
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def step_flops(model, batch):
    """2 x multiply-adds of the training step's GEMMs (forward, backward data, backward
    filter; the first layer's backward data is skipped, as the trainer does)."""
    total, first = 0, True
    for layer in model.layers:
        name = type(layer).__name__
        if name == "Conv2D":
            kh, kw, c, f = layer.kernel.shape
            _, ho, wo, _ = layer.output_shape
            macs = batch * ho * wo * kh * kw * c * f
        elif name == "Dense":
            macs = batch * int(np.prod(layer.kernel.shape))
        else:
            continue
        total += 2 * macs * (2 if first else 3)
        first = False
    return total


def report(result, flops=None, peak=None, out=print):
    step = result["step_s"]
    line = f"  step {1e3 * step:.2f} ms (timed pass {1e3 * result['timed_step_s']:.2f} ms)"
    if flops:
        line += f", {flops / 1e9:.3f} GFLOP -> {flops / step / 1e9:.1f} GFLOP/s"
        if peak:
            line += f" = {100 * flops / step / 1e9 / peak:.0f}% of the {peak:.0f} GFLOP/s peak"
    out(line)
    # buckets are best passes: scaled so that they add up to the plain step
    total = sum(v for v, _ in result["buckets"].values())
    scale = step / total if total else 1.0
    for name, (sec, calls) in sorted(result["buckets"].items(), key=lambda kv: -kv[1][0]):
        out(f"    {name:26s} {1e3 * sec * scale:7.3f} ms {100 * sec / total:5.1f}%  "
            f"({calls:.0f} calls/step)")
    shapes = result.get("gemm_shapes") or []
    if shapes:
        out("    GEMMs through cpu.gemm (C = op(A) op(B): M x N, K, A/B transposed, = or +=):")
    for m, n, k, ta, tb, acc, sec, calls in shapes:
        rate = 2 * m * n * k * calls / sec / 1e9 if sec else 0.0
        share = f" = {100 * rate / peak:.0f}% of peak" if peak else ""
        out(f"      {m:6d} x {n:<5d} K {k:<6d} {ta}{tb} {acc:2s} {1e3 * sec:7.3f} ms "
            f"{rate:6.1f} GFLOP/s{share}")


def main(argv=None):
    import os

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", choices=("cnn", "mlp"), default="cnn")
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--passes", type=int, default=3, help="each number is its best pass")
    p.add_argument("--threads", type=int, default=2)
    args = p.parse_args(argv)
    os.environ.setdefault("NUMBA_NUM_THREADS", str(args.threads))
    from benchmarks.train import BATCH, kerasish_model

    model = kerasish_model(args.model, 0, "cpu")
    rng = np.random.default_rng(0)
    x = rng.random((BATCH, 784) if args.model == "mlp" else (BATCH, 28, 28, 1),
                   dtype=np.float32)
    y = rng.integers(0, 10, BATCH)
    before = peak(args.threads)
    result = profile(model, x, y, args.steps, args.passes)
    p = peak(args.threads, earlier=before)
    print(f"{args.model.upper()} training step (fit), batch {BATCH}, {args.threads} threads, "
          f"load average {os.getloadavg()[0]:.2f}; {describe_peak(p)}")
    report(result, step_flops(model, BATCH), p["gflops"])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
