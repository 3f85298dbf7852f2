"""History's epoch list and params, a LambdaCallback and a custom Callback's hooks with logs."""

import numpy as np

import kerasish as keras
from kerasish import layers

events = []


class Recorder(keras.callbacks.Callback):
    def on_train_begin(self, logs=None):
        events.append("train_begin")

    def on_epoch_end(self, epoch, logs=None):
        events.append(("epoch_end", epoch, sorted(logs)))

    def on_train_end(self, logs=None):
        events.append("train_end")


rng = np.random.default_rng(47)
x = rng.normal(size=(8, 2)).astype("float32")
y = rng.normal(size=(8, 1)).astype("float32")
model = keras.Sequential([keras.Input(shape=(2,)), layers.Dense(1)])
model.set_weights([rng.normal(0, 0.5, w.shape).astype("float32") for w in model.get_weights()])
model.compile(keras.optimizers.SGD(0.1), "mse", metrics=["mae"])
losses = []
lam = keras.callbacks.LambdaCallback(on_epoch_end=lambda epoch, logs: losses.append(logs["loss"]))
hist = model.fit(x, y, epochs=3, batch_size=4, shuffle=False, verbose=0, callbacks=[Recorder(), lam])
RESULT = {"epoch": hist.epoch, "params": {k: hist.params[k] for k in ("epochs", "steps")},
          "events": [str(e) for e in events], "lambda": losses, "hist": hist.history}
TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}
