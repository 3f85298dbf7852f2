"""Small-batch latency (issue 37): a 4-64-64-2 MLP, as reinforcement learning runs it.

kerasish, in this process: `model(x)` on one sample, `model.predict(x)` on one sample,
`train_on_batch` at batch 32, and a GradientTape step at 32 (forward, loss, gradient,
apply_gradients). The PyTorch peer runs in its own process with a clean environment
and never imports kerasish: `no_grad` forward on one sample and zero_grad/backward/step
at 32 (the same MLP, Adam, sparse cross-entropy from logits); `--keras` adds Keras 3
(torch backend) in a third process: model(x), predict, train_on_batch.
Each number is the median over `--repeats` runs of the mean of `--calls` calls, in µs.

    PYTHONPATH=. python benchmarks/bench_latency.py [--keras] [--json out.json]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import textwrap
import time

import numpy as np

TIMER = '''
import statistics, time
def measure(fn, calls, repeats):
    fn(); fn()
    runs = []
    for _ in range(repeats):
        t = time.perf_counter()
        for _ in range(calls):
            fn()
        runs.append((time.perf_counter() - t) / calls * 1e6)
    return statistics.median(runs)
'''

TORCH_PEER = TIMER + '''
import json, sys, numpy as np, torch
torch.set_num_threads(int(sys.argv[3]))
calls, repeats = int(sys.argv[1]), int(sys.argv[2])
model = torch.nn.Sequential(torch.nn.Linear(4, 64), torch.nn.ReLU(), torch.nn.Linear(64, 64),
                            torch.nn.ReLU(), torch.nn.Linear(64, 2))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
r = np.random.default_rng(0)
x1 = torch.tensor(r.standard_normal((1, 4)), dtype=torch.float32)
x = torch.tensor(r.standard_normal((32, 4)), dtype=torch.float32)
y = torch.tensor(r.integers(0, 2, 32), dtype=torch.long)
def forward():
    with torch.no_grad():
        model(x1)
def step():
    opt.zero_grad()
    torch.nn.functional.cross_entropy(model(x), y).backward()
    opt.step()
print(json.dumps({"torch no_grad forward (1)": measure(forward, calls, repeats),
                  "torch zero_grad/backward/step (32)": measure(step, calls, repeats)}))
'''

KERAS_PEER = TIMER + '''
import json, os, sys, numpy as np
os.environ["KERAS_BACKEND"] = "torch"
import keras
calls, repeats = int(sys.argv[1]), int(sys.argv[2])
model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(64, activation="relu"),
                          keras.layers.Dense(64, activation="relu"), keras.layers.Dense(2)])
model.compile(optimizer=keras.optimizers.Adam(1e-3),
              loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
r = np.random.default_rng(0)
x1 = r.standard_normal((1, 4)).astype("float32")
x = r.standard_normal((32, 4)).astype("float32")
y = r.integers(0, 2, 32).astype("int32")
print(json.dumps({
    "keras model(x) (1)": measure(lambda: model(x1), calls, repeats),
    "keras predict (1)": measure(lambda: model.predict(x1, verbose=0), calls // 4 or 1, repeats),
    "keras train_on_batch (32)": measure(lambda: model.train_on_batch(x, y), calls, repeats)}))
'''


def peer(code, calls, repeats, threads):
    """Run a peer in its own process: a clean environment (no PYTHONPATH, so it cannot
    import this checkout's kerasish), from a temporary working directory."""
    env = {k: os.environ[k] for k in ("PATH", "HOME", "LANG") if k in os.environ}
    env["OMP_NUM_THREADS"] = str(threads)
    out = subprocess.run([sys.executable, "-c", code, str(calls), str(repeats), str(threads)],
                         env=env, cwd="/", capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def measure(fn, calls, repeats):
    fn()
    fn()
    runs = []
    for _ in range(repeats):
        t = time.perf_counter()
        for _ in range(calls):
            fn()
        runs.append((time.perf_counter() - t) / calls * 1e6)
    return statistics.median(runs)


def kerasish_numbers(calls, repeats):
    import kerasish as keras
    from kerasish import layers

    model = keras.Sequential([keras.Input((4,)), layers.Dense(64, activation="relu"),
                              layers.Dense(64, activation="relu"), layers.Dense(2)])
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    model.compile(optimizer=keras.optimizers.Adam(1e-3), loss=loss_fn)
    r = np.random.default_rng(0)
    x1 = r.standard_normal((1, 4)).astype(np.float32)
    x = r.standard_normal((32, 4)).astype(np.float32)
    y = r.integers(0, 2, 32).astype(np.int32)
    tape_opt = keras.optimizers.Adam(1e-3)

    def tape_step():
        with keras.GradientTape() as tape:
            loss = loss_fn(y, model(x, training=True))
        grads = tape.gradient(loss, model.trainable_weights)
        tape_opt.apply_gradients(zip(grads, model.trainable_weights))

    return {"kerasish model(x) (1)": measure(lambda: model(x1), calls, repeats),
            "kerasish predict (1)": measure(lambda: model.predict(x1, verbose=0), calls,
                                            repeats),
            "kerasish train_on_batch (32)": measure(lambda: model.train_on_batch(x, y), calls,
                                                    repeats),
            "kerasish tape step (32)": measure(tape_step, max(calls // 10, 5), repeats)}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1,
                        help="torch's threads in its peer process")
    parser.add_argument("--keras", action="store_true", help="also Keras 3 (torch backend)")
    parser.add_argument("--json", help="write the numbers here")
    args = parser.parse_args(argv)
    numbers = kerasish_numbers(args.calls, args.repeats)
    numbers.update(peer(textwrap.dedent(TORCH_PEER), args.calls, args.repeats, args.threads))
    if args.keras:
        numbers.update(peer(textwrap.dedent(KERAS_PEER), args.calls, args.repeats,
                            args.threads))
    for name, us in numbers.items():
        print(f"{name:40s} {us:10.1f} us")
    t = numbers
    print(f"model(x) / torch no_grad: "
          f"{t['kerasish model(x) (1)'] / t['torch no_grad forward (1)']:.2f}x; "
          f"train_on_batch / torch step: "
          f"{t['kerasish train_on_batch (32)'] / t['torch zero_grad/backward/step (32)']:.2f}x; "
          f"tape step / torch step: "
          f"{t['kerasish tape step (32)'] / t['torch zero_grad/backward/step (32)']:.2f}x")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(numbers, f, indent=1)
    return numbers


if __name__ == "__main__":
    main()
