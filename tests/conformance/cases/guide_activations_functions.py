"""keras.activations on arrays: every function the README lists."""

import numpy as np

import kerasish as keras

x = np.linspace(-3, 3, 13, dtype="float32").reshape(1, 13)
A = keras.activations
out = {}
for name in ("linear", "relu", "sigmoid", "tanh", "softmax", "leaky_relu", "elu", "gelu", "softplus",
             "silu", "swish", "selu", "relu6", "hard_sigmoid", "hard_silu", "hard_swish", "mish",
             "exponential", "softsign", "log_softmax"):
    fn = getattr(A, name)
    out[name] = keras.ops.convert_to_numpy(fn(x))
RESULT = out
TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}
