"""MaxPooling2D/AveragePooling2D (pool, strides, padding) and the global poolings."""

import numpy as np

import kerasish as keras
from kerasish import layers

rng = np.random.default_rng(34)
x = rng.normal(size=(2, 5, 6, 3)).astype("float32")
RESULT = {
    "max": keras.ops.convert_to_numpy(layers.MaxPooling2D()(x)),
    "max_same": keras.ops.convert_to_numpy(layers.MaxPooling2D(pool_size=3, strides=2, padding="same")(x)),
    "avg": keras.ops.convert_to_numpy(layers.AveragePooling2D(pool_size=(2, 3))(x)),
    "avg_same": keras.ops.convert_to_numpy(layers.AveragePooling2D(pool_size=2, padding="same")(x)),
    "gap": keras.ops.convert_to_numpy(layers.GlobalAveragePooling2D()(x)),
    "gmp": keras.ops.convert_to_numpy(layers.GlobalMaxPooling2D()(x)),
}
