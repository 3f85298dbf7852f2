"""fit/evaluate with sample_weight: the weighted loss per epoch and the trained weights."""

import numpy as np

import kerasish as keras
from kerasish import layers

rng = np.random.default_rng(77)
x = rng.normal(size=(12, 3)).astype("float32")
y = rng.normal(size=(12, 1)).astype("float32")
sw = rng.random(12).astype("float32") * 2
model = keras.Sequential([keras.Input(shape=(3,)), layers.Dense(2, activation="relu"), layers.Dense(1)])
model.set_weights([rng.normal(0, 0.5, w.shape).astype("float32") for w in model.get_weights()])
model.compile(keras.optimizers.SGD(0.05), "mse", metrics=["mae"])
hist = model.fit(x, y, sample_weight=sw, epochs=2, batch_size=4, shuffle=False, verbose=0)
RESULT = {"hist": hist.history, "weights": model.get_weights(),
          "eval": model.evaluate(x, y, sample_weight=sw, verbose=0),
          "eval_plain": model.evaluate(x, y, verbose=0)}
TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}
