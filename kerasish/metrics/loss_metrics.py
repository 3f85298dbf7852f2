"""Keras's loss-named metrics (MeanAbsolutePercentageError, BinaryCrossentropy, KLDivergence,
CosineSimilarity, ...): the mean over samples of the loss's per-sample values, written by
the same kernels as the loss in kerasish.losses (its `forward` on the device rows).
Configs and default names are Keras 3's; CosineSimilarity is the loss negated (the
metric grows with similarity, as in Keras)."""

from kernels_numba import ops
from kerasish import losses
from kerasish.metrics.base import MeanMetric


class _LossMetric(MeanMetric):
    direction = "down"
    loss_class = None
    sign = 1.0

    def __init__(self, name, dtype=None, **loss_args):
        super().__init__(name, dtype)
        self.loss_args = loss_args
        self.loss = self.loss_class(**loss_args)
        self.sparse = self.loss.sparse

    def values(self, out, y_pred, targets):
        rows, classes = y_pred.shape[0], y_pred.shape[1]
        scratch = {k: self.scratch(f"loss_{k}", shape, dt) for k, (shape, dt) in
                   self.loss.scratch_shapes(rows, classes).items()}
        self.loss.forward(out, y_pred, targets, scratch)
        if self.sign != 1.0:
            ops.scale(out, out, self.sign)

    def get_config(self):
        return {"name": self.name, "dtype": "float32", **self.loss_args}


class MeanAbsolutePercentageError(_LossMetric):
    default_name = "mean_absolute_percentage_error"
    loss_class = losses.MeanAbsolutePercentageError

    def __init__(self, name="mean_absolute_percentage_error", dtype=None):
        super().__init__(name, dtype)


class MeanSquaredLogarithmicError(_LossMetric):
    default_name = "mean_squared_logarithmic_error"
    loss_class = losses.MeanSquaredLogarithmicError

    def __init__(self, name="mean_squared_logarithmic_error", dtype=None):
        super().__init__(name, dtype)


class BinaryCrossentropy(_LossMetric):
    default_name = "binary_crossentropy"
    loss_class = losses.BinaryCrossentropy

    def __init__(self, name="binary_crossentropy", dtype=None, from_logits=False,
                 label_smoothing=0):
        super().__init__(name, dtype, from_logits=from_logits, label_smoothing=label_smoothing)


class CategoricalCrossentropy(_LossMetric):
    default_name = "categorical_crossentropy"
    loss_class = losses.CategoricalCrossentropy

    def __init__(self, name="categorical_crossentropy", dtype=None, from_logits=False,
                 label_smoothing=0, axis=-1):
        super().__init__(name, dtype, from_logits=from_logits, label_smoothing=label_smoothing,
                         axis=axis)


class SparseCategoricalCrossentropy(_LossMetric):
    default_name = "sparse_categorical_crossentropy"
    loss_class = losses.SparseCategoricalCrossentropy

    def __init__(self, name="sparse_categorical_crossentropy", dtype=None, from_logits=False,
                 ignore_class=None, axis=-1):
        super().__init__(name, dtype, from_logits=from_logits, ignore_class=ignore_class,
                         axis=axis)


class KLDivergence(_LossMetric):
    default_name = "kl_divergence"
    loss_class = losses.KLDivergence

    def __init__(self, name="kl_divergence", dtype=None):
        super().__init__(name, dtype)


class Poisson(_LossMetric):
    default_name = "poisson"
    loss_class = losses.Poisson

    def __init__(self, name="poisson", dtype=None):
        super().__init__(name, dtype)


class LogCoshError(_LossMetric):
    default_name = "logcosh"
    loss_class = losses.LogCosh

    def __init__(self, name="logcosh", dtype=None):
        super().__init__(name, dtype)


class Hinge(_LossMetric):
    default_name = "hinge"
    loss_class = losses.Hinge

    def __init__(self, name="hinge", dtype=None):
        super().__init__(name, dtype)


class SquaredHinge(_LossMetric):
    default_name = "squared_hinge"
    loss_class = losses.SquaredHinge

    def __init__(self, name="squared_hinge", dtype=None):
        super().__init__(name, dtype)


class CategoricalHinge(_LossMetric):
    default_name = "categorical_hinge"
    loss_class = losses.CategoricalHinge

    def __init__(self, name="categorical_hinge", dtype=None):
        super().__init__(name, dtype)


class CosineSimilarity(_LossMetric):
    default_name = "cosine_similarity"
    direction = "up"
    loss_class = losses.CosineSimilarity
    sign = -1.0

    def __init__(self, name="cosine_similarity", dtype=None, axis=-1):
        super().__init__(name, dtype, axis=axis)

    def get_config(self):
        return {"name": self.name, "dtype": "float32"}  # Keras 3.15's keeps no axis


LOSS_METRICS = (MeanAbsolutePercentageError, MeanSquaredLogarithmicError, BinaryCrossentropy,
                CategoricalCrossentropy, SparseCategoricalCrossentropy, KLDivergence, Poisson,
                LogCoshError, Hinge, SquaredHinge, CategoricalHinge, CosineSimilarity)
