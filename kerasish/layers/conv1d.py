"""Conv1D (valid / same / causal padding, strides, dilation) and UpSampling1D.

Conv1D is im2col (ops.conv1d_im2col, dilation-aware) + one GEMM with the (K, C, F)
kernel viewed as (K*C, F) (bias and activation fused when possible); backward is
ops.dense_backward on the columns, then col2im.
"""

import numpy as np

from kerasish import activations
from kerasish.initializers import get as get_initializer
from kerasish.layers.channels_first import ChannelsFirst
from kerasish.layers.core import _init_config, _positive_int
from kerasish.layers.layer import Layer
from kernels_numba import ops


def _one(value, name, layer):
    if isinstance(value, (list, tuple)):
        if len(value) != 1:
            raise ValueError(f"{layer}: expected `{name}` to be an int or a 1-tuple; "
                             f"received {name}={value!r}")
        value = value[0]
    return _positive_int(layer, name, value)


class Conv1D(ChannelsFirst, Layer):
    """1-D convolution: (batch, steps, channels) -> (batch, new_steps, filters)."""
    config_none_keys = ("activity_regularizer", "kernel_regularizer", "kernel_constraint",
                        "bias_regularizer", "bias_constraint")

    def __init__(self, filters, kernel_size, strides=1, padding="valid", data_format=None,
                 dilation_rate=1, groups=1, activation=None, use_bias=True,
                 kernel_initializer="glorot_uniform", bias_initializer="zeros", **kwargs):
        super().__init__(**kwargs)
        if data_format not in (None, "channels_last"):
            raise ValueError(f"Conv1D: only data_format='channels_last' is supported; "
                             f"received {data_format!r}")
        if groups != 1:
            raise ValueError(f"Conv1D: only groups=1 is supported; received groups={groups!r}")
        self.filters = _positive_int("Conv1D", "filters", filters)
        self.kernel_size = _one(kernel_size, "kernel_size", "Conv1D")
        self.strides = _one(strides, "strides", "Conv1D")
        self.dilation_rate = _one(dilation_rate, "dilation_rate", "Conv1D")
        self.padding = str(padding).lower()
        if self.padding not in ops.conv1d.PADDINGS:
            raise ValueError(f"Conv1D: expected padding in {ops.conv1d.PADDINGS}; received "
                             f"padding={padding!r}")
        if self.strides > 1 and self.dilation_rate > 1:
            raise ValueError("Conv1D: strides > 1 together with dilation_rate > 1 is not "
                             "supported (as Keras)")
        self.activation = activations.get(activation)
        self.use_bias = bool(use_bias)
        self.kernel_initializer, self.bias_initializer = kernel_initializer, bias_initializer

    def _kw(self):
        return {"kernel_size": self.kernel_size, "strides": self.strides,
                "padding": self.padding, "dilation_rate": self.dilation_rate}

    def build(self, input_shape):
        c = input_shape[-1]
        self.kernel = self.add_weight("kernel", (self.kernel_size, c, self.filters),
                                      get_initializer(self.kernel_initializer))
        self.bias = self.add_weight("bias", (self.filters,),
                                    get_initializer(self.bias_initializer)) \
            if self.use_bias else None
        self.built = True

    def compute_output_shape(self, input_shape):
        if len(input_shape) != 3:
            raise ValueError(f"Conv1D {self.name}: expected input of rank 3 (batch, steps, "
                             f"channels); received shape {tuple(input_shape)}")
        if input_shape[1] is None:  # a length known only from the data (symbolic pass)
            return (input_shape[0], None, self.filters)
        try:
            t_out, _ = ops.conv1d_geometry(input_shape[1], **self._kw())
        except ValueError as exc:
            raise ValueError(f"Conv1D {self.name}: {exc}") from None
        return (input_shape[0], t_out, self.filters)

    def _fused(self):
        return self.activation in activations.FUSABLE

    def scratch_shapes(self, batch_size):
        t_out = self.output_shape[1]
        width = self.kernel_size * self.input_shape[-1]
        shapes = {"cols": ((batch_size * t_out, width), np.float32),
                  "dcols": ((batch_size * t_out, width), np.float32)}
        if not self._fused():
            shapes["z"] = ((batch_size * t_out, self.filters), np.float32)
        return shapes

    def _w2(self):
        return self.kernel.value.reshape((self.kernel.shape[0] * self.kernel.shape[1],
                                          self.filters))

    def forward(self, y, x, training):
        n = x.shape[0]
        rows = n * y.shape[1]
        cols = self.scratch_view("cols", rows)
        ops.conv1d_im2col(cols, x, **self._kw())
        y2 = y.reshape((rows, self.filters))
        b = self.bias.value if self.use_bias else None
        if self._fused():
            ops.dense_forward(y2, cols, self._w2(), b, activation=self.activation)
        else:
            z = self.scratch_view("z", rows)
            ops.dense_forward(z, cols, self._w2(), b)
            ops.activation_forward(y2, z, kind=self.activation,
                                   alpha=activations.alpha(self.activation))

    def backward(self, dx, dy, x, y):
        rows = x.shape[0] * y.shape[1]
        dy2, y2 = dy.reshape((rows, self.filters)), y.reshape((rows, self.filters))
        if self.activation != "linear":
            z = None if self._fused() else self.scratch_view("z", rows)
            ops.activation_backward(dy2, dy2, z, y2, kind=self.activation,
                                    alpha=activations.alpha(self.activation))
        dcols = self.scratch_view("dcols", rows) if dx is not None else None
        if self.trainable:
            dw = self.kernel.grad.reshape(self._w2().shape)
            ops.dense_backward(dcols, dw, self.bias.grad if self.use_bias else None, dy2,
                               self.scratch_view("cols", rows), self._w2())
        elif dcols is not None:
            ops.matmul(dcols, dy2, self._w2(), trans_b=True)
        if dx is not None:
            ops.conv1d_col2im(dx, dcols, **self._kw())

    def get_config(self):
        return {**super().get_config(), "filters": self.filters,
                "kernel_size": (self.kernel_size,), "strides": (self.strides,),
                "padding": self.padding, "data_format": "channels_last",
                "dilation_rate": (self.dilation_rate,), "groups": 1,
                "activation": self.activation, "use_bias": self.use_bias,
                "kernel_initializer": _init_config(self.kernel_initializer),
                "bias_initializer": _init_config(self.bias_initializer)}


class UpSampling1D(Layer):
    """Repeats each step `size` times: (batch, steps, C) -> (batch, steps*size, C)."""

    def __init__(self, size=2, **kwargs):
        super().__init__(**kwargs)
        self.size = _positive_int("UpSampling1D", "size", size)

    def compute_output_shape(self, input_shape):
        if len(input_shape) != 3:
            raise ValueError(f"UpSampling1D {self.name}: expected input of rank 3; received "
                             f"shape {tuple(input_shape)}")
        steps = None if input_shape[1] is None else input_shape[1] * self.size
        return (input_shape[0], steps, input_shape[2])

    def forward(self, y, x, training):
        ops.upsampling1d_forward(y, x, size=self.size)

    def backward(self, dx, dy, x, y):
        if dx is not None:
            ops.upsampling1d_backward(dx, dy, size=self.size)

    def get_config(self):
        return {**super().get_config(), "size": self.size}
