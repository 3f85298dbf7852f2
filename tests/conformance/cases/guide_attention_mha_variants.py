"""MultiHeadAttention's call options, each on its own layer with the same weights: plain,
return_attention_scores, use_causal_mask, attention_mask, and cross-attention with a key."""

import numpy as np

import kerasish as keras
from kerasish import layers

rng = np.random.default_rng(92)
x = rng.normal(size=(2, 4, 6)).astype("float32")
ctx = rng.normal(size=(2, 3, 6)).astype("float32")
c = keras.ops.convert_to_numpy
first = layers.MultiHeadAttention(num_heads=2, key_dim=3)
first(x, x)
weights = [rng.normal(0, 0.4, w.shape).astype("float32") for w in first.get_weights()]


def run(*args, **kwargs):
    """A new layer with the shared weights, built by a first call of the same kind."""
    layer = layers.MultiHeadAttention(num_heads=2, key_dim=3)
    layer(*args, **kwargs)
    layer.set_weights(weights)
    return layer(*args, **kwargs)


mask = np.array([[[1, 1, 0, 0]] * 4, [[1, 1, 1, 1]] * 4], dtype=bool)
out, scores = run(x, x, return_attention_scores=True)
RESULT = {"plain": c(run(x, x)), "out": c(out), "scores": c(scores),
          "causal": c(run(x, x, use_causal_mask=True)),
          "masked": c(run(x, x, attention_mask=mask)),
          "cross": c(run(x, ctx, ctx)),
          "shapes": [list(w.shape) for w in weights]}
TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}
