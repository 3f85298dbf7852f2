"""A custom cell in keras.layers.RNN behind Embedding(mask_zero=True): Keras skips the
padded steps; refused by name on kerasish (masks reach the built-in cells)."""

import numpy as np

import kerasish as keras
from kerasish import layers, ops


class SumCell(layers.Layer):
    def __init__(self, units, **kwargs):
        super().__init__(**kwargs)
        self.units = units
        self.state_size = units

    def build(self, input_shape):
        self.kernel = self.add_weight(shape=(input_shape[-1], self.units), name="kernel")

    def call(self, inputs, states):
        output = ops.tanh(ops.matmul(inputs, self.kernel) + states[0])
        return output, [output]


rng = np.random.default_rng(25)
inputs = keras.Input((5,), dtype="int32")
x = layers.Embedding(8, 3, mask_zero=True)(inputs)
model = keras.Model(inputs, layers.RNN(SumCell(2))(x))
model.set_weights([rng.standard_normal(w.shape).astype("float32") * 0.5
                   for w in model.get_weights()])
tokens = np.array([[1, 2, 0, 0, 0], [3, 4, 5, 6, 7]], "int32")

RESULT = {"predict": model.predict(tokens, verbose=0)}
TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}
