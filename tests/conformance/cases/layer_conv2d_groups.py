"""Conv2D(groups=2) and groups=3 (grouped convolutions, Keras's (KH, KW, C / groups,
filters) kernel) in a small CNN with relu and max-pooling: kernel shapes, predictions,
two epochs of training and the config's groups."""

import numpy as np

import kerasish as keras
from kerasish import layers

rng = np.random.default_rng(18)
model = keras.Sequential([
    keras.Input((8, 8, 4)),
    layers.Conv2D(6, 3, padding="same", groups=2, activation="relu"),
    layers.MaxPooling2D(2),
    layers.Conv2D(6, 2, groups=3, activation="tanh"),
    layers.Conv2D(4, 1, groups=2, use_bias=False),
    layers.GlobalAveragePooling2D(),
    layers.Dense(2),
])
model.set_weights([rng.standard_normal(w.shape).astype("float32") * 0.4
                   for w in model.get_weights()])
x = rng.standard_normal((6, 8, 8, 4)).astype("float32")
y = rng.standard_normal((6, 2)).astype("float32")
model.compile(optimizer=keras.optimizers.SGD(0.05), loss="mse")
before = model.predict(x, verbose=0)
history = model.fit(x, y, batch_size=3, epochs=2, shuffle=False, verbose=0)

RESULT = {
    "kernel_shapes": [list(w.shape) for w in model.get_weights()],
    "predict": before,
    "loss": history.history["loss"],
    "weights": model.get_weights(),
    "groups": [model.layers[k].get_config()["groups"] for k in (0, 2, 3)],
    "params": model.count_params(),
}
TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}
