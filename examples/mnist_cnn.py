"""The reference program: train the seed CNN, save an .h5, load it back, evaluate.

    python examples/mnist_cnn.py [--epochs 5] [--data DIR] [--limit N] [--out FILE]

Data: MNIST when it can be found (--data, $KERASISH_DATA_DIR, ~/.kerasish, ~/.keras)
or downloaded; otherwise Fashion-MNIST (e.g. Debian's dataset-fashion-mnist). The
script says which it used.
"""

import argparse
import os
import sys
import time

import numpy as np

from kerasish import layers, models
from kerasish.datasets import fashion_mnist, mnist


def load(data_dir):
    try:
        return "MNIST", mnist.load_data(path=data_dir) if data_dir else mnist.load_data()
    except OSError as exc:
        print(f"MNIST not available ({str(exc).splitlines()[0]}); using Fashion-MNIST instead.")
        return "Fashion-MNIST", fashion_mnist.load_data()


def build_model():
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


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--data", default=None, help="MNIST .npz or directory of IDX files")
    parser.add_argument("--limit", type=int, default=None, help="use only N training images")
    parser.add_argument("--out", default="mnist_cnn.h5")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    from kerasish.utils import set_random_seed

    set_random_seed(args.seed)
    name, ((x_train, y_train), (x_test, y_test)) = load(args.data)
    if args.limit:
        x_train, y_train = x_train[: args.limit], y_train[: args.limit]
    x_train = (x_train.astype("float32") / 255.0)[..., None]
    x_test = (x_test.astype("float32") / 255.0)[..., None]
    print(f"{name}: {len(x_train)} training and {len(x_test)} test images")

    model = build_model()
    print(f"device: {model.device}")
    model.summary()
    start = time.perf_counter()
    model.fit(x_train, y_train, epochs=args.epochs, batch_size=args.batch_size,
              validation_data=(x_test, y_test), verbose=2)
    print(f"trained in {time.perf_counter() - start:.1f}s")

    model.save(args.out)
    restored = models.load_model(args.out)
    loss, acc = restored.evaluate(x_test, y_test, batch_size=256, verbose=0)
    ref = model.predict(x_test[:256], verbose=0)
    same = np.abs(restored.predict(x_test[:256], verbose=0) - ref).max()
    print(f"saved {args.out} ({os.path.getsize(args.out)} bytes) and loaded it back: "
          f"max prediction difference {same:.2e}")
    print(f"test loss {loss:.4f}, test accuracy {acc:.4f} ({name})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
