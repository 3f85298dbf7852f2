"""layers.Attention(...)(..., return_attention_scores=True)."""

import numpy as np

import kerasish as keras
from kerasish import layers

q = np.ones((1, 2, 3), "float32")
v = np.arange(12, dtype="float32").reshape(1, 4, 3) / 10
out, scores = layers.Attention()([q, v], return_attention_scores=True)
RESULT = {"out": keras.ops.convert_to_numpy(out), "scores": keras.ops.convert_to_numpy(scores)}
