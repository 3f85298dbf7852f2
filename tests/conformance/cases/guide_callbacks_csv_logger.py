"""CSVLogger writes one row per epoch with the history's columns (read back with the csv module)."""

import csv
import os

import numpy as np

import kerasish as keras
from kerasish import layers

rng = np.random.default_rng(44)
x = rng.normal(size=(10, 3)).astype("float32")
y = rng.integers(0, 2, (10, 1)).astype("float32")
model = keras.Sequential([keras.Input(shape=(3,)), layers.Dense(1, activation="sigmoid")])
model.set_weights([rng.normal(0, 0.5, w.shape).astype("float32") for w in model.get_weights()])
model.compile(keras.optimizers.SGD(0.1), "binary_crossentropy", metrics=["accuracy"])
path = os.path.join(WORKDIR, "log.csv")
model.fit(x, y, epochs=3, batch_size=5, validation_split=0.2, shuffle=False, verbose=0,
          callbacks=[keras.callbacks.CSVLogger(path)])
with open(path, newline="") as f:
    rows = list(csv.reader(f))
RESULT = {"header": rows[0], "epochs": [r[0] for r in rows[1:]],
          "values": np.array([[float(v) for v in r[1:]] for r in rows[1:]])}
TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}
