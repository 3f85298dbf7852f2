"""Regression, probabilistic and hinge losses (Keras 3), on kernels_numba's pointwise_loss ops.

Each pointwise loss is a kind of `pointwise_loss_forward/backward` (per-sample mean over
the last axis; KLDivergence a sum). Hinge and SquaredHinge first convert the batch's
targets (0/1 -> -1/1 when all are 0/1, as Keras) into a planned scratch buffer.
"""

import math

import numpy as np

from kernels_numba import ops
from kerasish.losses.base import Loss, check_axis


class MeanSquaredError(Loss):
    """mean((y_true - y_pred)**2, axis=-1)."""

    def __init__(self, reduction="sum_over_batch_size", name="mean_squared_error", dtype=None):
        super().__init__(reduction, name, dtype)

    def forward(self, per_row, y_pred, targets, scratch):
        ops.mse_forward(per_row, y_pred, targets)

    def backward(self, dy_pred, y_pred, targets, scale, scratch):
        ops.mse_backward(dy_pred, y_pred, targets, scale=scale)


class _Pointwise(Loss):
    op_kind = None  # the pointwise_loss kind
    param = 0.0

    def __init__(self, reduction="sum_over_batch_size", name=None, dtype=None):
        super().__init__(reduction, name, dtype)

    def forward(self, per_row, y_pred, targets, scratch):
        ops.pointwise_loss_forward(per_row, y_pred, targets, kind=self.op_kind, param=self.param)

    def backward(self, dy_pred, y_pred, targets, scale, scratch):
        ops.pointwise_loss_backward(dy_pred, y_pred, targets, kind=self.op_kind, scale=scale,
                                    param=self.param)


class MeanAbsoluteError(_Pointwise):
    """mean(abs(y_true - y_pred), axis=-1)."""

    op_kind = "mae"

    def __init__(self, reduction="sum_over_batch_size", name="mean_absolute_error", dtype=None):
        super().__init__(reduction, name, dtype)


class MeanAbsolutePercentageError(_Pointwise):
    """100 * mean(abs((y_true - y_pred) / max(abs(y_true), 1e-7)), axis=-1)."""

    op_kind = "mape"

    def __init__(self, reduction="sum_over_batch_size",
                 name="mean_absolute_percentage_error", dtype=None):
        super().__init__(reduction, name, dtype)


class MeanSquaredLogarithmicError(_Pointwise):
    """mean((log(max(y_pred, eps) + 1) - log(max(y_true, eps) + 1))**2, axis=-1)."""

    op_kind = "msle"

    def __init__(self, reduction="sum_over_batch_size",
                 name="mean_squared_logarithmic_error", dtype=None):
        super().__init__(reduction, name, dtype)


class Huber(_Pointwise):
    """mean(0.5 e**2 where |e| <= delta else delta |e| - 0.5 delta**2, axis=-1)."""

    op_kind = "huber"

    def __init__(self, delta=1.0, reduction="sum_over_batch_size", name="huber_loss",
                 dtype=None):
        super().__init__(reduction, name, dtype)
        try:
            self.delta = float(delta)
        except (TypeError, ValueError):
            raise TypeError(f"Huber: expected delta to be a number; received {delta!r}") from None
        if not (math.isfinite(self.delta) and self.delta > 0):
            raise ValueError(f"Huber: expected delta > 0; received delta={delta!r}")
        self.param = self.delta

    def get_config(self):
        # Keras 3.15's Huber config omits delta; kept here so a saved delta is not lost
        # (Keras's Huber(**config) accepts it).
        return {**super().get_config(), "delta": self.delta}


class LogCosh(_Pointwise):
    """mean(log(cosh(y_pred - y_true)), axis=-1)."""

    op_kind = "log_cosh"

    def __init__(self, reduction="sum_over_batch_size", name="log_cosh", dtype=None):
        super().__init__(reduction, name, dtype)


class Poisson(_Pointwise):
    """mean(y_pred - y_true * log(y_pred + eps), axis=-1)."""

    op_kind = "poisson"

    def __init__(self, reduction="sum_over_batch_size", name="poisson", dtype=None):
        super().__init__(reduction, name, dtype)


class KLDivergence(_Pointwise):
    """sum(t * log(t / p), axis=-1), t and p clipped to [1e-7, 1]."""

    op_kind = "kl_divergence"

    def __init__(self, reduction="sum_over_batch_size", name="kl_divergence", dtype=None):
        super().__init__(reduction, name, dtype)


class _HingeBase(_Pointwise):
    def scratch_shapes(self, rows, classes):
        return {"targets": ((rows, classes), np.float32)}

    def forward(self, per_row, y_pred, targets, scratch):
        ops.hinge_targets(scratch["targets"], targets)
        super().forward(per_row, y_pred, scratch["targets"], scratch)

    def backward(self, dy_pred, y_pred, targets, scale, scratch):
        super().backward(dy_pred, y_pred, scratch["targets"], scale, scratch)  # from forward


class Hinge(_HingeBase):
    """mean(max(1 - y_true * y_pred, 0), axis=-1); 0/1 labels become -1/1."""

    op_kind = "hinge"

    def __init__(self, reduction="sum_over_batch_size", name="hinge", dtype=None):
        super().__init__(reduction, name, dtype)


class SquaredHinge(_HingeBase):
    """mean(max(1 - y_true * y_pred, 0)**2, axis=-1); 0/1 labels become -1/1."""

    op_kind = "squared_hinge"

    def __init__(self, reduction="sum_over_batch_size", name="squared_hinge", dtype=None):
        super().__init__(reduction, name, dtype)


class CategoricalHinge(Loss):
    """max(max((1 - y_true) * y_pred) - sum(y_true * y_pred) + 1, 0) over the last axis."""

    kind = "categorical"

    def __init__(self, reduction="sum_over_batch_size", name="categorical_hinge", dtype=None):
        super().__init__(reduction, name, dtype)

    def forward(self, per_row, y_pred, targets, scratch):
        ops.categorical_hinge_forward(per_row, y_pred, targets)

    def backward(self, dy_pred, y_pred, targets, scale, scratch):
        ops.categorical_hinge_backward(dy_pred, y_pred, targets, scale=scale)


class CosineSimilarity(Loss):
    """-sum(l2_normalize(y_true) * l2_normalize(y_pred), axis=-1)."""

    def __init__(self, axis=-1, reduction="sum_over_batch_size", name="cosine_similarity",
                 dtype=None):
        check_axis(self, axis)
        super().__init__(reduction, name, dtype)

    def forward(self, per_row, y_pred, targets, scratch):
        ops.cosine_similarity_forward(per_row, y_pred, targets)

    def backward(self, dy_pred, y_pred, targets, scale, scratch):
        ops.cosine_similarity_backward(dy_pred, y_pred, targets, scale=scale)
