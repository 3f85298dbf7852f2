"""A compute_loss override that adds a term to `super().compute_loss(...)` (the compiled
loss, here with sample weights), as Keras's customizing-fit guide does."""

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
w = np.linspace(0.5, 1.5, 8).astype("float32")
model = PlusPenalty()
model.predict(x[:1], verbose=0)  # builds the subclass on data
model.set_weights([rng.standard_normal((3, 1)).astype("float32"), np.zeros(1, "float32")])
model.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse")
history = model.fit(x, y, batch_size=4, epochs=2, shuffle=False, verbose=0)
weighted = model.fit(x, y, sample_weight=w, batch_size=4, epochs=1, shuffle=False, verbose=0)
RESULT = {
    "loss": history.history["loss"] + weighted.history["loss"],
    "evaluate": model.evaluate(x, y, batch_size=4, verbose=0),
    "weights": model.get_weights(),
}
TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}
