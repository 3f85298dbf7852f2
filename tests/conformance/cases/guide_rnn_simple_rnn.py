"""SimpleRNN: last output, return_sequences, return_state, activation relu."""

import numpy as np

import kerasish as keras
from kerasish import layers

rng = np.random.default_rng(24)
x = rng.normal(size=(2, 4, 3)).astype("float32")
out = {}
for kwargs in ({}, {"return_sequences": True}, {"activation": "relu", "use_bias": False}):
    layer = layers.SimpleRNN(3, **kwargs)
    layer.build((None, 4, 3))
    layer.set_weights([rng.normal(0, 0.5, w.shape).astype("float32") for w in layer.get_weights()])
    out[str(sorted(kwargs.items()))] = keras.ops.convert_to_numpy(layer(x))
layer = layers.SimpleRNN(2, return_sequences=True, return_state=True)
seq, state = layer(x)
out["state_shape"] = list(keras.ops.convert_to_numpy(state).shape)
out["seq_shape"] = list(keras.ops.convert_to_numpy(seq).shape)
RESULT = out
TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}
