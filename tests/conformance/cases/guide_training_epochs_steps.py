"""fit(initial_epoch=, epochs=) and steps_per_epoch; history.epoch and the step count."""

import numpy as np

import kerasish as keras
from kerasish import layers

rng = np.random.default_rng(81)
x = rng.normal(size=(12, 2)).astype("float32")
y = rng.normal(size=(12, 1)).astype("float32")
model = keras.Sequential([keras.Input(shape=(2,)), layers.Dense(1)])
model.set_weights([rng.normal(0, 0.5, w.shape).astype("float32") for w in model.get_weights()])
model.compile(keras.optimizers.SGD(0.1), "mse")
h1 = model.fit(x, y, epochs=4, initial_epoch=2, batch_size=4, shuffle=False, verbose=0)
h2 = model.fit(x, y, epochs=2, steps_per_epoch=2, batch_size=6, shuffle=False, verbose=0)
RESULT = {"epoch1": h1.epoch, "loss1": h1.history["loss"], "epoch2": h2.epoch,
          "iterations": int(keras.ops.convert_to_numpy(model.optimizer.iterations)),
          "weights": model.get_weights()}
TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}
