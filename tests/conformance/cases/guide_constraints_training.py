"""kernel_constraint/bias_constraint (MaxNorm, NonNeg, UnitNorm, MinMaxNorm) applied after each step."""

import numpy as np

import kerasish as keras
from kerasish import constraints, layers

rng = np.random.default_rng(57)
model = keras.Sequential([
    keras.Input(shape=(4,)),
    layers.Dense(3, kernel_constraint=constraints.MaxNorm(0.5), bias_constraint=constraints.NonNeg()),
    layers.Dense(3, kernel_constraint=constraints.UnitNorm(axis=0)),
    layers.Dense(1, kernel_constraint=constraints.MinMaxNorm(min_value=0.2, max_value=0.8, rate=0.5)),
])
model.set_weights([rng.normal(0, 0.5, w.shape).astype("float32") for w in model.get_weights()])
x = rng.normal(size=(8, 4)).astype("float32")
y = rng.normal(size=(8, 1)).astype("float32")
model.compile(keras.optimizers.SGD(0.1), "mse")
model.fit(x, y, epochs=2, batch_size=4, shuffle=False, verbose=0)
w = np.array([[3.0, -0.1], [4.0, 0.2]], "float32")
RESULT = {"weights": model.get_weights(),
          "direct": [keras.ops.convert_to_numpy(c(w)) for c in (constraints.MaxNorm(2.0), constraints.NonNeg(),
                                                                 constraints.UnitNorm())],
          "config": constraints.MaxNorm(2.0).get_config()}
TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}
