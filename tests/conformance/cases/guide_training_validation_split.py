"""fit(validation_split=0.25): the last quarter is held out (before shuffling), val_ metrics logged."""

import numpy as np

import kerasish as keras
from kerasish import layers

rng = np.random.default_rng(76)
x = rng.normal(size=(16, 3)).astype("float32")
y = rng.integers(0, 2, (16, 1)).astype("float32")
model = keras.Sequential([keras.Input(shape=(3,)), layers.Dense(1, activation="sigmoid")])
model.set_weights([rng.normal(0, 0.5, w.shape).astype("float32") for w in model.get_weights()])
model.compile(keras.optimizers.SGD(0.2), "binary_crossentropy", metrics=["accuracy"])
hist = model.fit(x, y, validation_split=0.25, epochs=3, batch_size=4, shuffle=False, verbose=0)
RESULT = {"hist": hist.history, "keys": sorted(hist.history), "weights": model.get_weights()}
TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}
