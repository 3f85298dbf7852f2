"""Test accuracy of the reference CNN recipe over several seeds, kerasish beside real Keras.

    python -m benchmarks.accuracy [--seeds 0-4] [--epochs 5] [--keras] [--json FILE]

Trains the issue-3 reference program (Conv2D 32 -> MaxPool -> Conv2D 64 -> MaxPool ->
Flatten -> Dense 64 -> Dense 10 softmax, Adam, sparse categorical cross-entropy,
batch 64) on full Fashion-MNIST (Debian's dataset-fashion-mnist) once per seed and
prints the test accuracy of each run, their mean and standard deviation. A single
run's accuracy after 5 epochs moves by about a point from seed to seed, so a target
near the recipe's mean is judged on the mean, never on one seed.

With --keras the same program (the same source, only the imported module differs)
also runs in real Keras 3 (torch backend) when it is installed, in its own process,
so the two distributions can be compared. Keras draws its own initial weights and
batch order from the seed: the comparison is between distributions, not runs.
About 1.5 min per seed for kerasish and 10-15 min for Keras on a 2-core CPU.
"""

import argparse
import json
import os
import subprocess
import sys
import time


def reference_cnn(layers, models):
    """The reference program's model; `layers`/`models` come from kerasish or keras."""
    model = models.Sequential()
    model.add(layers.Conv2D(32, (3, 3), activation="relu", input_shape=(28, 28, 1)))
    model.add(layers.MaxPooling2D((2, 2)))
    model.add(layers.Conv2D(64, (3, 3), activation="relu"))
    model.add(layers.MaxPooling2D((2, 2)))
    model.add(layers.Flatten())
    model.add(layers.Dense(64, activation="relu"))
    model.add(layers.Dense(10, activation="softmax"))
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    return model


def _worker(framework, seeds, epochs):
    """Train one framework for each seed; print one JSON line per run."""
    if framework == "keras":
        os.environ.setdefault("KERAS_BACKEND", "torch")
        import keras
        from keras import layers, models
        set_seed = keras.utils.set_random_seed
    else:
        from kerasish import layers, models
        from kerasish.utils import set_random_seed as set_seed
    import numpy as np

    from kerasish.datasets import fashion_mnist  # a NumPy-only loader, used for both

    (x_train, y_train), (x_test, y_test) = fashion_mnist.load_data()
    x_train = (x_train.astype(np.float32) / 255.0)[..., None]
    x_test = (x_test.astype(np.float32) / 255.0)[..., None]
    for seed in seeds:
        start = time.perf_counter()
        set_seed(seed)
        model = reference_cnn(layers, models)
        history = model.fit(x_train, y_train, epochs=epochs, batch_size=64, verbose=0)
        loss, accuracy = model.evaluate(x_test, y_test, batch_size=256, verbose=0)
        print(json.dumps({"framework": framework, "seed": seed, "test_accuracy": float(accuracy),
                          "test_loss": float(loss),
                          "train_accuracy": [float(a) for a in history.history["accuracy"]],
                          "seconds": round(time.perf_counter() - start, 1)}), flush=True)


def parse_seeds(text):
    """'0-4' -> [0, 1, 2, 3, 4]; '0,3,7' -> [0, 3, 7]."""
    seeds = []
    for part in text.split(","):
        low, _, high = part.partition("-")
        seeds.extend(range(int(low), int(high or low) + 1))
    return seeds


def summarize(runs):
    """Per framework: accuracies in seed order, mean, sample standard deviation."""
    import numpy as np

    table = {}
    for framework in sorted({run["framework"] for run in runs}):
        accs = np.array([r["test_accuracy"] for r in runs if r["framework"] == framework])
        table[framework] = {"accuracies": accs.tolist(), "mean": float(accs.mean()),
                            "std": float(accs.std(ddof=1)) if len(accs) > 1 else 0.0}
    return table


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="0-4", help="e.g. 0-9 or 0,3,7")
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--keras", action="store_true", help="also run real Keras 3 (torch)")
    parser.add_argument("--json", default=None, help="write every run and the summary here")
    parser.add_argument("--worker", choices=["kerasish", "keras"], help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    seeds = parse_seeds(args.seeds)
    if args.worker:
        _worker(args.worker, seeds, args.epochs)
        return 0

    runs = []
    # One process per framework: each keeps its own thread pools (see benchmarks/train.py).
    for framework in ["kerasish"] + (["keras"] if args.keras else []):
        cmd = [sys.executable, "-m", "benchmarks.accuracy", "--worker", framework,
               "--seeds", args.seeds, "--epochs", str(args.epochs)]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
        for line in proc.stdout:
            run = json.loads(line)
            runs.append(run)
            print(f"{framework:8s} seed {run['seed']}: test accuracy {run['test_accuracy']:.4f} "
                  f"({run['seconds']:.0f} s)", flush=True)
        if proc.wait() != 0:
            print(f"{framework} worker failed (exit {proc.returncode})", file=sys.stderr)
            return 1
    summary = summarize(runs)
    for framework, row in summary.items():
        print(f"{framework:8s} mean {row['mean']:.4f}  std {row['std']:.4f}  "
              f"over {len(row['accuracies'])} seeds ({args.seeds}), {args.epochs} epochs")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"runs": runs, "summary": summary}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
