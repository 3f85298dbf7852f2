"""Transfer learning: base_model.trainable = False, a new head trained; base weights unchanged."""

import numpy as np

import kerasish as keras
from kerasish import layers

rng = np.random.default_rng(70)
base = keras.Sequential([keras.Input(shape=(6,)), layers.Dense(5, activation="relu"),
                         layers.Dense(4, activation="relu")], name="base")
base.set_weights([rng.normal(0, 0.5, w.shape).astype("float32") for w in base.get_weights()])
before = base.get_weights()
base.trainable = False
inputs = keras.Input(shape=(6,))
outputs = layers.Dense(1)(base(inputs, training=False))
model = keras.Model(inputs, outputs)
model.layers[-1].set_weights([rng.normal(0, 0.5, (4, 1)).astype("float32"), np.zeros(1, "float32")])
x = rng.normal(size=(8, 6)).astype("float32")
y = rng.normal(size=(8, 1)).astype("float32")
model.compile(keras.optimizers.SGD(0.1), "mse")
hist = model.fit(x, y, epochs=2, batch_size=4, shuffle=False, verbose=0)
RESULT = {"loss": hist.history["loss"], "unchanged": all(np.array_equal(a, b) for a, b in
                                                         zip(before, base.get_weights())),
          "head": model.layers[-1].get_weights(), "trainable": len(model.trainable_weights),
          "non_trainable": len(model.non_trainable_weights)}
TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}
