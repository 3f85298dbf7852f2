"""Stacked LSTMs (return_sequences=True then last output) trained with fit."""

import numpy as np

import kerasish as keras
from kerasish import layers

rng = np.random.default_rng(25)
model = keras.Sequential([keras.Input(shape=(5, 3)), layers.LSTM(4, return_sequences=True),
                          layers.LSTM(3), layers.Dense(1)])
model.set_weights([rng.normal(0, 0.4, w.shape).astype("float32") for w in model.get_weights()])
x = rng.normal(size=(8, 5, 3)).astype("float32")
y = rng.normal(size=(8, 1)).astype("float32")
model.compile(keras.optimizers.SGD(0.05), "mse")
hist = model.fit(x, y, batch_size=4, epochs=2, shuffle=False, verbose=0)
RESULT = {"loss": hist.history["loss"], "pred": model.predict(x, verbose=0),
          "weights": model.get_weights(), "params": model.count_params()}
TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}
