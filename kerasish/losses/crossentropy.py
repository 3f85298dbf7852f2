"""Cross-entropies: sparse, categorical and binary (probabilities or logits, label smoothing).

Label smoothing (Keras: t (1 - ls) + ls / K, binary + ls / 2) writes the smoothed
targets into a planned scratch buffer in forward; backward reads them there.
"""

import numpy as np

from kernels_numba import ops
from kerasish.losses.base import Loss, check_axis, no_unsupported


def _smoothing(loss, label_smoothing):
    ls = float(label_smoothing or 0.0)
    if not 0.0 <= ls <= 1.0:
        raise ValueError(f"{type(loss).__name__}: expected label_smoothing in [0, 1]; "
                         f"received {label_smoothing!r}")
    return ls


class SparseCategoricalCrossentropy(Loss):
    """Cross-entropy between integer labels and class probabilities (or logits).
    (Keras 3 has no label_smoothing here.)"""

    sparse = True
    kind = "categorical"

    def __init__(self, from_logits=False, ignore_class=None, reduction="sum_over_batch_size",
                 axis=-1, name="sparse_categorical_crossentropy", dtype=None):
        no_unsupported(self, ignore_class=ignore_class)
        check_axis(self, axis)
        super().__init__(reduction, name, dtype)
        self.from_logits = bool(from_logits)
        self.ignore_class = None

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
        super().check_output(output_shape)
        if output_shape[-1] < 2:
            raise ValueError(f"{self.name}: expected a model output with at least 2 classes; "
                             f"received output shape {output_shape}")

    def get_config(self):
        return {**super().get_config(), "from_logits": self.from_logits,
                "ignore_class": self.ignore_class}


class _Smoothed(Loss):
    """Shared by the categorical and binary cross-entropies: from_logits, label_smoothing."""

    binary = False

    def __init__(self, from_logits, label_smoothing, axis, reduction, name, dtype):
        check_axis(self, axis)
        super().__init__(reduction, name, dtype)
        self.from_logits = bool(from_logits)
        self.label_smoothing = _smoothing(self, label_smoothing)
        self.axis = -1

    def scratch_shapes(self, rows, classes):
        shapes = {}
        if self.from_logits and not self.binary:
            shapes["probs"] = ((rows, classes), np.float32)
        if self.label_smoothing:
            shapes["targets"] = ((rows, classes), np.float32)
        return shapes

    def _targets(self, targets, scratch, smooth):
        if not self.label_smoothing:
            return targets
        out = scratch["targets"]
        if smooth:
            ops.smooth_labels(out, targets, label_smoothing=self.label_smoothing,
                              binary=self.binary)
        return out

    def get_config(self):
        return {**super().get_config(), "from_logits": self.from_logits,
                "label_smoothing": self.label_smoothing, "axis": self.axis}


class CategoricalCrossentropy(_Smoothed):
    """Cross-entropy between one-hot targets and class probabilities (or logits)."""

    kind = "categorical"

    def __init__(self, from_logits=False, label_smoothing=0.0, axis=-1,
                 reduction="sum_over_batch_size", name="categorical_crossentropy", dtype=None):
        super().__init__(from_logits, label_smoothing, axis, reduction, name, dtype)

    def forward(self, per_row, y_pred, targets, scratch):
        targets = self._targets(targets, scratch, True)
        if self.from_logits:
            ops.softmax_categorical_cross_entropy_forward(per_row, scratch["probs"], y_pred,
                                                          targets)
        else:
            ops.categorical_crossentropy_forward(per_row, y_pred, targets)

    def backward(self, dy_pred, y_pred, targets, scale, scratch):
        targets = self._targets(targets, scratch, False)  # smoothed by forward
        if self.from_logits:
            ops.softmax_categorical_cross_entropy_backward(dy_pred, scratch["probs"], targets,
                                                           scale=scale)
        else:
            ops.categorical_crossentropy_backward(dy_pred, y_pred, targets, scale=scale)


class BinaryCrossentropy(_Smoothed):
    """Binary cross-entropy, mean over the last axis (probabilities or logits)."""

    kind = "binary"
    binary = True

    def __init__(self, from_logits=False, label_smoothing=0.0, axis=-1,
                 reduction="sum_over_batch_size", name="binary_crossentropy", dtype=None):
        super().__init__(from_logits, label_smoothing, axis, reduction, name, dtype)

    def forward(self, per_row, y_pred, targets, scratch):
        targets = self._targets(targets, scratch, True)
        if self.from_logits:
            ops.binary_crossentropy_logits_forward(per_row, y_pred, targets)
        else:
            ops.binary_crossentropy_forward(per_row, y_pred, targets)

    def backward(self, dy_pred, y_pred, targets, scale, scratch):
        targets = self._targets(targets, scratch, False)
        if self.from_logits:
            ops.binary_crossentropy_logits_backward(dy_pred, y_pred, targets, scale=scale)
        else:
            ops.binary_crossentropy_backward(dy_pred, y_pred, targets, scale=scale)
