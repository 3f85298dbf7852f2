"""File crossing: a registered custom layer (register_keras_serializable) inside a .keras file."""

import os

import numpy as np

import kerasish as keras
from kerasish import layers, ops

CROSSING = True


@keras.saving.register_keras_serializable(package="conformance")
class ScaledDense(layers.Layer):
    def __init__(self, units, scale=1.0, **kwargs):
        super().__init__(**kwargs)
        self.units, self.scale = units, scale

    def build(self, input_shape):
        self.kernel = self.add_weight(shape=(input_shape[-1], self.units), name="kernel")

    def call(self, x):
        return ops.matmul(x, self.kernel) * self.scale

    def get_config(self):
        return {**super().get_config(), "units": self.units, "scale": self.scale}


rng = np.random.default_rng(65)
x = rng.normal(size=(3, 4)).astype("float32")
path = os.path.join(CROSSDIR, "custom.keras")
if PHASE == "save":
    inp = keras.Input(shape=(4,))
    model = keras.Model(inp, layers.Dense(1)(ScaledDense(3, scale=0.5)(inp)))
    model.set_weights([rng.normal(0, 0.5, w.shape).astype("float32") for w in model.get_weights()])
    model.save(path)
    RESULT = {"pred": model.predict(x, verbose=0)}
else:
    model = keras.saving.load_model(path)
    RESULT = {"pred": model.predict(x, verbose=0), "scale": model.layers[1].scale,
              "layers": [type(l).__name__ for l in model.layers]}
TOLERANCE = {"rtol": 1e-5, "atol": 1e-6}
