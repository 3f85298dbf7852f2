"""Training on padded integer sequences: Embedding(mask_zero) -> SimpleRNN -> Dense, fit."""

import numpy as np

import kerasish as keras
from kerasish import layers

rng = np.random.default_rng(23)
seqs = [rng.integers(1, 20, rng.integers(2, 7)).tolist() for _ in range(12)]
x = keras.utils.pad_sequences(seqs, maxlen=6)
y = rng.integers(0, 2, (12, 1)).astype("float32")
model = keras.Sequential([keras.Input(shape=(6,)), layers.Embedding(20, 3, mask_zero=True),
                          layers.SimpleRNN(4), layers.Dense(1, activation="sigmoid")])
model.set_weights([rng.normal(0, 0.5, w.shape).astype("float32") for w in model.get_weights()])
model.compile(keras.optimizers.SGD(0.1), "binary_crossentropy", metrics=["accuracy"])
hist = model.fit(x, y, epochs=2, batch_size=4, shuffle=False, verbose=0)
RESULT = {"x": x, "hist": hist.history, "pred": model.predict(x, verbose=0)}
TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}
