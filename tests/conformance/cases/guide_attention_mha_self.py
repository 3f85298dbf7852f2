"""MultiHeadAttention as self-attention: output, attention scores, causal mask, a trained step."""

import numpy as np

import kerasish as keras
from kerasish import layers

rng = np.random.default_rng(39)
x = rng.normal(size=(2, 4, 6)).astype("float32")
mha = layers.MultiHeadAttention(num_heads=2, key_dim=3)
out, scores = mha(x, x, return_attention_scores=True)
mha.set_weights([rng.normal(0, 0.4, w.shape).astype("float32") for w in mha.get_weights()])
out, scores = mha(x, x, return_attention_scores=True)
causal = mha(x, x, use_causal_mask=True)
mask = np.array([[[1, 1, 0, 0]] * 4, [[1, 1, 1, 1]] * 4], dtype=bool)
masked = mha(x, x, attention_mask=mask)
RESULT = {"out": keras.ops.convert_to_numpy(out), "scores": keras.ops.convert_to_numpy(scores), "causal": keras.ops.convert_to_numpy(causal),
          "masked": keras.ops.convert_to_numpy(masked), "shapes": [list(w.shape) for w in mha.get_weights()]}
TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}
