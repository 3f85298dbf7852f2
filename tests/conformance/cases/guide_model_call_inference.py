"""model(x) on arrays equals predict (BatchNormalization in inference mode), one sample too."""

import numpy as np

import kerasish as keras
from kerasish import layers

rng = np.random.default_rng(90)
model = keras.Sequential([keras.Input(shape=(3,)), layers.Dense(4), layers.BatchNormalization(),
                          layers.Dense(1)])
w = [rng.normal(0, 0.5, v.shape).astype("float32") for v in model.get_weights()]
w[5] = np.abs(w[5]) + 0.5
model.set_weights(w)
x = rng.normal(size=(5, 3)).astype("float32")
c = keras.ops.convert_to_numpy
RESULT = {"call": c(model(x)), "predict": model.predict(x, verbose=0),
          "single": c(model(x[:1])), "false": c(model(x, training=False))}
TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}
