"""Regression metrics: means of per-sample values written by the loss ops."""

import math

from kernels_numba import ops
from kerasish.metrics.base import MeanMetric


class MeanAbsoluteError(MeanMetric):
    default_name = "mean_absolute_error"
    direction = "down"

    def __init__(self, name="mean_absolute_error", dtype=None):
        super().__init__(name, dtype)

    def values(self, out, y_pred, targets):
        ops.pointwise_loss_forward(out, y_pred, targets, kind="mae")


class MeanSquaredError(MeanMetric):
    default_name = "mean_squared_error"
    direction = "down"

    def __init__(self, name="mean_squared_error", dtype=None):
        super().__init__(name, dtype)

    def values(self, out, y_pred, targets):
        ops.mse_forward(out, y_pred, targets)


class RootMeanSquaredError(MeanSquaredError):
    """sqrt of the mean squared error over every element seen (Keras)."""

    default_name = "root_mean_squared_error"

    def __init__(self, name="root_mean_squared_error", dtype=None):
        super().__init__(name, dtype)

    def result(self):
        return math.sqrt(max(super().result(), 0.0))
