"""GlobalAveragePooling2D/GlobalMaxPooling1D(keepdims=True) keep the pooled axes as size 1."""

import numpy as np

import kerasish as keras
from kerasish import layers

rng = np.random.default_rng(94)
c = keras.ops.convert_to_numpy
RESULT = {"gap2d": c(layers.GlobalAveragePooling2D(keepdims=True)(rng.normal(size=(2, 3, 3, 2)).astype("float32"))),
          "gmp1d": c(layers.GlobalMaxPooling1D(keepdims=True)(rng.normal(size=(2, 4, 3)).astype("float32")))}
