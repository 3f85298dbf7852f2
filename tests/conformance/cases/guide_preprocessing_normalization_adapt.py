"""Normalization.adapt(data): mean/variance learned, then normalizing inside a model; axis=None-free."""

import numpy as np

import kerasish as keras
from kerasish import layers

rng = np.random.default_rng(73)
data = rng.normal(3.0, 2.0, size=(20, 3)).astype("float32")
norm = layers.Normalization()
norm.adapt(data)
given = layers.Normalization(mean=[1.0, 2.0], variance=[4.0, 0.25])
model = keras.Sequential([keras.Input(shape=(3,)), norm, layers.Dense(1)])
model.layers[-1].set_weights([np.ones((3, 1), "float32"), np.zeros(1, "float32")])
x = rng.normal(size=(4, 3)).astype("float32")
RESULT = {"normalized": keras.ops.convert_to_numpy(norm(x)), "pred": model.predict(x, verbose=0),
          "given": keras.ops.convert_to_numpy(given(np.array([[1.0, 2.0], [3.0, 3.0]], "float32"))),
          "mean": keras.ops.convert_to_numpy(norm.mean), "variance": keras.ops.convert_to_numpy(norm.variance)}
TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}
