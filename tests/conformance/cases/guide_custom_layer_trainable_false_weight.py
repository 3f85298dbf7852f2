"""add_weight(trainable=False): a non-trainable weight counted apart and left alone by fit."""

import numpy as np

import kerasish as keras
from kerasish import layers


class Offset(layers.Layer):
    def build(self, input_shape):
        self.offset = self.add_weight(shape=(input_shape[-1],), initializer="ones",
                                      trainable=False, name="offset")
        self.scale = self.add_weight(shape=(input_shape[-1],), initializer="ones", name="scale")

    def call(self, x):
        return x * self.scale + self.offset


rng = np.random.default_rng(19)
model = keras.Sequential([keras.Input(shape=(3,)), Offset(), layers.Dense(1)])
model.set_weights([rng.normal(0, 0.5, w.shape).astype("float32") for w in model.get_weights()])
x = rng.normal(size=(6, 3)).astype("float32")
y = rng.normal(size=(6, 1)).astype("float32")
model.compile(keras.optimizers.SGD(0.1), "mse")
model.fit(x, y, epochs=2, batch_size=3, shuffle=False, verbose=0)
layer = model.layers[0]
RESULT = {"trainable": len(layer.trainable_weights), "non_trainable": len(layer.non_trainable_weights),
          "offset": layer.get_weights(), "pred": model.predict(x, verbose=0),
          "params": model.count_params()}
TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}
