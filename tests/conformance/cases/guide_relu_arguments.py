"""layers.ReLU's max_value, negative_slope and threshold together (Keras's general ReLU)."""

import numpy as np

import kerasish as keras
from kerasish import layers

x = np.linspace(-2, 2, 12, dtype="float32").reshape(2, 6)
RESULT = {"relu": keras.ops.convert_to_numpy(layers.ReLU(max_value=1.5, negative_slope=0.2, threshold=0.1)(x)),
          "fn": keras.ops.convert_to_numpy(keras.activations.relu(x, negative_slope=0.1, max_value=1.0))}
