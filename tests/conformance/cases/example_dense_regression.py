"""A Sequential regression: same weights on both sides, predictions and one epoch of SGD."""

import numpy as np

import kerasish as keras
from kerasish import layers

rng = np.random.default_rng(0)
x = rng.standard_normal((32, 5)).astype("float32")
y = rng.standard_normal((32, 1)).astype("float32")
weights = [rng.standard_normal((5, 4)).astype("float32") * 0.3, np.zeros(4, "float32"),
           rng.standard_normal((4, 1)).astype("float32") * 0.3, np.zeros(1, "float32")]

model = keras.Sequential([keras.Input((5,)), layers.Dense(4, activation="relu"), layers.Dense(1)])
model.set_weights(weights)
model.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse")
before = model.predict(x, verbose=0)
history = model.fit(x, y, batch_size=8, epochs=2, shuffle=False, verbose=0)

RESULT = {
    "predict": before,
    "loss": history.history["loss"],
    "history_keys": sorted(history.history),
    "weights": model.get_weights(),
    "params": model.count_params(),
}
TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}

