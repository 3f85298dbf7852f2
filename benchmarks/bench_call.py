"""A custom call() Dense+ReLU stack (keras.ops: matmul + bias + relu, traced) against the
same model made of built-in Dense layers (fused kernels), side by side on this CPU.

    python benchmarks/bench_call.py [--samples 12000] [--repeats 3]

Prints the epoch time of each (median of alternating repeats, after a warm-up epoch)
and the ratio custom / built-in (issue 15 target: <= 1.5).
"""

import argparse
import time

import numpy as np

import kerasish as keras
from kerasish import layers, ops


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


def build(custom):
    keras.utils.set_random_seed(0)
    dense = (lambda u, a: Linear(u, a)) if custom else \
        (lambda u, a: layers.Dense(u, activation="relu" if a else None))
    model = keras.Sequential([keras.Input((784,)), dense(256, True), dense(256, True),
                              dense(10, False)])
    model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--samples", type=int, default=12000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    x = rng.random((args.samples, 784), dtype=np.float32)
    y = rng.integers(0, 10, args.samples)
    models = {"built-in": build(False), "call()": build(True)}
    for model in models.values():
        model.fit(x[:512], y[:512], batch_size=64, epochs=1, verbose=0)  # compile, plan
    times = {k: [] for k in models}
    for _ in range(args.repeats):
        for name, model in models.items():
            start = time.perf_counter()
            model.fit(x, y, batch_size=64, epochs=1, verbose=0)
            times[name].append(time.perf_counter() - start)
    med = {k: float(np.median(v)) for k, v in times.items()}
    for k, v in med.items():
        print(f"{k:9s} epoch {v:.3f} s  (repeats {', '.join(f'{t:.3f}' for t in times[k])})")
    print(f"ratio call() / built-in: {med['call()'] / med['built-in']:.2f}")


if __name__ == "__main__":
    main()
