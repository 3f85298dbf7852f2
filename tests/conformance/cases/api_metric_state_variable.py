"""A custom Metric (keras-io's CategoricalTruePositives): add_variable(shape=()), result()
returning the variable's value, float(metric.result()) under NumPy 2; standalone and in
compile(metrics=) during fit and evaluate; a metric whose update_state ignores y_true."""

import numpy as np

import kerasish as keras
from kerasish import ops


class CategoricalTruePositives(keras.metrics.Metric):
    def __init__(self, name="categorical_true_positives", **kwargs):
        super().__init__(name=name, **kwargs)
        self.true_positives = self.add_variable(shape=(), name="ctp", initializer="zeros")

    def update_state(self, y_true, y_pred, sample_weight=None):
        y_pred = ops.reshape(ops.argmax(y_pred, axis=1), (-1, 1))
        values = ops.cast(y_true, "int32") == ops.cast(y_pred, "int32")
        values = ops.cast(values, "float32")
        self.true_positives.assign_add(ops.sum(values))

    def result(self):
        return self.true_positives.value

    def reset_state(self):
        self.true_positives.assign(0.0)


rng = np.random.default_rng(2)
x = rng.standard_normal((24, 4)).astype("float32")
y = rng.integers(0, 3, (24, 1))
m = CategoricalTruePositives()
m.update_state(y[:6], rng.uniform(size=(6, 3)).astype("float32"))
standalone = float(m.result())
shape = list(np.shape(ops.convert_to_numpy(m.result())))
m.reset_state()

model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3, activation="softmax")])
model.set_weights([rng.standard_normal((4, 3)).astype("float32"), np.zeros(3, "float32")])
model.compile(optimizer=keras.optimizers.SGD(0.1), loss="sparse_categorical_crossentropy",
              metrics=[CategoricalTruePositives()])
history = model.fit(x, y, batch_size=8, epochs=2, shuffle=False, verbose=0)
RESULT = {
    "standalone": standalone,
    "after_reset": float(m.result()),
    "shape": shape,
    "history": {k: v for k, v in history.history.items()},
    "evaluate": model.evaluate(x, y, batch_size=8, verbose=0, return_dict=True),
}
TOLERANCE = {"rtol": 1e-5, "atol": 1e-6}


class MeanPrediction(keras.metrics.Metric):
    """A metric of the predictions alone (update_state ignores y_true), result() as
    arithmetic on two state variables."""

    def __init__(self, name="mean_prediction", **kwargs):
        super().__init__(name=name, **kwargs)
        self.total = self.add_variable(shape=(), name="total", initializer="zeros")
        self.count = self.add_variable(shape=(), name="count", initializer="zeros")

    def update_state(self, y_true, y_pred, sample_weight=None):
        self.total.assign_add(ops.sum(y_pred))
        self.count.assign_add(ops.sum(ops.ones_like(y_pred)))

    def result(self):
        return self.total / self.count

    def reset_state(self):
        self.total.assign(0.0)
        self.count.assign(0.0)


model.compile(optimizer=keras.optimizers.SGD(0.1), loss="sparse_categorical_crossentropy",
              metrics=[MeanPrediction()])
RESULT["mean_prediction"] = model.evaluate(x, y, batch_size=8, verbose=0, return_dict=True)
