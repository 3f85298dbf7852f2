"""Bidirectional(LSTM) with merge modes concat, sum, ave, mul, and return_sequences."""

import numpy as np

import kerasish as keras
from kerasish import layers

rng = np.random.default_rng(28)
x = rng.normal(size=(2, 5, 3)).astype("float32")
out = {}
for mode in ("concat", "sum", "ave", "mul"):
    model = keras.Sequential([keras.Input(shape=(5, 3)),
                              layers.Bidirectional(layers.LSTM(2, return_sequences=True),
                                                   merge_mode=mode)])
    model.set_weights([rng.normal(0, 0.5, w.shape).astype("float32") for w in model.get_weights()])
    out[mode] = model.predict(x, verbose=0)
model = keras.Sequential([keras.Input(shape=(5, 3)), layers.Bidirectional(layers.GRU(3)),
                          layers.Dense(1)])
model.set_weights([rng.normal(0, 0.5, w.shape).astype("float32") for w in model.get_weights()])
model.compile(keras.optimizers.SGD(0.05), "mse")
y = rng.normal(size=(2, 1)).astype("float32")
out["loss"] = model.train_on_batch(x, y)
out["after"] = model.predict(x, verbose=0)
out["params"] = model.count_params()
RESULT = out
TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}
