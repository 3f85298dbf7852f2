"""The small CNN, its input and a weight comparison, shared by the saving tests."""

import numpy as np

import kerasish as keras
from kerasish import layers


def _cnn(seed=0, dense_units=3, compile_with=None):
    model = keras.Sequential([
        keras.Input((7, 6, 2)),
        layers.Conv2D(4, 3, padding="same", activation="relu"),
        layers.BatchNormalization(),
        layers.MaxPooling2D(2),
        layers.Flatten(),
        layers.Dropout(0.25),
        layers.Dense(dense_units, activation="softmax"),
    ])
    rng = np.random.default_rng(seed)
    # Non-trivial values everywhere, BN moving statistics included.
    model.set_weights([rng.uniform(0.5, 1.5, w.shape).astype(np.float32)
                       for w in model.get_weights()])
    if compile_with:
        model.compile(compile_with, "sparse_categorical_crossentropy", metrics=["accuracy"])
    return model


def _x(n=3, seed=1):
    return np.random.default_rng(seed).normal(size=(n, 7, 6, 2)).astype(np.float32)


def _same_weights(a, b):
    wa, wb = a.get_weights(), b.get_weights()
    return len(wa) == len(wb) and all(np.array_equal(x, y) for x, y in zip(wa, wb))
