"""TerminateOnNaN stops the run at the first NaN loss (a huge learning rate diverges)."""

import numpy as np

import kerasish as keras
from kerasish import layers

x = np.linspace(-3, 3, 16, dtype="float32").reshape(8, 2) * 1e3
y = np.ones((8, 1), "float32") * 1e3
model = keras.Sequential([keras.Input(shape=(2,)), layers.Dense(1)])
model.set_weights([np.ones((2, 1), "float32"), np.zeros(1, "float32")])
model.compile(keras.optimizers.SGD(1e6), "mse")
hist = model.fit(x, y, epochs=20, batch_size=8, shuffle=False, verbose=0,
                 callbacks=[keras.callbacks.TerminateOnNaN()])
RESULT = {"epochs_run": len(hist.history["loss"]),
          "last_is_nan": bool(np.isnan(hist.history["loss"][-1]) or np.isinf(hist.history["loss"][-1]))}
