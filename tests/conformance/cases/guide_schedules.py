"""optimizers.schedules: values at steps, configs, and a schedule driving SGD in fit."""

import numpy as np

import kerasish as keras
from kerasish import layers

s = keras.optimizers.schedules
scheds = {
    "exp": s.ExponentialDecay(0.1, decay_steps=3, decay_rate=0.5),
    "exp_stair": s.ExponentialDecay(0.1, decay_steps=3, decay_rate=0.5, staircase=True),
    "inv": s.InverseTimeDecay(0.1, decay_steps=2, decay_rate=0.3),
    "piece": s.PiecewiseConstantDecay([2, 5], [0.1, 0.05, 0.01]),
    "poly": s.PolynomialDecay(0.1, decay_steps=6, end_learning_rate=0.01, power=2.0),
    "cos": s.CosineDecay(0.1, decay_steps=6, alpha=0.1),
}
out = {name: np.array([float(keras.ops.convert_to_numpy(fn(step))) for step in range(8)]) for name, fn in scheds.items()}
out["config"] = {k: v for k, v in scheds["exp"].get_config().items() if k != "name"}
rng = np.random.default_rng(49)
x = rng.normal(size=(12, 3)).astype("float32")
y = rng.normal(size=(12, 1)).astype("float32")
model = keras.Sequential([keras.Input(shape=(3,)), layers.Dense(1)])
model.set_weights([rng.normal(0, 0.5, w.shape).astype("float32") for w in model.get_weights()])
model.compile(keras.optimizers.SGD(s.ExponentialDecay(0.2, 2, 0.5)), "mse")
hist = model.fit(x, y, epochs=3, batch_size=4, shuffle=False, verbose=0)
out["loss"], out["weights"] = hist.history["loss"], model.get_weights()
RESULT = out
TOLERANCE = {"rtol": 1e-4, "atol": 1e-6}
