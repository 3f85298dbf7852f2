"""Accuracy metrics: match counts and top-k matches accumulated on the device."""

from kernels_numba import ops
from kernels_numba.ops import metric as metric_ops
from kerasish.metrics.base import MeanMetric, Metric


class SparseCategoricalAccuracy(Metric):
    default_name = "sparse_categorical_accuracy"
    sparse = True

    def __init__(self, name=None, dtype=None):
        super().__init__(name, dtype)

    def update(self, y_pred, labels, rows):
        ops.count_argmax_matches(self.acc, y_pred, labels)
        self.count += rows


class CategoricalAccuracy(Metric):
    default_name = "categorical_accuracy"

    def __init__(self, name=None, dtype=None):
        super().__init__(name, dtype)

    def update(self, y_pred, targets, rows):
        ops.count_argmax_matches_onehot(self.acc, y_pred, targets)
        self.count += rows


class BinaryAccuracy(Metric):
    default_name = "binary_accuracy"

    def __init__(self, name=None, dtype=None, threshold=0.5):
        super().__init__(name, dtype)
        self.threshold = threshold

    def get_config(self):
        return {**super().get_config(), "threshold": self.threshold}

    def update(self, y_pred, targets, rows):
        ops.count_binary_matches(self.acc, y_pred, targets, threshold=self.threshold)
        self.count += y_pred.size


def _k(metric, k):
    if not isinstance(k, int) or isinstance(k, bool) or k < 1:
        raise ValueError(f"{type(metric).__name__}: expected k to be an int >= 1; received "
                         f"k={k!r}")
    return k


class TopKCategoricalAccuracy(MeanMetric):
    """Fraction of samples whose one-hot target class is among the k highest predictions
    (ties count, as Keras's in_top_k)."""

    default_name = "top_k_categorical_accuracy"

    def __init__(self, k=5, name="top_k_categorical_accuracy", dtype=None):
        super().__init__(name, dtype)
        self.k = _k(self, k)

    def values(self, out, y_pred, targets):
        metric_ops.top_k_matches_onehot(out, y_pred, targets, k=self.k)

    def get_config(self):
        return {**super().get_config(), "k": self.k}


class SparseTopKCategoricalAccuracy(MeanMetric):
    """TopKCategoricalAccuracy for integer labels."""

    default_name = "sparse_top_k_categorical_accuracy"
    sparse = True

    def __init__(self, k=5, name="sparse_top_k_categorical_accuracy", dtype=None,
                 from_sorted_ids=False):
        if from_sorted_ids:
            raise ValueError("SparseTopKCategoricalAccuracy: from_sorted_ids=True is not "
                             "supported")
        super().__init__(name, dtype)
        self.k = _k(self, k)

    def values(self, out, y_pred, labels):
        metric_ops.top_k_matches(out, y_pred, labels, k=self.k)

    def get_config(self):
        return {**super().get_config(), "k": self.k}
