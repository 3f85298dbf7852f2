"""Every merge layer on two branches: Subtract, Multiply, Average, Maximum, Minimum, Dot-free."""

import numpy as np

import kerasish as keras
from kerasish import layers

rng = np.random.default_rng(9)
x = rng.normal(size=(4, 3)).astype("float32")
out = {}
for merge in (layers.Subtract, layers.Multiply, layers.Average, layers.Maximum, layers.Minimum,
              layers.Add, layers.Concatenate):
    inp = keras.Input(shape=(3,))
    a = layers.Dense(3)(inp)
    b = layers.Dense(3, activation="relu")(inp)
    model = keras.Model(inp, merge()([a, b]))
    model.set_weights([rng.normal(0, 0.6, w.shape).astype("float32") for w in model.get_weights()])
    out[merge.__name__] = model.predict(x, verbose=0)
a, b = x, x[::-1] * 2
out["functions"] = [keras.ops.convert_to_numpy(f([a, b])) for f in (layers.subtract, layers.multiply,
                                                   layers.average, layers.maximum, layers.minimum)]
RESULT = out
