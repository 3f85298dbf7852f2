"""A shared layer: one Dense applied to two inputs (the guide's shared embedding idiom)."""

import numpy as np

import kerasish as keras
from kerasish import layers

rng = np.random.default_rng(3)
shared = layers.Dense(4, activation="relu", name="shared")
a_in = keras.Input(shape=(5,), name="a")
b_in = keras.Input(shape=(5,), name="b")
merged = layers.add([shared(a_in), shared(b_in)])
out = layers.Dense(1, name="head")(merged)
model = keras.Model([a_in, b_in], out)
model.set_weights([rng.normal(0, 0.5, w.shape).astype("float32") for w in model.get_weights()])
xa = rng.normal(size=(6, 5)).astype("float32")
xb = rng.normal(size=(6, 5)).astype("float32")
y = rng.normal(size=(6, 1)).astype("float32")
model.compile(keras.optimizers.SGD(0.1), "mse")
model.fit([xa, xb], y, epochs=2, batch_size=3, shuffle=False, verbose=0)
RESULT = {"pred": model.predict([xa, xb], verbose=0), "n_weights": len(model.weights),
          "shared": model.get_layer("shared").get_weights(), "params": model.count_params()}
TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}
