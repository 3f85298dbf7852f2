"""Row-sequential Fashion-MNIST (28 steps x 28 features): LSTM(128) -> Dense(10) and
GRU(128) -> Dense(10), batch 64, Adam; kerasish vs PyTorch CPU nn.LSTM / nn.GRU, side by
side in one run.

Each framework lives in its own worker process (so each has its own peak RSS and
neither's threads or caches touch the other's), and the epochs alternate between them:
kerasish, PyTorch, kerasish, ... so a change in machine load hits both alike. Prints
the median epoch times, their ratio (kerasish / PyTorch), the median of the per-round
ratios, and each worker's peak RSS.

    python -m benchmarks.bench_rnn [--quick] [--samples N] [--rounds R] [--kinds lstm,gru]
"""

import argparse
import multiprocessing as mp
import os
import resource
import statistics
import time

import numpy as np

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


def kerasish_trainer(kind, x, y, seed=0):
    """A function running one epoch of the recipe in kerasish."""
    import kerasish

    kerasish.utils.set_random_seed(seed)
    L = kerasish.layers
    rnn = L.LSTM(UNITS) if kind == "lstm" else L.GRU(UNITS)
    model = kerasish.Sequential([L.Input((28, 28)), rnn, L.Dense(10, activation="softmax")])
    model.compile(kerasish.optimizers.Adam(1e-3), "sparse_categorical_crossentropy")

    def epoch():
        model.fit(x, y, batch_size=BATCH, epochs=1, verbose=0, shuffle=True)
    return model, epoch


def torch_trainer(kind, x, y, seed=0):
    """A function running one epoch of the recipe in PyTorch (Keras's Adam epsilon)."""
    import torch

    torch.manual_seed(seed)

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            cls = torch.nn.LSTM if kind == "lstm" else torch.nn.GRU
            self.rnn = cls(28, UNITS, batch_first=True)
            self.fc = torch.nn.Linear(UNITS, 10)

        def forward(self, v):
            out, _ = self.rnn(v)
            return self.fc(out[:, -1])

    net = Net()
    opt = torch.optim.Adam(net.parameters(), 1e-3, eps=1e-7)
    xt, yt = torch.from_numpy(x), torch.from_numpy(y).long()
    lossf = torch.nn.CrossEntropyLoss()

    def epoch():
        net.train()
        perm = torch.randperm(len(xt))
        for i in range(0, len(xt), BATCH):
            idx = perm[i:i + BATCH]
            opt.zero_grad()
            loss = lossf(net(xt[idx]), yt[idx])
            loss.backward()
            opt.step()
    return net, epoch


def _worker(framework, kind, samples, conn):
    if framework == "torch":  # the data loader imports kerasish: leave NumPy's BLAS alone
        os.environ["KERNELS_NUMBA_BLAS"] = "native"
    x, y = data(samples)
    make = kerasish_trainer if framework == "kerasish" else torch_trainer
    _, epoch = make(kind, x[:BATCH * 4], y[:BATCH * 4])
    epoch()  # compile / warm up on a few batches
    _, epoch = make(kind, x, y)
    conn.send("ready")
    while conn.recv() == "epoch":
        t0 = time.perf_counter()
        epoch()
        conn.send((time.perf_counter() - t0, peak_mb()))


def compare(kind, samples, rounds):
    """Median epoch seconds of both frameworks, alternating; returns a result dict."""
    ctx = mp.get_context("spawn")
    workers = {}
    for name in ("kerasish", "torch"):
        parent, child = ctx.Pipe()
        proc = ctx.Process(target=_worker, args=(name, kind, samples, child), daemon=True)
        proc.start()
        workers[name] = (proc, parent)
    for _, conn in workers.values():
        assert conn.recv() == "ready"
    times = {name: [] for name in workers}
    peaks = {}
    for _ in range(rounds):
        for name, (_, conn) in workers.items():
            conn.send("epoch")
            seconds, peaks[name] = conn.recv()
            times[name].append(seconds)
    for proc, conn in workers.values():
        conn.send("stop")
        proc.join()
    med = {name: statistics.median(v) for name, v in times.items()}
    pairs = [a / b for a, b in zip(times["kerasish"], times["torch"])]
    return {"kind": kind, "times": times, "median": med, "peak_mb": peaks,
            "ratio": med["kerasish"] / med["torch"], "pair_ratio": statistics.median(pairs)}


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="6400 samples, 3 rounds")
    p.add_argument("--samples", type=int, default=60000)
    p.add_argument("--rounds", type=int, default=3, help="timed epochs per framework")
    p.add_argument("--kinds", default="lstm,gru")
    a = p.parse_args()
    samples, rounds = (6400, 3) if a.quick else (a.samples, a.rounds)
    for kind in a.kinds.split(","):
        r = compare(kind, samples, rounds)
        m, pk = r["median"], r["peak_mb"]
        print(f"{kind.upper()}({UNITS}) {samples} samples, {rounds} alternating epochs each: "
              f"kerasish {m['kerasish']:.2f} s, PyTorch {m['torch']:.2f} s (medians), ratio "
              f"{r['ratio']:.2f} (median per-round {r['pair_ratio']:.2f}); peak RSS kerasish "
              f"{pk['kerasish']:.0f} MB, PyTorch {pk['torch']:.0f} MB", flush=True)
        print("  epochs: kerasish " + " ".join(f"{v:.2f}" for v in r["times"]["kerasish"])
              + " | PyTorch " + " ".join(f"{v:.2f}" for v in r["times"]["torch"]), flush=True)


if __name__ == "__main__":
    main()
