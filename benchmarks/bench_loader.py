"""DataLoader throughput: 28x28 uint8 images -> normalized float32 batches of 64.

    python benchmarks/bench_loader.py [--epochs 3] [--batch-size 64]

Prints samples/s with the prefetch thread and without it (target: >= 50,000 on 2
cores), then how much of the data time a prefetching loader hides behind a stand-in
"training step" that releases the GIL (a sleep: the host waiting on the GPU). The real
overlap in `fit` depends on the model and on whether its kernels release the GIL; this
is the loader's side of it.
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


if __name__ == "__main__":
    main()
