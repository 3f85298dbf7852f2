"""keras.random.randint inside a custom layer's call(): Keras draws it per call, kerasish
refuses integer draws in traced graphs by name (eager randint works: api_random_draws)."""

import numpy as np

import kerasish as keras
from kerasish import layers, ops


class RandomShift(layers.Layer):
    def call(self, x):
        shift = ops.cast(keras.random.randint((1,), 0, 3, seed=1), "float32")
        return x + shift


inputs = keras.Input((3,))
model = keras.Model(inputs, RandomShift()(inputs))
out = model.predict(np.zeros((2, 3), "float32"), verbose=0)
RESULT = {"in_range": bool(((out >= 0) & (out < 3)).all())}
