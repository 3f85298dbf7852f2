"""Losses: Keras classes and strings, computed by kernels_numba loss ops on the device.

A loss sees y_pred as rows (rows, last_axis). `forward` writes one loss per row;
`backward` writes dL/dy_pred for the "sum_over_batch_size" reduction (scale = 1/rows).
Sparse losses take int32 labels (rows,); the others float32 targets like y_pred.
"""

import numpy as np

from kernels_numba import ops


class Loss:
    sparse = False  # int32 labels instead of float targets
    kind = "regression"

    def __init__(self, reduction="sum_over_batch_size", name=None, from_logits=False):
        if reduction not in ("sum_over_batch_size", "auto", None):
            raise ValueError(f"{type(self).__name__}: only reduction='sum_over_batch_size' "
                             f"is supported; received reduction={reduction!r}")
        self.reduction = "sum_over_batch_size"
        self.name = name or _snake(type(self).__name__)
        self.from_logits = bool(from_logits)

    def scratch_shapes(self, rows, classes):
        return {}

    def forward(self, per_row, y_pred, y_true, scratch):
        raise NotImplementedError

    def backward(self, dy_pred, y_pred, y_true, scale, scratch):
        raise NotImplementedError

    def check_output(self, output_shape):
        """Raise ValueError when this loss cannot apply to the model's output shape."""

    def get_config(self):
        return {"name": self.name, "reduction": self.reduction, "from_logits": self.from_logits}

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config.pop("fn", None)
        config.pop("dtype", None)
        config.pop("label_smoothing", None)
        config.pop("axis", None)
        config.pop("ignore_class", None)
        return cls(**config)


class SparseCategoricalCrossentropy(Loss):
    """Cross-entropy between integer labels and class probabilities (or logits)."""

    sparse = True
    kind = "categorical"

    def __init__(self, from_logits=False, ignore_class=None, reduction="sum_over_batch_size",
                 name="sparse_categorical_crossentropy", **kwargs):
        _no_unsupported(self, ignore_class=ignore_class, **kwargs)
        super().__init__(reduction, name, from_logits)

    def scratch_shapes(self, rows, classes):
        return {"probs": ((rows, classes), np.float32)} if self.from_logits else {}

    def forward(self, per_row, y_pred, labels, scratch):
        if self.from_logits:
            ops.softmax_cross_entropy_forward(per_row, scratch["probs"], y_pred, labels)
        else:
            ops.sparse_categorical_crossentropy_forward(per_row, y_pred, labels)

    def backward(self, dy_pred, y_pred, labels, scale, scratch):
        if self.from_logits:
            ops.softmax_cross_entropy_backward(dy_pred, scratch["probs"], labels, scale=scale)
        else:
            ops.sparse_categorical_crossentropy_backward(dy_pred, y_pred, labels, scale=scale)

    def check_output(self, output_shape):
        if output_shape[-1] < 2:
            raise ValueError(f"{self.name}: expected a model output with at least 2 classes; "
                             f"received output shape {output_shape}")


class CategoricalCrossentropy(Loss):
    """Cross-entropy between one-hot targets and class probabilities (or logits)."""

    kind = "categorical"

    def __init__(self, from_logits=False, label_smoothing=0.0, axis=-1,
                 reduction="sum_over_batch_size", name="categorical_crossentropy", **kwargs):
        _no_unsupported(self, label_smoothing=label_smoothing or None, **kwargs)
        super().__init__(reduction, name, from_logits)

    def scratch_shapes(self, rows, classes):
        return {"probs": ((rows, classes), np.float32)} if self.from_logits else {}

    def forward(self, per_row, y_pred, targets, scratch):
        if self.from_logits:
            ops.softmax_categorical_cross_entropy_forward(per_row, scratch["probs"], y_pred,
                                                          targets)
        else:
            ops.categorical_crossentropy_forward(per_row, y_pred, targets)

    def backward(self, dy_pred, y_pred, targets, scale, scratch):
        if self.from_logits:
            ops.softmax_categorical_cross_entropy_backward(dy_pred, scratch["probs"], targets,
                                                           scale=scale)
        else:
            ops.categorical_crossentropy_backward(dy_pred, y_pred, targets, scale=scale)


class BinaryCrossentropy(Loss):
    """Binary cross-entropy, mean over the last axis (probabilities or logits)."""

    kind = "binary"

    def __init__(self, from_logits=False, label_smoothing=0.0, axis=-1,
                 reduction="sum_over_batch_size", name="binary_crossentropy", **kwargs):
        _no_unsupported(self, label_smoothing=label_smoothing or None, **kwargs)
        super().__init__(reduction, name, from_logits)

    def forward(self, per_row, y_pred, targets, scratch):
        if self.from_logits:
            ops.binary_crossentropy_logits_forward(per_row, y_pred, targets)
        else:
            ops.binary_crossentropy_forward(per_row, y_pred, targets)

    def backward(self, dy_pred, y_pred, targets, scale, scratch):
        if self.from_logits:
            ops.binary_crossentropy_logits_backward(dy_pred, y_pred, targets, scale=scale)
        else:
            ops.binary_crossentropy_backward(dy_pred, y_pred, targets, scale=scale)


class MeanSquaredError(Loss):
    """mean((y_true - y_pred)**2, axis=-1)."""

    def __init__(self, reduction="sum_over_batch_size", name="mean_squared_error", **kwargs):
        _no_unsupported(self, **kwargs)
        super().__init__(reduction, name)

    def forward(self, per_row, y_pred, targets, scratch):
        ops.mse_forward(per_row, y_pred, targets)

    def backward(self, dy_pred, y_pred, targets, scale, scratch):
        ops.mse_backward(dy_pred, y_pred, targets, scale=scale)

    def get_config(self):
        return {"name": self.name, "reduction": self.reduction}


def _no_unsupported(loss, **kwargs):
    bad = {k: v for k, v in kwargs.items() if v is not None}
    if bad:
        raise ValueError(f"{type(loss).__name__}: unsupported arguments {bad}")


def _snake(name):
    return "".join("_" + c.lower() if c.isupper() else c for c in name).lstrip("_")


CLASSES = {cls.__name__: cls for cls in (
    SparseCategoricalCrossentropy, CategoricalCrossentropy, BinaryCrossentropy, MeanSquaredError)}
STRINGS = {
    "sparse_categorical_crossentropy": SparseCategoricalCrossentropy,
    "categorical_crossentropy": CategoricalCrossentropy,
    "binary_crossentropy": BinaryCrossentropy, "bce": BinaryCrossentropy,
    "BCE": BinaryCrossentropy, "mean_squared_error": MeanSquaredError,
    "mse": MeanSquaredError, "MSE": MeanSquaredError,
}


def get(identifier):
    """A Loss from a Loss instance, a class/function name, or a Keras config dict."""
    if isinstance(identifier, Loss):
        return identifier
    if isinstance(identifier, dict):
        cls = CLASSES.get(identifier.get("class_name"))
        if cls is not None:
            return cls.from_config(identifier.get("config", {}))
        identifier = identifier.get("class_name")
    if isinstance(identifier, type) and issubclass(identifier, Loss):
        return identifier()
    if callable(identifier) and getattr(identifier, "__name__", None) in STRINGS:
        identifier = identifier.__name__
    if isinstance(identifier, str):
        cls = STRINGS.get(identifier) or CLASSES.get(identifier)
        if cls is not None:
            return cls()
    raise ValueError(f"Unknown loss: {identifier!r}. Valid losses: "
                     f"{sorted(set(STRINGS) | set(CLASSES))}")


def serialize(loss):
    return {"module": "keras.losses", "class_name": type(loss).__name__,
            "config": loss.get_config(), "registered_name": None}


def _per_sample(loss, y_true, y_pred):
    """Per-sample loss values for host arrays, computed by the same CPU ops fit uses."""
    y_pred = np.ascontiguousarray(y_pred, dtype=np.float32)
    rows = y_pred.reshape(-1, y_pred.shape[-1])
    if loss.sparse:
        truth = np.ascontiguousarray(np.asarray(y_true).reshape(-1), dtype=np.int32)
    else:
        truth = np.ascontiguousarray(y_true, dtype=np.float32).reshape(rows.shape)
    out = np.empty(rows.shape[0], np.float32)
    scratch = {k: np.empty(shape, dt) for k, (shape, dt) in
               loss.scratch_shapes(rows.shape[0], rows.shape[1]).items()}
    loss.forward(out, rows, truth, scratch)
    return out.reshape(y_pred.shape[:-1])


def sparse_categorical_crossentropy(y_true, y_pred, from_logits=False):
    return _per_sample(SparseCategoricalCrossentropy(from_logits=from_logits), y_true, y_pred)


def categorical_crossentropy(y_true, y_pred, from_logits=False):
    return _per_sample(CategoricalCrossentropy(from_logits=from_logits), y_true, y_pred)


def binary_crossentropy(y_true, y_pred, from_logits=False):
    return _per_sample(BinaryCrossentropy(from_logits=from_logits), y_true, y_pred)


def mean_squared_error(y_true, y_pred):
    return _per_sample(MeanSquaredError(), y_true, y_pred)
