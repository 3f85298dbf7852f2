"""load_model of an unzipped .keras directory (config.json, metadata.json, model.weights.h5)."""

import os
import zipfile

import numpy as np

import kerasish as keras
from kerasish import layers

model = keras.Sequential([keras.Input(shape=(2,)), layers.Dense(1)])
model.set_weights([np.ones((2, 1), "float32"), np.zeros(1, "float32")])
path = os.path.join(WORKDIR, "m.keras")
model.save(path)
folder = os.path.join(WORKDIR, "unzipped")
with zipfile.ZipFile(path) as z:
    z.extractall(folder)
loaded = keras.saving.load_model(folder)
RESULT = {"pred": loaded.predict(np.ones((1, 2), "float32"), verbose=0)}
