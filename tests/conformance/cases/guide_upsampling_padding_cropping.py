"""UpSampling2D, ZeroPadding2D, Cropping2D, UpSampling1D, Reshape, Permute, RepeatVector."""

import numpy as np

import kerasish as keras
from kerasish import layers

rng = np.random.default_rng(35)
x = rng.normal(size=(2, 3, 4, 2)).astype("float32")
s = rng.normal(size=(2, 3, 2)).astype("float32")
RESULT = {
    "up": keras.ops.convert_to_numpy(layers.UpSampling2D(size=(2, 1))(x)),
    "pad": keras.ops.convert_to_numpy(layers.ZeroPadding2D(padding=((1, 0), (2, 1)))(x)),
    "crop": keras.ops.convert_to_numpy(layers.Cropping2D(cropping=((1, 0), (1, 1)))(x)),
    "up1d": keras.ops.convert_to_numpy(layers.UpSampling1D(2)(s)),
    "reshape": keras.ops.convert_to_numpy(layers.Reshape((4, 6))(x)),
    "permute": keras.ops.convert_to_numpy(layers.Permute((2, 1))(s)),
    "repeat": keras.ops.convert_to_numpy(layers.RepeatVector(3)(s[:, 0])),
    "flatten": keras.ops.convert_to_numpy(layers.Flatten()(x)),
}
