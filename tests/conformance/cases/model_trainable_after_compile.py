"""`model.trainable = False` after compile, then fit: Keras 3 reads the trainable weights
at each step, so nothing is updated (the loss stays, the optimizer does not step); a layer
frozen between two fits stops updating while the rest trains on."""

import warnings

import numpy as np

import kerasish as keras
from kerasish import layers

warnings.simplefilter("ignore")  # both sides warn: "does not have any trainable weights"
rng = np.random.default_rng(0)
x = rng.standard_normal((16, 3)).astype("float32")
y = rng.standard_normal((16, 1)).astype("float32")


def make():
    model = keras.Sequential([keras.Input((3,)), layers.Dense(3, activation="relu"),
                              layers.Dense(1)])
    model.set_weights([np.random.default_rng(1).standard_normal(w.shape).astype("float32")
                       for w in model.get_weights()])
    model.compile(optimizer=keras.optimizers.Adam(0.1), loss="mse")
    return model


frozen = make()
start = frozen.get_weights()
frozen.trainable = False
history = frozen.fit(x, y, batch_size=8, epochs=2, shuffle=False, verbose=0)

partly = make()
first = partly.fit(x, y, batch_size=8, epochs=1, shuffle=False, verbose=0)
partly.layers[0].trainable = False
second = partly.fit(x, y, batch_size=8, epochs=2, shuffle=False, verbose=0)

RESULT = {
    "frozen_loss": history.history["loss"],
    "frozen_unchanged": [float(np.abs(a - b).max()) for a, b in
                         zip(frozen.get_weights(), start)],
    "frozen_iterations": int(np.asarray(frozen.optimizer.iterations)),
    "frozen_trainable_weights": len(frozen.trainable_weights),
    "partly_loss": first.history["loss"] + second.history["loss"],
    "partly_weights": partly.get_weights(),
    "partly_iterations": int(np.asarray(partly.optimizer.iterations)),
}
TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}
