"""layers.Attention (use_scale, score_mode) and AdditiveAttention on query/value pairs."""

import numpy as np

import kerasish as keras
from kerasish import layers

rng = np.random.default_rng(41)
q = rng.normal(size=(2, 3, 4)).astype("float32")
v = rng.normal(size=(2, 5, 4)).astype("float32")
k = rng.normal(size=(2, 5, 4)).astype("float32")
out = {"dot": keras.ops.convert_to_numpy(layers.Attention()([q, v])),
       "dot_key": keras.ops.convert_to_numpy(layers.Attention()([q, v, k]))}
scaled = layers.Attention(use_scale=True)
scaled([q, v])  # builds it
scaled.set_weights([np.array(0.7, "float32").reshape(scaled.get_weights()[0].shape)])
out["scaled"] = keras.ops.convert_to_numpy(scaled([q, v]))
additive_weights = [rng.normal(0, 0.5, (4,)).astype("float32")]


def additive(**kwargs):
    """A new AdditiveAttention with the same scale, built by a first call of the same kind."""
    layer = layers.AdditiveAttention()
    layer([q, v], **kwargs)
    layer.set_weights(additive_weights)
    return layer([q, v], **kwargs)


res, scores = additive(return_attention_scores=True)
out["additive"], out["additive_scores"] = keras.ops.convert_to_numpy(res), keras.ops.convert_to_numpy(scores)
out["additive_causal"] = keras.ops.convert_to_numpy(additive(use_causal_mask=True))
RESULT = out
TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}
