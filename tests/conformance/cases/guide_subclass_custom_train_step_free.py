"""A subclassed model with a sub-model and a residual in call(), evaluated and predicted."""

import numpy as np

import kerasish as keras
from kerasish import layers


class Residual(keras.Model):
    def __init__(self):
        super().__init__()
        self.body = keras.Sequential([layers.Dense(4, activation="tanh"), layers.Dense(4)])
        self.head = layers.Dense(1)

    def call(self, x):
        return self.head(x + self.body(x))


rng = np.random.default_rng(20)
model = Residual()
x = rng.normal(size=(9, 4)).astype("float32")
model(x)
model.set_weights([rng.normal(0, 0.5, w.shape).astype("float32") for w in model.get_weights()])
y = rng.normal(size=(9, 1)).astype("float32")
model.compile(keras.optimizers.SGD(0.05), "mse", metrics=["mae"])
hist = model.fit(x, y, epochs=2, batch_size=3, shuffle=False, verbose=0)
RESULT = {"hist": hist.history, "eval": model.evaluate(x, y, verbose=0, return_dict=True),
          "pred": model.predict(x, batch_size=4, verbose=0)}
TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}
