"""A block layer tracking sub-layers (the guide's MLPBlock): weights collected recursively."""

import numpy as np

import kerasish as keras
from kerasish import layers


class MLPBlock(layers.Layer):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.linear_1 = layers.Dense(6, activation="relu")
        self.linear_2 = layers.Dense(4, activation="relu")
        self.linear_3 = layers.Dense(1)

    def call(self, inputs):
        return self.linear_3(self.linear_2(self.linear_1(inputs)))


rng = np.random.default_rng(16)
inp = keras.Input(shape=(5,))
model = keras.Model(inp, MLPBlock()(inp))
model.set_weights([rng.normal(0, 0.5, w.shape).astype("float32") for w in model.get_weights()])
x = rng.normal(size=(8, 5)).astype("float32")
y = rng.normal(size=(8, 1)).astype("float32")
model.compile(keras.optimizers.SGD(0.05), "mae")
hist = model.fit(x, y, epochs=2, batch_size=4, shuffle=False, verbose=0)
RESULT = {"n_weights": len(model.layers[1].weights),
          "n_trainable": len(model.layers[1].trainable_weights),
          "loss": hist.history["loss"], "pred": model.predict(x, verbose=0)}
TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}
