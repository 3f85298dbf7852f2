"""File crossing: a trained functional model (two inputs, Adam) as .keras; the loader trains on."""

import os

import numpy as np

import kerasish as keras
from kerasish import layers

CROSSING = True
rng = np.random.default_rng(62)
xa = rng.normal(size=(8, 3)).astype("float32")
xb = rng.normal(size=(8, 2)).astype("float32")
y = rng.normal(size=(8, 1)).astype("float32")
path = os.path.join(CROSSDIR, "two_inputs.keras")
if PHASE == "save":
    a, b = keras.Input(shape=(3,), name="a"), keras.Input(shape=(2,), name="b")
    h = layers.concatenate([layers.Dense(3, activation="tanh")(a), b])
    model = keras.Model([a, b], layers.Dense(1)(h))
    model.set_weights([rng.normal(0, 0.5, w.shape).astype("float32") for w in model.get_weights()])
    model.compile(keras.optimizers.Adam(0.01), "mse")
    hist = model.fit([xa, xb], y, epochs=2, batch_size=4, shuffle=False, verbose=0)
    model.save(path)
    RESULT = {"loss": hist.history["loss"]}
else:
    model = keras.saving.load_model(path)
    pred = model.predict([xa, xb], verbose=0)
    hist = model.fit([xa, xb], y, epochs=1, batch_size=4, shuffle=False, verbose=0)
    RESULT = {"pred": pred, "loss_after_load": hist.history["loss"], "weights": model.get_weights()}
TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}
