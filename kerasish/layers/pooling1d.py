"""MaxPooling1D, AveragePooling1D, GlobalMaxPooling1D, GlobalAveragePooling1D and
GlobalMaxPooling2D on the pool2d ops: a (batch, steps, C) buffer is viewed, without a
copy, as (batch, 1, steps, C) and pooled with a (1, p) window."""

import numpy as np

from kerasish.layers.channels_first import ChannelsFirst
from kerasish.layers.conv1d import _one
from kerasish.layers.layer import Layer
from kernels_numba import ops


def _rank(layer, input_shape, rank):
    if len(input_shape) != rank:
        raise ValueError(f"{type(layer).__name__} {layer.name}: expected input of rank {rank}; "
                         f"received shape {tuple(input_shape)}")


def _as_2d(a):
    return a.reshape((a.shape[0], 1, a.shape[1], a.shape[2]))


class _Pooling1D(ChannelsFirst, Layer):
    def __init__(self, pool_size=2, strides=None, padding="valid", data_format=None, **kwargs):
        super().__init__(**kwargs)
        cls = type(self).__name__
        if data_format not in (None, "channels_last"):
            raise ValueError(f"{cls}: only data_format='channels_last' is supported; "
                             f"received {data_format!r}")
        self.pool_size = _one(pool_size, "pool_size", cls)
        self.strides = _one(strides if strides is not None else self.pool_size, "strides", cls)
        self.padding = str(padding).lower()
        if self.padding not in ("valid", "same"):
            raise ValueError(f"{cls}: expected padding 'valid' or 'same'; received {padding!r}")

    def _kw(self):
        return {"pool_size": (1, self.pool_size), "strides": (1, self.strides),
                "padding": self.padding}

    def compute_output_shape(self, input_shape):
        _rank(self, input_shape, 3)
        try:
            out = ops.pool2d_output_shape((1, 1, *input_shape[1:]), **self._kw())
        except ValueError as exc:
            raise ValueError(f"{type(self).__name__} {self.name}: {exc}") from None
        return (input_shape[0], out[2], out[3])

    def get_config(self):
        return {**super().get_config(), "pool_size": (self.pool_size,), "padding": self.padding,
                "strides": (self.strides,), "data_format": "channels_last"}


class MaxPooling1D(_Pooling1D):
    def scratch_shapes(self, batch_size):
        return {"argmax": ((batch_size, 1, *self.output_shape[1:]), np.int32)}

    def forward(self, y, x, training):
        ops.maxpool2d_forward(_as_2d(y), self.scratch_view("argmax", x.shape[0]), _as_2d(x),
                              **self._kw())

    def backward(self, dx, dy, x, y):
        if dx is not None:
            ops.maxpool2d_backward(_as_2d(dx), _as_2d(dy),
                                   self.scratch_view("argmax", dy.shape[0]),
                                   pool_size=(1, self.pool_size), strides=(1, self.strides),
                                   padding=self.padding)


class AveragePooling1D(_Pooling1D):
    def forward(self, y, x, training):
        ops.avgpool2d_forward(_as_2d(y), _as_2d(x), **self._kw())

    def backward(self, dx, dy, x, y):
        if dx is not None:
            ops.avgpool2d_backward(_as_2d(dx), _as_2d(dy), **self._kw())


class _Global(ChannelsFirst, Layer):
    RANK = 3

    def __init__(self, data_format=None, keepdims=False, **kwargs):
        super().__init__(**kwargs)
        cls = type(self).__name__
        if data_format not in (None, "channels_last"):
            raise ValueError(f"{cls}: only data_format='channels_last' is supported; "
                             f"received {data_format!r}")
        self.keepdims = bool(keepdims)

    def compute_output_shape(self, input_shape):
        _rank(self, input_shape, self.RANK)
        return keep_dims(self, input_shape)

    def _x4(self, x):
        return _as_2d(x) if self.RANK == 3 else x

    def _window(self):
        return tuple(self.input_shape[1:-1]) if self.RANK == 4 else (1, self.input_shape[1])

    def get_config(self):
        return {**super().get_config(), "data_format": "channels_last",
                "keepdims": self.keepdims}


def keep_dims(layer, input_shape):
    """A global pooling's output shape: (batch, C), or with keepdims the pooled axes 1."""
    if layer.keepdims:
        return (input_shape[0], *(1,) * (len(input_shape) - 2), input_shape[-1])
    return (input_shape[0], input_shape[-1])


def pooled_rows(y):
    """A global pooling's output (or its gradient) as (batch, C), keepdims or not."""
    return y if y.ndim == 2 else y.reshape((y.shape[0], y.shape[y.ndim - 1]))


class _GlobalMax(_Global):
    def scratch_shapes(self, batch_size):
        return {"argmax": ((batch_size, 1, 1, self.input_shape[-1]), np.int32)}

    def _y4(self, y):
        return y.reshape((y.shape[0], 1, 1, y.shape[1]))

    def forward(self, y, x, training):
        y = pooled_rows(y)
        w = self._window()
        ops.maxpool2d_forward(self._y4(y), self.scratch_view("argmax", x.shape[0]), self._x4(x),
                              pool_size=w, strides=w, padding="valid")

    def backward(self, dx, dy, x, y):
        if dx is not None:
            dy = pooled_rows(dy)
            w = self._window()
            ops.maxpool2d_backward(self._x4(dx), self._y4(dy),
                                   self.scratch_view("argmax", dy.shape[0]), pool_size=w,
                                   strides=w)


class GlobalMaxPooling1D(_GlobalMax):
    """Max over steps: (batch, steps, C) -> (batch, C)."""


class GlobalMaxPooling2D(_GlobalMax):
    """Max over H and W: (batch, H, W, C) -> (batch, C)."""

    RANK = 4


class GlobalAveragePooling1D(_Global):
    """Mean over steps: (batch, steps, C) -> (batch, C). With a mask (Embedding(mask_zero),
    Masking) the mean of the kept steps, as Keras: sum(x * mask) / sum(mask) (NaN for a
    sample with no kept step); the mask stops here."""

    supports_masking = True

    def scratch_shapes(self, batch_size):
        _, t, c = self.input_shape
        return {"masked": ((batch_size, t, c), np.float32), "count": ((batch_size,), np.float32),
                "dy": ((batch_size, c), np.float32)}

    def forward(self, y, x, training, mask=None):
        y = pooled_rows(y)
        if mask is None:
            ops.global_avgpool2d_forward(y, _as_2d(x))
            return
        n = x.shape[0]
        masked, count = self.scratch_view("masked", n), self.scratch_view("count", n)
        ops.masking_backward(masked, x, mask)
        ops.reduce_axes(y, masked, kind="sum", axes=(1,))
        ops.reduce_axes(count, mask, kind="sum", axes=(1,))
        ops.unary_forward(count, count, kind="reciprocal")  # kept for backward
        ops.scale_rows(y, count)

    def backward(self, dx, dy, x, y, mask=None):
        if dx is None:
            return
        dy, y = pooled_rows(dy), pooled_rows(y)
        if mask is None:
            ops.global_avgpool2d_backward(_as_2d(dx), dy)
            return
        n = x.shape[0]
        dyw = self.scratch_view("dy", n)
        ops.copy(dyw, dy)
        ops.scale_rows(dyw, self.scratch_view("count", n))
        ops.reduce_axes_backward(dx, dyw, self.scratch_view("masked", n), y, kind="sum",
                                 axes=(1,))
        ops.masking_backward(dx, dx, mask)
