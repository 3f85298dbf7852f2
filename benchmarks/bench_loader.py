"""DataLoader throughput: 28x28 uint8 images -> normalized float32 batches of 64.

    python benchmarks/bench_loader.py [--epochs 3] [--batch-size 64]

Prints samples/s with the prefetch thread and without it (target: >= 50,000 on 2
cores), then how much of the data time a prefetching loader hides behind a stand-in
"training step" that releases the GIL (a sleep: the host waiting on the GPU), and in a
real CPU `fit` of the MLP: fit with prefetch=2 and prefetch=0 against the same steps on
batches made beforehand (train_on_batch, which has its own small per-call overhead).
"""

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from kerasish.data import DataLoader, transforms  # noqa: E402

MNIST_SMALL = os.path.join(os.path.dirname(__file__), "..", "..", "shared", "datasets",
                           "mnist-small")


def _images():
    """60,000 real images when a local copy exists, random ones otherwise."""
    try:
        from kerasish.datasets import fashion_mnist, mnist
        if os.path.isdir(fashion_mnist.DEBIAN_DIR):
            return fashion_mnist.load_data()[0], "Fashion-MNIST train (Debian package)"
        if os.path.isdir(MNIST_SMALL):
            (x, y), _ = mnist.load_data(path=MNIST_SMALL)
            return (np.tile(x, (12, 1, 1)), np.tile(y, 12)), "mnist-small x12"
    except (OSError, ValueError):
        pass
    rng = np.random.default_rng(0)
    return (rng.integers(0, 256, (60000, 28, 28), dtype=np.uint8),
            rng.integers(0, 10, 60000, dtype=np.uint8)), "random uint8"


def throughput(x, y, batch_size, epochs, prefetch):
    dl = DataLoader(x, y, batch_size=batch_size, seed=0, prefetch=prefetch,
                    transform=transforms.normalize())
    n, t = 0, time.perf_counter()
    for _ in range(epochs):
        for xb, yb in dl:
            n += len(xb)
    assert xb.dtype == np.float32  # noqa: S101
    return n / (time.perf_counter() - t)


def overlap(x, y, batch_size, steps, prefetch, step_s):
    """(seconds waiting for data, seconds computing) over `steps` training steps."""
    dl = DataLoader(x, y, batch_size=batch_size, seed=0, prefetch=prefetch,
                    transform=transforms.compose(transforms.normalize(),
                                                 transforms.reshape((-1,)),
                                                 transforms.one_hot(10)))
    wait = compute = 0.0
    it = iter(dl)
    for _ in range(steps):
        t0 = time.perf_counter()
        next(it)
        t1 = time.perf_counter()
        time.sleep(step_s)  # stand-in training step with the GIL released
        compute += time.perf_counter() - t1
        wait += t1 - t0
    it.close()
    return wait, compute


def real_fit(x, y, batch_size, steps):
    """Seconds per step of the 784-256-10 MLP's `fit` fed by a DataLoader with
    prefetch=2 and prefetch=0, and of the same steps on batches made beforehand."""
    import kerasish as keras
    from kerasish import layers, models

    x, y = x[: steps * batch_size], y[: steps * batch_size]
    transform = transforms.compose(transforms.normalize(), transforms.reshape((-1,)))

    def model():
        keras.utils.set_random_seed(0)
        m = models.Sequential([keras.Input((784,)), layers.Dense(256, activation="relu"),
                               layers.Dense(10)])
        m.compile(keras.optimizers.SGD(0.01),
                  keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        m.fit(np.zeros((batch_size, 784), np.float32), y[:batch_size], verbose=0)  # compile
        return m

    times = {}
    for prefetch in (2, 0):
        m = model()
        dl = DataLoader(x, y, batch_size=batch_size, seed=0, prefetch=prefetch,
                        transform=transform)
        t = time.perf_counter()
        m.fit(dl, epochs=1, verbose=0)
        times[prefetch] = (time.perf_counter() - t) / steps
    m = model()
    batches = list(DataLoader(x, y, batch_size=batch_size, seed=0, prefetch=0,
                              transform=transform))
    t = time.perf_counter()
    for xb, yb in batches:
        m.train_on_batch(xb, yb)
    compute = (time.perf_counter() - t) / steps
    return times[2], times[0], compute


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--step-ms", type=float, default=2.0, help="stand-in training step")
    a = p.parse_args()
    (x, y), source = _images()
    print(f"data: {source}, x {x.shape} {x.dtype}; batch {a.batch_size}; "
          f"{os.cpu_count()} CPUs")
    for prefetch in (2, 0):
        sps = throughput(x, y, a.batch_size, a.epochs, prefetch)
        print(f"prefetch={prefetch}: {sps:>12,.0f} samples/s normalized float32 "
              f"({'meets' if sps >= 50_000 else 'BELOW'} the 50,000 target)")
    serial_wait, _ = overlap(x, y, a.batch_size, a.steps, 0, a.step_ms / 1e3)
    wait, compute = overlap(x, y, a.batch_size, a.steps, 2, a.step_ms / 1e3)
    hidden = 1.0 - wait / serial_wait if serial_wait > 0 else 1.0
    print(f"stand-in step {1e3 * compute / a.steps:.2f} ms; data time per step "
          f"{1e3 * serial_wait / a.steps:.3f} ms on demand vs {1e3 * wait / a.steps:.3f} ms "
          f"waited with prefetch=2: {100 * hidden:.0f}% of the data time hidden")
    with_prefetch, on_demand, compute = real_fit(x, y, a.batch_size, a.steps)
    data = on_demand - compute
    hidden = (on_demand - with_prefetch) / data if data > 0 else 1.0
    print(f"real fit (MLP 784-256-10, CPU): {1e3 * with_prefetch:.3f} ms/step with prefetch=2, "
          f"{1e3 * on_demand:.3f} ms/step with prefetch=0, {1e3 * compute:.3f} ms/step on "
          f"ready batches (train_on_batch): {100 * hidden:.0f}% of the "
          f"{1e3 * data:.3f} ms/step data time hidden")


if __name__ == "__main__":
    main()
