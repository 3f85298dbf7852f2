"""Embedding without a mask: lookups, Flatten + Dense classifier trained a step, weights' shape."""

import numpy as np

import kerasish as keras
from kerasish import layers

rng = np.random.default_rng(89)
model = keras.Sequential([keras.Input(shape=(4,), dtype="int32"), layers.Embedding(12, 3),
                          layers.Flatten(), layers.Dense(1, activation="sigmoid")])
model.set_weights([rng.normal(0, 0.5, w.shape).astype("float32") for w in model.get_weights()])
ids = rng.integers(0, 12, (6, 4)).astype("int32")
y = rng.integers(0, 2, (6, 1)).astype("float32")
model.compile(keras.optimizers.SGD(0.5), "binary_crossentropy")
loss = model.train_on_batch(ids, y)
RESULT = {"lookup": keras.ops.convert_to_numpy(model.layers[0](ids[:2])), "loss": loss,
          "table": model.layers[0].get_weights()[0], "pred": model.predict(ids, verbose=0)}
TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}
