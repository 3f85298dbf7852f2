"""A custom layer built from keras.ops (softmax, mean, where, clip, concatenate) in call()."""

import numpy as np

import kerasish as keras
from kerasish import layers, ops


class Mix(layers.Layer):
    def call(self, x):
        p = ops.softmax(x, axis=-1)
        m = ops.mean(x, axis=-1, keepdims=True)
        gated = ops.where(x > m, x, ops.zeros_like(x))
        return ops.concatenate([p, ops.clip(gated, -1.0, 1.0), ops.sqrt(ops.abs(x) + 1.0)], axis=-1)


rng = np.random.default_rng(18)
inp = keras.Input(shape=(4,))
h = layers.Dense(4)(inp)
out = layers.Dense(2)(Mix()(h))
model = keras.Model(inp, out)
model.set_weights([rng.normal(0, 0.6, w.shape).astype("float32") for w in model.get_weights()])
x = rng.normal(size=(6, 4)).astype("float32")
y = rng.normal(size=(6, 2)).astype("float32")
model.compile(keras.optimizers.SGD(0.05), "mse")
loss = model.train_on_batch(x, y)
RESULT = {"pred": model.predict(x, verbose=0), "loss": loss, "weights": model.get_weights(),
          "eager": keras.ops.convert_to_numpy(Mix()(x))}
TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}
