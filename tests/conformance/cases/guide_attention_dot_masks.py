"""layers.Attention called with mask=[query_mask, value_mask]."""

import numpy as np

import kerasish as keras
from kerasish import layers

q = np.ones((1, 2, 3), "float32")
v = np.arange(12, dtype="float32").reshape(1, 4, 3) / 10
out = layers.Attention()([q, v], mask=[np.array([[True, True]]), np.array([[True, True, False, False]])])
RESULT = {"out": keras.ops.convert_to_numpy(out)}
