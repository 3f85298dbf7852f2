"""A VAE's Sampling layer (keras-io's VAE example) drawing keras.random.normal inside call(),
trained by fit. z_log_var's bias is -40, so the noise is ~1e-9 and predictions and losses
are deterministic and compared exactly; a second model checks gradients reach z_log_var."""

import numpy as np

import kerasish as keras
from kerasish import layers, ops


class Sampling(layers.Layer):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.seed_generator = keras.random.SeedGenerator(1337)

    def call(self, inputs):
        z_mean, z_log_var = inputs
        batch = ops.shape(z_mean)[0]
        dim = ops.shape(z_mean)[1]
        epsilon = keras.random.normal(shape=(batch, dim), seed=self.seed_generator)
        return z_mean + ops.exp(0.5 * z_log_var) * epsilon


def build():
    inputs = keras.Input(shape=(6,))
    h = layers.Dense(8, activation="relu")(inputs)
    z_mean = layers.Dense(2, name="z_mean")(h)
    z_log_var = layers.Dense(2, name="z_log_var")(h)
    z = Sampling()([z_mean, z_log_var])
    outputs = layers.Dense(3)(z)
    return keras.Model(inputs, outputs)


rng = np.random.default_rng(0)
x = rng.standard_normal((32, 6)).astype("float32")
y = rng.standard_normal((32, 3)).astype("float32")
model = build()
weights = [rng.standard_normal(w.shape).astype("float32") * 0.4 for w in model.get_weights()]
weights[4] = np.zeros_like(weights[4])  # z_log_var kernel
weights[5] = np.full_like(weights[5], -40.0)  # z_log_var bias: exp(-20) noise
model.set_weights(weights)
model.compile(optimizer=keras.optimizers.SGD(0.05), loss="mse")
before = model.predict(x, verbose=0)
history = model.fit(x, y, batch_size=8, epochs=2, shuffle=False, verbose=0)

noisy = build()
noisy.set_weights([w if i != 5 else np.zeros_like(w) for i, w in enumerate(weights)])
noisy.compile(optimizer=keras.optimizers.SGD(0.05), loss="mse")
p1, p2 = noisy.predict(x, verbose=0), noisy.predict(x, verbose=0)
start = noisy.get_layer("z_log_var").get_weights()
noisy.fit(x, y, batch_size=8, epochs=1, verbose=0)
end = noisy.get_layer("z_log_var").get_weights()

RESULT = {
    "predict": before,
    "loss": history.history["loss"],
    "history_keys": sorted(history.history),
    "weights": model.get_weights(),
    "noisy_shape": list(p1.shape),
    "noisy_draws_differ": bool(not np.allclose(p1, p2)),
    "z_log_var_trained": bool(np.abs(end[0] - start[0]).max() > 0),
    "params": model.count_params(),
}
TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}
