"""A functional model used as a layer inside a Sequential, trained end to end."""

import numpy as np

import kerasish as keras
from kerasish import layers

rng = np.random.default_rng(11)
inp = keras.Input(shape=(4,))
block = keras.Model(inp, layers.Dense(3, activation="relu")(inp), name="block")
model = keras.Sequential([keras.Input(shape=(4,)), block, layers.Dense(2, activation="softmax")])
model.set_weights([rng.normal(0, 0.5, w.shape).astype("float32") for w in model.get_weights()])
x = rng.normal(size=(8, 4)).astype("float32")
y = keras.utils.to_categorical(rng.integers(0, 2, 8), 2)
model.compile(keras.optimizers.SGD(0.1), "categorical_crossentropy",
              metrics=["categorical_accuracy"])
hist = model.fit(x, y, epochs=3, batch_size=4, shuffle=False, verbose=0)
RESULT = {"hist": hist.history, "pred": model.predict(x, verbose=0),
          "block_weights": block.get_weights(), "params": model.count_params()}
TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}
