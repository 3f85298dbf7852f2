"""LayerNormalization and Normalization (Keras 3 arguments, defaults and weights).

Both normalize over a block of trailing axes: the input (batch, ..., d_k, ..., d_r) is
viewed as rows (M, C) with C the product of the normalized (kept) axes, and each calls
one kernels_numba op per direction (ops.layernorm_*, ops.feature_normalize_*).
"""

import numpy as np

import kernels_numba
from kerasish import config as kconfig
from kerasish.layers.core import _init_config, check_number
from kerasish.layers.layer import Layer
from kernels_numba import ops


def axis_values(layer, axis):
    """The ints of an int / list / None `axis` (a clear error for anything else)."""
    values = [] if axis is None else (list(axis) if isinstance(axis, (list, tuple)) else [axis])
    if not all(isinstance(a, (int, np.integer)) and not isinstance(a, bool) for a in values):
        raise ValueError(f"{layer}: expected `axis` to be an int or a list of ints; "
                         f"received axis={axis!r}")
    return values


def trailing_axes(layer, axis, rank, allow_empty=False):
    """Positive axes (sorted) that must be the last ones of a rank-`rank` input."""
    values = axis_values(layer, axis)
    pos = sorted({int(a) % rank if -rank <= a < rank else -1 for a in values})
    if -1 in pos or 0 in pos:
        raise ValueError(f"{layer}: axis={axis!r} is out of range for an input of rank {rank} "
                         f"(the batch axis 0 cannot be normalized)")
    if (not pos and not allow_empty) or pos != list(range(rank - len(pos), rank)):
        raise ValueError(f"{layer}: only trailing axes (ending at the last one, e.g. -1 or "
                         f"[-2, -1]) are supported; received axis={axis!r} for rank {rank}")
    return pos


def _keep_scalar(var, shape):
    """Give a shape-() weight a shape-() buffer view (Variable stores 0-d values as (1,)),
    so it matches Keras's scalar weights in files."""
    if shape == () and var.shape == (1,):
        var.value = var.value.reshape(())


def _rows(a, c):
    return a.reshape((a.size // c, c))


class LayerNormalization(Layer):
    """y = (x - mean) / sqrt(var + epsilon) * gamma + beta over `axis` (per sample).

    Weights (Keras order): gamma (scale=True), beta (center=True), shaped like the axes.
    """
    config_none_keys = ("beta_regularizer", "beta_constraint", "gamma_regularizer",
                        "gamma_constraint")

    propagates_mask = True  # Keras's supports_masking: the mask passes on

    def __init__(self, axis=-1, epsilon=1e-3, center=True, scale=True, rms_scaling=False,
                 beta_initializer="zeros", gamma_initializer="ones", **kwargs):
        super().__init__(**kwargs)
        if rms_scaling:
            raise ValueError("LayerNormalization: rms_scaling=True is not supported; "
                             "expected rms_scaling=False")
        self.axis = [int(a) for a in axis_values("LayerNormalization", axis)]
        if not self.axis:
            raise ValueError("LayerNormalization: expected at least one axis; received "
                             f"axis={axis!r}")
        self.epsilon = check_number("LayerNormalization", "epsilon", epsilon, ">= 0",
                                    lambda v: v >= 0)
        self.center, self.scale = bool(center), bool(scale)
        self.beta_initializer, self.gamma_initializer = beta_initializer, gamma_initializer
        self.gamma = self.beta = None

    def build(self, input_shape):
        axes = trailing_axes(f"LayerNormalization {self.name}", self.axis, len(input_shape))
        shape = tuple(input_shape[a] for a in axes)
        self._width = int(np.prod(shape, dtype=np.int64))
        if self.scale:
            self.gamma = self.add_weight("gamma", shape, self.gamma_initializer)
        if self.center:
            self.beta = self.add_weight("beta", shape, self.beta_initializer)

    def _flat(self, var, grad=False):
        if var is None or (grad and not self.trainable):
            return None
        buf = var.grad if grad else var.value
        return buf.reshape((self._width,))

    def scratch_shapes(self, batch_size):
        rows = batch_size * int(np.prod(self.input_shape[1:], dtype=np.int64)) // self._width
        return {"mean": ((rows,), np.float32), "rstd": ((rows,), np.float32)}

    def forward(self, y, x, training):
        c = self._width
        rows = x.size // c
        ops.layernorm_forward(_rows(y, c), self.scratch_view("mean", rows),
                              self.scratch_view("rstd", rows), _rows(x, c),
                              self._flat(self.gamma), self._flat(self.beta),
                              epsilon=self.epsilon)

    def backward(self, dx, dy, x, y):
        c = self._width
        rows = x.size // c
        ops.layernorm_backward(None if dx is None else _rows(dx, c),
                               self._flat(self.gamma, True), self._flat(self.beta, True),
                               _rows(dy, c), _rows(x, c), self._flat(self.gamma),
                               self.scratch_view("mean", rows), self.scratch_view("rstd", rows))

    def get_config(self):
        return {**super().get_config(), "axis": list(self.axis), "epsilon": self.epsilon,
                "center": self.center, "scale": self.scale, "rms_scaling": False,
                "beta_initializer": _init_config(self.beta_initializer),
                "gamma_initializer": _init_config(self.gamma_initializer)}


class Normalization(Layer):
    """y = (x - mean) / max(sqrt(variance), 1e-7) per position of `axis` (invert: inverse).

    mean/variance come from the constructor or from `adapt(data)` (computed on the host
    in float64 over every other axis); adapted layers hold Keras's three non-trainable
    weights mean, variance, count. axis=None normalizes with one scalar mean/variance.
    """

    def __init__(self, axis=-1, mean=None, variance=None, invert=False, **kwargs):
        super().__init__(**kwargs)
        if (mean is None) != (variance is None):
            raise ValueError(f"Normalization: pass both mean and variance or neither; "
                             f"received mean={mean!r}, variance={variance!r}")
        axis_values("Normalization", axis)
        if isinstance(axis, (list, tuple)):
            axis = list(axis) or None  # Keras writes axis=None as ()
        self.axis = axis
        self.invert = bool(invert)
        self.init_mean = None if mean is None else np.asarray(mean, np.float64)
        self.init_variance = None if variance is None else np.asarray(variance, np.float64)
        self.mean = self.variance = self.count = None
        self._constants = None

    def _kept_shape(self, input_shape):
        axes = trailing_axes(f"Normalization {self.name}", self.axis, len(input_shape),
                             allow_empty=True)
        return tuple(input_shape[a] for a in axes)

    def build(self, input_shape):
        shape = self._kept_shape(tuple(input_shape))
        self._width = int(np.prod(shape, dtype=np.int64))
        if self.init_mean is None:
            self.mean = self.add_weight("mean", shape, "zeros", trainable=False)
            self.variance = self.add_weight("variance", shape, "ones", trainable=False)
            self.count = self.add_weight("count", (), "zeros", trainable=False)
            for var, want in ((self.mean, shape), (self.variance, shape), (self.count, ())):
                _keep_scalar(var, want)
        else:
            try:
                mean = np.broadcast_to(self.init_mean, shape).astype(np.float32)
                var = np.broadcast_to(self.init_variance, shape).astype(np.float32)
            except ValueError:
                raise ValueError(f"Normalization {self.name}: mean/variance of shapes "
                                 f"{self.init_mean.shape}/{self.init_variance.shape} do not "
                                 f"broadcast to the normalized shape {shape}") from None
            device = kconfig.get_device()
            self._constants = (kernels_numba.to_device(mean.reshape(-1).copy(), device),
                               kernels_numba.to_device(var.reshape(-1).copy(), device))
        self.built = True

    def adapt(self, data):
        """Set mean and variance from `data` (an array, or an iterable of batches)."""
        batches = [np.asarray(data)] if hasattr(data, "shape") else \
            [np.asarray(b[0] if isinstance(b, tuple) else b) for b in data]
        if not batches:
            raise ValueError(f"Normalization {self.name}: adapt received no data")
        if self.init_mean is not None:
            raise ValueError(f"Normalization {self.name}: cannot adapt a layer constructed "
                             f"with mean and variance")
        shape = (None, *batches[0].shape[1:])
        if not self.built:
            self.build(shape)
        kept = len(self._kept_shape(shape))
        full = np.concatenate([b.astype(np.float64).reshape((-1, *b.shape[1:]))
                               for b in batches])
        reduce = tuple(range(full.ndim - kept))
        # count stays as Keras 3.15 leaves it after adapt(array): 0 (it is not read).
        for var, value in ((self.mean, full.mean(axis=reduce)),
                           (self.variance, full.var(axis=reduce))):
            var.assign(np.reshape(value, var.shape))

    def _stats(self):
        if self._constants is not None:
            return self._constants
        return (self.mean.value.reshape((self._width,)),
                self.variance.value.reshape((self._width,)))

    def forward(self, y, x, training):
        mean, var = self._stats()
        c = self._width
        ops.feature_normalize_forward(_rows(y, c), _rows(x, c), mean, var,
                                      epsilon=kconfig.epsilon(), invert=self.invert)

    def backward(self, dx, dy, x, y):
        if dx is not None:
            c = self._width
            ops.feature_normalize_backward(_rows(dx, c), _rows(dy, c), self._stats()[1],
                                           epsilon=kconfig.epsilon(), invert=self.invert)

    def get_config(self):
        axis = () if self.axis is None else self.axis
        as_config = lambda a: None if a is None else a.tolist()  # noqa: E731
        return {**super().get_config(), "axis": tuple(axis) if isinstance(axis, (list, tuple))
                else (axis,), "invert": self.invert, "mean": as_config(self.init_mean),
                "variance": as_config(self.init_variance)}
