"""fit(validation_data=(x, y, sample_weight)) and validation_freq-free val logs."""

import numpy as np

import kerasish as keras
from kerasish import layers

rng = np.random.default_rng(83)
x = rng.normal(size=(8, 3)).astype("float32")
y = rng.normal(size=(8, 1)).astype("float32")
xv = rng.normal(size=(6, 3)).astype("float32")
yv = rng.normal(size=(6, 1)).astype("float32")
swv = rng.random(6).astype("float32")
model = keras.Sequential([keras.Input(shape=(3,)), layers.Dense(1)])
model.set_weights([rng.normal(0, 0.5, w.shape).astype("float32") for w in model.get_weights()])
model.compile(keras.optimizers.SGD(0.1), "mse", metrics=["mae"])
h = model.fit(x, y, validation_data=(xv, yv, swv), epochs=2, batch_size=4, shuffle=False, verbose=0)
RESULT = {"hist": h.history}
TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}
