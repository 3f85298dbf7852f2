"""File crossing: the legacy .h5 full-model format (architecture + weights) both ways."""

import os

import numpy as np

import kerasish as keras
from kerasish import layers

CROSSING = True
rng = np.random.default_rng(64)
x = rng.normal(size=(3, 5)).astype("float32")
path = os.path.join(CROSSDIR, "model.h5")
if PHASE == "save":
    model = keras.Sequential([keras.Input(shape=(5,)), layers.Dense(4, activation="tanh"),
                              layers.Dense(3, activation="softmax")])
    model.set_weights([rng.normal(0, 0.5, w.shape).astype("float32") for w in model.get_weights()])
    model.save(path)
    RESULT = {"pred": model.predict(x, verbose=0)}
else:
    model = keras.saving.load_model(path, compile=False)
    RESULT = {"pred": model.predict(x, verbose=0), "weights": model.get_weights(),
              "layers": [type(l).__name__ for l in model.layers]}
TOLERANCE = {"rtol": 1e-5, "atol": 1e-6}
