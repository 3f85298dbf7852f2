"""An Embedding mask reaching the LSTM through the layers Keras passes masks through
(Dense, Dropout, Activation, LayerNormalization, Identity): predictions and
two epochs of training on padded sequences."""

import numpy as np

import kerasish as keras
from kerasish import layers

rng = np.random.default_rng(14)
tokens = rng.integers(1, 12, size=(8, 6)).astype("int32")
tokens[:4, 3:] = 0
y = rng.standard_normal((8, 1)).astype("float32")

inputs = keras.Input((6,), dtype="int32")
x = layers.Embedding(12, 4, mask_zero=True)(inputs)
x = layers.Dense(5, activation="tanh")(x)
x = layers.Dropout(0.0)(x)
x = layers.Activation("relu")(x)
x = layers.LayerNormalization()(x)
x = layers.Identity()(x)
x = layers.GRU(3)(x)
model = keras.Model(inputs, layers.Dense(1)(x))
model.set_weights([rng.standard_normal(w.shape).astype("float32") * 0.5
                   for w in model.get_weights()])
model.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse")
before = model.predict(tokens, verbose=0)
history = model.fit(tokens, y, batch_size=4, epochs=2, shuffle=False, verbose=0)

RESULT = {"predict": before, "loss": history.history["loss"], "weights": model.get_weights()}
TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}
