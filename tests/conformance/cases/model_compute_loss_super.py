"""A compute_loss override that adds to `super().compute_loss(...)` (Keras's compiled
loss plus a term): kerasish refuses calling the base compute_loss by name (expected
refusal)."""

import numpy as np

import kerasish as keras
from kerasish import layers, ops


class PlusPenalty(keras.Model):
    def __init__(self):
        super().__init__()
        self.dense = layers.Dense(1)

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, allow_empty=False):
        loss = super().compute_loss(x=x, y=y, y_pred=y_pred, sample_weight=sample_weight)
        return loss + 0.1 * ops.mean(ops.abs(y_pred))

    def call(self, x):
        return self.dense(x)


rng = np.random.default_rng(0)
x = rng.standard_normal((8, 3)).astype("float32")
y = rng.standard_normal((8, 1)).astype("float32")
model = PlusPenalty()
model.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse")
history = model.fit(x, y, batch_size=4, epochs=1, shuffle=False, verbose=0)
RESULT = {"history_keys": sorted(history.history)}
