"""Keras's documented custom cell (MinimalRNNCell: state_size, build,
call(inputs, states)) in keras.layers.RNN, also with return_sequences/return_state and a
stack of two; predictions and a training step."""

import numpy as np

import kerasish as keras
from kerasish import layers, ops


class MinimalRNNCell(layers.Layer):
    def __init__(self, units, **kwargs):
        super().__init__(**kwargs)
        self.units = units
        self.state_size = units

    def build(self, input_shape):
        self.kernel = self.add_weight(shape=(input_shape[-1], self.units),
                                      initializer="glorot_uniform", name="kernel")
        self.recurrent_kernel = self.add_weight(
            shape=(self.units, self.units), initializer="glorot_uniform",
            name="recurrent_kernel")

    def call(self, inputs, states):
        prev_output = states[0]
        h = ops.matmul(inputs, self.kernel)
        output = h + ops.matmul(prev_output, self.recurrent_kernel)
        return output, [output]


rng = np.random.default_rng(7)
x = rng.standard_normal((6, 4, 3)).astype("float32")
y = rng.standard_normal((6, 2)).astype("float32")

inputs = keras.Input((4, 3))
seq, state = layers.RNN(MinimalRNNCell(5), return_sequences=True, return_state=True)(inputs)
last = layers.RNN([MinimalRNNCell(4), MinimalRNNCell(3)], go_backwards=True)(seq)
outputs = layers.Dense(2)(layers.Concatenate()([last, state]))
model = keras.Model(inputs, outputs)
model.set_weights([rng.standard_normal(w.shape).astype("float32") * 0.3
                   for w in model.get_weights()])
model.compile(optimizer=keras.optimizers.SGD(0.05), loss="mse")
before = model.predict(x, verbose=0)
loss = model.train_on_batch(x, y)

RESULT = {"predict": before, "loss": float(loss), "weights": model.get_weights(),
          "params": model.count_params()}
TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}
