"""Helpers shared by the notebooks: data with offline fallbacks, and pictures that fall
back to text when matplotlib (the `notebooks` extra) is not installed.

Kept out of the notebooks so each one reads as plain Keras code.
"""

import importlib.util
import os
from pathlib import Path

import numpy as np

try:
    import matplotlib.pyplot as plt
except ImportError:  # optional: every picture below has a text rendering
    plt = None

from kerasish.datasets import DatasetNotFoundError, fashion_mnist, mnist

# Real MNIST digits for offline machines (5,000 training digits, sorted by class), kept
# beside the repository, never inside it.
MNIST_SMALL = Path(__file__).resolve().parents[1].parent / "shared" / "datasets" / "mnist-small"
DIGITS = [str(d) for d in range(10)]
FASHION = ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt",
           "Sneaker", "Bag", "Ankle boot"]
_RAMP = " .:-=+*#%@"  # dark to bright, for the text rendering of an image


def load_data(train=None, test=None, seed=0):
    """MNIST when it can be found, else real-MNIST-small, else Fashion-MNIST.

    Tries `kerasish.datasets.mnist.load_data()` (local copies, then a download), then
    ../shared/datasets/mnist-small beside the repository, then
    `fashion_mnist.load_data()` (e.g. Debian's dataset-fashion-mnist package).
    The training set is shuffled (mnist-small is sorted by class) before taking the
    first `train` images; the test set likewise for `test`.

    Returns:
        `(name, class_names, (x_train, y_train), (x_test, y_test))`, uint8 images
        (N, 28, 28) and labels (N,).
    """
    reasons = []
    try:
        name, names, splits = "MNIST", DIGITS, mnist.load_data()
    except DatasetNotFoundError as e:
        reasons.append("MNIST: " + str(e).splitlines()[0].removeprefix("load_data: "))
        if MNIST_SMALL.is_dir():
            name, names = "MNIST (mnist-small: 5,000 training digits)", DIGITS
            splits = mnist.load_data(path=MNIST_SMALL)
        else:
            reasons.append("mnist-small: not found beside the repository")
            name, names, splits = "Fashion-MNIST", FASHION, fashion_mnist.load_data()
    for reason in reasons:
        print("not used:", reason)
    rng = np.random.default_rng(seed)
    (x_train, y_train), (x_test, y_test) = splits
    p, q = rng.permutation(len(x_train))[:train], rng.permutation(len(x_test))[:test]
    x_train, y_train, x_test, y_test = x_train[p], y_train[p], x_test[q], y_test[q]
    print(f"Data: {name}; using {len(x_train):,} training and {len(x_test):,} test images")
    return name, names, (x_train, y_train), (x_test, y_test)


def import_keras():
    """Real Keras 3 if it is installed (picking an installed backend), else None."""
    if "KERAS_BACKEND" not in os.environ:
        for backend in ("torch", "jax", "tensorflow"):
            if importlib.util.find_spec(backend):
                os.environ["KERAS_BACKEND"] = backend
                break
    try:
        import keras
    except ImportError as e:
        print(f"Keras is not installed ({e}); skipping the Keras part.")
        return None
    if not keras.__version__.startswith("3."):
        print(f"found keras {keras.__version__}; this part needs Keras 3.")
        return None
    return keras


def _ascii(image, width=28):
    """An image as lines of characters (every other row: characters are tall)."""
    img = np.asarray(image, np.float32).reshape(image.shape[0], image.shape[1])
    img = img / max(float(img.max()), 1e-6)
    cols = np.linspace(0, img.shape[1] - 1, width).astype(int)
    return ["".join(_RAMP[int(v * (len(_RAMP) - 1))] for v in row[cols]) for row in img[::2]]


def show_images(images, titles, per_row=5):
    """A grid of images with a title each (text art without matplotlib)."""
    if plt is not None:
        rows = (len(images) + per_row - 1) // per_row
        fig, axes = plt.subplots(rows, per_row, figsize=(2 * per_row, 2.3 * rows),
                                 squeeze=False)
        for ax in axes.flat:
            ax.axis("off")
        for ax, image, title in zip(axes.flat, images, titles):
            ax.imshow(np.squeeze(image), cmap="gray_r")
            ax.set_title(title, fontsize=9)
        fig.tight_layout()
        plt.show()
        return
    width, per_row = 28, min(per_row, 4)  # 4 images of 28 characters fit a notebook line
    for start in range(0, len(images), per_row):
        arts = [_ascii(np.squeeze(im), width) for im in images[start:start + per_row]]
        heads = [t[:width].ljust(width) for t in titles[start:start + per_row]]
        print(" | ".join(heads))
        for lines in zip(*arts):
            print(" | ".join(lines))
        print()


def plot_history(history):
    """Loss and accuracy per epoch, training and validation (a table without matplotlib)."""
    h = history.history
    epochs = range(1, len(h["loss"]) + 1)
    panels = [k for k in ("loss", "accuracy") if k in h]
    if plt is not None:
        fig, axes = plt.subplots(1, len(panels), figsize=(5 * len(panels), 3.2), squeeze=False)
        for ax, key in zip(axes.flat, panels):
            ax.plot(epochs, h[key], "o-", label="training")
            if "val_" + key in h:
                ax.plot(epochs, h["val_" + key], "s--", label="validation")
            ax.set_xlabel("epoch")
            ax.set_xticks(list(epochs))
            ax.set_title(key)
            ax.legend()
        fig.tight_layout()
        plt.show()
        return
    keys = [k for p in panels for k in (p, "val_" + p) if k in h]
    print("epoch " + "".join(f"{k:>14}" for k in keys))
    for i, e in enumerate(epochs):
        print(f"{e:5d} " + "".join(f"{h[k][i]:14.4f}" for k in keys))


def confusion_matrix(y_true, y_pred, num_classes=10):
    """counts[i, j] = how many images of class i were predicted as class j."""
    counts = np.zeros((num_classes, num_classes), np.int64)
    np.add.at(counts, (np.asarray(y_true, int), np.asarray(y_pred, int)), 1)
    return counts


def show_confusion(counts, class_names):
    """The confusion matrix as a heat map (a table of counts without matplotlib)."""
    if plt is not None:
        fig, ax = plt.subplots(figsize=(6, 5))
        im = ax.imshow(counts, cmap="Blues")
        n = len(class_names)
        ax.set_xticks(range(n), class_names, rotation=90 if len(class_names[0]) > 2 else 0)
        ax.set_yticks(range(n), class_names)
        ax.set_xlabel("predicted")
        ax.set_ylabel("true")
        for i in range(n):
            for j in range(n):
                if counts[i, j]:
                    ax.text(j, i, counts[i, j], ha="center", va="center", fontsize=7,
                            color="white" if counts[i, j] > counts.max() / 2 else "black")
        fig.colorbar(im)
        fig.tight_layout()
        plt.show()
        return
    short = [c[:5] for c in class_names]
    print("true \\ predicted")
    print(" " * 12 + "".join(f"{c:>6}" for c in short))
    for name, row in zip(class_names, counts):
        print(f"{name[:11]:>11} " + "".join(f"{v:6d}" for v in row))
