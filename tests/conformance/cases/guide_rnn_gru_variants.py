"""GRU with reset_after True and False, go_backwards, and return_state."""

import numpy as np

import kerasish as keras
from kerasish import layers

rng = np.random.default_rng(26)
x = rng.normal(size=(2, 4, 3)).astype("float32")
out = {}
for kwargs in ({}, {"reset_after": False}, {"go_backwards": True, "return_sequences": True}):
    layer = layers.GRU(3, **kwargs)
    layer.build((None, 4, 3))
    layer.set_weights([rng.normal(0, 0.5, w.shape).astype("float32") for w in layer.get_weights()])
    out[str(sorted(kwargs.items()))] = keras.ops.convert_to_numpy(layer(x))
    out["shapes" + str(sorted(kwargs.items()))] = [list(w.shape) for w in layer.get_weights()]
layer = layers.GRU(2, return_state=True)
last, state = layer(x)
out["same"] = bool(np.allclose(keras.ops.convert_to_numpy(last), keras.ops.convert_to_numpy(state)))
RESULT = out
TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}
