"""Conv2D arguments: padding same/valid, strides, dilation_rate, use_bias, activation."""

import numpy as np

import kerasish as keras
from kerasish import layers

rng = np.random.default_rng(32)
x = rng.normal(size=(2, 7, 6, 3)).astype("float32")
out = {}
for i, kwargs in enumerate([{"padding": "same"}, {"strides": 2}, {"dilation_rate": 2},
                            {"strides": (2, 1), "padding": "same", "use_bias": False},
                            {"activation": "tanh", "kernel_size": (1, 3)}]):
    kwargs = {"kernel_size": 3, **kwargs}
    layer = layers.Conv2D(2, **kwargs)
    layer(x)  # builds it (build() then a call is guide_build_then_call)
    layer.set_weights([rng.normal(0, 0.5, w.shape).astype("float32") for w in layer.get_weights()])
    out[f"y{i}"] = keras.ops.convert_to_numpy(layer(x))
    out[f"shape{i}"] = list(layer.compute_output_shape((None, 7, 6, 3)))
RESULT = out
TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}
