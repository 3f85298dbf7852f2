"""add_loss in a layer nested in a custom layer, trained by fit with a compiled loss and a
kernel regularizer beside it: the logged loss and the updates include every term."""

import numpy as np

import kerasish as keras
from kerasish import layers, ops


class ActivityRegularizationLayer(layers.Layer):
    def __init__(self, rate=1e-2):
        super().__init__()
        self.rate = rate

    def call(self, inputs):
        self.add_loss(self.rate * ops.sum(ops.square(inputs)))
        return inputs


class OuterLayer(layers.Layer):
    def __init__(self):
        super().__init__()
        self.activity_reg = ActivityRegularizationLayer(1e-2)

    def call(self, inputs):
        return self.activity_reg(inputs)


rng = np.random.default_rng(0)
x = rng.standard_normal((16, 4)).astype("float32")
y = rng.standard_normal((16, 1)).astype("float32")
inputs = keras.Input((4,))
h = layers.Dense(3, activation="tanh", kernel_regularizer=keras.regularizers.l2(1e-2))(inputs)
h = OuterLayer()(h)
model = keras.Model(inputs, layers.Dense(1)(h))
model.set_weights([rng.standard_normal(w.shape).astype("float32") * 0.5
                   for w in model.get_weights()])
model.compile(optimizer=keras.optimizers.SGD(0.05), loss="mse")
history = model.fit(x, y, batch_size=4, epochs=2, shuffle=False, verbose=0)

RESULT = {
    "loss": history.history["loss"],
    "evaluate": model.evaluate(x, y, verbose=0),
    "weights": model.get_weights(),
}
TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}
