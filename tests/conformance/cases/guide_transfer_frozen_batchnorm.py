"""A frozen BatchNormalization runs in inference mode: moving stats unchanged by fit (Keras 3)."""

import numpy as np

import kerasish as keras
from kerasish import layers

rng = np.random.default_rng(71)
model = keras.Sequential([keras.Input(shape=(3,)), layers.Dense(4), layers.BatchNormalization(),
                          layers.Dense(1)])
weights = [rng.normal(0, 0.5, w.shape).astype("float32") for w in model.get_weights()]
weights[5] = np.abs(weights[5]) + 0.5
model.set_weights(weights)
model.layers[1].trainable = False
x = rng.normal(size=(8, 3)).astype("float32")
y = rng.normal(size=(8, 1)).astype("float32")
model.compile(keras.optimizers.SGD(0.1), "mse")
hist = model.fit(x, y, epochs=2, batch_size=4, shuffle=False, verbose=0)
RESULT = {"bn": model.layers[1].get_weights(), "loss": hist.history["loss"],
          "weights": model.get_weights(), "trainable": len(model.trainable_weights)}
TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}
