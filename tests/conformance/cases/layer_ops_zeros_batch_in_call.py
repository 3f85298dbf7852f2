"""A custom recurrent layer written with ops: the state starts as
ops.zeros((batch, units)) with batch = ops.shape(x)[0] (None while tracing), then a loop
over the steps; predictions, a gradient step and ops.ones/ops.full of the same form."""

import numpy as np

import kerasish as keras
from kerasish import layers, ops


class LoopRNN(layers.Layer):
    def __init__(self, units, **kwargs):
        super().__init__(**kwargs)
        self.units = units

    def build(self, input_shape):
        self.w = self.add_weight(shape=(input_shape[-1], self.units), name="w")
        self.u = self.add_weight(shape=(self.units, self.units), name="u")

    def call(self, x):
        batch = ops.shape(x)[0]
        h = ops.zeros((batch, self.units))
        scale = ops.ones((batch, self.units)) + ops.full((batch, self.units), 0.5)
        for t in range(x.shape[1]):
            h = ops.tanh(ops.matmul(x[:, t, :], self.w) + ops.matmul(h, self.u))
        return h * scale


rng = np.random.default_rng(5)
inputs = keras.Input((4, 3))
outputs = layers.Dense(1)(LoopRNN(5)(inputs))
model = keras.Model(inputs, outputs)
model.set_weights([rng.standard_normal(w.shape).astype("float32") * 0.5
                   for w in model.get_weights()])
x = rng.standard_normal((6, 4, 3)).astype("float32")
y = rng.standard_normal((6, 1)).astype("float32")
model.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse")
before = model.predict(x, verbose=0)
loss = model.train_on_batch(x, y)

RESULT = {"predict": before, "loss": float(loss), "weights": model.get_weights()}
TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}
