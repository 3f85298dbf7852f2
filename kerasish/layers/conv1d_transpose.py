"""Conv1DTranspose: Conv2DTranspose's kernels on a height-1 image.

(batch, steps, C) is viewed as (batch, 1, steps, C) and the Keras kernel (K, filters, C)
as (1, K, filters, C), so forward, backward and the weight gradient are Conv2DTranspose's
ops with no copy; the output length is Keras's ((steps - 1) * strides + K valid,
steps * strides same).
"""

import numpy as np

from kerasish.initializers import get as get_initializer
from kerasish.layers.conv1d import _one
from kerasish.layers.conv_variants import Conv2DTranspose, _rows
from kernels_numba import ops


def _image(a):
    """(N, T, C) as (N, 1, T, C)."""
    return a.reshape((a.shape[0], 1, *a.shape[1:]))


def _kernel(w):
    """The kernel (K, F, C) as (1, K, F, C)."""
    return w.reshape((1, *w.shape))


class Conv1DTranspose(Conv2DTranspose):
    """Transposed 1-D convolution: (batch, steps, C) -> (batch, new_steps, filters)."""

    def __init__(self, filters, kernel_size, strides=1, padding="valid", output_padding=None,
                 data_format=None, dilation_rate=1, activation=None, use_bias=True,
                 kernel_initializer="glorot_uniform", bias_initializer="zeros", **kwargs):
        k = _one(kernel_size, "kernel_size", "Conv1DTranspose")
        s = _one(strides, "strides", "Conv1DTranspose")
        d = _one(dilation_rate, "dilation_rate", "Conv1DTranspose")
        if output_padding is not None:
            raise ValueError(f"Conv1DTranspose: only output_padding=None is supported; "
                             f"received output_padding={output_padding!r}")
        if d != 1:
            raise ValueError(f"Conv1DTranspose: only dilation_rate=1 is supported; received "
                             f"dilation_rate={dilation_rate!r}")
        if data_format not in (None, "channels_last"):
            raise ValueError(f"Conv1DTranspose: only data_format='channels_last' is "
                             f"supported; received data_format={data_format!r}")
        super().__init__(filters, (1, k), strides=(1, s), padding=padding,
                         activation=activation, use_bias=use_bias,
                         kernel_initializer=kernel_initializer,
                         bias_initializer=bias_initializer, **kwargs)

    def _w_shape(self, input_shape):  # the 2-D form the ops see
        return (1, self.kernel_size[1], self.filters, input_shape[-1])

    def build(self, input_shape):
        self.kernel = self.add_weight("kernel", (self.kernel_size[1], self.filters,
                                                 input_shape[-1]),
                                      get_initializer(self.kernel_initializer))
        if self.use_bias:
            self.bias = self.add_weight("bias", (self.filters,), self.bias_initializer)

    def compute_output_shape(self, input_shape):
        if len(input_shape) != 3:
            raise ValueError(f"Conv1DTranspose {self.name}: expected input of rank 3 (batch, "
                             f"steps, channels); received shape {tuple(input_shape)}")
        n, t, c = input_shape
        out = super().compute_output_shape((n, 1, t, c))
        return (n, out[2], out[3])

    def _shape4(self, shape, n):
        return (n, 1, *shape[1:])

    def scratch_shapes(self, batch_size):
        out = self._shape4(self.output_shape, batch_size)
        (ws,) = ops.conv2d_workspace_shape(out, self._w_shape(self.input_shape),
                                           **self._conv_kw())
        (bs,) = ops.batch_sum_workspace_shape((int(np.prod(out[:3])), self.filters))
        return {"workspace": ((ws,), np.float32), "bsum": ((bs,), np.float32),
                **self._z_scratch(batch_size)}

    def _workspace(self, n):
        out = self._shape4(self.output_shape, n)
        (need,) = ops.conv2d_workspace_shape(out, self._w_shape(self.input_shape),
                                             **self._conv_kw())
        return self.scratch["workspace"][:need]

    def forward(self, y, x, training):
        z = y if self._fused() else self.scratch_view("z", x.shape[0])
        ops.conv2d_backward_data(_image(z), _image(x), _kernel(self.kernel.value),
                                 self._workspace(x.shape[0]), **self._conv_kw())
        ops.bias_activation(_rows(z), self.bias.value if self.use_bias else None,
                            activation=self.activation if self._fused() else "linear")
        self._apply_activation(y, z)

    def backward(self, dx, dy, x, y):
        self._activation_backward(dy, y)
        ws = self._workspace(x.shape[0])
        if self.trainable:
            ops.conv2d_backward_filter(_kernel(self.kernel.grad), None, _image(x), _image(dy),
                                       ws, **self._conv_kw())
            if self.use_bias:
                ops.batch_sum(self.bias.grad, _rows(dy), self.scratch["bsum"])
        if dx is not None:
            ops.conv2d_forward(_image(dx), _image(dy), _kernel(self.kernel.value), None, ws,
                               **self._conv_kw())

    def get_config(self):
        config = super().get_config()
        config.update(kernel_size=(self.kernel_size[1],), strides=(self.strides[1],),
                      dilation_rate=(self.dilation_rate[1],))
        return config
