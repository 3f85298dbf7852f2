"""Metrics that accumulate on the device; the host reads them once per progress update.

Each metric keeps a one-element device accumulator (a sum of matches or of losses)
and the host counts samples, so `result()` is a single small device read.
"""

import numpy as np

import kernels_numba
from kernels_numba import ops


class Metric:
    direction = "up"

    def __init__(self, name):
        self.name = name
        self.acc = None
        self.count = 0

    def build(self, device):
        if self.acc is None or kernels_numba.device_of(self.acc) != device:
            self.acc = kernels_numba.zeros((1,), np.float32, device)

    def reset(self):
        ops.fill(self.acc, 0.0)
        self.count = 0

    def update(self, y_pred, y_true, rows):
        raise NotImplementedError

    def result(self):
        if self.count == 0:
            return 0.0
        return float(kernels_numba.to_host(self.acc)[0]) / self.count


class LossMean(Metric):
    """Mean of per-sample losses (the `loss` entry of the logs)."""

    direction = "down"

    def update_from_losses(self, per_row, rows):
        ops.sum_into(self.acc, per_row)
        self.count += rows


class SparseCategoricalAccuracy(Metric):
    sparse = True

    def update(self, y_pred, labels, rows):
        ops.count_argmax_matches(self.acc, y_pred, labels)
        self.count += rows


class CategoricalAccuracy(Metric):
    sparse = False

    def update(self, y_pred, targets, rows):
        ops.count_argmax_matches_onehot(self.acc, y_pred, targets)
        self.count += rows


class BinaryAccuracy(Metric):
    sparse = False

    def __init__(self, name, threshold=0.5):
        super().__init__(name)
        self.threshold = threshold

    def update(self, y_pred, targets, rows):
        ops.count_binary_matches(self.acc, y_pred, targets, threshold=self.threshold)
        self.count += y_pred.size


ACCURACY_NAMES = ("accuracy", "acc")
EXPLICIT = {
    "sparse_categorical_accuracy": SparseCategoricalAccuracy,
    "categorical_accuracy": CategoricalAccuracy,
    "binary_accuracy": BinaryAccuracy,
}
VALID = sorted(ACCURACY_NAMES + tuple(EXPLICIT))


def check_names(metrics):
    """Validate compile(metrics=...) early, listing the valid names."""
    if metrics is None:
        return []
    if isinstance(metrics, (str, dict)):
        metrics = [metrics]
    names = []
    for m in metrics:
        name = m if isinstance(m, str) else getattr(m, "name", None) or getattr(m, "__name__", m)
        if isinstance(name, str) and name.lower() in (*ACCURACY_NAMES, *EXPLICIT):
            names.append(name)
        else:
            raise ValueError(f"Unknown metric: {m!r}. Valid metrics: {VALID}")
    return names


def resolve(name, output_shape, labels_sparse):
    """Keras's rule for 'accuracy': by the shapes of y_true and y_pred, not the loss."""
    key = name.lower()
    if key in EXPLICIT:
        return EXPLICIT[key](name)
    if output_shape[-1] == 1:
        return BinaryAccuracy(name)
    if labels_sparse:
        return SparseCategoricalAccuracy(name)
    return CategoricalAccuracy(name)
