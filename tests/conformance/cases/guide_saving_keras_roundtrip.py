"""model.save('x.keras') then load_model on the same side: predictions, optimizer state, and training on."""

import os

import numpy as np

import kerasish as keras
from kerasish import layers

rng = np.random.default_rng(60)
model = keras.Sequential([keras.Input(shape=(3,)), layers.Dense(4, activation="relu"), layers.Dense(2)])
model.set_weights([rng.normal(0, 0.5, w.shape).astype("float32") for w in model.get_weights()])
x = rng.normal(size=(8, 3)).astype("float32")
y = rng.normal(size=(8, 2)).astype("float32")
model.compile(keras.optimizers.Adam(0.01), "mse", metrics=["mae"])
model.fit(x, y, epochs=1, batch_size=4, shuffle=False, verbose=0)
path = os.path.join(WORKDIR, "model.keras")
model.save(path)
loaded = keras.saving.load_model(path)
h1 = model.fit(x, y, epochs=1, batch_size=4, shuffle=False, verbose=0)
h2 = loaded.fit(x, y, epochs=1, batch_size=4, shuffle=False, verbose=0)
RESULT = {"pred": loaded.predict(x, verbose=0), "same_training": [h1.history["loss"], h2.history["loss"]],
          "weights": loaded.get_weights(), "optimizer": type(loaded.optimizer).__name__,
          "iterations": int(keras.ops.convert_to_numpy(loaded.optimizer.iterations))}
TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}
