"""A built-in loss called on symbolic tensors inside `call()` (Keras's endpoint layer:
`self.loss_fn(targets, logits, sample_weights)` then `self.add_loss(loss)`).

The per-sample values are Keras 3's formulas (keras/src/losses/losses.py) written with
kerasish.ops, so they trace into the layer's graph and every input gets its gradient
(y_true too: a distillation loss's soft targets come from a model); the reduction is
Keras's `reduce_weighted_values`. On arrays a loss keeps its own kernels (base.py).
"""

import math

from kerasish import ops

EPSILON = 1e-7  # keras.config.epsilon()


def _mse(loss, t, p):
    return ops.mean(ops.square(ops.subtract(t, p)), axis=-1)


def _mae(loss, t, p):
    return ops.mean(ops.abs(ops.subtract(t, p)), axis=-1)


def _mape(loss, t, p):
    diff = ops.abs(ops.divide(ops.subtract(t, p), ops.maximum(ops.abs(t), EPSILON)))
    return ops.multiply(ops.mean(diff, axis=-1), 100.0)


def _msle(loss, t, p):
    first = ops.log(ops.add(ops.maximum(p, EPSILON), 1.0))
    second = ops.log(ops.add(ops.maximum(t, EPSILON), 1.0))
    return ops.mean(ops.square(ops.subtract(first, second)), axis=-1)


def _huber(loss, t, p):
    error = ops.subtract(p, t)
    abs_error = ops.abs(error)
    quadratic = ops.multiply(ops.square(error), 0.5)
    linear = ops.subtract(ops.multiply(abs_error, loss.delta), 0.5 * loss.delta ** 2)
    return ops.mean(ops.where(ops.less_equal(abs_error, loss.delta), quadratic, linear),
                    axis=-1)


def _log_cosh(loss, t, p):
    x = ops.subtract(p, t)
    return ops.mean(ops.subtract(ops.add(x, ops.softplus(ops.multiply(x, -2.0))),
                                 math.log(2.0)), axis=-1)


def _poisson(loss, t, p):
    return ops.mean(ops.subtract(p, ops.multiply(t, ops.log(ops.add(p, EPSILON)))), axis=-1)


def _kld(loss, t, p):
    t, p = ops.clip(t, EPSILON, 1.0), ops.clip(p, EPSILON, 1.0)
    return ops.sum(ops.multiply(t, ops.log(ops.divide(t, p))), axis=-1)


def _hinge_labels(t):
    """Keras's convert_binary_labels_to_hinge: {0, 1} labels (all of them) become -1/1.
    Its ops.cond on the values, as a where on one flag: the largest distance to {0, 1}."""
    off = ops.max(ops.minimum(ops.abs(t), ops.abs(ops.subtract(t, 1.0))))
    return ops.where(ops.equal(off, 0.0), ops.subtract(ops.multiply(t, 2.0), 1.0), t)


def _hinge(loss, t, p):
    margin = ops.maximum(ops.subtract(1.0, ops.multiply(_hinge_labels(t), p)), 0.0)
    return ops.mean(margin, axis=-1)


def _squared_hinge(loss, t, p):
    margin = ops.maximum(ops.subtract(1.0, ops.multiply(_hinge_labels(t), p)), 0.0)
    return ops.mean(ops.square(margin), axis=-1)


def _categorical_hinge(loss, t, p):
    pos = ops.sum(ops.multiply(t, p), axis=-1)
    neg = ops.max(ops.multiply(ops.subtract(1.0, t), p), axis=-1)
    return ops.maximum(ops.add(ops.subtract(neg, pos), 1.0), 0.0)


def _cosine(loss, t, p):
    def unit(x):  # Keras's normalize: x / sqrt(max(sum(x^2), 1e-12))
        norm = ops.sqrt(ops.maximum(ops.sum(ops.square(x), axis=-1, keepdims=True), 1e-12))
        return ops.divide(x, norm)

    return ops.negative(ops.sum(ops.multiply(unit(t), unit(p)), axis=-1))


def _bce(loss, t, p):
    if loss.label_smoothing:
        t = ops.add(ops.multiply(t, 1.0 - loss.label_smoothing), 0.5 * loss.label_smoothing)
    return ops.mean(ops.binary_crossentropy(t, p, from_logits=loss.from_logits), axis=-1)


def _cce(loss, t, p):
    if loss.label_smoothing:
        classes = p.shape[-1]
        t = ops.add(ops.multiply(t, 1.0 - loss.label_smoothing),
                    loss.label_smoothing / classes)
    return ops.categorical_crossentropy(t, p, from_logits=loss.from_logits)


def _scce(loss, t, p):
    return ops.sparse_categorical_crossentropy(t, p, from_logits=loss.from_logits)


_PER_SAMPLE = {
    "MeanSquaredError": _mse, "MeanAbsoluteError": _mae,
    "MeanAbsolutePercentageError": _mape, "MeanSquaredLogarithmicError": _msle,
    "Huber": _huber, "LogCosh": _log_cosh, "Poisson": _poisson, "KLDivergence": _kld,
    "Hinge": _hinge, "SquaredHinge": _squared_hinge, "CategoricalHinge": _categorical_hinge, "CosineSimilarity": _cosine,
    "BinaryCrossentropy": _bce, "CategoricalCrossentropy": _cce,
    "SparseCategoricalCrossentropy": _scce,
}


def _formula(loss):
    for cls in type(loss).__mro__:
        if cls.__name__ in _PER_SAMPLE and cls.__module__.startswith("kerasish."):
            return _PER_SAMPLE[cls.__name__]
    return None


def call_symbolic(loss, y_true, y_pred, sample_weight=None):
    """`loss(y_true, y_pred, sample_weight)` on symbolic tensors: the reduced loss, a
    tensor of the traced graph."""
    formula = _formula(loss)
    if formula is None and callable(getattr(type(loss), "call", None)):
        formula = lambda loss_, t, p: loss_.call(t, p)  # noqa: E731 (a Loss subclass's call)
    if formula is None:
        raise ValueError(f"loss '{loss.name}' ({type(loss).__name__}): calling it on "
                         f"symbolic tensors inside call() is not supported; expected one "
                         f"of {sorted(_PER_SAMPLE)} (or compute it with keras.ops)")
    from kerasish.tape import recording

    y_true, y_pred = recording.align(ops.convert_to_tensor(y_true),
                                     ops.convert_to_tensor(y_pred))
    if sample_weight is not None:  # a GradientTape's arrays of the batch's size: inputs
        sample_weight = recording.align(sample_weight, y_pred)[0]
    if not getattr(loss, "sparse", False) and len(y_true.shape) == len(y_pred.shape) - 1 \
            and y_pred.shape[-1] == 1:  # Keras's squeeze_or_expand_to_same_rank
        y_true = ops.expand_dims(y_true, -1)
    values = formula(loss, y_true, y_pred)
    return reduce_weighted(values, sample_weight, loss.reduction)


def reduce_weighted(values, sample_weight, reduction):
    """Keras's reduce_weighted_values: weights matched to the values' rank, then the
    reduction (sum_over_batch_size: the sum over the number of values)."""
    weights = None
    if sample_weight is not None:
        weights = ops.convert_to_tensor(sample_weight)
        rank, w_rank = len(values.shape), len(weights.shape)
        if w_rank == rank + 1 and weights.shape[-1] == 1:
            weights = ops.squeeze(weights, axis=-1)
        while len(weights.shape) < rank:
            weights = ops.expand_dims(weights, -1)
        values = ops.multiply(values, weights)
    if reduction in (None, "none"):
        return values
    total = ops.sum(values)
    if reduction == "sum":
        return total
    if reduction == "mean_with_sample_weight" and weights is not None:
        return ops.divide(total, ops.sum(ops.add(ops.multiply(values, 0.0), weights)))
    return ops.mean(values)
