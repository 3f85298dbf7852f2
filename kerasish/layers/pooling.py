"""MaxPooling2D, AveragePooling2D and GlobalAveragePooling2D (channels_last)."""

import numpy as np

from kerasish.layers.channels_first import ChannelsFirst
from kerasish.layers.convolutional import normalize_padding, normalize_tuple
from kerasish.layers.layer import Layer
from kerasish.layers.pooling1d import keep_dims, pooled_rows
from kernels_numba import ops


class _Pooling2D(ChannelsFirst, Layer):
    def __init__(self, pool_size=(2, 2), strides=None, padding="valid", data_format=None,
                 **kwargs):
        super().__init__(**kwargs)
        cls = type(self).__name__
        if data_format not in (None, "channels_last"):
            raise ValueError(f"{cls}: only data_format='channels_last' is supported; "
                             f"received {data_format!r}")
        self.pool_size = normalize_tuple(pool_size, 2, "pool_size", cls)
        self.strides = normalize_tuple(strides if strides is not None else self.pool_size, 2,
                                       "strides", cls)
        self.padding = normalize_padding(padding, cls)

    def _kw(self):
        return {"pool_size": self.pool_size, "strides": self.strides, "padding": self.padding}

    def compute_output_shape(self, input_shape):
        if len(input_shape) != 4:
            raise ValueError(f"{type(self).__name__} {self.name}: expected input of rank 4 "
                             f"(batch, H, W, C); received shape {tuple(input_shape)}")
        try:
            out = ops.pool2d_output_shape((1, *input_shape[1:]), **self._kw())
        except ValueError as exc:
            raise ValueError(f"{type(self).__name__} {self.name}: {exc}") from None
        return (input_shape[0], *out[1:])

    def get_config(self):
        return {**super().get_config(), "pool_size": tuple(self.pool_size),
                "strides": tuple(self.strides), "padding": self.padding,
                "data_format": "channels_last"}


class MaxPooling2D(_Pooling2D):
    """Max pooling; keeps the argmax of each window for backward."""

    def scratch_shapes(self, batch_size):
        return {"argmax": ((batch_size, *self.output_shape[1:]), np.int32)}

    def forward(self, y, x, training):
        ops.maxpool2d_forward(y, self.scratch_view("argmax", x.shape[0]), x, **self._kw())

    def forward_relu_bias(self, y, x, bias):
        """The pool of relu(x + bias): the pool half of a fused Conv2D(relu) ->
        MaxPooling2D forward, x the conv's linear output (kerasish/engine/conv_pool.py)."""
        ops.maxpool2d_forward(y, self.scratch_view("argmax", x.shape[0]), x, relu_bias=bias,
                              **self._kw())

    def backward(self, dx, dy, x, y):
        if dx is not None:
            ops.maxpool2d_backward(dx, dy, self.scratch_view("argmax", dy.shape[0]),
                                   **self._kw())


class AveragePooling2D(_Pooling2D):
    """Average pooling ('same' padding excludes padded cells from the mean, as Keras)."""

    def forward(self, y, x, training):
        ops.avgpool2d_forward(y, x, **self._kw())

    def backward(self, dx, dy, x, y):
        if dx is not None:
            ops.avgpool2d_backward(dx, dy, **self._kw())


class GlobalAveragePooling2D(ChannelsFirst, Layer):
    """Mean over H and W: (batch, H, W, C) -> (batch, C)."""

    def __init__(self, data_format=None, keepdims=False, **kwargs):
        super().__init__(**kwargs)
        self.keepdims = bool(keepdims)

    def compute_output_shape(self, input_shape):
        if len(input_shape) != 4:
            raise ValueError(f"GlobalAveragePooling2D {self.name}: expected input of rank 4; "
                             f"received shape {tuple(input_shape)}")
        return keep_dims(self, input_shape)

    def forward(self, y, x, training):
        ops.global_avgpool2d_forward(pooled_rows(y), x)

    def backward(self, dx, dy, x, y):
        if dx is not None:
            ops.global_avgpool2d_backward(dx, pooled_rows(dy))

    def get_config(self):
        return {**super().get_config(), "data_format": "channels_last",
                "keepdims": self.keepdims}
