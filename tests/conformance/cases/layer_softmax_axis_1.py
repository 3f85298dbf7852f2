"""Softmax(axis=1): attention-like weights over the time steps of (batch, steps, features),
in a trained model; eager values, predictions, a training step and the config's axis."""

import numpy as np

import kerasish as keras
from kerasish import layers

rng = np.random.default_rng(24)
x = np.linspace(-2, 2, 12, dtype="float32").reshape(2, 2, 3)
eager = layers.Softmax(axis=1)(x)

inputs = keras.Input((4, 3))
scores = layers.Softmax(axis=1)(layers.Dense(3)(inputs))
weighted = layers.Multiply()([scores, inputs])
model = keras.Model(inputs, layers.Dense(1)(layers.GlobalAveragePooling1D()(weighted)))
model.set_weights([rng.standard_normal(w.shape).astype("float32") * 0.5
                   for w in model.get_weights()])
data = rng.standard_normal((5, 4, 3)).astype("float32")
y = rng.standard_normal((5, 1)).astype("float32")
model.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse")
before = model.predict(data, verbose=0)
loss = model.train_on_batch(data, y)

RESULT = {"eager": np.asarray(eager), "predict": before, "loss": float(loss),
          "weights": model.get_weights(), "axis": model.layers[2].get_config()["axis"]}
TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}
