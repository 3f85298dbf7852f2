"""Regression from the generator (generated_092, generated_114): a Sequential holding only its
Input, used as a layer of a functional model. Keras passes the input through; found: kerasish
refuses it ("Model 'inner' has no layers to build")."""

import numpy as np

import kerasish as keras
from kerasish import layers

inp = keras.Input(shape=(3,), name="x")
inner = keras.Sequential([keras.Input(shape=(3,))], name="inner")
model = keras.Model(inp, layers.Dense(2, name="head")(inner(inp)))
model.get_layer("head").set_weights([np.full((3, 2), 0.5, "float32"), np.zeros(2, "float32")])
x = np.arange(6, dtype="float32").reshape(2, 3)
RESULT = {"pred": model.predict(x, verbose=0), "inner": keras.ops.convert_to_numpy(inner(x)),
          "params": model.count_params()}
