"""Conv1D (valid, same, causal, dilation) and the 1-D poolings."""

import numpy as np

import kerasish as keras
from kerasish import layers

rng = np.random.default_rng(36)
x = rng.normal(size=(2, 7, 3)).astype("float32")
out = {}
for i, kwargs in enumerate([{}, {"padding": "same"}, {"padding": "causal", "dilation_rate": 2},
                            {"strides": 2}]):
    layer = layers.Conv1D(2, 3, **kwargs)
    layer.build((None, 7, 3))
    layer.set_weights([rng.normal(0, 0.5, w.shape).astype("float32") for w in layer.get_weights()])
    out[f"conv{i}"] = keras.ops.convert_to_numpy(layer(x))
out["max"] = keras.ops.convert_to_numpy(layers.MaxPooling1D(2)(x))
out["avg"] = keras.ops.convert_to_numpy(layers.AveragePooling1D(3, strides=1, padding="same")(x))
out["gmax"] = keras.ops.convert_to_numpy(layers.GlobalMaxPooling1D()(x))
out["gavg"] = keras.ops.convert_to_numpy(layers.GlobalAveragePooling1D()(x))
RESULT = out
TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}
