"""evaluate (batch_size, return_dict) and predict (batch_size, a last partial batch)."""

import numpy as np

import kerasish as keras
from kerasish import layers

rng = np.random.default_rng(80)
x = rng.normal(size=(11, 3)).astype("float32")
y = rng.normal(size=(11, 2)).astype("float32")
model = keras.Sequential([keras.Input(shape=(3,)), layers.Dense(2)])
model.set_weights([rng.normal(0, 0.5, w.shape).astype("float32") for w in model.get_weights()])
model.compile("sgd", "mse", metrics=["mae", keras.metrics.RootMeanSquaredError()])
RESULT = {"eval": model.evaluate(x, y, batch_size=4, verbose=0),
          "eval_dict": model.evaluate(x, y, batch_size=5, verbose=0, return_dict=True),
          "pred": model.predict(x, batch_size=4, verbose=0), "call": keras.ops.convert_to_numpy(model(x))}
TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}
