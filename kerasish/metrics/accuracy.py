"""Metrics that accumulate on the device; the host reads them once per progress update.

Each metric keeps a one-element device accumulator (a sum of matches or of losses)
and the host counts samples, so `result()` is a single small device read.
"""

import numpy as np

import kernels_numba
from kernels_numba import ops


class Metric:
    direction = "up"
    default_name = None

    def __init__(self, name=None, dtype=None):
        if dtype not in (None, "float32", np.float32):
            raise ValueError(f"{type(self).__name__}: only float32 metrics are supported; "
                             f"received dtype={dtype!r}")
        self.name = name or self.default_name
        self.acc = None
        self.count = 0

    def get_config(self):
        return {"name": self.name, "dtype": "float32"}

    @classmethod
    def from_config(cls, config):
        return cls(**config)

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
    default_name = "sparse_categorical_accuracy"
    sparse = True

    def update(self, y_pred, labels, rows):
        ops.count_argmax_matches(self.acc, y_pred, labels)
        self.count += rows


class CategoricalAccuracy(Metric):
    default_name = "categorical_accuracy"
    sparse = False

    def update(self, y_pred, targets, rows):
        ops.count_argmax_matches_onehot(self.acc, y_pred, targets)
        self.count += rows


class BinaryAccuracy(Metric):
    default_name = "binary_accuracy"
    sparse = False

    def __init__(self, name=None, dtype=None, threshold=0.5):
        super().__init__(name, dtype)
        self.threshold = threshold

    def get_config(self):
        return {**super().get_config(), "threshold": self.threshold}

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


CLASSES = {cls.__name__: cls for cls in EXPLICIT.values()}


def check_names(metrics):
    """Validate compile(metrics=...) early, listing the valid names.

    Returns names (resolved by `resolve` once shapes are known) and metric objects
    (used as given; a saved {"class_name", "config"} dict becomes one).
    """
    if metrics is None:
        return []
    if isinstance(metrics, (str, dict)):
        metrics = [metrics]
    specs = []
    for m in metrics:
        if isinstance(m, dict) and m.get("class_name") in CLASSES:
            m = CLASSES[m["class_name"]].from_config(dict(m.get("config") or {}))
        if isinstance(m, tuple(CLASSES.values())):
            specs.append(m)
            continue
        name = m if isinstance(m, str) else getattr(m, "name", None) or getattr(m, "__name__", m)
        if isinstance(name, str) and name.lower() in (*ACCURACY_NAMES, *EXPLICIT):
            specs.append(name)
        else:
            raise ValueError(f"Unknown metric: {m!r}. Valid metrics: {VALID} or the "
                             f"classes {sorted(CLASSES)}")
    return specs


def serialize(spec):
    """A compile-config entry: names stay strings, objects become Keras's dict form."""
    if isinstance(spec, str):
        return spec
    return {"class_name": type(spec).__name__, "config": spec.get_config()}  # as Keras 3.15


def resolve(name, output_shape, labels_sparse):
    """Keras's rule for 'accuracy': by the shapes of y_true and y_pred, not the loss.
    A metric object is used as it is."""
    if isinstance(name, Metric):
        return name
    key = name.lower()
    if key in EXPLICIT:
        return EXPLICIT[key](name)
    if output_shape[-1] == 1:
        return BinaryAccuracy(name)
    if labels_sparse:
        return SparseCategoricalAccuracy(name)
    return CategoricalAccuracy(name)
