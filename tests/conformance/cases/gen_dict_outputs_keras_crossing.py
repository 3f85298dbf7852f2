"""Regression from the generator (generated_011/015): a .keras file of a model with dict outputs
not in sorted key order. Loaded by the other side, each head must get its own weights (found:
kerasish put Keras's heads' weights into each other's layers, or refused a shape mismatch)."""

import os

import numpy as np

import kerasish as keras
from kerasish import layers

CROSSING = True
rng = np.random.default_rng(95)
x = rng.normal(size=(2, 3)).astype("float32")
path = os.path.join(CROSSDIR, "heads.keras")
if PHASE == "save":
    inp = keras.Input(shape=(3,), name="x")
    h = layers.Dense(4, name="trunk")(inp)
    model = keras.Model(inp, {"beta": layers.Dense(2, name="head_b")(h),
                              "alpha": layers.Dense(2, name="head_a")(h)})
    for layer in sorted(model.layers, key=lambda layer: layer.name):
        if layer.get_weights():
            layer.set_weights([rng.normal(0, 0.5, w.shape).astype("float32")
                               for w in layer.get_weights()])
    model.save(path)
    RESULT = {"pred": model.predict(x, verbose=0)}
else:
    model = keras.saving.load_model(path)
    RESULT = {"pred": model.predict(x, verbose=0),
              "weights": {layer.name: layer.get_weights() for layer in model.layers
                          if layer.get_weights()}}
TOLERANCE = {"rtol": 1e-5, "atol": 1e-6}
