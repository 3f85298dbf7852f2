"""Train the reference models in kerasish and in PyTorch side by side; compare speed.

    python -m benchmarks.train [--model mlp|cnn|both] [--repeats 3] [--epochs 2]
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

On the isolated harness (benchmarks/isolated.py): the images (and, for PyTorch,
kerasish's initial weights in torch's layout) are written as .npy files; every repeat
is a pair of fresh processes, kerasish (`--worker kerasish`) and PyTorch
(benchmarks/peer_torch.py under `python -I`: NumPy and torch only, none of our
environment variables), the order flipping every pair, never at the same time. Each
process trains --epochs epochs (default 2); the first (compilation, warm-up) is left
out and the median of the others is its epoch time (with 2, the second epoch). The
reported ratio is the median over pairs of kerasish/PyTorch; the CPU model and ISA are
printed with it.

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

from benchmarks import isolated


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
NAMES = {"kerasish": "kerasish", "torch": "PyTorch"}  # the harness's names


def _parse(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", choices=("mlp", "cnn", "both"), default="both")
    p.add_argument("--repeats", type=int, default=3,
                   help="fresh-process pairs (kerasish, PyTorch), at least 3")
    p.add_argument("--epochs", type=int, default=2,
                   help="per process; the first is warm-up (2: the second is timed)")
    p.add_argument("--images", type=int, default=None,
                   help="training images (default 60000 MLP, 12000 CNN)")
    p.add_argument("--threads", type=int, default=2, help="numba, BLAS and torch threads")
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    p.add_argument("--quick", action="store_true", help="small subsets, 2 epochs, 3 pairs")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", default=None, help="also write the results here")
    p.add_argument("--no-compile-time", action="store_true")
    p.add_argument("--no-profile", action="store_true",
                   help="skip the per-step profile of kerasish (benchmarks/profile_step.py)")
    p.add_argument("--worker", choices=("kerasish", "profile"), help=argparse.SUPPRESS)
    p.add_argument("--data", help=argparse.SUPPRESS)
    p.add_argument("--child", choices=("compile",), help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.quick:
        args.repeats, args.epochs = isolated.MIN_PAIRS, 2
    if args.epochs < 2 or args.repeats < isolated.MIN_PAIRS:
        p.error(f"--epochs must be >= 2 (the first is warm-up) and --repeats >= "
                f"{isolated.MIN_PAIRS}")
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


def torch_layout(kmodel):
    """kmodel's weights in torch's parameter order and layout, as NumPy arrays (the peer,
    benchmarks/peer_torch.py, builds the same network and loads them): conv kernels
    HWIO -> OIHW, dense kernels transposed, and the rows of the Dense after Flatten
    permuted from kerasish's (h, w, c) order to torch's (c, h, w)."""
    out, hwc = [], None
    for layer in kmodel.layers:
        name = type(layer).__name__
        if name == "Conv2D":
            out += [layer.kernel.numpy().transpose(3, 2, 0, 1), layer.bias.numpy()]
            hwc = layer.output_shape[1:]
        elif name == "MaxPooling2D":
            hwc = layer.output_shape[1:]
        elif name == "Dense":
            k = layer.kernel.numpy()
            if hwc is not None:
                k = k.reshape(*hwc, -1).transpose(2, 0, 1, 3).reshape(k.shape)
                hwc = None
            out += [k.T, layer.bias.numpy()]
        elif name != "Flatten":
            raise ValueError(f"torch_layout: no torch equivalent for layer {name}")
    return [np.ascontiguousarray(a, np.float32) for a in out]


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


def worker_main(args):
    """A fresh kerasish process: one repeat (init from --seed, --epochs epochs, the test
    accuracy), or the step profile; one result line."""
    import numba

    data = [np.load(os.path.join(args.data, f"{n}.npy")) for n in ("x", "y", "xt", "yt")]
    runner = KerasishRunner(args.model, args.device, *data)
    base = _status_kib("VmRSS")
    checksum = runner.init(args.seed)
    if args.worker == "profile":
        isolated.reply(profile=runner.profile())
        return 0
    rec = [runner.epoch(args.seed, e) for e in range(args.epochs)]
    times = [r[0] for r in rec]
    result = {"framework": "kerasish", "epochs": times,
              "epoch_s": float(np.median(times[1:])), "loss": rec[-1][1], "acc": rec[-1][2],
              "test_acc": runner.evaluate(), "checksum": checksum,
              "memory_mib": {"base": base / 1024, "first_epoch_peak": rec[0][3],
                             "steady_epoch_peak": max(r[3] for r in rec[1:]),
                             "retained": (_status_kib("VmRSS") - base) / 1024},
              "threads": {"numba": numba.config.NUMBA_NUM_THREADS,
                          "OPENBLAS_NUM_THREADS": os.environ.get("OPENBLAS_NUM_THREADS")}}
    if args.device == "cuda":
        result["launches"] = runner.launches()
    isolated.reply(**result)
    return 0


# -- the alternating comparison ----------------------------------------------------------

def _prepare(kind, args, images, tmp):
    """The data for both sides, and for each repeat's seed kerasish's initial weights in
    torch's layout (tmp/seed<S>/p<i>.npy); returns {seed: checksum of those weights}."""
    x, y, xt, yt = load_data(kind, images)
    isolated.write_arrays(tmp, x=x, y=y, xt=xt, yt=yt)
    sums = {}
    for r in range(args.repeats):
        seed = args.seed + r
        kmodel = kerasish_model(kind, seed, "cpu")
        sums[seed] = _checksum(kmodel.get_weights())
        params = torch_layout(kmodel)
        isolated.write_arrays(os.path.join(tmp, f"seed{seed}"),
                              **{f"p{i}": a for i, a in enumerate(params)})
    return sums


def compare(kind, args, images):
    with tempfile.TemporaryDirectory(prefix="bench-train-") as tmp:
        sums = _prepare(kind, args, images, tmp)

        def ours(i):
            cmd = [sys.executable, "-m", "benchmarks.train", "--worker", "kerasish", "--model",
                   kind, "--data", tmp, "--seed", str(args.seed + i), "--threads",
                   str(args.threads), "--device", args.device, "--epochs", str(args.epochs)]
            return cmd, isolated.our_env(), False

        def peer(i):
            seed = args.seed + i
            cmd = isolated.peer_command(kind, tmp, weights=os.path.join(tmp, f"seed{seed}"),
                                        seed=seed, epochs=args.epochs, threads=args.threads,
                                        device=args.device)
            return cmd, isolated.peer_env(), True

        def progress(i, name, res):
            if name == "kerasish" and abs(res["checksum"] - sums[args.seed + i]) > \
                    1e-6 * abs(sums[args.seed + i]):
                raise RuntimeError(f"kerasish's initial weights differ from the ones given "
                                   f"to PyTorch: {res['checksum']} vs {sums[args.seed + i]}")
            print(f"  {kind} pair {i} {name}: epochs " +
                  " ".join(f"{t:.2f}" for t in res["epochs"]) + " s", flush=True)

        res = isolated.alternate({"kerasish": ours, "PyTorch": peer}, args.repeats,
                                 on_result=progress)
        prof = None
        if args.device == "cpu" and not args.no_profile:
            cmd = ours(0)[0]
            cmd[cmd.index("--worker") + 1] = "profile"
            prof = isolated.run(cmd, isolated.our_env())["profile"]
    out = summarize(kind, res, images, args)
    out["profile"] = prof
    return out


def summarize(kind, res, n_images, args):
    steps = -(-n_images // BATCH)
    out = {"model": kind, "images": n_images, "batch": BATCH, "epochs": args.epochs,
           "repeats": args.repeats, "threads": args.threads, "device": args.device,
           "machine": res["machine"], "harness": "benchmarks/isolated.py",
           "launches_per_step": None}
    for fw in FRAMEWORKS:
        runs = res["results"][NAMES[fw]]
        steady = [r["epoch_s"] for r in runs]
        first = runs[0]
        out[fw] = {
            "epoch_s": float(np.median(steady)),
            "ms_per_step": 1e3 * float(np.median(steady)) / steps,
            "first_epoch_s": float(np.median([r["epochs"][0] for r in runs])),
            "epoch_times": [r["epochs"] for r in runs],
            "test_acc": [r["test_acc"] for r in runs],
            "final_train": [(r["loss"], r["acc"]) for r in runs],
            "memory_mib": first["memory_mib"],
            "threads": first["threads"],
        }
        if "launches" in first:
            out["launches_per_step"] = {**(out["launches_per_step"] or {}),
                                        fw: first["launches"]}
    out["ratios"] = res["pair_ratios"]
    out["ratio_median"] = float(np.median(res["pair_ratios"]))
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
    print(f"\nbatch {BATCH}, {args.threads} threads, device {args.device}, CPU "
          f"{isolated.machine()}, load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} "
          f"(at the end); each epoch time from a fresh process (benchmarks/isolated.py)")
    for res in results["models"]:
        print(f"\n{res['model'].upper()}: {res['images']} Fashion-MNIST images, "
              f"{res['repeats']} fresh-process pairs of {res['epochs']} epochs (epoch 0 "
              f"excluded); CPU {res['machine']}")
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
        print(f"  ratio kerasish/torch: {res['ratio_median']:.2f} (per pair: {ratios}); "
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
        return worker_main(args)
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
