"""Regression from the generator (a dict_outputs model): outputs given as a dict whose keys are
not in sorted order. Keras orders the outputs by sorted key, and with them model.layers,
get_weights() and output_names."""

import numpy as np

import kerasish as keras
from kerasish import layers

inp = keras.Input(shape=(3,), name="x")
h = layers.Dense(4, name="l0")(inp)
model = keras.Model(inp, {"beta": layers.Dense(2, name="l1")(h),
                          "alpha": layers.Dense(1, name="l2")(h)})
x = np.ones((2, 3), "float32")
out = model.predict(x, verbose=0)
RESULT = {"layers": [layer.name for layer in model.layers],
          "weight_shapes": [list(w.shape) for w in model.get_weights()],
          "output_names": list(model.output_names), "keys": sorted(out),
          "shapes": {k: list(v.shape) for k, v in out.items()}}
