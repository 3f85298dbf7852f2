"""Custom layers in a masked functional model (keras-io's masking guide): one with
supports_masking = True passes the Embedding's mask on to the LSTM; one whose compute_mask
override returns the incoming mask does too; one returning None drops it."""

import numpy as np

import kerasish as keras
from kerasish import layers, ops


class Scale(layers.Layer):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.supports_masking = True

    def call(self, inputs):
        return inputs * 2.0


class Shift(layers.Layer):
    def call(self, inputs):
        return inputs + 1.0

    def compute_mask(self, inputs, mask=None):
        return mask


class DropMask(layers.Layer):
    def call(self, inputs):
        return ops.tanh(inputs)

    def compute_mask(self, inputs, mask=None):
        return None


rng = np.random.default_rng(11)
tokens = rng.integers(1, 7, size=(4, 5)).astype("int32")
tokens[:2, 3:] = 0
result = {}
for name, custom in (("scale", Scale), ("shift", Shift), ("drop", DropMask)):
    inputs = keras.Input((5,), dtype="int32")
    x = layers.Embedding(7, 3, mask_zero=True)(inputs)
    x = custom()(x)
    outputs = layers.LSTM(2)(x)
    model = keras.Model(inputs, outputs)
    model.set_weights([rng.standard_normal(w.shape).astype("float32") * 0.5
                       for w in model.get_weights()])
    result[name] = model.predict(tokens, verbose=0)

RESULT = result
TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}
