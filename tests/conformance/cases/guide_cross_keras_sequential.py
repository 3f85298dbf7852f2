"""File crossing: a compiled Sequential saved as .keras by one side and loaded by the other."""

import os

import numpy as np

import kerasish as keras
from kerasish import layers

CROSSING = True
rng = np.random.default_rng(61)
x = rng.normal(size=(5, 4)).astype("float32")
path = os.path.join(CROSSDIR, "model.keras")
if PHASE == "save":
    model = keras.Sequential([keras.Input(shape=(4,)), layers.Dense(3, activation="relu"),
                              layers.BatchNormalization(), layers.Dense(2, activation="softmax")])
    weights = [rng.normal(0, 0.5, w.shape).astype("float32") for w in model.get_weights()]
    weights[5] = np.abs(weights[5]) + 0.5  # moving variance
    model.set_weights(weights)
    model.compile(keras.optimizers.SGD(0.1), "categorical_crossentropy", metrics=["accuracy"])
    model.save(path)
    RESULT = {"pred": model.predict(x, verbose=0)}
else:
    model = keras.saving.load_model(path)
    RESULT = {"pred": model.predict(x, verbose=0), "weights": model.get_weights(),
              "layers": [type(l).__name__ for l in model.layers],
              "optimizer": type(model.optimizer).__name__}
TOLERANCE = {"rtol": 1e-5, "atol": 1e-6}
