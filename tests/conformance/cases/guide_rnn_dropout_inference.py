"""LSTM(dropout, recurrent_dropout) is the plain LSTM at inference."""

import numpy as np

import kerasish as keras
from kerasish import layers

rng = np.random.default_rng(30)
x = rng.normal(size=(2, 4, 3)).astype("float32")
layer = layers.LSTM(3, dropout=0.3, recurrent_dropout=0.2, return_sequences=True)
layer.build((None, 4, 3))
weights = [rng.normal(0, 0.5, w.shape).astype("float32") for w in layer.get_weights()]
layer.set_weights(weights)
plain = layers.LSTM(3, return_sequences=True)
plain.build((None, 4, 3))
plain.set_weights(weights)
RESULT = {"dropout": keras.ops.convert_to_numpy(layer(x, training=False)), "plain": keras.ops.convert_to_numpy(plain(x)),
          "config": {k: layer.get_config()[k] for k in ("dropout", "recurrent_dropout", "units")}}
TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}
