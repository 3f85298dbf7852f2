"""ModelCheckpoint into a legacy .h5 file each epoch; load_model of the last one."""

import os

import numpy as np

import kerasish as keras
from kerasish import layers

rng = np.random.default_rng(87)
x = rng.normal(size=(8, 2)).astype("float32")
y = rng.normal(size=(8, 1)).astype("float32")
model = keras.Sequential([keras.Input(shape=(2,)), layers.Dense(3, activation="tanh"), layers.Dense(1)])
model.set_weights([rng.normal(0, 0.5, w.shape).astype("float32") for w in model.get_weights()])
model.compile(keras.optimizers.SGD(0.1), "mse")
path = os.path.join(WORKDIR, "ckpt.h5")
model.fit(x, y, epochs=2, batch_size=4, shuffle=False, verbose=0,
          callbacks=[keras.callbacks.ModelCheckpoint(path)])
loaded = keras.saving.load_model(path, compile=False)
RESULT = {"pred": loaded.predict(x, verbose=0), "weights": loaded.get_weights()}
TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}
