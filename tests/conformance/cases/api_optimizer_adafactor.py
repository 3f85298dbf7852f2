"""optimizers.Adafactor checked step by step against Keras: fixed weights, one batch per
step, the weights and the optimizer's variables after every step (factored kernels of
rank 2 and 4, a bias, weight decay), and the config."""

import numpy as np

import kerasish as keras
from kerasish import layers

rng = np.random.default_rng(6)
x = rng.standard_normal((8, 6, 6, 2)).astype("float32")
y = rng.standard_normal((8, 3)).astype("float32")
model = keras.Sequential([keras.Input((6, 6, 2)), layers.Conv2D(3, 3, activation="relu"),
                          layers.Flatten(), layers.Dense(3)])
model.set_weights([rng.standard_normal(w.shape).astype("float32") * 0.3
                   for w in model.get_weights()])
optimizer = keras.optimizers.Adafactor(learning_rate=0.05, weight_decay=0.01)
model.compile(optimizer=optimizer, loss="mse")
steps = []
for step in range(4):
    loss = model.train_on_batch(x, y)
    steps.append({"loss": float(loss), "weights": model.get_weights()})
RESULT = {
    "steps": steps,
    "optimizer_variables": [keras.ops.convert_to_numpy(v) for v in optimizer.variables[2:]],
    "optimizer_shapes": [list(v.shape) for v in optimizer.variables],
    "iterations": int(optimizer.iterations),
    "config": {k: v for k, v in optimizer.get_config().items() if k != "name"},
    "default_config": {k: v for k, v in keras.optimizers.Adafactor().get_config().items()
                       if k != "name"},
}
TOLERANCE = {"rtol": 2e-4, "atol": 2e-5}
