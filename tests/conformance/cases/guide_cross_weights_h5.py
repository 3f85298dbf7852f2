"""File crossing: save_weights('.weights.h5') of a CNN + LSTM pair, load_weights into a fresh model."""

import os

import numpy as np

import kerasish as keras
from kerasish import layers

CROSSING = True


def build():
    inp = keras.Input(shape=(6, 6, 1))
    x = layers.Conv2D(2, 3, activation="relu")(inp)
    x = layers.Reshape((4, 8))(x)
    x = layers.LSTM(3)(x)
    return keras.Model(inp, layers.Dense(2)(x))


rng = np.random.default_rng(63)
x = rng.normal(size=(2, 6, 6, 1)).astype("float32")
path = os.path.join(CROSSDIR, "cnn_lstm.weights.h5")
model = build()
if PHASE == "save":
    model.set_weights([rng.normal(0, 0.5, w.shape).astype("float32") for w in model.get_weights()])
    model.save_weights(path)
    RESULT = {"pred": model.predict(x, verbose=0)}
else:
    model.load_weights(path)
    RESULT = {"pred": model.predict(x, verbose=0), "weights": model.get_weights()}
TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}
