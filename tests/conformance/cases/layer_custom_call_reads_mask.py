"""keras-io's masking guide: a layer whose call(inputs, mask=None) reads the mask (a
masked softmax over the steps): refused by name on kerasish."""

import numpy as np

import kerasish as keras
from kerasish import layers, ops


class TemporalSoftmax(layers.Layer):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.supports_masking = True

    def call(self, inputs, mask=None):
        broadcast_float_mask = ops.expand_dims(ops.cast(mask, "float32"), -1)
        inputs_exp = ops.exp(inputs) * broadcast_float_mask
        inputs_sum = ops.sum(inputs_exp * broadcast_float_mask, axis=-1, keepdims=True)
        return inputs_exp / inputs_sum


rng = np.random.default_rng(13)
inputs = keras.Input((5,), dtype="int32")
x = layers.Embedding(input_dim=10, output_dim=4, mask_zero=True)(inputs)
x = layers.Dense(1)(x)
outputs = TemporalSoftmax()(x)
model = keras.Model(inputs, outputs)
model.set_weights([rng.standard_normal(w.shape).astype("float32") * 0.5
                   for w in model.get_weights()])
tokens = np.array([[1, 2, 0, 0, 0], [3, 4, 5, 6, 7]], "int32")

RESULT = {"predict": model.predict(tokens, verbose=0)}
TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}
