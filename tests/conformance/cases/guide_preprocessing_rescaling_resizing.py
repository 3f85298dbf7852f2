"""Rescaling(1/255, offset), Resizing (bilinear, nearest), CenterCrop on images."""

import numpy as np

import kerasish as keras
from kerasish import layers

rng = np.random.default_rng(74)
img = rng.integers(0, 256, (2, 6, 8, 3)).astype("float32")
RESULT = {
    "rescale": keras.ops.convert_to_numpy(layers.Rescaling(1.0 / 255)(img)),
    "rescale_offset": keras.ops.convert_to_numpy(layers.Rescaling(1.0 / 127.5, offset=-1)(img)),
    "resize": keras.ops.convert_to_numpy(layers.Resizing(3, 4)(img)),
    "resize_nearest": keras.ops.convert_to_numpy(layers.Resizing(4, 4, interpolation="nearest")(img)),
    "crop": keras.ops.convert_to_numpy(layers.CenterCrop(4, 4)(img)),
}
TOLERANCE = {"rtol": 1e-4, "atol": 1e-3}
