"""ModelCheckpoint(save_best_only, save_weights_only) into .weights.h5 and .keras per epoch."""

import os

import numpy as np

import kerasish as keras
from kerasish import layers

rng = np.random.default_rng(43)
x = rng.normal(size=(12, 3)).astype("float32")
y = rng.normal(size=(12, 1)).astype("float32")
model = keras.Sequential([keras.Input(shape=(3,)), layers.Dense(2, activation="tanh"), layers.Dense(1)])
model.set_weights([rng.normal(0, 0.5, w.shape).astype("float32") for w in model.get_weights()])
model.compile(keras.optimizers.SGD(0.1), "mse")
best = os.path.join(WORKDIR, "best.weights.h5")
cbs = [keras.callbacks.ModelCheckpoint(best, monitor="loss", save_best_only=True,
                                       save_weights_only=True),
       keras.callbacks.ModelCheckpoint(os.path.join(WORKDIR, "model_{epoch:02d}.keras"))]
hist = model.fit(x, y, epochs=3, batch_size=4, shuffle=False, callbacks=cbs, verbose=0)
restored = keras.Sequential([keras.Input(shape=(3,)), layers.Dense(2, activation="tanh"),
                             layers.Dense(1)])
restored.load_weights(best)
second = keras.saving.load_model(os.path.join(WORKDIR, "model_02.keras"))
RESULT = {"files": sorted(os.listdir(WORKDIR)), "loss": hist.history["loss"],
          "best": restored.get_weights(), "epoch2": second.predict(x, verbose=0)}
TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}
