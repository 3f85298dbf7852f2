"""A 1-D array fed to a model whose input is (None, 1): Keras expands it (and 1-D targets
for a (None, 1) output) in fit, evaluate, predict, train_on_batch and predict_on_batch."""

import numpy as np

import kerasish as keras
from kerasish import layers

rng = np.random.default_rng(0)
x = rng.standard_normal(16).astype("float32")
y = (0.5 * x - 0.2).astype("float32")

model = keras.Sequential([keras.Input((1,)), layers.Dense(3, activation="relu"), layers.Dense(1)])
model.set_weights([rng.standard_normal(w.shape).astype("float32") * 0.5
                   for w in model.get_weights()])
model.compile(optimizer=keras.optimizers.SGD(0.05), loss="mse")
history = model.fit(x, y, batch_size=4, epochs=2, shuffle=False, verbose=0)

RESULT = {
    "loss": history.history["loss"],
    "evaluate": model.evaluate(x, y, verbose=0),
    "predict": model.predict(x, verbose=0),
    "train_on_batch": model.train_on_batch(x[:8], y[:8]),
    "predict_on_batch": model.predict_on_batch(x[:5]),
    "predict_squeezed": model.predict(x[:, None, None], verbose=0),
    "call": keras.ops.convert_to_numpy(model(x[:6])),
    "weights": model.get_weights(),
}
TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}
