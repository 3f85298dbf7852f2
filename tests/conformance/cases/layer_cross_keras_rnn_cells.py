"""File crossing: keras.layers.RNN around LSTMCell and around a StackedRNNCells of GRUCell
and SimpleRNNCell as .keras (Keras 3's rnn/cell/vars and rnn/cell/cells/<cell>/vars)."""

import os

import numpy as np

import kerasish as keras
from kerasish import layers

CROSSING = True
x = np.random.default_rng(26).standard_normal((2, 3, 4)).astype("float32")
path = os.path.join(CROSSDIR, "cells.keras")
if PHASE == "save":
    rng = np.random.default_rng(27)
    inputs = keras.Input((3, 4))
    seq = layers.RNN(layers.LSTMCell(3), return_sequences=True)(inputs)
    outputs = layers.RNN([layers.GRUCell(2), layers.SimpleRNNCell(2)])(seq)
    model = keras.Model(inputs, outputs)
    model.set_weights([rng.normal(0, 0.5, w.shape).astype("float32")
                       for w in model.get_weights()])
    model.save(path)
    RESULT = {"pred": model.predict(x, verbose=0)}
else:
    model = keras.saving.load_model(path)
    RESULT = {"pred": model.predict(x, verbose=0), "weights": model.get_weights(),
              "cells": [type(layer.cell).__name__ for layer in model.layers[1:]]}
TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}
