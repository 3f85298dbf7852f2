"""The Sequential guide's incremental form: model.add(...) layer by layer, then pop() the last."""

import numpy as np

import kerasish as keras
from kerasish import layers

rng = np.random.default_rng(96)
model = keras.Sequential()
model.add(keras.Input(shape=(4,)))
model.add(layers.Dense(3, activation="relu"))
model.add(layers.Dense(2))
model.add(layers.Dense(5))
names = [type(layer).__name__ for layer in model.layers]
model.pop()
model.set_weights([rng.normal(0, 0.5, w.shape).astype("float32") for w in model.get_weights()])
x = rng.normal(size=(3, 4)).astype("float32")
RESULT = {"before_pop": names, "after_pop": len(model.layers), "pred": model.predict(x, verbose=0),
          "output_shape": list(model.output_shape), "params": model.count_params()}
