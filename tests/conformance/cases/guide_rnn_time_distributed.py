"""TimeDistributed(Dense) over a sequence and a Conv1D -> GRU text classifier step."""

import numpy as np

import kerasish as keras
from kerasish import layers

rng = np.random.default_rng(29)
model = keras.Sequential([keras.Input(shape=(6, 4)), layers.TimeDistributed(layers.Dense(3)),
                          layers.Conv1D(4, 3, activation="relu"), layers.GRU(2),
                          layers.Dense(1, activation="sigmoid")])
model.set_weights([rng.normal(0, 0.5, w.shape).astype("float32") for w in model.get_weights()])
x = rng.normal(size=(4, 6, 4)).astype("float32")
y = rng.integers(0, 2, (4, 1)).astype("float32")
model.compile(keras.optimizers.SGD(0.1), "binary_crossentropy")
loss = model.train_on_batch(x, y)
RESULT = {"pred": model.predict(x, verbose=0), "loss": loss,
          "shapes": [list(l.output.shape)[1:] for l in model.layers]}
TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}
