"""keras-io's "customizing what happens in evaluate": a Model subclass built with
inputs/outputs whose test_step uses unpack_x_y_sample_weight, compute_loss and the
metrics loop over self.metrics; a predict_step override; evaluate returns the logs the
step returns (metrics reset first)."""

import numpy as np

import kerasish as keras
from kerasish import layers


class CustomModel(keras.Model):
    def test_step(self, data):
        x, y, _ = keras.utils.unpack_x_y_sample_weight(data)
        y_pred = self(x, training=False)
        loss = self.compute_loss(y=y, y_pred=y_pred)
        for metric in self.metrics:
            if metric.name == "loss":
                metric.update_state(loss)
            else:
                metric.update_state(y, y_pred)
        return {m.name: m.result() for m in self.metrics}

    def predict_step(self, data):
        x, _, _ = keras.utils.unpack_x_y_sample_weight(data)
        return self(x, training=False) * 2.0


rng = np.random.default_rng(0)
inputs = keras.Input(shape=(4,))
outputs = layers.Dense(1)(layers.Dense(5, activation="relu")(inputs))
model = CustomModel(inputs, outputs)
model.set_weights([rng.standard_normal(w.shape).astype("float32") for w in model.get_weights()])
model.compile(optimizer="adam", loss="mse", metrics=["mae"])
x = rng.standard_normal((20, 4)).astype("float32")
y = rng.standard_normal((20, 1)).astype("float32")

first = model.evaluate(x, y, batch_size=8, verbose=0, return_dict=True)
second = model.evaluate(x[:8], y[:8], batch_size=8, verbose=0, return_dict=True)
RESULT = {
    "first": first,
    "second": second,
    "predict": model.predict(x, batch_size=8, verbose=0),
    "keys": sorted(first),
}
TOLERANCE = {"rtol": 1e-5, "atol": 1e-6}
