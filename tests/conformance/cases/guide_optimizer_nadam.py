"""Optimizer Nadam(learning_rate=0.01): weights after fit steps, the loss per epoch and iterations."""

import numpy as np

import kerasish as keras
from kerasish import layers

rng = np.random.default_rng(48)
x = rng.normal(size=(12, 4)).astype("float32")
y = rng.normal(size=(12, 2)).astype("float32")
model = keras.Sequential([keras.Input(shape=(4,)), layers.Dense(3, activation="tanh"), layers.Dense(2)])
model.set_weights([rng.normal(0, 0.5, w.shape).astype("float32") for w in model.get_weights()])
optimizer = keras.optimizers.Nadam(learning_rate=0.01)
model.compile(optimizer=optimizer, loss="mse")
hist = model.fit(x, y, batch_size=4, epochs=3, shuffle=False, verbose=0)
RESULT = {"loss": hist.history["loss"], "weights": model.get_weights(),
          "iterations": int(keras.ops.convert_to_numpy(optimizer.iterations)),
          "config": {k: optimizer.get_config()[k] for k in ("name", "learning_rate")}}
TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}
