"""Conv2DTranspose, DepthwiseConv2D and SeparableConv2D: outputs and weight shapes."""

import numpy as np

import kerasish as keras
from kerasish import layers

rng = np.random.default_rng(33)
x = rng.normal(size=(2, 5, 5, 2)).astype("float32")
out = {}
for name, layer in [("transpose", layers.Conv2DTranspose(3, 3, strides=2, padding="same")),
                    ("transpose_valid", layers.Conv2DTranspose(2, 2)),
                    ("depthwise", layers.DepthwiseConv2D(3, depth_multiplier=2)),
                    ("separable", layers.SeparableConv2D(3, 3, padding="same"))]:
    layer(x)  # builds it
    layer.set_weights([rng.normal(0, 0.5, w.shape).astype("float32") for w in layer.get_weights()])
    out[name] = keras.ops.convert_to_numpy(layer(x))
    out[name + "_shapes"] = [list(w.shape) for w in layer.get_weights()]
RESULT = out
TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}
