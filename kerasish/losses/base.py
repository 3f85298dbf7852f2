"""The Loss base: Keras's constructor arguments, reductions, configs and eager calls.

A loss sees y_pred as rows (rows, last_axis). `forward` writes one loss per row;
`backward` writes dL/dy_pred for the "sum_over_batch_size" reduction (the engine
passes scale = 1/rows). Sparse losses take int32 labels (rows,); the others float32
targets shaped like y_pred. `loss(y_true, y_pred)` on arrays runs the same CPU ops
and reduces as Keras does.
"""

import inspect

import numpy as np

REDUCTIONS = ("sum_over_batch_size", "sum", None, "none", "mean", "mean_with_sample_weight")
# Reductions fit/evaluate can use: the engine divides the summed losses by the rows.
TRAINING_REDUCTIONS = ("sum_over_batch_size", "mean")


class Loss:
    sparse = False  # int32 labels instead of float targets
    kind = "regression"

    def __init__(self, reduction="sum_over_batch_size", name=None, dtype=None):
        if reduction == "auto":  # Keras 2's default, read from old configs
            reduction = "sum_over_batch_size"
        if reduction not in REDUCTIONS:
            raise ValueError(f"{type(self).__name__}: invalid reduction {reduction!r}; "
                             f"expected one of {list(REDUCTIONS)}")
        if dtype not in (None, "float32", np.float32):
            raise ValueError(f"{type(self).__name__}: only float32 losses are supported; "
                             f"received dtype={dtype!r}")
        self.reduction = reduction
        self.name = name or _snake(type(self).__name__)

    def scratch_shapes(self, rows, classes):
        return {}

    def forward(self, per_row, y_pred, y_true, scratch):
        raise NotImplementedError

    def backward(self, dy_pred, y_pred, y_true, scale, scratch):
        raise NotImplementedError

    def check_output(self, output_shape):
        """Raise ValueError when this loss cannot train the model's output shape."""
        if self.reduction not in TRAINING_REDUCTIONS:
            raise ValueError(
                f"{self.name}: reduction={self.reduction!r} is not supported in fit/evaluate "
                f"(they use {TRAINING_REDUCTIONS[0]!r}); it works when the loss is called on "
                "arrays")

    def get_config(self):
        return {"name": self.name, "reduction": self.reduction}

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config.pop("fn", None)  # Keras's LossFunctionWrapper keeps its function there
        if config.get("dtype") in (None, "float32") or isinstance(config.get("dtype"), dict):
            config.pop("dtype", None)  # a float32 policy dict or None
        accepted = inspect.signature(cls.__init__).parameters
        unknown = sorted(k for k in config if k not in accepted)
        if unknown:
            raise ValueError(f"{cls.__name__}.from_config: unsupported config keys {unknown}")
        return cls(**config)

    def __call__(self, y_true, y_pred, sample_weight=None):
        """The reduced loss of host arrays, as Keras's `loss(y_true, y_pred)`; on symbolic
        tensors (inside a layer's call()) a traced tensor (losses/symbolic.py)."""
        from kerasish.ops.operation import is_symbolic

        if is_symbolic(y_true, y_pred) or sample_weight is not None and \
                is_symbolic(sample_weight):
            from kerasish.losses.symbolic import call_symbolic

            return call_symbolic(self, y_true, y_pred, sample_weight)
        values = self.per_sample(y_true, y_pred).astype(np.float64)
        weights = None
        if sample_weight is not None:
            weights = _match_rank(np.asarray(sample_weight, np.float64), values)
            values = values * weights
        if self.reduction in (None, "none") or values.ndim == 0 or values.size == 0:
            return values.astype(np.float32)
        total = values.sum()
        if self.reduction == "sum":
            return np.float32(total)
        if self.reduction == "mean_with_sample_weight" and weights is not None:
            divisor = np.broadcast_to(weights, values.shape).sum()
        else:
            divisor = values.size
        return np.float32(total / divisor if divisor else 0.0)  # Keras's divide_no_nan

    def per_sample(self, y_true, y_pred):
        """Per-sample loss values of host arrays (shape y_pred.shape[:-1]) by the CPU ops."""
        try:
            y_pred = np.ascontiguousarray(y_pred, dtype=np.float32)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"{self.name}: expected numeric y_pred; received {exc}") from None
        if y_pred.ndim == 0:
            y_pred = y_pred.reshape(1)
        rows = y_pred.reshape(-1, y_pred.shape[-1])
        y_true = np.asarray(y_true)
        if self.sparse:
            truth = np.ascontiguousarray(y_true.reshape(-1), dtype=np.int32)
            expected = rows.shape[0]
        else:
            truth = np.ascontiguousarray(y_true, dtype=np.float32)
            expected = rows.size
        if truth.size != expected:
            raise ValueError(f"{self.name}: y_true with shape {y_true.shape} does not match "
                             f"y_pred with shape {y_pred.shape}")
        truth = truth.reshape(-1) if self.sparse else truth.reshape(rows.shape)
        out = np.empty(rows.shape[0], np.float32)
        scratch = {k: np.empty(shape, dt) for k, (shape, dt) in
                   self.scratch_shapes(rows.shape[0], rows.shape[1]).items()}
        self.forward(out, rows, truth, scratch)
        return out.reshape(y_pred.shape[:-1])

    def __repr__(self):
        return f"<{type(self).__name__} name={self.name!r}>"


def _match_rank(w, values):
    """Keras's squeeze_or_expand_to_same_rank for sample weights, then broadcasting."""
    if w.ndim == values.ndim + 1 and w.shape[-1] == 1:
        w = w.reshape(w.shape[:-1])
    while w.ndim < values.ndim:
        w = w.reshape(w.shape + (1,))
    try:
        np.broadcast_shapes(w.shape, values.shape)
    except ValueError:
        raise ValueError(f"sample_weight with shape {w.shape} does not broadcast to the "
                         f"per-sample losses with shape {values.shape}") from None
    return w


def no_unsupported(loss, **kwargs):
    bad = {k: v for k, v in kwargs.items() if v is not None}
    if bad:
        raise ValueError(f"{type(loss).__name__}: unsupported arguments {bad}")


def check_axis(loss, axis):
    if axis != -1:
        raise ValueError(f"{type(loss).__name__}: only axis=-1 (the last axis) is supported; "
                         f"received axis={axis!r}")


def _snake(name):
    return "".join("_" + c.lower() if c.isupper() else c for c in name).lstrip("_")
