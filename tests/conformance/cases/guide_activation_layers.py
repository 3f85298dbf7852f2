"""Activation layers: ReLU(max_value, negative_slope, threshold), LeakyReLU, Softmax(axis), ELU-free."""

import numpy as np

import kerasish as keras
from kerasish import layers

x = np.linspace(-2, 2, 12, dtype="float32").reshape(2, 2, 3)
c = keras.ops.convert_to_numpy
RESULT = {
    "relu": c(layers.ReLU(max_value=1.5, negative_slope=0.2, threshold=0.1)(x)),
    "leaky": c(layers.LeakyReLU(negative_slope=0.25)(x)),
    "softmax": c(layers.Softmax(axis=1)(x)),
    "activation": c(layers.Activation("gelu")(x)),
    "identity": c(layers.Identity()(x)),
}
TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}
