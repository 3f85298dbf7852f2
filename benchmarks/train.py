"""Train the reference models in kerasish and in PyTorch side by side; compare speed.

    python -m benchmarks.train [--model mlp|cnn|both] [--repeats 3] [--epochs 3]
        [--images N] [--threads 2] [--device cpu|cuda] [--quick] [--json FILE]
        [--no-compile-time]

Models (Fashion-MNIST, batch 64): the MLP 784-256(ReLU)-10 (SGD 0.01, cross-entropy
from logits, 60,000 images) and the reference CNN Conv2D 32 -> MaxPool -> Conv2D 64
-> MaxPool -> Flatten -> Dense 64 -> Dense 10 softmax (Adam, Keras defaults, 12,000
images). PyTorch gets the same architecture, kerasish's initial weights (HWIO -> OIHW;
the Dense after Flatten gets its rows permuted from (h, w, c) to (c, h, w) order, so
both compute the same function), the same optimizer (torch Adam with eps=1e-7: torch
adds eps to sqrt(v_hat), Keras to sqrt(v) before the bias correction, a difference of
eps*sqrt(1-beta_2^t)), the same data order (one permutation per epoch from the seed)
and batch size. The CNN's softmax + cross-entropy is torch's cross_entropy on logits.

Each framework runs in its own worker process (each keeps its threading defaults: in
one process torch's libgomp, loaded first with global symbols, also serves numba's
parallel loops and spins after them, slowing kerasish ~15x). The parent alternates
epochs between the two (who goes first alternates too), so both see the same machine
load; they never run at the same time. Epoch 0 (compilation, warm-up) is left out:
a repeat's steady-state epoch time is the median of its later epochs, and the
reported ratio is the median over repeats of kerasish/PyTorch.

Memory, per worker (Linux /proc): the resident set after imports and data loading;
what training keeps on top of it (model, optimizer state, planned buffers, compiled
code; last epoch of repeat 0); and how far the resident set peaks above its value
just before an epoch's timed loop (VmHWM reset via /proc/self/clear_refs), for the
first and for a steady epoch of repeat 0: kerasish plans its buffers in the first
step, torch allocates activations and gradients every step. First-call time: two
subprocesses with an empty then reused NUMBA_CACHE_DIR time `import kerasish` to the
end of the first CNN training step (benchmarks/cold_start.py has the per-function compile
breakdown). Profile (CPU): where one kerasish step's time goes (GEMM, im2col, col2im,
pooling, optimizer, ..., Python per step) and its GFLOP/s against the machine's float32
peak, the larger of a timed FMA loop on every thread and the best GEMM rate
(benchmarks/profile_step.py; both are printed, with the vector ISA).
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time


def _threads_from_argv(argv):
    for i, arg in enumerate(argv):
        if arg == "--threads" and i + 1 < len(argv):
            return argv[i + 1]
        if arg.startswith("--threads="):
            return arg.split("=", 1)[1]
    return "2"


if __name__ == "__main__":
    # Thread counts are read when numpy loads OpenBLAS and numba starts its pool: set
    # them before the first numpy import (benchmarks/__init__ imports nothing).
    for _var in ("NUMBA_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(_var, _threads_from_argv(sys.argv[1:]))

import numpy as np  # noqa: E402

BATCH = 64
DEFAULT_IMAGES = {"mlp": 60000, "cnn": 12000}
QUICK_IMAGES = {"mlp": 6400, "cnn": 1280}
FRAMEWORKS = ("kerasish", "torch")
_REPLY = "@@bench "  # prefix of protocol lines on a worker's stdout


def _parse(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", choices=("mlp", "cnn", "both"), default="both")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--epochs", type=int, default=3, help="per repeat; the first is warm-up")
    p.add_argument("--images", type=int, default=None,
                   help="training images (default 60000 MLP, 12000 CNN)")
    p.add_argument("--threads", type=int, default=2, help="numba, BLAS and torch threads")
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    p.add_argument("--quick", action="store_true", help="small subsets, 2 epochs, 1 repeat")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", default=None, help="also write the results here")
    p.add_argument("--no-compile-time", action="store_true")
    p.add_argument("--no-profile", action="store_true",
                   help="skip the per-step profile of kerasish (benchmarks/profile_step.py)")
    p.add_argument("--worker", choices=FRAMEWORKS, help=argparse.SUPPRESS)
    p.add_argument("--child", choices=("compile",), help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.quick:
        args.repeats, args.epochs = 1, 2
    if args.epochs < 2 or args.repeats < 1:
        p.error("--epochs must be >= 2 (the first is warm-up) and --repeats >= 1")
    return args


# -- data and models -------------------------------------------------------------------

def load_data(kind, images):
    from kerasish.datasets import fashion_mnist

    (x, y), (xt, yt) = fashion_mnist.load_data()
    x, y = x[:images], y[:images]
    shape = (-1, 784) if kind == "mlp" else (-1, 28, 28, 1)
    prep = lambda a: (a.astype(np.float32) / np.float32(255)).reshape(shape)  # noqa: E731
    return prep(x), y.astype(np.int64), prep(xt), yt.astype(np.int64)


def epoch_order(seed, epoch, n):
    """The shared data order of one epoch."""
    return np.random.default_rng([seed, epoch]).permutation(n)


def kerasish_model(kind, seed, device):
    from kerasish import config, layers, losses, models, optimizers
    from kerasish.utils import set_random_seed

    config.set_device(device)
    set_random_seed(seed)
    if kind == "mlp":
        model = models.Sequential([layers.Dense(256, activation="relu", input_shape=(784,)),
                                   layers.Dense(10)])
        model.compile(optimizer=optimizers.SGD(learning_rate=0.01),
                      loss=losses.SparseCategoricalCrossentropy(from_logits=True),
                      metrics=["accuracy"])
        return model
    model = models.Sequential([
        layers.Conv2D(32, (3, 3), activation="relu", input_shape=(28, 28, 1)),
        layers.MaxPooling2D((2, 2)),
        layers.Conv2D(64, (3, 3), activation="relu"),
        layers.MaxPooling2D((2, 2)),
        layers.Flatten(),
        layers.Dense(64, activation="relu"),
        layers.Dense(10, activation="softmax"),
    ])
    model.compile(optimizer=optimizers.Adam(), loss="sparse_categorical_crossentropy",
                  metrics=["accuracy"])
    return model


def _checksum(arrays):
    return float(sum(np.abs(np.asarray(a, np.float64)).sum() for a in arrays))


def torch_twin(kind, kmodel, device):
    """The same network in torch (logits out), initialised with kmodel's weights."""
    import torch
    from torch import nn

    mods, hwc = [], None
    for layer in kmodel.layers:
        name = type(layer).__name__
        if name == "Conv2D":
            k = layer.kernel.numpy()
            conv = nn.Conv2d(k.shape[2], k.shape[3], k.shape[:2])
            conv.weight.data = torch.from_numpy(k.transpose(3, 2, 0, 1).copy())  # HWIO->OIHW
            conv.bias.data = torch.from_numpy(layer.bias.numpy())
            mods += [conv, nn.ReLU()]
            hwc = layer.output_shape[1:]
        elif name == "MaxPooling2D":
            mods.append(nn.MaxPool2d(layer.pool_size, layer.strides))
            hwc = layer.output_shape[1:]
        elif name == "Flatten":
            mods.append(nn.Flatten())
        elif name == "Dense":
            k = layer.kernel.numpy()
            if hwc is not None:  # rows of the first Dense: kerasish (h, w, c) -> torch (c, h, w)
                k = k.reshape(*hwc, -1).transpose(2, 0, 1, 3).reshape(k.shape)
                hwc = None
            lin = nn.Linear(*k.shape)
            lin.weight.data = torch.from_numpy(np.ascontiguousarray(k.T))
            lin.bias.data = torch.from_numpy(layer.bias.numpy())
            mods.append(lin)
            if layer.activation == "relu":
                mods.append(nn.ReLU())
        else:
            raise ValueError(f"torch_twin: no torch equivalent for layer {name}")
    model = nn.Sequential(*mods).to(device)
    if kind == "mlp":
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
    else:
        opt = torch.optim.Adam(model.parameters(), lr=1e-3, betas=(0.9, 0.999), eps=1e-7)
    return model, opt


# -- workers: one process per framework ------------------------------------------------

def _status_kib(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def _mem_begin():
    """RSS (KiB) just before a timed loop, with the high-water mark reset to it."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass
    return _status_kib("VmRSS")


def _mem_end(rss0):
    """MiB the loop's resident set peaked above rss0 (transient + newly kept memory)."""
    return (_status_kib("VmHWM") - rss0) / 1024


class KerasishRunner:
    def __init__(self, kind, device, x, y, xt, yt):
        self.kind, self.device, self.data = kind, device, (x, y, xt, yt)
        self.model = None

    def init(self, seed):
        self.model = kerasish_model(self.kind, seed, self.device)
        return _checksum(self.model.get_weights())

    def epoch(self, seed, epoch):
        x, y = self.data[0], self.data[1]
        perm = epoch_order(seed, epoch, len(x))
        xe, ye = x[perm], y[perm]
        rss0 = _mem_begin()
        start = time.perf_counter()
        hist = self.model.fit(xe, ye, batch_size=BATCH, epochs=1, shuffle=False, verbose=0)
        if self.device == "cuda":
            import kernels_numba

            kernels_numba.synchronize()
        elapsed = time.perf_counter() - start
        return elapsed, hist.history["loss"][-1], hist.history["accuracy"][-1], _mem_end(rss0)

    def evaluate(self):
        return float(self.model.evaluate(self.data[2], self.data[3], batch_size=256, verbose=0)[1])

    def profile(self):
        """Where a CPU step's time goes, and its GFLOP/s against the machine's peak (the
        larger of a timed FMA loop and the best GEMM rate: profile_step.peak)."""
        from benchmarks import profile_step

        before = profile_step.peak()
        res = profile_step.profile(self.model, self.data[0][:BATCH], self.data[1][:BATCH])
        res["flops"] = profile_step.step_flops(self.model, BATCH)
        res["peak"] = profile_step.peak(earlier=before)
        res["peak_gflops"] = res["peak"]["gflops"]
        return res

    def launches(self):
        """Kernel launches in one training step (kernels_numba.record_launches)."""
        return launches_per_step(self.model, self.data[0][:BATCH], self.data[1][:BATCH])


def launches_per_step(model, x, y, warmup=2):
    """Kernel launches of one `train_on_batch` after `warmup` steps, i.e. of a replayed
    launch plan as fit runs it: counted by kernels_numba.record_launches, which replay
    honours (a replayed step calls the kernels directly, not each module's `launch`)."""
    import kernels_numba

    for _ in range(warmup):
        model.train_on_batch(x, y)
    with kernels_numba.record_launches() as calls:
        model.train_on_batch(x, y)
    return len(calls)


class TorchRunner:
    def __init__(self, kind, device, x, y, xt, yt):
        import torch

        self.kind, self.device = kind, device
        self.x = self._inputs(x)  # NCHW once; each epoch gathers its order outside timing
        self.y = torch.from_numpy(y)
        self.xt, self.yt = self._inputs(xt).to(device), torch.from_numpy(yt).to(device)
        self.model = self.opt = None

    def _inputs(self, x):
        import torch

        return torch.from_numpy(x if self.kind == "mlp" else
                                np.ascontiguousarray(x.transpose(0, 3, 1, 2)))

    def init(self, seed):
        kmodel = kerasish_model(self.kind, seed, "cpu")  # same seed: same initial weights
        self.model, self.opt = torch_twin(self.kind, kmodel, self.device)
        return _checksum(kmodel.get_weights())

    def _sync(self):
        if self.device == "cuda":
            import torch

            torch.cuda.synchronize()

    def epoch(self, seed, epoch):
        import torch
        import torch.nn.functional as F

        perm = torch.from_numpy(epoch_order(seed, epoch, len(self.x)))
        x, y = self.x[perm].to(self.device), self.y[perm].to(self.device)
        model, opt = self.model, self.opt
        model.train()
        loss_sum = torch.zeros((), device=self.device)
        correct = torch.zeros((), dtype=torch.int64, device=self.device)
        rss0 = _mem_begin()
        start = time.perf_counter()
        for i in range(0, len(x), BATCH):
            xb, yb = x[i:i + BATCH], y[i:i + BATCH]
            opt.zero_grad(set_to_none=True)
            out = model(xb)
            loss = F.cross_entropy(out, yb)
            loss.backward()
            opt.step()
            with torch.no_grad():  # running loss and accuracy, as kerasish's fit reports
                loss_sum += loss * len(xb)
                correct += (out.argmax(1) == yb).sum()
        self._sync()
        elapsed = time.perf_counter() - start
        return elapsed, loss_sum.item() / len(x), correct.item() / len(x), _mem_end(rss0)

    def evaluate(self):
        import torch

        self.model.eval()
        with torch.no_grad():
            hits = sum(int((self.model(self.xt[i:i + 256]).argmax(1) ==
                            self.yt[i:i + 256]).sum()) for i in range(0, len(self.xt), 256))
        return hits / len(self.xt)

    def launches(self):
        """CUDA kernels in one forward + backward + step (torch.profiler)."""
        import torch.nn.functional as F
        from torch.profiler import ProfilerActivity, profile

        xb, yb = self.x[:BATCH].to(self.device), self.y[:BATCH].to(self.device)
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            self.opt.zero_grad(set_to_none=True)
            F.cross_entropy(self.model(xb), yb).backward()
            self.opt.step()
            self._sync()
        return sum(1 for e in prof.events() if str(e.device_type).endswith("CUDA"))


def worker_main(args, images):
    """Serve JSON commands on stdin: init, epoch, evaluate, launches, quit."""
    if args.worker == "torch":
        import torch  # before kerasish: torch's libgomp keeps its own defaults

        torch.set_num_threads(args.threads)
    x, y, xt, yt = load_data(args.model, images)
    runner = (KerasishRunner if args.worker == "kerasish" else TorchRunner)(
        args.model, args.device, x, y, xt, yt)
    base = _status_kib("VmRSS")

    def reply(**kw):
        sys.stdout.write(_REPLY + json.dumps(kw) + "\n")
        sys.stdout.flush()

    reply(ready=True, base_mib=base / 1024, threads=_thread_info())
    for line in sys.stdin:
        cmd = json.loads(line)
        op = cmd.pop("op")
        if op == "quit":
            return 0
        if op == "epoch":
            t, loss, acc, peak = runner.epoch(**cmd)
            reply(time=t, loss=loss, acc=acc, peak_mib=peak,
                  retained_mib=(_status_kib("VmRSS") - base) / 1024)
        else:
            reply(value=getattr(runner, op)(**cmd))
    return 0


def _thread_info():
    import numba

    return {"numba": numba.config.NUMBA_NUM_THREADS,
            "OPENBLAS_NUM_THREADS": os.environ.get("OPENBLAS_NUM_THREADS")}


class Worker:
    """Parent side of a worker process."""

    def __init__(self, framework, kind, images, args):
        cmd = [sys.executable, "-m", "benchmarks.train", "--worker", framework,
               "--model", kind, "--images", str(images), "--threads", str(args.threads),
               "--device", args.device, "--epochs", str(args.epochs)]
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        self.proc = subprocess.Popen(cmd, cwd=root, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, bufsize=1)
        self.hello = self._read()

    def _read(self):
        for line in self.proc.stdout:
            if line.startswith(_REPLY):
                return json.loads(line[len(_REPLY):])
        raise RuntimeError(f"benchmark worker exited with {self.proc.wait()}")

    def call(self, op, **kw):
        self.proc.stdin.write(json.dumps({"op": op, **kw}) + "\n")
        self.proc.stdin.flush()
        return self._read()

    def close(self):
        if self.proc.poll() is None:
            self.proc.stdin.write(json.dumps({"op": "quit"}) + "\n")
            self.proc.stdin.flush()
            self.proc.wait(timeout=60)


# -- the alternating comparison ----------------------------------------------------------

def compare(kind, args, images):
    workers = {fw: Worker(fw, kind, images, args) for fw in FRAMEWORKS}
    try:
        repeats = []
        for r in range(args.repeats):
            seed = args.seed + r
            sums = {fw: w.call("init", seed=seed)["value"] for fw, w in workers.items()}
            if not np.isclose(sums["kerasish"], sums["torch"], rtol=1e-6):
                raise RuntimeError(f"initial weights differ between the workers: {sums}")
            rec = {fw: [] for fw in FRAMEWORKS}
            for epoch in range(args.epochs):
                order = FRAMEWORKS if (epoch + r) % 2 == 0 else FRAMEWORKS[::-1]
                for fw in order:
                    rec[fw].append(workers[fw].call("epoch", seed=seed, epoch=epoch))
                print(f"  {kind} repeat {r} epoch {epoch}: " + ", ".join(
                    f"{fw} {rec[fw][-1]['time']:.2f} s" for fw in FRAMEWORKS), flush=True)
            for fw in FRAMEWORKS:
                rec[fw + "_test_acc"] = workers[fw].call("evaluate")["value"]
            if args.device == "cuda" and r == 0:
                rec["launches"] = {fw: workers[fw].call("launches")["value"] for fw in FRAMEWORKS}
            repeats.append(rec)
        hello = {fw: w.hello for fw, w in workers.items()}
        prof = None
        if args.device == "cpu" and not args.no_profile:
            prof = workers["kerasish"].call("profile")["value"]
    finally:
        for w in workers.values():
            w.close()
    out = summarize(kind, repeats, images, hello, args)
    out["profile"] = prof
    return out


def summarize(kind, repeats, n_images, hello, args):
    steps = -(-n_images // BATCH)
    out = {"model": kind, "images": n_images, "batch": BATCH, "epochs": args.epochs,
           "repeats": args.repeats, "threads": args.threads, "device": args.device,
           "launches_per_step": repeats[0].get("launches")}
    steady = {}
    for fw in FRAMEWORKS:
        steady[fw] = [float(np.median([e["time"] for e in r[fw][1:]])) for r in repeats]
        first = repeats[0][fw]
        out[fw] = {
            "epoch_s": float(np.median(steady[fw])),
            "ms_per_step": 1e3 * float(np.median(steady[fw])) / steps,
            "first_epoch_s": float(np.median([r[fw][0]["time"] for r in repeats])),
            "epoch_times": [[e["time"] for e in r[fw]] for r in repeats],
            "test_acc": [r[fw + "_test_acc"] for r in repeats],
            "final_train": [(r[fw][-1]["loss"], r[fw][-1]["acc"]) for r in repeats],
            "memory_mib": {"base": hello[fw]["base_mib"], "first_epoch_peak": first[0]["peak_mib"],
                           "steady_epoch_peak": max(e["peak_mib"] for e in first[1:]),
                           "retained": first[-1]["retained_mib"]},
            "threads": hello[fw]["threads"],
        }
    ratios = [k / t for k, t in zip(steady["kerasish"], steady["torch"])]
    out["ratio_median"], out["ratios"] = float(np.median(ratios)), ratios
    out["test_acc_gap_points"] = 100 * float(np.mean(out["kerasish"]["test_acc"]) -
                                             np.mean(out["torch"]["test_acc"]))
    return out


# -- first-call compile time -------------------------------------------------------------

def compile_child(args):
    """Seconds from `import kerasish` to the end of the first CNN training step."""
    t0 = time.perf_counter()
    import kerasish  # noqa: F401

    t_import = time.perf_counter() - t0
    km = kerasish_model("cnn", 0, args.device)
    rng = np.random.default_rng(0)
    x = rng.random((BATCH, 28, 28, 1), dtype=np.float32)
    y = rng.integers(0, 10, BATCH)
    km.train_on_batch(x, y)
    t_first = time.perf_counter() - t0
    t1 = time.perf_counter()
    km.train_on_batch(x, y)
    print(json.dumps({"import_s": t_import, "first_step_s": t_first,
                      "second_step_s": time.perf_counter() - t1}))


def compile_time(args):
    cmd = [sys.executable, "-m", "benchmarks.train", "--child", "compile",
           "--threads", str(args.threads), "--device", args.device]
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = {}
    with tempfile.TemporaryDirectory(prefix="kerasish-numba-cache-") as cache:
        for kind in ("cold", "warm"):
            run = subprocess.run(cmd, capture_output=True, text=True, cwd=root, check=False,
                                 env={**os.environ, "NUMBA_CACHE_DIR": cache})
            if run.returncode != 0:
                raise RuntimeError(f"{' '.join(cmd)} failed:\n{run.stderr[-2000:]}")
            out[kind] = json.loads(run.stdout.strip().splitlines()[-1])
    return out


# -- report ------------------------------------------------------------------------------

def report(results, args):
    load = os.getloadavg()
    print(f"\nbatch {BATCH}, {args.threads} threads, device {args.device}, load average "
          f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f} (at the end)")
    for res in results["models"]:
        print(f"\n{res['model'].upper()}: {res['images']} Fashion-MNIST images, "
              f"{res['epochs']} epochs x {res['repeats']} repeats (epoch 0 excluded)")
        print(f"  {'':9s} {'epoch s':>8s} {'ms/step':>8s} {'1st epoch s':>11s} "
              f"{'test acc':>9s} {'final train loss/acc':>21s}")
        for fw in FRAMEWORKS:
            r = res[fw]
            tl, ta = r["final_train"][0]
            print(f"  {fw:9s} {r['epoch_s']:8.3f} {r['ms_per_step']:8.2f} "
                  f"{r['first_epoch_s']:11.2f} {100 * np.mean(r['test_acc']):8.2f}% "
                  f"{tl:12.4f} / {ta:.4f}")
        ratios = " ".join(f"{x:.2f}" for x in res["ratios"])
        flag = "" if abs(res["test_acc_gap_points"]) <= 0.5 else "  <-- more than 0.5 points"
        print(f"  ratio kerasish/torch: {res['ratio_median']:.2f} (per repeat: {ratios}); "
              f"test accuracy gap {res['test_acc_gap_points']:+.2f} points{flag}")
        for fw in FRAMEWORKS:
            m = res[fw]["memory_mib"]
            print(f"  memory {fw:8s}: RSS {m['base']:.0f} MiB after imports+data, "
                  f"+{m['retained']:.1f} MiB kept after training; peak during an epoch's "
                  f"loop +{m['first_epoch_peak']:.1f} MiB (first), "
                  f"+{m['steady_epoch_peak']:.1f} MiB (steady)")
        if res.get("profile"):
            from benchmarks import profile_step

            prof = res["profile"]
            print(f"  kerasish step profile (fit over copies of one batch, {args.threads} threads; "
                  f"each bucket its best of 3 passes; {profile_step.describe_peak(prof['peak'])}):")
            profile_step.report(prof, prof["flops"], prof["peak_gflops"])
        if res.get("launches_per_step"):
            print(f"  kernel launches per training step: {res['launches_per_step']}")
    comp = results.get("compile")
    if comp:
        for kind in ("cold", "warm"):
            c = comp[kind]
            print(f"first CNN step ({kind} numba cache): {c['first_step_s']:.2f} s from "
                  f"`import kerasish` (import {c['import_s']:.2f} s; next step "
                  f"{1e3 * c['second_step_s']:.1f} ms)")
    # one line for scripts/gpu_check.sh's summary
    print("RESULT " + "; ".join(
        f"{res['model'].upper()} {res['images']} images on {args.device}: "
        f"{res['kerasish']['ms_per_step']:.2f} vs torch {res['torch']['ms_per_step']:.2f} "
        f"ms/step (ratio {res['ratio_median']:.2f}), test acc "
        f"{100 * np.mean(res['kerasish']['test_acc']):.1f}% vs "
        f"{100 * np.mean(res['torch']['test_acc']):.1f}%" for res in results["models"]))


def main(argv=None):
    args = _parse(argv)
    kinds = ("mlp", "cnn") if args.model == "both" else (args.model,)
    if args.child == "compile":
        return compile_child(args)
    if args.worker:
        return worker_main(args, args.images)
    results = {"command": " ".join(["python -m benchmarks.train", *(argv or sys.argv[1:])]),
               "models": []}
    for kind in kinds:
        images = args.images or (QUICK_IMAGES if args.quick else DEFAULT_IMAGES)[kind]
        print(f"{kind}: training kerasish and torch alternately on {images} images", flush=True)
        results["models"].append(compare(kind, args, images))
    if not args.no_compile_time:
        results["compile"] = compile_time(args)
    results["load_average_end"] = os.getloadavg()
    report(results, args)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
