"""EarlyStopping(monitor='val_loss', patience, restore_best_weights): where it stops, the weights."""

import numpy as np

import kerasish as keras
from kerasish import layers

rng = np.random.default_rng(42)
x = rng.normal(size=(16, 3)).astype("float32")
y = rng.normal(size=(16, 1)).astype("float32")
xv = rng.normal(size=(8, 3)).astype("float32")
yv = rng.normal(size=(8, 1)).astype("float32") * 3
model = keras.Sequential([keras.Input(shape=(3,)), layers.Dense(4, activation="relu"), layers.Dense(1)])
model.set_weights([rng.normal(0, 0.5, w.shape).astype("float32") for w in model.get_weights()])
model.compile(keras.optimizers.SGD(0.3), "mse")
stop = keras.callbacks.EarlyStopping(monitor="val_loss", patience=1, restore_best_weights=True)
hist = model.fit(x, y, validation_data=(xv, yv), epochs=12, batch_size=4, shuffle=False,
                 callbacks=[stop], verbose=0)
RESULT = {"epochs": len(hist.history["loss"]), "stopped": stop.stopped_epoch,
          "hist": hist.history, "weights": model.get_weights()}
TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}
