"""Deterministic initializers (Zeros, Ones, Constant) and seeded ones' statistics."""

import numpy as np

import kerasish as keras
from kerasish import layers

I = keras.initializers
out = {"zeros": keras.ops.convert_to_numpy(I.Zeros()((2, 2))), "ones": keras.ops.convert_to_numpy(I.Ones()((2,))),
       "const": keras.ops.convert_to_numpy(I.Constant(0.3)((2, 3)))}
dense = layers.Dense(4, kernel_initializer="ones", bias_initializer=I.Constant(0.5))
dense.build((None, 2))
out["dense"] = dense.get_weights()
glorot = keras.ops.convert_to_numpy(I.GlorotUniform(seed=1)((200, 300)))
out["glorot_bound_ok"] = bool(np.abs(glorot).max() <= np.sqrt(6 / 500) + 1e-6)
out["he_std_ok"] = bool(abs(keras.ops.convert_to_numpy(I.HeNormal(seed=2)((400, 400))).std()
                            - np.sqrt(2 / 400) * 0.88) < 0.01)
RESULT = out
