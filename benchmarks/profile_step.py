"""Where a kerasish CPU training step's time goes, and how close it runs to the CPU's peak.

    python -m benchmarks.profile_step [--model cnn|mlp] [--steps 30] [--threads 2]

`profile(model, x, y, steps)` times `steps` train_on_batch calls twice: plain (the step
time), then with every CPU op wrapped by a timer (kernels_numba.dispatch.impl) and, inside
the ops, GEMM (kernels_numba.cpu.gemm.gemm as conv2d and dense call it) and the im2col /
col2im loops timed apart. Each timer counts its own time less the timers nested in it, so
the buckets add up: GEMM, im2col, col2im, then each op family's remaining work (pooling,
optimizer, loss, activation, bias/ReLU epilogues...), and "python" = step - all kernels
(the trainer's per-step Python, plan binding, argument checks). Timers add ~2 us per call;
the shares are from the timed pass, the step time from the plain one.

`peak_gflops(threads)`: the CPU's float32 peak as the best GEMM rate on this machine:
kernels_numba.cpu.gemm.gemm (OpenBLAS sgemm blocks on numba's threads, AVX-512 kernels
where the CPU has them) on 1536^3, best of 5. `step_flops(model, batch)`: multiply-adds x 2
of the forward (conv/dense), backward data and backward filter GEMMs.
"""

import argparse
import time
from collections import defaultdict

import numpy as np


class _Timers:
    def __init__(self):
        self.total = defaultdict(float)
        self.calls = defaultdict(int)
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


def _patch(timers):
    """Install the timers; returns the undo function."""
    import sys

    from kernels_numba import dispatch
    from kernels_numba.cpu import conv2d, dense

    undo = []

    def setattr_undo(obj, name, value):
        undo.append((obj, name, getattr(obj, name)))
        setattr(obj, name, value)

    for mod in (conv2d, dense):
        setattr_undo(mod, "gemm", timers.wrap("gemm", mod.gemm))
    for name in ("_im2col", "_im2col_t_single_channel"):
        setattr_undo(conv2d, name, timers.wrap("im2col", getattr(conv2d, name)))
    setattr_undo(conv2d, "_col2im", timers.wrap("col2im", conv2d._col2im))
    original_impl = dispatch.impl

    def impl(op, family, **arrays):
        fn = original_impl(op, family, **arrays)
        return timers.wrap(f"{family}: other" if family in ("conv2d", "dense") else family, fn)

    for name, mod in list(sys.modules.items()):  # the ops modules import impl by name
        if name.startswith("kernels_numba.ops.") and getattr(mod, "impl", None) is original_impl:
            setattr_undo(mod, "impl", impl)

    def restore():
        for obj, name, value in reversed(undo):
            setattr(obj, name, value)

    return restore


def _steps(model, x, y, steps):
    start = time.perf_counter()
    for _ in range(steps):
        model.train_on_batch(x, y)
    return (time.perf_counter() - start) / steps


def profile(model, x, y, steps=30):
    """{"step_s": plain step, "buckets": {name: (s per step, calls per step)}}."""
    for _ in range(3):
        model.train_on_batch(x, y)  # compile, plan, warm caches
    plain = min(_steps(model, x, y, steps) for _ in range(3))
    timers = _Timers()
    restore = _patch(timers)
    try:
        timed = _steps(model, x, y, steps)
    finally:
        restore()
    buckets = {k: (v / steps, timers.calls[k] / steps) for k, v in timers.total.items()}
    buckets["python (step - kernels)"] = (max(timed - sum(v for v, _ in buckets.values()), 0.0),
                                          1.0)
    return {"step_s": plain, "timed_step_s": timed, "buckets": buckets}


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
    scale = step / result["timed_step_s"]
    total = sum(v for v, _ in result["buckets"].values())
    for name, (sec, calls) in sorted(result["buckets"].items(), key=lambda kv: -kv[1][0]):
        out(f"    {name:26s} {1e3 * sec * scale:7.3f} ms {100 * sec / total:5.1f}%  "
            f"({calls:.0f} calls/step)")


def main(argv=None):
    import os

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", choices=("cnn", "mlp"), default="cnn")
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--threads", type=int, default=2)
    args = p.parse_args(argv)
    os.environ.setdefault("NUMBA_NUM_THREADS", str(args.threads))
    from benchmarks.train import BATCH, kerasish_model

    model = kerasish_model(args.model, 0, "cpu")
    rng = np.random.default_rng(0)
    x = rng.random((BATCH, 784) if args.model == "mlp" else (BATCH, 28, 28, 1),
                   dtype=np.float32)
    y = rng.integers(0, 10, BATCH)
    result = profile(model, x, y, args.steps)
    peak = peak_gflops()
    print(f"{args.model.upper()} training step, batch {BATCH}, load average "
          f"{os.getloadavg()[0]:.2f}; peak = best GEMM rate (1536^3): {peak:.0f} GFLOP/s")
    report(result, step_flops(model, BATCH), peak)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
