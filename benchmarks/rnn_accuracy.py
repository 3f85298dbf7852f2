"""Test accuracy of the row-sequential Fashion-MNIST recipe (LSTM(128) -> Dense(10), batch
64, Adam 1e-3, 3 epochs), kerasish vs PyTorch CPU on the same seeds; prints each run,
both means and their difference (the target: within 0.01).

    python -m benchmarks.rnn_accuracy --seeds 0-4 [--epochs 3] [--kinds lstm,gru]
        [--samples N] [--out results.json]

Each framework initialises its own way (Keras: glorot_uniform kernel, orthogonal
recurrent kernel, unit forget bias; PyTorch: uniform +-1/sqrt(units)); the seed fixes
the initialisation and the shuffling of each. Every run is its own process (the two
frameworks' thread pools never share one).
"""

import argparse
import json
import multiprocessing as mp
import queue as queue_module
import statistics
import time

import numpy as np

from benchmarks.bench_rnn import BATCH, UNITS, kerasish_trainer


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


def load(samples):
    from kerasish.datasets import fashion_mnist

    (x, y), (xt, yt) = fashion_mnist.load_data()
    scale = (lambda a: (a / 255.0).astype(np.float32))
    return scale(x[:samples]), y[:samples].astype(np.int32), scale(xt), yt.astype(np.int32)


def kerasish_accuracy(kind, seed, epochs, x, y, xt, yt):
    model, epoch = kerasish_trainer(kind, x, y, seed=seed)
    for _ in range(epochs):
        epoch()
    pred = model.predict(xt, batch_size=256, verbose=0)
    return float((np.argmax(pred, axis=1) == yt).mean())


def torch_accuracy(kind, seed, epochs, x, y, xt, yt):
    import torch

    net, epoch = torch_trainer(kind, x, y, seed=seed)
    for _ in range(epochs):
        epoch()
    net.eval()
    with torch.no_grad():
        logits = torch.cat([net(torch.from_numpy(xt[i:i + 256])) for i in range(0, len(xt), 256)])
    return float((logits.argmax(1).numpy() == yt).mean())


def _run(framework, kind, seed, epochs, samples, queue):
    fn = kerasish_accuracy if framework == "kerasish" else torch_accuracy
    queue.put(fn(kind, seed, epochs, *load(samples)))


def accuracy(framework, kind, seed, epochs, samples):
    """Test accuracy of one run, in a fresh process."""
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    proc = ctx.Process(target=_run, args=(framework, kind, seed, epochs, samples, queue))
    proc.start()
    while True:
        try:
            acc = queue.get(timeout=10)
            break
        except queue_module.Empty:
            if not proc.is_alive():
                raise RuntimeError(f"rnn_accuracy: the {framework} run (seed {seed}) exited "
                                   f"with code {proc.exitcode}") from None
    proc.join()
    return acc


def seeds_arg(text):
    """'0-4' or '0,2,5' -> list of ints."""
    if "-" in text:
        lo, hi = text.split("-")
        return list(range(int(lo), int(hi) + 1))
    return [int(v) for v in text.split(",")]


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", type=seeds_arg, default=seeds_arg("0-4"))
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--kinds", default="lstm")
    p.add_argument("--samples", type=int, default=60000)
    p.add_argument("--out", help="write the results as JSON here too")
    a = p.parse_args()
    results = {}
    for kind in a.kinds.split(","):
        runs = {"kerasish": [], "torch": []}
        for seed in a.seeds:
            for name in ("kerasish", "torch"):
                t0 = time.perf_counter()
                acc = accuracy(name, kind, seed, a.epochs, a.samples)
                runs[name].append(acc)
                print(f"{kind} seed {seed} {name}: test accuracy {acc:.4f} "
                      f"({time.perf_counter() - t0:.0f} s)", flush=True)
        means = {k: statistics.mean(v) for k, v in runs.items()}
        diff = means["kerasish"] - means["torch"]
        results[kind] = {"seeds": a.seeds, "epochs": a.epochs, "batch": BATCH, **runs,
                         "mean": means, "difference": diff}
        print(f"{kind.upper()}: mean test accuracy over seeds {a.seeds}: kerasish "
              f"{means['kerasish']:.4f}, PyTorch {means['torch']:.4f}, difference "
              f"{diff:+.4f} ({'within' if abs(diff) <= 0.01 else 'NOT within'} 0.01)",
              flush=True)
    if a.out:
        with open(a.out, "w") as f:
            json.dump(results, f, indent=2)


if __name__ == "__main__":
    main()
