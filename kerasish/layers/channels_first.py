"""data_format="channels_first" (and BatchNormalization(axis=1)) for channels_last layers.

`ChannelsFirst` is a base of the convolution, pooling and batch-norm layers: constructed
with data_format="channels_first" (axis=1 for BatchNormalization) it makes the layer an
instance of that class's transposed variant (same class name, so configs are Keras's).
The variant runs the channels_last layer between two launches of kernels_numba's
permute kernel: the input (N, C, *S) -> (N, *S, C) into scratch, the channels_last
forward, its output back to (N, F, *S') (a rank-2 output, global pooling's (N, C), is
written directly). Backward permutes dy, runs the channels_last backward and permutes dx.
Weights keep Keras's layout, which does not depend on data_format. While the inner layer
runs, `input_shape`/`output_shape` hold its channels_last shapes.
"""

from contextlib import contextmanager

import numpy as np

from kernels_numba import ops

_VARIANTS = {}


def _to_last(shape):
    shape = tuple(shape)
    return shape if len(shape) < 3 else (shape[0], *shape[2:], shape[1])


def _to_first(shape):
    shape = tuple(shape)
    return shape if len(shape) < 3 else (shape[0], shape[-1], *shape[1:-1])


def _perm_to_last(rank):  # over the axes after the batch (ops.permute_axes)
    return tuple(range(1, rank - 1)) + (0,)


def _perm_to_first(rank):
    return (rank - 2,) + tuple(range(rank - 2))


class ChannelsFirst:
    """Base of a channels_last layer class that also takes channels_first."""

    _transposed = None  # the variant's mixin (module end: _Transposed, or TransposedAxis)

    @classmethod
    def _wants_channels_first(cls, args, kwargs):
        return kwargs.get("data_format") == "channels_first"

    def __new__(cls, *args, **kwargs):
        if not issubclass(cls, _Transposed) and cls._wants_channels_first(args, kwargs):
            cls = variant(cls)
        return super().__new__(cls)


def variant(cls):
    """The channels_first variant of a ChannelsFirst layer class (made once)."""
    found = _VARIANTS.get(cls)
    if found is None:
        found = _VARIANTS[cls] = type(cls.__name__, (cls._transposed or _Transposed, cls),
                                      {"__module__": cls.__module__,
                                       "__qualname__": cls.__qualname__})
    return found


class _Transposed:
    """The channels_first form of a channels_last layer (see the module doc)."""

    data_format = "channels_first"

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **self._channels_last_kwargs(kwargs))

    @staticmethod
    def _channels_last_kwargs(kwargs):
        return {**kwargs, "data_format": "channels_last"}

    def _passthrough(self):
        """Rank-2 inputs have their channels last already (BatchNormalization(axis=1))."""
        return self.input_shape is not None and len(_flat(self.input_shape)) < 3

    @contextmanager
    def _inner_shapes(self):
        cf = (self.input_shape, self.output_shape)
        self.input_shape, self.output_shape = _to_last(cf[0]), _to_last(cf[1])
        try:
            yield
        finally:
            self.input_shape, self.output_shape = cf

    def build(self, input_shape):
        super().build(_to_last(input_shape))

    def compute_output_shape(self, input_shape):
        return _to_first(super().compute_output_shape(_to_last(input_shape)))

    def scratch_shapes(self, batch_size):
        if self._passthrough():
            return super().scratch_shapes(batch_size)
        with self._inner_shapes():
            shapes = dict(super().scratch_shapes(batch_size))
            x_shape, y_shape = self.input_shape[1:], self.output_shape[1:]
        for name, sample in (("x", x_shape), ("dx", x_shape), ("y", y_shape),
                             ("dy", y_shape)):
            if name in ("y", "dy") and len(y_shape) < 2:
                continue  # a rank-2 output is the layer's own buffer
            shapes[f"channels_first_{name}"] = ((batch_size, *sample), np.float32)
        return shapes

    def _view(self, name, n):
        return self.scratch_view(f"channels_first_{name}", n)

    def forward(self, y, x, training, **kwargs):
        if self._passthrough():
            return super().forward(y, x, training, **kwargs)
        n = x.shape[0]
        xt = self._view("x", n)
        ops.permute_axes(xt, x, perm=_perm_to_last(x.ndim))
        yt = self._view("y", n) if y.ndim > 2 else y
        with self._inner_shapes():
            super().forward(yt, xt, training, **kwargs)
        if y.ndim > 2:
            ops.permute_axes(y, yt, perm=_perm_to_first(y.ndim))
        return None

    def backward(self, dx, dy, x, y, **kwargs):
        if self._passthrough():
            return super().backward(dx, dy, x, y, **kwargs)
        n = x.shape[0]
        xt = self._view("x", n)
        if dy.ndim > 2:
            yt, dyt = self._view("y", n), self._view("dy", n)
            ops.permute_axes(dyt, dy, perm=_perm_to_last(dy.ndim))
        else:
            yt, dyt = y, dy
        dxt = self._view("dx", n) if dx is not None else None
        with self._inner_shapes():
            super().backward(dxt, dyt, xt, yt, **kwargs)
        if dx is not None:
            ops.permute_axes(dx, dxt, perm=_perm_to_first(dx.ndim))
        return None

    def get_config(self):
        return {**super().get_config(), "data_format": "channels_first"}


def _flat(shape):
    return shape[0] if isinstance(shape, list) else shape


class TransposedAxis(_Transposed):
    """BatchNormalization(axis=1): the channels axis second, as channels_first."""

    @staticmethod
    def _channels_last_kwargs(kwargs):
        return {**kwargs, "axis": -1}

    def build(self, input_shape):
        if len(input_shape) < 3:
            return super(_Transposed, self).build(input_shape)
        return super().build(input_shape)

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)

    def get_config(self):
        config = super(_Transposed, self).get_config()
        config["axis"] = 1
        return config


class ChannelsAxis(ChannelsFirst):
    """Base of BatchNormalization: axis=1 takes the transposed variant."""

    @classmethod
    def _wants_channels_first(cls, args, kwargs):
        axis = kwargs.get("axis", args[0] if args else -1)
        return axis == 1 or (isinstance(axis, (list, tuple)) and list(axis) == [1])


ChannelsAxis._transposed = TransposedAxis
