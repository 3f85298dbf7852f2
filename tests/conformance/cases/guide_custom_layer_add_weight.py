"""The 'making new layers' guide's Linear layer: add_weight in build(), ops.matmul in call()."""

import numpy as np

import kerasish as keras
from kerasish import layers, ops


class Linear(layers.Layer):
    def __init__(self, units=32, **kwargs):
        super().__init__(**kwargs)
        self.units = units

    def build(self, input_shape):
        self.w = self.add_weight(shape=(input_shape[-1], self.units),
                                 initializer="random_normal", trainable=True)
        self.b = self.add_weight(shape=(self.units,), initializer="zeros", trainable=True)

    def call(self, inputs):
        return ops.matmul(inputs, self.w) + self.b


rng = np.random.default_rng(14)
model = keras.Sequential([keras.Input(shape=(4,)), Linear(3), layers.Activation("relu"), Linear(1)])
model.set_weights([rng.normal(0, 0.5, w.shape).astype("float32") for w in model.get_weights()])
x = rng.normal(size=(8, 4)).astype("float32")
y = rng.normal(size=(8, 1)).astype("float32")
model.compile(keras.optimizers.SGD(0.05), "mse")
hist = model.fit(x, y, epochs=2, batch_size=4, shuffle=False, verbose=0)
RESULT = {"loss": hist.history["loss"], "pred": model.predict(x, verbose=0),
          "weights": model.get_weights(), "shapes": [list(w.shape) for w in model.weights],
          "trainable": [len(l.trainable_weights) for l in model.layers]}
TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}
