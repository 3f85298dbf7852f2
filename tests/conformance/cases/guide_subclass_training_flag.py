"""call(inputs, training=None): a branch taken only in training (here: adding a constant)."""

import numpy as np

import kerasish as keras
from kerasish import layers


class Shifted(keras.Model):
    def __init__(self):
        super().__init__()
        self.dense = layers.Dense(2)

    def call(self, inputs, training=None):
        y = self.dense(inputs)
        if training:
            y = y + 1.0
        return y


rng = np.random.default_rng(13)
model = Shifted()
x = rng.normal(size=(6, 3)).astype("float32")
model(x)
model.set_weights([rng.normal(0, 0.5, w.shape).astype("float32") for w in model.get_weights()])
y = rng.normal(size=(6, 2)).astype("float32")
model.compile(keras.optimizers.SGD(0.1), "mse")
loss = model.train_on_batch(x, y)
RESULT = {"infer": keras.ops.convert_to_numpy(model(x, training=False)), "train": keras.ops.convert_to_numpy(model(x, training=True)),
          "loss": loss, "after": model.get_weights(), "eval": model.evaluate(x, y, verbose=0)}
TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}
