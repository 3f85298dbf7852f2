"""The reference CNN trained data-parallel over MPI ranks (kerasish.distribute).

    mpirun -n 2 python examples/mnist_cnn_mpi.py [--epochs 5] [--batch-size 64]
        [--data DIR] [--limit N] [--synthetic] [--out FILE]

--batch-size is the GLOBAL batch (each of N ranks trains on batch-size / N rows of it),
so the run matches one process with the same batch size and seed. Rank 0 prints the
progress, saves the model and reports what the gradient all-reduce cost per step:
bytes per rank, the time inside fit (staging and waiting for the slowest rank
included) and, measured after fit with the ranks in step, the all-reduce alone.
--synthetic trains on random images (no dataset needed: for the cost numbers only).
"""

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mnist_cnn import build_model, load  # noqa: E402 (the same model as one process)

from kerasish.distribute import MPIStrategy  # noqa: E402
from kerasish.utils import set_random_seed  # noqa: E402


def synthetic(n, seed):
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 256, size=(n, 28, 28), dtype=np.uint8)
    y = rng.integers(0, 10, size=n).astype(np.uint8)
    return "synthetic", ((x, y), (x[: n // 8], y[: n // 8]))


def allreduce_alone(strategy, model, repeats=50):
    """Seconds per all-reduce of the gradient block's size, the ranks in step."""
    buf = np.zeros(model._trainable_size + 1, np.float32)
    strategy.barrier()
    start = time.perf_counter()
    for _ in range(repeats):
        strategy.collectives.allreduce(buf, "all-reduce benchmark")
    return (time.perf_counter() - start) / repeats


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=64, help="the global batch")
    parser.add_argument("--data", default=None, help="MNIST .npz or directory of IDX files")
    parser.add_argument("--limit", type=int, default=None, help="use only N training images")
    parser.add_argument("--synthetic", action="store_true", help="random images, no dataset")
    parser.add_argument("--out", default="mnist_cnn_mpi.h5")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    strategy = MPIStrategy()
    chief = strategy.is_chief
    set_random_seed(args.seed)  # the same on every rank; rank 0's state is what counts
    name, ((x_train, y_train), (x_test, y_test)) = \
        synthetic(args.limit or 8192, args.seed) if args.synthetic else load(args.data)
    if args.limit:
        x_train, y_train = x_train[: args.limit], y_train[: args.limit]
    x_train = (x_train.astype("float32") / 255.0)[..., None]
    x_test = (x_test.astype("float32") / 255.0)[..., None]
    if chief:
        print(f"{name}: {len(x_train)} training and {len(x_test)} test images; "
              f"{strategy.size} ranks, global batch {args.batch_size} "
              f"({args.batch_size // strategy.size} per rank)")

    with strategy.scope():
        model = build_model()  # compiled inside the scope: trains on every rank
    start = time.perf_counter()
    model.fit(x_train, y_train, epochs=args.epochs, batch_size=args.batch_size,
              validation_data=(x_test, y_test), verbose=2 if chief else 0)
    seconds = time.perf_counter() - start
    stats = strategy.allreduce_stats(model)
    alone = allreduce_alone(strategy, model)
    # evaluate is collective under the strategy (its logs are reduced): every rank calls it
    loss, acc = model.evaluate(x_test, y_test, batch_size=256, verbose=0)
    if chief:
        steps = stats["steps"]
        print(f"trained in {seconds:.1f}s: {steps} steps, {seconds / steps * 1e3:.1f} ms/step")
        print(f"gradient all-reduce: {stats['bytes_per_step']:,} bytes per rank per step "
              f"through {stats['transport']}; {stats['seconds_per_step'] * 1e3:.2f} ms/step "
              f"inside fit (staging and waiting for the slowest rank included), "
              f"{alone * 1e3:.3f} ms alone ({strategy.size} ranks in step)")
        model.save(args.out)  # rank 0 writes; the others hold the same weights
        print(f"saved {args.out}; test loss {loss:.4f}, test accuracy {acc:.4f} ({name})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
