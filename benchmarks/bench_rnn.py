"""Row-sequential Fashion-MNIST (28 steps x 28 features): LSTM(128) -> Dense(10) and
GRU(128) -> Dense(10), batch 64, Adam; kerasish vs PyTorch CPU nn.LSTM / nn.GRU.

On the isolated harness (benchmarks/isolated.py): the rows are written as .npy files,
each timed epoch runs in a fresh process (kerasish: `--worker`; PyTorch:
benchmarks/peer_torch.py under `python -I`, NumPy and torch only, our variables
removed), alternating kerasish / PyTorch, then PyTorch / kerasish, for --rounds pairs;
each process trains --epochs epochs (default 2) and the second is timed. Prints the
median epoch times, their ratio (kerasish / PyTorch), the median per-pair ratio, each
side's peak RSS, and the CPU model and ISA.

    python -m benchmarks.bench_rnn [--quick] [--samples N] [--rounds R] [--kinds lstm,gru]
        [--epochs E] [--output softmax|logits] [--units U]

--output logits: kerasish's Dense(10) gives logits to
SparseCategoricalCrossentropy(from_logits=True), as keras-io writes it (PyTorch's side is
the same either way: logits into CrossEntropyLoss).
"""

import argparse
import os
import resource
import sys
import tempfile
import time

import numpy as np

from benchmarks import isolated

BATCH, UNITS = 64, 128


def data(samples):
    """Fashion-MNIST training rows scaled to [0, 1]; random pixels when it is absent."""
    try:
        from kerasish.datasets import fashion_mnist

        (x, y), _ = fashion_mnist.load_data()
    except Exception:  # noqa: BLE001 - offline machine: same shapes, random pixels
        rng = np.random.default_rng(0)
        x, y = rng.integers(0, 256, (samples, 28, 28)), rng.integers(0, 10, samples)
    x = x[:samples].astype(np.float32)  # (no float64 copy: peak RSS is the framework's)
    return x / np.float32(255.0), y[:samples].astype(np.int32)


def peak_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def kerasish_trainer(kind, x, y, seed=0, output="softmax", units=UNITS):
    """A function running one epoch of the recipe in kerasish."""
    import kerasish

    kerasish.utils.set_random_seed(seed)
    L = kerasish.layers
    rnn = L.LSTM(units) if kind == "lstm" else L.GRU(units)
    if output == "logits":
        head = L.Dense(10)
        loss = kerasish.losses.SparseCategoricalCrossentropy(from_logits=True)
    else:
        head, loss = L.Dense(10, activation="softmax"), "sparse_categorical_crossentropy"
    model = kerasish.Sequential([L.Input((28, 28)), rnn, head])
    model.compile(kerasish.optimizers.Adam(1e-3), loss)

    def epoch():
        model.fit(x, y, batch_size=BATCH, epochs=1, verbose=0, shuffle=True)
    return model, epoch


def worker(a):
    """A fresh kerasish process: --epochs epochs on the .npy rows, the result line."""
    x = np.load(os.path.join(a.data, "x.npy"))
    y = np.load(os.path.join(a.data, "y.npy"))
    _, epoch = kerasish_trainer(a.kind, x, y, output=a.output, units=a.units)
    times = []
    for _ in range(a.epochs):
        t0 = time.perf_counter()
        epoch()
        times.append(time.perf_counter() - t0)
    isolated.reply(framework="kerasish", epochs=times, epoch_s=float(np.median(times[1:] or times)),
                   peak_mb=peak_mb())


def compare(kind, samples, rounds, epochs=2, output="softmax", units=UNITS):
    """Median epoch seconds of both frameworks, one fresh process per epoch timed,
    alternating; returns benchmarks.isolated.alternate's dict."""
    x, y = data(samples)
    with tempfile.TemporaryDirectory(prefix="bench-rnn-") as tmp:
        isolated.write_arrays(tmp, x=x, y=y)
        ours = [sys.executable, "-m", "benchmarks.bench_rnn", "--worker", "--kinds", kind,
                "--data", tmp, "--epochs", str(epochs), "--output", output,
                "--units", str(units)]
        peer = isolated.peer_command(kind, tmp, epochs=epochs, units=units)
        return isolated.alternate({"kerasish": (ours, isolated.our_env(), False),
                                   "PyTorch": (peer, isolated.peer_env(), True)}, rounds)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="6400 samples, 3 rounds")
    p.add_argument("--samples", type=int, default=60000)
    p.add_argument("--rounds", type=int, default=3,
                   help="fresh-process pairs (kerasish, PyTorch), at least 3")
    p.add_argument("--kinds", default="lstm,gru")
    p.add_argument("--epochs", type=int, default=2, help="per process; the second is timed")
    p.add_argument("--output", choices=("softmax", "logits"), default="softmax")
    p.add_argument("--units", type=int, default=UNITS)
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--data", help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.worker:
        a.kind = a.kinds
        return worker(a)
    samples, rounds = (6400, 3) if a.quick else (a.samples, a.rounds)
    for kind in a.kinds.split(","):
        r = compare(kind, samples, rounds, a.epochs, a.output, a.units)
        peaks = {name: max(res["peak_mb"] for res in r["results"][name]) for name in r["names"]}
        label = (f"{kind.upper()}({a.units}) -> Dense(10) {a.output}, {samples} samples")
        print(isolated.result_line(label, r) + "; peak RSS " + ", ".join(
            f"{name} {mb:.0f} MB" for name, mb in peaks.items()), flush=True)
        print(isolated.times_line(r), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
