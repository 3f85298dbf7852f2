"""Mean and Sum standalone (sample_weight) and a Metric subclass with add_variable."""

import numpy as np

import kerasish as keras
from kerasish import ops


class CountAbove(keras.metrics.Metric):
    def __init__(self, threshold=0.5, name="count_above", **kwargs):
        super().__init__(name=name, **kwargs)
        self.threshold = threshold
        self.count = self.add_variable(shape=(), initializer="zeros", name="count")

    def update_state(self, y_true, y_pred, sample_weight=None):
        self.count.assign(self.count + ops.sum(ops.cast(y_pred > self.threshold, "float32")))

    def result(self):
        return self.count


mean, total = keras.metrics.Mean(), keras.metrics.Sum()
mean.update_state([1.0, 3.0, 5.0], sample_weight=[1.0, 0.0, 2.0])
mean.update_state(7.0)
total.update_state([1.0, 2.0, 3.0])
c = CountAbove(0.3)
c.update_state(None, np.array([0.1, 0.4, 0.9], "float32"))
c.update_state(None, np.array([0.5], "float32"))
RESULT = {"mean": float(mean.result()), "sum": float(total.result()), "count": float(c.result()),
          "name": c.name}
