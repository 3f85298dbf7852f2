"""An activity-regularization layer calling add_loss in call(): the loss joins the training loss."""

import numpy as np

import kerasish as keras
from kerasish import layers, ops


class ActivityRegularization(layers.Layer):
    def __init__(self, rate=1e-2):
        super().__init__()
        self.rate = rate

    def call(self, inputs):
        self.add_loss(self.rate * ops.sum(ops.square(inputs)))
        return inputs


rng = np.random.default_rng(17)
inp = keras.Input(shape=(4,))
x = layers.Dense(3)(inp)
x = ActivityRegularization(0.05)(x)
out = layers.Dense(1)(x)
model = keras.Model(inp, out)
model.set_weights([rng.normal(0, 0.5, w.shape).astype("float32") for w in model.get_weights()])
x_data = rng.normal(size=(8, 4)).astype("float32")
y = rng.normal(size=(8, 1)).astype("float32")
model.compile(keras.optimizers.SGD(0.05), "mse")
hist = model.fit(x_data, y, epochs=2, batch_size=4, shuffle=False, verbose=0)
RESULT = {"loss": hist.history["loss"], "weights": model.get_weights(),
          "eval": model.evaluate(x_data, y, verbose=0)}
TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}
