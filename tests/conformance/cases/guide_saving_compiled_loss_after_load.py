"""After load_model of a .keras file, model.loss is what compile() was given (a string here)."""

import os

import kerasish as keras
from kerasish import layers

model = keras.Sequential([keras.Input(shape=(2,)), layers.Dense(1)])
model.compile("sgd", "mse", metrics=["mae"])
path = os.path.join(WORKDIR, "m.keras")
model.save(path)
loaded = keras.saving.load_model(path)
RESULT = {"loss": loaded.loss, "optimizer": type(loaded.optimizer).__name__,
          "compiled_loss_before": model.loss}
