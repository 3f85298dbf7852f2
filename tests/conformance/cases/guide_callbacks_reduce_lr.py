"""ReduceLROnPlateau(factor, patience, min_lr) on a loss that stops improving."""

import numpy as np

import kerasish as keras
from kerasish import layers

rng = np.random.default_rng(46)
x = rng.normal(size=(8, 2)).astype("float32")
y = rng.normal(size=(8, 1)).astype("float32")
model = keras.Sequential([keras.Input(shape=(2,)), layers.Dense(1)])
model.set_weights([rng.normal(0, 0.5, w.shape).astype("float32") for w in model.get_weights()])
model.compile(keras.optimizers.SGD(1.2), "mse")
cb = keras.callbacks.ReduceLROnPlateau(monitor="loss", factor=0.5, patience=1, min_lr=0.1)
hist = model.fit(x, y, epochs=6, batch_size=8, shuffle=False, verbose=0, callbacks=[cb])
RESULT = {"lr": hist.history["learning_rate"], "loss": hist.history["loss"]}
TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}
