"""A stateful LSTM (states kept across batches, reset_states() between sequences):
refused by name on kerasish."""

import numpy as np

import kerasish as keras
from kerasish import layers

rng = np.random.default_rng(8)
model = keras.Sequential([keras.Input(batch_shape=(2, 3, 4)),
                          layers.LSTM(5, stateful=True), layers.Dense(1)])
model.set_weights([rng.standard_normal(w.shape).astype("float32") * 0.3
                   for w in model.get_weights()])
x = rng.standard_normal((2, 3, 4)).astype("float32")
first = model.predict(x, verbose=0)
second = model.predict(x, verbose=0)  # starts from the states the first call left
model.layers[0].reset_states()
third = model.predict(x, verbose=0)

RESULT = {"first": first, "second": second, "third": third}
TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}
