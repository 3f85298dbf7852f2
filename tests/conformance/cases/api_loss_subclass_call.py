"""A keras.losses.Loss subclass with call(): called on arrays (reductions, sample weights)
and trained through compile/fit."""

import numpy as np

import kerasish as keras
from kerasish import ops


class WeightedMSE(keras.losses.Loss):
    def __init__(self, factor=2.0, name="weighted_mse", **kwargs):
        super().__init__(name=name, **kwargs)
        self.factor = factor

    def call(self, y_true, y_pred):
        return self.factor * ops.mean(ops.square(y_true - y_pred), axis=-1)


rng = np.random.default_rng(1)
y_true = rng.standard_normal((6, 2)).astype("float32")
y_pred = rng.standard_normal((6, 2)).astype("float32")
weights = np.array([1.0, 0.5, 0.0, 2.0, 1.0, 1.0], "float32")
x = rng.standard_normal((16, 3)).astype("float32")
y = rng.standard_normal((16, 2)).astype("float32")
model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
model.set_weights([rng.standard_normal((3, 2)).astype("float32") * 0.5, np.zeros(2, "float32")])
model.compile(optimizer=keras.optimizers.SGD(0.1), loss=WeightedMSE())
history = model.fit(x, y, batch_size=8, epochs=2, shuffle=False, verbose=0)

RESULT = {
    "default": float(WeightedMSE()(y_true, y_pred)),
    "sum": float(WeightedMSE(reduction="sum")(y_true, y_pred)),
    "none": np.asarray(WeightedMSE(reduction="none")(y_true, y_pred)),
    "weighted": float(WeightedMSE()(y_true, y_pred, sample_weight=weights)),
    "loss": history.history["loss"],
    "weights": model.get_weights(),
}
TOLERANCE = {"rtol": 1e-5, "atol": 1e-6}
