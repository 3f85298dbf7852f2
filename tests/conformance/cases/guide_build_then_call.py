"""layer.build(input_shape), set_weights, then calling the layer: the call uses those weights
(no second build) -- Conv2D, Conv2DTranspose, DepthwiseConv2D, LayerNormalization."""

import numpy as np

import kerasish as keras
from kerasish import layers

rng = np.random.default_rng(93)
x = rng.normal(size=(1, 5, 5, 2)).astype("float32")
out = {}
for layer in (layers.Conv2D(2, 3), layers.Conv2DTranspose(2, 2), layers.DepthwiseConv2D(3),
              layers.LayerNormalization()):
    layer.build((None, 5, 5, 2))
    layer.set_weights([np.full(w.shape, 0.5, "float32") for w in layer.get_weights()])
    y = keras.ops.convert_to_numpy(layer(x))
    out[type(layer).__name__] = [y, len(layer.weights)]
RESULT = out
TOLERANCE = {"rtol": 1e-5, "atol": 1e-5}
