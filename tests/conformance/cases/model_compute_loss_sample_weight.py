"""A compute_loss override given sample weights: Keras passes them to the override;
kerasish refuses the combination by name (expected refusal)."""

import numpy as np

import kerasish as keras
from kerasish import layers, ops


class WeightedLoss(keras.Model):
    def __init__(self):
        super().__init__()
        self.dense = layers.Dense(1)

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, allow_empty=False):
        return ops.mean(ops.square(y - y_pred) * ops.reshape(sample_weight, (-1, 1)))

    def call(self, x):
        return self.dense(x)


rng = np.random.default_rng(0)
x = rng.standard_normal((8, 3)).astype("float32")
y = rng.standard_normal((8, 1)).astype("float32")
model = WeightedLoss()
model.compile(optimizer=keras.optimizers.SGD(0.1))
history = model.fit(x, y, sample_weight=np.linspace(0.5, 1.5, 8).astype("float32"),
                    batch_size=4, epochs=1, shuffle=False, verbose=0)
RESULT = {"history_keys": sorted(history.history)}
