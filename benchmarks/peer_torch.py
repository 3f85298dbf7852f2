"""The PyTorch peer of the benchmarks: one fresh process, NumPy and torch only.

    python -I benchmarks/peer_torch.py RECIPE --data DIR [--epochs 2] [--threads N]
        [--seed S] [--device cpu|cuda] [--steps N] [--weights DIR] [--units U]

benchmarks/isolated.py starts it with `python -I` in a cleaned environment: it never
imports kerasish, kernels_numba or anything of this repository (its folder is not even
on sys.path), so it runs as a PyTorch user's script does. It reads its data (and, for
mlp / cnn, kerasish's initial weights already in torch's layout) from DIR/*.npy, trains
`epochs` epochs and prints one line, "@@result " + JSON: every epoch's seconds, the
timed one (`epoch_s`: the median of the epochs after the first), the final loss and
accuracy, memory, and its top-level modules and environment variable names (the harness
checks that none is ours).

Recipes (the same as the kerasish side of each benchmark):
  mlp          784-256(ReLU)-10, SGD 0.01, cross-entropy, batch 64 (benchmarks/train.py)
  cnn          Conv 32 -> MaxPool -> Conv 64 -> MaxPool -> Dense 64 -> Dense 10, Adam
  lstm, gru    LSTM(128) / GRU(128) over 28 rows of 28 -> Linear(10), Adam (bench_rnn)
  transformer  2 x TransformerEncoderLayer(128, 4 heads, ffn 512), Adam, MSE; an "epoch"
               is --steps training steps (bench_transformer)
"""

import argparse
import json
import os
import resource
import statistics
import sys
import time

import numpy as np
import torch

BATCH = 64


def _parse(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("recipe", choices=("mlp", "cnn", "lstm", "gru", "transformer"))
    p.add_argument("--data", required=True)
    p.add_argument("--weights", default=None, help="mlp/cnn: folder of p<i>.npy (default --data)")
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    p.add_argument("--steps", type=int, default=3, help="transformer: steps per epoch")
    p.add_argument("--units", type=int, default=128, help="lstm/gru units")
    p.add_argument("--lr", type=float, default=1e-3)
    return p.parse_args(argv)


def _load(args, name):
    return np.load(os.path.join(args.data, f"{name}.npy"), allow_pickle=False)


def _status_kib(field):
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def _mem_begin():
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")  # resets VmHWM to the current RSS
    except OSError:
        pass
    return _status_kib("VmRSS")


def _sync(device):
    if device == "cuda":
        torch.cuda.synchronize()


# -- recipes: each returns (epoch(e) -> (loss, acc), evaluate() -> test accuracy | None) --

def _reference(args):
    """The MLP / reference CNN with kerasish's initial weights (p0, p1, ... in order)."""
    from torch import nn

    if args.recipe == "mlp":
        net = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10))
    else:
        net = nn.Sequential(nn.Conv2d(1, 32, 3), nn.ReLU(), nn.MaxPool2d(2, 2),
                            nn.Conv2d(32, 64, 3), nn.ReLU(), nn.MaxPool2d(2, 2), nn.Flatten(),
                            nn.Linear(1600, 64), nn.ReLU(), nn.Linear(64, 10))
    with torch.no_grad():
        for i, param in enumerate(net.parameters()):
            value = torch.from_numpy(np.load(os.path.join(args.weights or args.data,
                                                          f"p{i}.npy"), allow_pickle=False))
            if value.shape != param.shape:
                raise ValueError(f"peer_torch {args.recipe}: expected p{i} of shape "
                                 f"{tuple(param.shape)}; received {tuple(value.shape)}")
            param.copy_(value)
    net = net.to(args.device)
    opt = (torch.optim.SGD(net.parameters(), lr=0.01) if args.recipe == "mlp" else
           torch.optim.Adam(net.parameters(), lr=1e-3, betas=(0.9, 0.999), eps=1e-7))

    def images(a):
        return torch.from_numpy(a if args.recipe == "mlp" else
                                np.ascontiguousarray(a.transpose(0, 3, 1, 2)))

    x, y = images(_load(args, "x")), torch.from_numpy(_load(args, "y").astype(np.int64))
    xt = images(_load(args, "xt")).to(args.device)
    yt = torch.from_numpy(_load(args, "yt").astype(np.int64)).to(args.device)
    F = torch.nn.functional

    def epoch(e):
        # the shared data order (benchmarks/train.py's epoch_order), gathered untimed
        perm = torch.from_numpy(np.random.default_rng([args.seed, e]).permutation(len(x)))
        xe, ye = x[perm].to(args.device), y[perm].to(args.device)
        net.train()
        loss_sum = torch.zeros((), device=args.device)
        correct = torch.zeros((), dtype=torch.int64, device=args.device)
        start = time.perf_counter()
        for i in range(0, len(xe), BATCH):
            xb, yb = xe[i:i + BATCH], ye[i:i + BATCH]
            opt.zero_grad(set_to_none=True)
            out = net(xb)
            loss = F.cross_entropy(out, yb)
            loss.backward()
            opt.step()
            with torch.no_grad():  # running loss and accuracy, as kerasish's fit reports
                loss_sum += loss * len(xb)
                correct += (out.argmax(1) == yb).sum()
        _sync(args.device)
        return time.perf_counter() - start, loss_sum.item() / len(xe), correct.item() / len(xe)

    def evaluate():
        net.eval()
        with torch.no_grad():
            hits = sum(int((net(xt[i:i + 256]).argmax(1) == yt[i:i + 256]).sum())
                       for i in range(0, len(xt), 256))
        return hits / len(xt)

    return epoch, evaluate


def _recurrent(args):
    torch.manual_seed(args.seed)

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            cls = torch.nn.LSTM if args.recipe == "lstm" else torch.nn.GRU
            self.rnn = cls(28, args.units, batch_first=True)
            self.fc = torch.nn.Linear(args.units, 10)

        def forward(self, v):
            out, _ = self.rnn(v)
            return self.fc(out[:, -1])

    net = Net()
    opt = torch.optim.Adam(net.parameters(), args.lr, eps=1e-7)
    xt, yt = torch.from_numpy(_load(args, "x")), torch.from_numpy(_load(args, "y")).long()
    lossf = torch.nn.CrossEntropyLoss()

    def epoch(e):
        net.train()
        perm = torch.randperm(len(xt))
        start = time.perf_counter()
        for i in range(0, len(xt), BATCH):
            idx = perm[i:i + BATCH]
            opt.zero_grad()
            loss = lossf(net(xt[idx]), yt[idx])
            loss.backward()
            opt.step()
        return time.perf_counter() - start, loss.item(), None

    return epoch, lambda: None


def _transformer(args):
    x, y = torch.from_numpy(_load(args, "x")), torch.from_numpy(_load(args, "y"))
    d, heads, ffn, layers = x.shape[2], 4, 4 * x.shape[2], 2
    torch.manual_seed(args.seed)
    layer = torch.nn.TransformerEncoderLayer(d, heads, dim_feedforward=ffn, dropout=0.0,
                                             batch_first=True)
    net = torch.nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
    opt = torch.optim.Adam(net.parameters(), 1e-4, eps=1e-7)

    def epoch(e):
        net.train()
        start = time.perf_counter()
        for _ in range(args.steps):
            opt.zero_grad()
            loss = torch.nn.functional.mse_loss(net(x), y)
            loss.backward()
            opt.step()
        return (time.perf_counter() - start) / args.steps, loss.item(), None

    return epoch, lambda: None


def main(argv=None):
    args = _parse(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    make = {"mlp": _reference, "cnn": _reference, "lstm": _recurrent, "gru": _recurrent,
            "transformer": _transformer}[args.recipe]
    epoch, evaluate = make(args)
    base = _status_kib("VmRSS")
    times, peaks, loss, acc = [], [], None, None
    for e in range(args.epochs):
        rss0 = _mem_begin()
        seconds, loss, acc = epoch(e)
        times.append(seconds)
        peaks.append((_status_kib("VmHWM") - rss0) / 1024)
    timed = statistics.median(times[1:] or times)
    result = {"framework": "torch", "torch": torch.__version__, "recipe": args.recipe,
              "epochs": times, "epoch_s": timed, "loss": loss, "acc": acc,
              "test_acc": evaluate(), "threads": torch.get_num_threads(),
              "memory_mib": {"base": base / 1024, "first_epoch_peak": peaks[0],
                             "steady_epoch_peak": max(peaks[1:] or peaks),
                             "retained": (_status_kib("VmRSS") - base) / 1024},
              "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
              "modules": sorted({name.split(".")[0] for name in sys.modules}),
              "env": sorted(os.environ)}
    sys.stdout.write("@@result " + json.dumps(result) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
