"""The training guide's endpoint layer: `LogisticEndpoint()(targets, logits)` (a call()
taking several positional tensors) adds its loss with add_loss, and the model is compiled
with no loss and fit on a dict with no y."""

import numpy as np

import kerasish as keras
from kerasish import ops


class LogisticEndpoint(keras.layers.Layer):
    def __init__(self, name=None):
        super().__init__(name=name)
        self.loss_fn = keras.losses.BinaryCrossentropy(from_logits=True)

    def call(self, targets, logits, sample_weights=None):
        loss = self.loss_fn(targets, logits, sample_weights)
        self.add_loss(loss)
        return ops.softmax(logits)


rng = np.random.default_rng(0)
inputs = keras.Input(shape=(3,), name="inputs")
targets = keras.Input(shape=(10,), name="targets")
logits = keras.layers.Dense(10)(inputs)
predictions = LogisticEndpoint(name="predictions")(targets, logits)
model = keras.Model(inputs=[inputs, targets], outputs=predictions)
model.set_weights([rng.standard_normal((3, 10)).astype("float32") * 0.5,
                   np.zeros(10, "float32")])
model.compile(optimizer=keras.optimizers.SGD(0.5))  # no loss argument

data = {"inputs": rng.random((12, 3)).astype("float32"),
        "targets": (rng.random((12, 10)) > 0.5).astype("float32")}
history = model.fit(data, batch_size=4, epochs=3, shuffle=False, verbose=0)

RESULT = {
    "loss": history.history["loss"],
    "history_keys": sorted(history.history),
    "evaluate": model.evaluate(data, batch_size=4, verbose=0),
    "predict": model.predict(data, verbose=0),
    "weights": model.get_weights(),
}
TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}
