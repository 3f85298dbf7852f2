"""Shared by the gpu_check step modules: the RESULT line, the JSON results file, the
reference CNN (any square input size: the simulator dry run uses small images) and its
data (Fashion-MNIST from $KERASISH_DATA_DIR when there, else seeded noise: never a
download, the lent machine has no network)."""

import json
import os

import numpy as np


def result(text, json_path=None, key=None, numbers=None):
    """Print the step's summary line last; merge `numbers` into json_path under key."""
    if json_path and key:
        merged = {}
        if os.path.exists(json_path):
            with open(json_path) as f:
                merged = json.load(f)
        merged[key] = numbers or {}
        tmp = f"{json_path}.tmp"
        with open(tmp, "w") as f:
            json.dump(merged, f, indent=1, default=float)
        os.replace(tmp, json_path)  # atomic: a step killed mid-write leaves the old file
    print(f"RESULT {text}", flush=True)


TINY = (2, 4, 4)  # the simulator dry run's widths: its every CUDA thread is a Python one


def reference_cnn(size=28, seed=3, device=None, widths=(32, 64, 64)):
    """The reference CNN (benchmarks/train.py's): Conv2D 32 -> MaxPool -> Conv2D 64 ->
    MaxPool -> Dense 64 -> Dense 10 softmax, Adam, sparse CE, accuracy (`widths`: the
    two filter counts and the hidden Dense's units)."""
    import kerasish as keras
    from kerasish import config, layers, models

    if device:
        config.set_device(device)
    keras.utils.set_random_seed(seed)
    model = models.Sequential([
        keras.Input((size, size, 1)),
        layers.Conv2D(widths[0], (3, 3), activation="relu"), layers.MaxPooling2D((2, 2)),
        layers.Conv2D(widths[1], (3, 3), activation="relu"), layers.MaxPooling2D((2, 2)),
        layers.Flatten(), layers.Dense(widths[2], activation="relu"),
        layers.Dense(10, activation="softmax")])
    model.compile("adam", "sparse_categorical_crossentropy", metrics=["accuracy"])
    return model


def images(n, size=28, seed=0):
    """(x (n, size, size, 1) float32 in [0, 1], y (n,) int64, source)."""
    root = os.environ.get("KERASISH_DATA_DIR")
    folder = next((os.path.join(root, d) for d in ("fashion_mnist", "fashion-mnist")
                   if root and os.path.isdir(os.path.join(root, d))), None)
    if folder:
        from kerasish.datasets import fashion_mnist

        (x, y), _ = fashion_mnist.load_data(path=folder)
        reps = -(-n // len(x))
        x, y = np.concatenate([x] * reps)[:n], np.concatenate([y] * reps)[:n]
        x = (x[:, :size, :size].astype(np.float32) / np.float32(255))[..., None]
        return np.ascontiguousarray(x), y.astype(np.int64), f"Fashion-MNIST ({folder})"
    rng = np.random.default_rng(seed)
    x = rng.random((n, size, size, 1), dtype=np.float32)
    return x, rng.integers(0, 10, n).astype(np.int64), "seeded noise (no KERASISH_DATA_DIR data)"
