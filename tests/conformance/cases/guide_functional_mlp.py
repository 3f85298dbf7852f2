"""The functional API guide's first model: Input -> Dense -> Dense -> Dense, fit and predict."""

import numpy as np

import kerasish as keras
from kerasish import layers

rng = np.random.default_rng(1)
inputs = keras.Input(shape=(8,))
x = layers.Dense(6, activation="relu")(inputs)
x = layers.Dense(5, activation="relu")(x)
outputs = layers.Dense(3)(x)
model = keras.Model(inputs=inputs, outputs=outputs, name="mnist_model")
model.set_weights([rng.normal(0, 0.4, w.shape).astype("float32") for w in model.get_weights()])

x_train = rng.normal(size=(24, 8)).astype("float32")
y_train = rng.integers(0, 3, 24)
model.compile(loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
              optimizer=keras.optimizers.SGD(0.05), metrics=["accuracy"])
history = model.fit(x_train, y_train, batch_size=8, epochs=2, shuffle=False, verbose=0)
RESULT = {"loss": history.history["loss"], "acc": history.history["accuracy"],
          "keys": sorted(history.history), "pred": model.predict(x_train[:4], verbose=0),
          "eval": model.evaluate(x_train, y_train, verbose=0), "name": model.name,
          "params": model.count_params(), "layers": [type(l).__name__ for l in model.layers]}
TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}
