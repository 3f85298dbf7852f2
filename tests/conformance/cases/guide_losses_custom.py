"""A custom loss function and a Loss subclass with call(), trained with fit."""

import numpy as np

import kerasish as keras
from kerasish import layers, ops


def custom_mse(y_true, y_pred):
    return ops.mean(ops.square(y_true - y_pred), axis=-1)


class WeightedAbs(keras.losses.Loss):
    def __init__(self, weight=2.0, **kwargs):
        super().__init__(**kwargs)
        self.weight = weight

    def call(self, y_true, y_pred):
        return self.weight * ops.mean(ops.abs(y_true - y_pred), axis=-1)


rng = np.random.default_rng(53)
x = rng.normal(size=(8, 3)).astype("float32")
y = rng.normal(size=(8, 2)).astype("float32")
out = {}
for name, loss in (("fn", custom_mse), ("cls", WeightedAbs(1.5))):
    model = keras.Sequential([keras.Input(shape=(3,)), layers.Dense(2)])
    model.set_weights([np.full((3, 2), 0.2, "float32"), np.zeros(2, "float32")])
    model.compile(keras.optimizers.SGD(0.1), loss=loss)
    hist = model.fit(x, y, epochs=2, batch_size=4, shuffle=False, verbose=0)
    out[name] = [hist.history["loss"], model.get_weights()]
RESULT = out
TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}
