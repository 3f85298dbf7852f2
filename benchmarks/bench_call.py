"""A custom call() Dense+ReLU stack (keras.ops: matmul + bias + relu, traced) against the
same model made of built-in Dense layers (fused kernels), side by side on this CPU.

    python -m benchmarks.bench_call [--samples 12000] [--repeats 3] [--epochs 2]
    (or python benchmarks/bench_call.py ...)

On the isolated harness (benchmarks/isolated.py): the data is written as .npy files,
each model trains in a fresh process (--epochs epochs, the second timed), alternating
built-in / call(), then call() / built-in, for --repeats pairs (at least 3). Prints both
medians and the ratio custom / built-in (issue 15 target: <= 1.5), with the CPU.
"""

import argparse
import os
import sys
import tempfile
import time

import numpy as np

if __package__ in (None, ""):  # run as a script: this checkout's packages first
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks import isolated  # noqa: E402


def _layers():
    import kerasish as keras
    from kerasish import ops

    class Linear(keras.layers.Layer):
        def __init__(self, units, activation=True):
            super().__init__()
            self.units, self.activation = units, activation

        def build(self, input_shape):
            self.w = self.add_weight(shape=(input_shape[-1], self.units),
                                     initializer="glorot_uniform")
            self.b = self.add_weight(shape=(self.units,), initializer="zeros")

        def call(self, inputs):
            y = ops.matmul(inputs, self.w) + self.b
            return ops.relu(y) if self.activation else y

    return keras, Linear


def build(custom):
    keras, Linear = _layers()
    layers = keras.layers
    keras.utils.set_random_seed(0)
    dense = (lambda u, a: Linear(u, a)) if custom else \
        (lambda u, a: layers.Dense(u, activation="relu" if a else None))
    model = keras.Sequential([keras.Input((784,)), dense(256, True), dense(256, True),
                              dense(10, False)])
    model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model


def worker(args):
    x = np.load(os.path.join(args.data, "x.npy"))
    y = np.load(os.path.join(args.data, "y.npy"))
    model = build(args.worker == "call")
    times = []
    for _ in range(args.epochs):
        start = time.perf_counter()
        model.fit(x, y, batch_size=64, epochs=1, verbose=0)
        times.append(time.perf_counter() - start)
    isolated.reply(framework="kerasish", model=args.worker, epochs=times,
                   epoch_s=float(np.median(times[1:] or times)))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=12000)
    parser.add_argument("--repeats", type=int, default=3, help="fresh-process pairs, >= 3")
    parser.add_argument("--epochs", type=int, default=2, help="per process; the 2nd is timed")
    parser.add_argument("--worker", choices=("builtin", "call"), help=argparse.SUPPRESS)
    parser.add_argument("--data", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        return worker(args)
    rng = np.random.default_rng(0)
    x = rng.random((args.samples, 784), dtype=np.float32)
    y = rng.integers(0, 10, args.samples)
    with tempfile.TemporaryDirectory(prefix="bench-call-") as tmp:
        isolated.write_arrays(tmp, x=x, y=y)
        runs = {}
        for name, kind in (("call()", "call"), ("built-in", "builtin")):
            cmd = [sys.executable, "-m", "benchmarks.bench_call", "--worker", kind, "--data",
                   tmp, "--epochs", str(args.epochs)]
            runs[name] = (cmd, isolated.our_env(), False)
        res = isolated.alternate(runs, args.repeats)
    print(isolated.result_line(f"Dense+ReLU stack 784-256-256-10, {args.samples} samples",
                               res), flush=True)
    print(isolated.times_line(res), flush=True)
    print(f"ratio call() / built-in: {res['ratio']:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
