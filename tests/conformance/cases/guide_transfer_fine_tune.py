"""Fine-tuning: train the head with the base frozen, unfreeze, recompile with a low rate, train on."""

import numpy as np

import kerasish as keras
from kerasish import layers

rng = np.random.default_rng(72)
base = keras.Sequential([keras.Input(shape=(4,)), layers.Dense(3, activation="tanh")], name="base")
model = keras.Sequential([keras.Input(shape=(4,)), base, layers.Dense(1)])
model.set_weights([rng.normal(0, 0.5, w.shape).astype("float32") for w in model.get_weights()])
x = rng.normal(size=(8, 4)).astype("float32")
y = rng.normal(size=(8, 1)).astype("float32")
base.trainable = False
model.compile(keras.optimizers.SGD(0.1), "mse")
h1 = model.fit(x, y, epochs=1, batch_size=4, shuffle=False, verbose=0)
frozen_count = len(model.trainable_weights)
base.trainable = True
model.compile(keras.optimizers.SGD(1e-2), "mse")
h2 = model.fit(x, y, epochs=2, batch_size=4, shuffle=False, verbose=0)
RESULT = {"h1": h1.history["loss"], "h2": h2.history["loss"], "weights": model.get_weights(),
          "counts": [frozen_count, len(model.trainable_weights)]}
TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}
