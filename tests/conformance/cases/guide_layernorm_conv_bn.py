"""LayerNormalization (axis, center/scale) and BatchNormalization on conv features."""

import numpy as np

import kerasish as keras
from kerasish import layers

rng = np.random.default_rng(38)
x = rng.normal(size=(2, 3, 3, 4)).astype("float32")
ln = layers.LayerNormalization(epsilon=1e-5)
ln(x)
ln.set_weights([rng.normal(1, 0.2, (4,)).astype("float32"), rng.normal(0, 0.2, (4,)).astype("float32")])
plain = layers.LayerNormalization(center=False, scale=False)
bn = layers.BatchNormalization()
bn(x)
bn.set_weights([rng.normal(1, 0.1, (4,)).astype("float32"), rng.normal(0, 0.1, (4,)).astype("float32"),
                rng.normal(0, 0.1, (4,)).astype("float32"), rng.uniform(0.5, 1.5, (4,)).astype("float32")])
RESULT = {"ln": keras.ops.convert_to_numpy(ln(x)), "plain": keras.ops.convert_to_numpy(plain(x)),
          "bn_infer": keras.ops.convert_to_numpy(bn(x)),
          "n": [len(plain.weights), len(ln.weights)]}
TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}
