"""A subclassed Model with layers in __init__ and the forward pass in call()."""

import numpy as np

import kerasish as keras
from kerasish import layers


class MLP(keras.Model):
    def __init__(self, hidden, classes, **kwargs):
        super().__init__(**kwargs)
        self.hidden = layers.Dense(hidden, activation="relu")
        self.out = layers.Dense(classes)

    def call(self, inputs):
        return self.out(self.hidden(inputs))


rng = np.random.default_rng(12)
model = MLP(5, 3)
x = rng.normal(size=(10, 4)).astype("float32")
y = rng.integers(0, 3, 10)
model(x[:1])  # builds the weights
model.set_weights([rng.normal(0, 0.5, w.shape).astype("float32") for w in model.get_weights()])
model.compile(keras.optimizers.SGD(0.1),
              keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])
hist = model.fit(x, y, epochs=2, batch_size=5, shuffle=False, verbose=0)
RESULT = {"hist": hist.history, "pred": model.predict(x, verbose=0),
          "params": model.count_params(), "n_weights": len(model.trainable_weights)}
TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}
