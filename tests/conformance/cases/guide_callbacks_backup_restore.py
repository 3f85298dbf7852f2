"""BackupAndRestore: a run interrupted after epoch 2 resumes at epoch 3 with the same end weights."""

import os

import numpy as np

import kerasish as keras
from kerasish import layers

rng = np.random.default_rng(88)
x = rng.normal(size=(8, 2)).astype("float32")
y = rng.normal(size=(8, 1)).astype("float32")
start = [rng.normal(0, 0.5, (2, 1)).astype("float32"), np.zeros(1, "float32")]


class StopAt(keras.callbacks.Callback):
    def on_epoch_end(self, epoch, logs=None):
        if epoch == 1:
            raise RuntimeError("interrupted")


def make():
    model = keras.Sequential([keras.Input(shape=(2,)), layers.Dense(1)])
    model.set_weights(start)
    model.compile(keras.optimizers.SGD(0.1), "mse")
    return model


backup = os.path.join(WORKDIR, "backup")
model = make()
try:
    model.fit(x, y, epochs=4, batch_size=4, shuffle=False, verbose=0,
              callbacks=[keras.callbacks.BackupAndRestore(backup), StopAt()])
except RuntimeError:
    pass
resumed = make()
hist = resumed.fit(x, y, epochs=4, batch_size=4, shuffle=False, verbose=0,
                   callbacks=[keras.callbacks.BackupAndRestore(backup)])
straight = make()
straight.fit(x, y, epochs=4, batch_size=4, shuffle=False, verbose=0)
RESULT = {"resumed_epochs": hist.epoch, "weights": resumed.get_weights(),
          "straight": straight.get_weights()}
TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}
