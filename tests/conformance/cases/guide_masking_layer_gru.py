"""Masking(mask_value=0.) before a GRU: masked timesteps are skipped (state carried over)."""

import numpy as np

import kerasish as keras
from kerasish import layers

rng = np.random.default_rng(22)
x = rng.normal(size=(3, 5, 2)).astype("float32")
x[0, 3:] = 0.0
x[2, 1] = 0.0
model = keras.Sequential([keras.Input(shape=(5, 2)), layers.Masking(mask_value=0.0),
                          layers.GRU(3, return_sequences=True), layers.GlobalAveragePooling1D()])
model.set_weights([rng.normal(0, 0.5, w.shape).astype("float32") for w in model.get_weights()])
RESULT = {"out": model.predict(x, verbose=0)}
TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}
