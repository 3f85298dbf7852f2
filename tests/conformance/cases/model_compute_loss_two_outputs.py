"""A compute_loss override in a model with two outputs (y_pred a list): kerasish refuses
the override with several outputs by name (expected refusal)."""

import numpy as np

import kerasish as keras
from kerasish import layers, ops


class TwoHeads(keras.Model):
    def __init__(self):
        super().__init__()
        self.a, self.b = layers.Dense(1), layers.Dense(1)

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, allow_empty=False):
        return ops.mean(ops.square(y[0] - y_pred[0])) + ops.mean(ops.square(y[1] - y_pred[1]))

    def call(self, x):
        return [self.a(x), self.b(x)]


rng = np.random.default_rng(0)
x = rng.standard_normal((8, 3)).astype("float32")
ys = [rng.standard_normal((8, 1)).astype("float32") for _ in range(2)]
model = TwoHeads()
model.compile(optimizer=keras.optimizers.SGD(0.1))
history = model.fit(x, ys, batch_size=4, epochs=1, shuffle=False, verbose=0)
RESULT = {"history_keys": sorted(history.history)}
