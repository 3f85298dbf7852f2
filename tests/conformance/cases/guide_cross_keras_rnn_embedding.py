"""File crossing: Embedding(mask_zero) + Bidirectional(GRU) text model as .keras."""

import os

import numpy as np

import kerasish as keras
from kerasish import layers

CROSSING = True
ids = keras.utils.pad_sequences([[3, 5, 7], [2, 9], [4, 4, 4, 1]], maxlen=4)
path = os.path.join(CROSSDIR, "text.keras")
if PHASE == "save":
    rng = np.random.default_rng(66)
    model = keras.Sequential([keras.Input(shape=(4,)), layers.Embedding(10, 3, mask_zero=True),
                              layers.Bidirectional(layers.GRU(2)), layers.Dense(1, activation="sigmoid")])
    model.set_weights([rng.normal(0, 0.5, w.shape).astype("float32") for w in model.get_weights()])
    model.save(path)
    RESULT = {"pred": model.predict(ids, verbose=0)}
else:
    model = keras.saving.load_model(path)
    RESULT = {"pred": model.predict(ids, verbose=0), "weights": model.get_weights()}
TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}
