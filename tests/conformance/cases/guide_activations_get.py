"""activations.get(name) returns Keras's function (callable on arrays); get(None) is linear; serialize(function) is its name."""

import numpy as np

import kerasish as keras

x = np.array([[-1.0, 0.5, 2.0]], "float32")
A = keras.activations
RESULT = {name: keras.ops.convert_to_numpy(A.get(name)(x)) for name in ("relu", "tanh", "swish", "linear")}
RESULT["none"] = keras.ops.convert_to_numpy(A.get(None)(x))
RESULT["callable"] = callable(A.get("relu"))
RESULT["serialize"] = [A.serialize(getattr(A, n)) for n in ("relu", "tanh", "softmax")]
