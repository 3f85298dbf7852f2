"""An explicit boolean mask passed to an LSTM's call (mask=): refused by name on kerasish
(masks from Embedding(mask_zero=True) and Masking are supported)."""

import numpy as np

import kerasish as keras
from kerasish import layers

rng = np.random.default_rng(9)
seq = keras.Input((4, 3))
flags = keras.Input((4,), dtype="bool")
model = keras.Model([seq, flags], layers.LSTM(2)(seq, mask=flags))
model.set_weights([rng.standard_normal(w.shape).astype("float32") * 0.3
                   for w in model.get_weights()])
x = rng.standard_normal((2, 4, 3)).astype("float32")
m = np.array([[True, True, False, False], [True, True, True, True]])

RESULT = {"predict": model.predict([x, m], verbose=0)}
TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}
