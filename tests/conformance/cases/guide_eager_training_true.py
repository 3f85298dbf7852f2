"""Layers called on arrays with training=True: Dropout scales the kept units, BatchNormalization
uses the batch's statistics, RandomCrop crops (the guides' way to look at training behaviour)."""

import numpy as np

import kerasish as keras
from kerasish import layers

rng = np.random.default_rng(91)
x = rng.normal(size=(6, 4)).astype("float32")
c = keras.ops.convert_to_numpy
drop = c(layers.Dropout(0.5)(x, training=True))
bn = layers.BatchNormalization()
img = rng.random((2, 8, 8, 3)).astype("float32")
RESULT = {"dropout_scaled": bool(np.allclose(drop[drop != 0], (x * 2)[drop != 0], rtol=1e-5)),
          "bn_train": c(bn(x, training=True)),
          "crop_shape": list(c(layers.RandomCrop(5, 6)(img, training=True)).shape)}
TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}
