"""Two branches from one input, concatenated (the guide's 'models with branches')."""

import numpy as np

import kerasish as keras
from kerasish import layers

rng = np.random.default_rng(2)
inp = keras.Input(shape=(6,))
a = layers.Dense(4, activation="tanh")(inp)
b = layers.Dense(3, activation="sigmoid")(inp)
b = layers.Dense(2)(b)
merged = layers.concatenate([a, b])
out = layers.Dense(1)(merged)
model = keras.Model(inp, out)
model.set_weights([rng.normal(0, 0.5, w.shape).astype("float32") for w in model.get_weights()])
x = rng.normal(size=(10, 6)).astype("float32")
y = rng.normal(size=(10, 1)).astype("float32")
model.compile("sgd", "mse")
loss = model.train_on_batch(x, y)
RESULT = {"pred": model.predict(x, verbose=0), "loss": loss, "weights": model.get_weights(),
          "out_shape": list(model.output_shape), "params": model.count_params()}
TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}
