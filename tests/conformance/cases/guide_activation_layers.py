"""Activation layers: ReLU (plain, max_value=6), LeakyReLU, Softmax, ELU-free."""

import numpy as np

import kerasish as keras
from kerasish import layers

x = np.linspace(-2, 2, 12, dtype="float32").reshape(2, 2, 3)
c = keras.ops.convert_to_numpy
RESULT = {
    "relu": c(layers.ReLU()(x)),
    "relu6": c(layers.ReLU(max_value=6.0)(x * 4)),
    "leaky": c(layers.LeakyReLU(negative_slope=0.25)(x)),
    "softmax": c(layers.Softmax()(x)),
    "activation": c(layers.Activation("gelu")(x)),
    "identity": c(layers.Identity()(x)),
}
TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}
