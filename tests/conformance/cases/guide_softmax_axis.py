"""layers.Softmax(axis=1) and activations.softmax(x, axis=1) over a middle axis."""

import numpy as np

import kerasish as keras
from kerasish import layers

x = np.linspace(-2, 2, 12, dtype="float32").reshape(2, 2, 3)
RESULT = {"layer": keras.ops.convert_to_numpy(layers.Softmax(axis=1)(x)),
          "fn": keras.ops.convert_to_numpy(keras.activations.softmax(x, axis=1))}
TOLERANCE = {"rtol": 1e-5, "atol": 1e-6}
