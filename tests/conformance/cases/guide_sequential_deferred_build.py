"""A Sequential without an Input: no weights until the first call builds it from the data."""

import numpy as np

import kerasish as keras
from kerasish import layers

rng = np.random.default_rng(97)
model = keras.Sequential([layers.Dense(3, activation="relu"), layers.Dense(1)])
before = len(model.weights)
x = rng.normal(size=(4, 5)).astype("float32")
model(x)
model.set_weights([rng.normal(0, 0.5, w.shape).astype("float32") for w in model.get_weights()])
y = rng.normal(size=(4, 1)).astype("float32")
model.compile(keras.optimizers.SGD(0.1), "mse")
loss = model.train_on_batch(x, y)
RESULT = {"before": before, "after": len(model.weights), "loss": loss,
          "pred": model.predict(x, verbose=0), "shapes": [list(w.shape) for w in model.get_weights()]}
TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}
