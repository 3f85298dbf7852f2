"""Train the reference models in kerasish and in PyTorch side by side; compare speed.

    python -m benchmarks.train [--model mlp|cnn|both] [--repeats 3] [--epochs 3]
        [--images N] [--threads 2] [--device cpu|cuda] [--quick] [--json FILE]
        [--no-memory] [--no-compile-time]

Models (Fashion-MNIST, batch 64): the MLP 784-256(ReLU)-10 (SGD 0.01, cross-entropy
from logits, 60,000 images) and the reference CNN Conv2D 32 -> MaxPool -> Conv2D 64
-> MaxPool -> Flatten -> Dense 64 -> Dense 10 softmax (Adam, Keras defaults, 12,000
images). PyTorch gets the same architecture, kerasish's initial weights (HWIO -> OIHW;
the Dense after Flatten gets its rows permuted from (h, w, c) to (c, h, w) order, so
both compute the same function), the same optimizer (torch Adam with eps=1e-7: torch
adds eps to sqrt(v_hat), Keras to sqrt(v) before the bias correction, a difference of
eps*sqrt(1-beta_2^t)), the same data order (one permutation per epoch, shared) and
batch size. The CNN's softmax + cross-entropy is torch's cross_entropy on the logits.

Each repeat builds fresh models and trains them epoch by epoch, alternating the
frameworks (who goes first alternates too). Epoch 0 (compilation, warm-up) is left
out; the steady-state epoch time of a repeat is the median of its later epochs, and
the reported ratio is the median over repeats of kerasish/PyTorch.

Memory runs in one subprocess per framework and model (one epoch): the growth of the
resident set high-water mark (VmHWM) over the RSS after imports and data loading, for
the first step (model buffers, compilation) and for the steady epoch after resetting
the mark (/proc/self/clear_refs). First-call time runs two subprocesses with an empty
then reused NUMBA_CACHE_DIR: `import kerasish` to the end of the first CNN step.

torch is imported before kerasish: kernels_numba sets OMP_WAIT_POLICY=PASSIVE for
numba's OpenMP pool, and torch's own libgomp must keep its default (spinning) policy.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

BATCH = 64
DEFAULT_IMAGES = {"mlp": 60000, "cnn": 12000}
QUICK_IMAGES = {"mlp": 6400, "cnn": 1280}


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
    p.add_argument("--no-memory", action="store_true")
    p.add_argument("--no-compile-time", action="store_true")
    p.add_argument("--child", choices=("memory", "compile"), help=argparse.SUPPRESS)
    p.add_argument("--framework", choices=("kerasish", "torch"), help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.quick:
        args.repeats, args.epochs = 1, 2
    if args.epochs < 2 or args.repeats < 1:
        p.error("--epochs must be >= 2 (the first is warm-up) and --repeats >= 1")
    return args


def _set_threads(n):
    # Before numpy/numba start their pools.
    for var in ("NUMBA_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(var, str(n))


# -- data and models -------------------------------------------------------------------

def load_data(kind, images):
    from kerasish.datasets import fashion_mnist

    (x, y), (xt, yt) = fashion_mnist.load_data()
    x, y = x[:images], y[:images]
    shape = (-1, 784) if kind == "mlp" else (-1, 28, 28, 1)
    prep = lambda a: (a.astype(np.float32) / np.float32(255)).reshape(shape)  # noqa: E731
    return prep(x), y.astype(np.int64), prep(xt), yt.astype(np.int64)


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


def _sync(device):
    if device == "cuda":
        import torch

        import kernels_numba

        torch.cuda.synchronize()
        kernels_numba.synchronize()


def kerasish_epoch(model, x, y, device):
    start = time.perf_counter()
    hist = model.fit(x, y, batch_size=BATCH, epochs=1, shuffle=False, verbose=0)
    _sync(device)
    return time.perf_counter() - start, hist.history["loss"][-1], hist.history["accuracy"][-1]


def torch_epoch(model, opt, x, y, device):
    import torch
    import torch.nn.functional as F

    model.train()
    loss_sum = torch.zeros((), device=device)
    correct = torch.zeros((), dtype=torch.int64, device=device)
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
    _sync(device)
    elapsed = time.perf_counter() - start
    return elapsed, loss_sum.item() / len(x), correct.item() / len(x)


def torch_accuracy(model, x, y):
    import torch

    model.eval()
    with torch.no_grad():
        hits = sum(int((model(x[i:i + 256]).argmax(1) == y[i:i + 256]).sum())
                   for i in range(0, len(x), 256))
    return hits / len(x)


def _torch_inputs(kind, x, device):
    import torch

    t = torch.from_numpy(x if kind == "mlp" else np.ascontiguousarray(x.transpose(0, 3, 1, 2)))
    return t.to(device)


# -- the alternating comparison ----------------------------------------------------------

def compare(kind, args, images):
    import torch

    x, y, xt, yt = load_data(kind, images)
    txt, tyt = _torch_inputs(kind, xt, args.device), torch.from_numpy(yt).to(args.device)
    repeats = []
    for r in range(args.repeats):
        seed = args.seed + r
        km = kerasish_model(kind, seed, args.device)
        tm, opt = torch_twin(kind, km, args.device)
        rng = np.random.default_rng(seed)
        rec = {"kerasish": [], "torch": [], "kerasish_train": [], "torch_train": []}
        for epoch in range(args.epochs):
            perm = rng.permutation(len(x))
            xk, yk = x[perm], y[perm]
            xtc, ytc = _torch_inputs(kind, xk, args.device), torch.from_numpy(yk).to(args.device)
            order = ("kerasish", "torch") if (epoch + r) % 2 == 0 else ("torch", "kerasish")
            for fw in order:
                if fw == "kerasish":
                    t, loss, acc = kerasish_epoch(km, xk, yk, args.device)
                else:
                    t, loss, acc = torch_epoch(tm, opt, xtc, ytc, args.device)
                rec[fw].append(t)
                rec[fw + "_train"].append((loss, acc))
            print(f"  {kind} repeat {r} epoch {epoch}: kerasish {rec['kerasish'][-1]:.2f} s, "
                  f"torch {rec['torch'][-1]:.2f} s", flush=True)
        rec["kerasish_test_acc"] = float(km.evaluate(xt, yt, batch_size=256, verbose=0)[1])
        rec["torch_test_acc"] = torch_accuracy(tm, txt, tyt)
        rec["launches_per_step"] = _launches(kind, km, tm, x, y, args.device) \
            if args.device == "cuda" and r == 0 else None
        repeats.append(rec)
    return summarize(kind, repeats, len(x), args)


def summarize(kind, repeats, n_images, args):
    steps = -(-n_images // BATCH)
    ks = [float(np.median(r["kerasish"][1:])) for r in repeats]
    ts = [float(np.median(r["torch"][1:])) for r in repeats]
    ratios = [k / t for k, t in zip(ks, ts)]
    out = {
        "model": kind, "images": n_images, "batch": BATCH, "epochs": args.epochs,
        "repeats": args.repeats, "threads": args.threads, "device": args.device,
        "kerasish_epoch_s": float(np.median(ks)), "torch_epoch_s": float(np.median(ts)),
        "kerasish_first_epoch_s": float(np.median([r["kerasish"][0] for r in repeats])),
        "torch_first_epoch_s": float(np.median([r["torch"][0] for r in repeats])),
        "ratio_median": float(np.median(ratios)), "ratios": ratios,
        "kerasish_ms_per_step": 1e3 * float(np.median(ks)) / steps,
        "torch_ms_per_step": 1e3 * float(np.median(ts)) / steps,
        "kerasish_test_acc": [r["kerasish_test_acc"] for r in repeats],
        "torch_test_acc": [r["torch_test_acc"] for r in repeats],
        "kerasish_final_train": [r["kerasish_train"][-1] for r in repeats],
        "torch_final_train": [r["torch_train"][-1] for r in repeats],
        "launches_per_step": repeats[0]["launches_per_step"],
    }
    gap = 100 * (np.mean(out["kerasish_test_acc"]) - np.mean(out["torch_test_acc"]))
    out["test_acc_gap_points"] = float(gap)
    return out


def _launches(kind, km, tm, x, y, device):
    """Kernel launches in one training step: kerasish (counted) and torch (profiler)."""
    import torch
    import torch.nn.functional as F

    import kernels_numba.gpu as gpu_pkg

    counter = [0]
    patched = []
    for name, mod in list(sys.modules.items()):
        if name.startswith(gpu_pkg.__name__ + ".") and hasattr(mod, "launch"):
            orig = mod.launch

            def counting(*a, _orig=orig, **kw):
                counter[0] += 1
                return _orig(*a, **kw)

            patched.append((mod, orig))
            mod.launch = counting
    try:
        km.train_on_batch(x[:BATCH], y[:BATCH])
    finally:
        for mod, orig in patched:
            mod.launch = orig
    result = {"kerasish": counter[0], "torch": None}
    try:
        xb = _torch_inputs(kind, x[:BATCH], device)
        yb = torch.from_numpy(y[:BATCH]).to(device)
        from torch.profiler import ProfilerActivity, profile

        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            loss = F.cross_entropy(tm(xb), yb)
            loss.backward()
            torch.cuda.synchronize()
        result["torch"] = sum(1 for e in prof.events() if str(e.device_type).endswith("CUDA"))
    except Exception as exc:  # noqa: BLE001 - the count is informational
        result["torch_error"] = str(exc)
    return result


# -- subprocess measurements -------------------------------------------------------------

def _status_kib(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return None


def _reset_hwm():
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def memory_child(args, images):
    """One epoch of one framework; prints a JSON line of RSS high-water growth (MiB)."""
    if args.framework == "torch":
        import torch
    kind = args.model
    x, y, _, _ = load_data(kind, images)
    base = _status_kib("VmRSS")
    km = kerasish_model(kind, args.seed, args.device)
    if args.framework == "kerasish":
        km.fit(x[:BATCH], y[:BATCH], batch_size=BATCH, epochs=1, shuffle=False, verbose=0)
        first = _status_kib("VmHWM")
        reset = _reset_hwm()
        kerasish_epoch(km, x, y, args.device)
    else:
        tm, opt = torch_twin(kind, km, args.device)
        del km
        xt, yt = _torch_inputs(kind, x, args.device), torch.from_numpy(y).to(args.device)
        torch_epoch(tm, opt, xt[:BATCH], yt[:BATCH], args.device)
        first = _status_kib("VmHWM")
        reset = _reset_hwm()
        torch_epoch(tm, opt, xt, yt, args.device)
    steady = _status_kib("VmHWM")
    print(json.dumps({"first_step_mib": (first - base) / 1024,
                      "epoch_mib": (steady - base) / 1024 if reset else None,
                      "base_mib": base / 1024}))


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
    _sync(args.device)
    t_first = time.perf_counter() - t0
    t1 = time.perf_counter()
    km.train_on_batch(x, y)
    _sync(args.device)
    print(json.dumps({"import_s": t_import, "first_step_s": t_first,
                      "second_step_s": time.perf_counter() - t1}))


def _run_child(extra, env=None):
    cmd = [sys.executable, "-m", "benchmarks.train", *extra]
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=root, check=False)
    if out.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def memory(kind, args, images):
    common = ["--child", "memory", "--model", kind, "--images", str(images),
              "--threads", str(args.threads), "--device", args.device]
    return {fw: _run_child(common + ["--framework", fw]) for fw in ("kerasish", "torch")}


def compile_time(args):
    common = ["--child", "compile", "--threads", str(args.threads), "--device", args.device]
    with tempfile.TemporaryDirectory(prefix="kerasish-numba-cache-") as cache:
        env = {**os.environ, "NUMBA_CACHE_DIR": cache}
        return {"cold": _run_child(common, env), "warm": _run_child(common, env)}


# -- report ------------------------------------------------------------------------------

def report(results, args):
    load = os.getloadavg() if hasattr(os, "getloadavg") else ("?",) * 3
    print(f"\nbatch {BATCH}, {args.threads} threads, device {args.device}, "
          f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    for res in results.get("models", []):
        print(f"\n{res['model'].upper()}: {res['images']} Fashion-MNIST images, "
              f"{res['epochs']} epochs x {res['repeats']} repeats (epoch 0 excluded)")
        print(f"  {'':9s} {'epoch s':>8s} {'ms/step':>8s} {'1st epoch s':>11s} "
              f"{'test acc':>9s} {'final train loss/acc':>21s}")
        for fw in ("kerasish", "torch"):
            tl, ta = res[f"{fw}_final_train"][0]
            print(f"  {fw:9s} {res[fw + '_epoch_s']:8.3f} {res[fw + '_ms_per_step']:8.2f} "
                  f"{res[fw + '_first_epoch_s']:11.2f} "
                  f"{100 * np.mean(res[fw + '_test_acc']):8.2f}% {tl:12.4f} / {ta:.4f}")
        ratios = " ".join(f"{r:.2f}" for r in res["ratios"])
        flag = "" if abs(res["test_acc_gap_points"]) <= 0.5 else "  <-- more than 0.5 points"
        print(f"  ratio kerasish/torch: {res['ratio_median']:.2f} (per repeat: {ratios}); "
              f"test accuracy gap {res['test_acc_gap_points']:+.2f} points{flag}")
        if res.get("launches_per_step"):
            print(f"  kernel launches per step: {res['launches_per_step']}")
        mem = res.get("memory")
        if mem:
            for fw, m in mem.items():
                epoch = "n/a" if m["epoch_mib"] is None else f"{m['epoch_mib']:.1f}"
                print(f"  peak RSS growth {fw:8s}: first step {m['first_step_mib']:.1f} MiB, "
                      f"steady epoch {epoch} MiB (over {m['base_mib']:.0f} MiB after imports+data)")
    comp = results.get("compile")
    if comp:
        for kind in ("cold", "warm"):
            c = comp[kind]
            print(f"first CNN step ({kind} numba cache): {c['first_step_s']:.2f} s from "
                  f"`import kerasish` (import {c['import_s']:.2f} s; next step "
                  f"{1e3 * c['second_step_s']:.1f} ms)")


def main(argv=None):
    args = _parse(argv)
    _set_threads(args.threads)
    kinds = ("mlp", "cnn") if args.model == "both" else (args.model,)
    if args.child == "compile":
        return compile_child(args)
    if args.child == "memory":
        return memory_child(args, args.images)
    import torch  # before kerasish: see the module docstring

    torch.set_num_threads(args.threads)
    results = {"command": " ".join(["python -m benchmarks.train", *(argv or sys.argv[1:])]),
               "models": []}
    for kind in kinds:
        images = args.images or (QUICK_IMAGES if args.quick else DEFAULT_IMAGES)[kind]
        print(f"{kind}: training kerasish and torch alternately on {images} images", flush=True)
        res = compare(kind, args, images)
        if not args.no_memory:
            res["memory"] = memory(kind, args, images)
        results["models"].append(res)
    if not args.no_compile_time:
        results["compile"] = compile_time(args)
    report(results, args)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
