"""ops.tensordot: integer and paired axes on arrays, and inside a custom layer's call()
(a per-feature weight contracted over the last axis), trained by fit."""

import numpy as np

import kerasish as keras
from kerasish import layers, ops

rng = np.random.default_rng(5)
a = rng.standard_normal((2, 3, 4)).astype("float32")
b = rng.standard_normal((3, 4, 5)).astype("float32")
c = rng.standard_normal((4, 3)).astype("float32")
RESULT = {
    "axes2": ops.convert_to_numpy(ops.tensordot(a, b, axes=2)),
    "axes1": ops.convert_to_numpy(ops.tensordot(a, c, axes=1)),
    "pairs": ops.convert_to_numpy(ops.tensordot(a, b, axes=([1], [0]))),
    "crossed": ops.convert_to_numpy(ops.tensordot(a, c, axes=([1, 2], [1, 0]))),
    "outer": ops.convert_to_numpy(ops.tensordot(c[0], c[:, 0], axes=0)),
}


class Contract(layers.Layer):
    def build(self, input_shape):
        self.w = self.add_weight(shape=(input_shape[-1], 3), initializer="glorot_uniform",
                                 name="w")

    def call(self, x):
        return ops.tensordot(x, self.w, axes=1)


inputs = keras.Input((5, 4))
outputs = layers.Dense(1)(layers.Flatten()(Contract()(inputs)))
model = keras.Model(inputs, outputs)
model.set_weights([rng.standard_normal(w.shape).astype("float32") * 0.3
                   for w in model.get_weights()])
model.compile(optimizer=keras.optimizers.SGD(0.05), loss="mse")
x = rng.standard_normal((8, 5, 4)).astype("float32")
y = rng.standard_normal((8, 1)).astype("float32")
RESULT["loss"] = model.fit(x, y, epochs=2, batch_size=4, shuffle=False, verbose=0).history["loss"]
RESULT["weights"] = model.get_weights()
TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}
