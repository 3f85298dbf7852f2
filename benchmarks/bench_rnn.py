"""Row-sequential Fashion-MNIST (28 steps x 28 features): LSTM(128) -> Dense(10) and
GRU(128) -> Dense(10), batch 64, Adam; kerasish vs PyTorch CPU nn.LSTM / nn.GRU, side by
side in one run. Prints epoch times, their ratio (kerasish / PyTorch) and peak RSS.

    python benchmarks/bench_rnn.py [--quick] [--samples N] [--epochs E]
"""

import argparse
import resource
import time

import numpy as np


def data(samples):
    try:
        from kerasish.datasets import fashion_mnist

        (x, y), _ = fashion_mnist.load_data()
    except Exception:  # noqa: BLE001 - offline machine: same shapes, random pixels
        rng = np.random.default_rng(0)
        x, y = rng.integers(0, 256, (samples, 28, 28)), rng.integers(0, 10, samples)
    return (x[:samples] / 255.0).astype(np.float32), y[:samples].astype(np.int32)


def peak_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run_kerasish(kind, x, y, epochs):
    import kerasish

    kerasish.utils.set_random_seed(0)
    L = kerasish.layers
    rnn = L.LSTM(128) if kind == "lstm" else L.GRU(128)
    model = kerasish.Sequential([L.Input((28, 28)), rnn, L.Dense(10, activation="softmax")])
    model.compile(kerasish.optimizers.Adam(1e-3), "sparse_categorical_crossentropy")
    model.fit(x[:128], y[:128], batch_size=64, epochs=1, verbose=0)  # compile / warm up
    times = []
    for _ in range(epochs):
        t0 = time.perf_counter()
        model.fit(x, y, batch_size=64, epochs=1, verbose=0, shuffle=True)
        times.append(time.perf_counter() - t0)
    return min(times)


def run_torch(kind, x, y, epochs):
    import torch

    torch.manual_seed(0)

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            cls = torch.nn.LSTM if kind == "lstm" else torch.nn.GRU
            self.rnn = cls(28, 128, batch_first=True)
            self.fc = torch.nn.Linear(128, 10)

        def forward(self, v):
            out, _ = self.rnn(v)
            return self.fc(out[:, -1])

    net = Net()
    opt = torch.optim.Adam(net.parameters(), 1e-3, eps=1e-7)
    xt, yt = torch.from_numpy(x), torch.from_numpy(y).long()
    lossf = torch.nn.CrossEntropyLoss()
    times = []
    for _ in range(epochs + 1):
        perm = torch.randperm(len(xt))
        t0 = time.perf_counter()
        for i in range(0, len(xt), 64):
            idx = perm[i:i + 64]
            opt.zero_grad()
            loss = lossf(net(xt[idx]), yt[idx])
            loss.backward()
            opt.step()
        times.append(time.perf_counter() - t0)
    return min(times[1:])


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--quick", action="store_true", help="6400 samples, 1 timed epoch")
    p.add_argument("--samples", type=int, default=60000)
    p.add_argument("--epochs", type=int, default=2)
    a = p.parse_args()
    samples, epochs = (6400, 1) if a.quick else (a.samples, a.epochs)
    x, y = data(samples)
    for kind in ("lstm", "gru"):
        ours = run_kerasish(kind, x, y, epochs)
        theirs = run_torch(kind, x, y, epochs)
        print(f"{kind.upper()}(128) {len(x)} samples: kerasish {ours:.2f} s, PyTorch "
              f"{theirs:.2f} s, ratio {ours / theirs:.2f} (peak RSS so far {peak_mb():.0f} MB)")


if __name__ == "__main__":
    main()
