"""Conv2DTranspose, DepthwiseConv2D and SeparableConv2D (Keras 3 arguments, defaults and
weight layouts; channels_last).

- Conv2DTranspose: kernel (KH, KW, filters, C). Forward = ops.conv2d_backward_data of the
  matching convolution (GEMM + col2im gather) then ops.bias_activation; backward-data is
  that convolution (ops.conv2d_forward); the kernel gradient is ops.conv2d_backward_filter
  with the roles of x and dy swapped; the bias gradient is ops.batch_sum.
- DepthwiseConv2D: kernel (KH, KW, C, depth_multiplier) (ops.depthwise_conv2d_*).
- SeparableConv2D: depthwise_kernel (KH, KW, C, DM), then pointwise_kernel
  (1, 1, C*DM, filters) as one GEMM (ops.dense_forward, bias and activation fused).
"""

import numpy as np

from kerasish import activations
from kerasish.layers.convolutional import check_dilation, normalize_padding, normalize_tuple
from kerasish.layers.core import _init_config, _positive_int
from kerasish.layers.layer import Layer
from kernels_numba import ops


def _channels_last(layer, data_format):
    if data_format not in (None, "channels_last"):
        raise ValueError(f"{layer}: only data_format='channels_last' is supported; "
                         f"received data_format={data_format!r}")


def _rank4(layer, input_shape):
    if len(input_shape) != 4:
        raise ValueError(f"{layer}: expected input of rank 4 (batch, H, W, C); received "
                         f"shape {tuple(input_shape)}")


def _rows(a):
    return a.reshape((a.size // a.shape[a.ndim - 1], a.shape[a.ndim - 1]))



class _ConvBase(Layer):
    """Arguments every variant shares, and the activation around the linear part."""

    def __init__(self, kind, kernel_size, strides, padding, data_format, dilation_rate,
                 activation, use_bias, bias_initializer, **kwargs):
        super().__init__(**kwargs)  # regularizers/constraints: Layer attaches them by weight
        _channels_last(kind, data_format)
        self.kernel_size = normalize_tuple(kernel_size, 2, "kernel_size", kind)
        self.strides = normalize_tuple(strides, 2, "strides", kind)
        self.padding = normalize_padding(padding, kind)
        self.dilation_rate = check_dilation(dilation_rate, self.strides, kind)
        self.activation = activations.get(activation)
        self.use_bias = bool(use_bias)
        self.bias_initializer = bias_initializer
        self.bias = None

    def _geometry(self):
        return {"strides": self.strides, "padding": self.padding,
                "dilation_rate": self.dilation_rate}

    def _fused(self):
        return self.activation in activations.FUSABLE

    def _z_scratch(self, batch_size):
        return {} if self._fused() else \
            {"z": ((batch_size, *self.output_shape[1:]), np.float32)}

    def _bias_grad(self):
        return self.bias.grad if self.use_bias and self.trainable else None

    def _activation_backward(self, dy, y):
        if self.activation != "linear":
            z = None if self._fused() else self.scratch_view("z", y.shape[0])
            ops.activation_backward(dy, dy, z, y, kind=self.activation,
                                    alpha=activations.alpha(self.activation))

    def _apply_activation(self, y, z):
        if not self._fused():
            ops.activation_forward(y, z, kind=self.activation,
                                   alpha=activations.alpha(self.activation))

    def _base_config(self):
        return {**Layer.get_config(self), "kernel_size": tuple(self.kernel_size),
                "strides": tuple(self.strides), "padding": self.padding,
                "data_format": "channels_last", "dilation_rate": tuple(self.dilation_rate),
                "activation": self.activation, "use_bias": self.use_bias,
                "bias_initializer": _init_config(self.bias_initializer)}


class Conv2DTranspose(_ConvBase):
    """Transposed convolution: (batch, H, W, C) -> (batch, H', W', filters)."""
    config_none_keys = ("activity_regularizer", "kernel_regularizer", "kernel_constraint",
                        "bias_regularizer", "bias_constraint")

    def __init__(self, filters, kernel_size, strides=(1, 1), padding="valid",
                 output_padding=None, data_format=None, dilation_rate=(1, 1), activation=None,
                 use_bias=True, kernel_initializer="glorot_uniform", bias_initializer="zeros",
                 **kwargs):
        super().__init__("Conv2DTranspose", kernel_size, strides, padding, data_format,
                         dilation_rate, activation, use_bias, bias_initializer, **kwargs)
        self.filters = _positive_int("Conv2DTranspose", "filters", filters)
        if output_padding is not None:
            raise ValueError(f"Conv2DTranspose: only output_padding=None is supported; "
                             f"received output_padding={output_padding!r}")
        if self.dilation_rate != (1, 1):
            raise ValueError(f"Conv2DTranspose: only dilation_rate=(1, 1) is supported; "
                             f"received dilation_rate={dilation_rate!r}")
        self.kernel_initializer = kernel_initializer

    def _w_shape(self, input_shape):
        return (*self.kernel_size, self.filters, input_shape[-1])

    def build(self, input_shape):
        self.kernel = self.add_weight("kernel", self._w_shape(input_shape),
                                      self.kernel_initializer)
        if self.use_bias:
            self.bias = self.add_weight("bias", (self.filters,), self.bias_initializer)

    def compute_output_shape(self, input_shape):
        _rank4(f"Conv2DTranspose {self.name}", input_shape)
        # A None H or W (known only from the data) stays None; the other axis is computed
        # (each axis's size depends on that axis alone, and size 1 always fits).
        known = tuple(1 if d is None else d for d in input_shape[1:3])
        out = ops.conv2d_transpose_output_shape((1, *known, input_shape[3]),
                                                self._w_shape(input_shape),
                                                strides=self.strides, padding=self.padding)
        hw = tuple(None if d is None else o for d, o in zip(input_shape[1:3], out[1:3]))
        return (input_shape[0], *hw, out[3])

    def _conv_kw(self):
        return {"strides": self.strides, "padding": self.padding}

    def scratch_shapes(self, batch_size):
        out = (batch_size, *self.output_shape[1:])
        (ws,) = ops.conv2d_workspace_shape(out, self._w_shape(self.input_shape),
                                           **self._conv_kw())
        (bs,) = ops.batch_sum_workspace_shape((int(np.prod(out[:3])), self.filters))
        return {"workspace": ((ws,), np.float32), "bsum": ((bs,), np.float32),
                **self._z_scratch(batch_size)}

    def _workspace(self, n):
        out = (n, *self.output_shape[1:])
        (need,) = ops.conv2d_workspace_shape(out, self.kernel.shape, **self._conv_kw())
        return self.scratch["workspace"][:need]

    def forward(self, y, x, training):
        z = y if self._fused() else self.scratch_view("z", x.shape[0])
        ops.conv2d_backward_data(z, x, self.kernel.value, self._workspace(x.shape[0]),
                                 **self._conv_kw())
        ops.bias_activation(_rows(z), self.bias.value if self.use_bias else None,
                            activation=self.activation if self._fused() else "linear")
        self._apply_activation(y, z)

    def backward(self, dx, dy, x, y):
        self._activation_backward(dy, y)
        ws = self._workspace(x.shape[0])
        if self.trainable:
            ops.conv2d_backward_filter(self.kernel.grad, None, x, dy, ws, **self._conv_kw())
            if self.use_bias:
                ops.batch_sum(self.bias.grad, _rows(dy), self.scratch["bsum"])
        if dx is not None:
            ops.conv2d_forward(dx, dy, self.kernel.value, None, ws, **self._conv_kw())

    def get_config(self):
        return {**self._base_config(), "filters": self.filters, "output_padding": None,
                "kernel_initializer": _init_config(self.kernel_initializer)}


class DepthwiseConv2D(_ConvBase):
    """Per-channel convolution: (batch, H, W, C) -> (batch, H', W', C*depth_multiplier)."""
    config_none_keys = ("activity_regularizer", "depthwise_regularizer", "depthwise_constraint",
                        "bias_regularizer", "bias_constraint")

    RULE_WEIGHTS = {**Layer.RULE_WEIGHTS, "depthwise": "kernel"}  # Keras names it "kernel"

    def __init__(self, kernel_size, strides=(1, 1), padding="valid", depth_multiplier=1,
                 data_format=None, dilation_rate=(1, 1), activation=None, use_bias=True,
                 depthwise_initializer="glorot_uniform", bias_initializer="zeros", **kwargs):
        super().__init__("DepthwiseConv2D", kernel_size, strides, padding, data_format,
                         dilation_rate, activation, use_bias, bias_initializer, **kwargs)
        self.depth_multiplier = _positive_int("DepthwiseConv2D", "depth_multiplier",
                                              depth_multiplier)
        self.depthwise_initializer = depthwise_initializer

    def build(self, input_shape):
        c = input_shape[-1]
        self.kernel = self.add_weight("kernel", (*self.kernel_size, c, self.depth_multiplier),
                                      self.depthwise_initializer)
        if self.use_bias:
            self.bias = self.add_weight("bias", (c * self.depth_multiplier,),
                                        self.bias_initializer)

    def compute_output_shape(self, input_shape):
        _rank4(f"DepthwiseConv2D {self.name}", input_shape)
        try:
            out = ops.depthwise_conv2d_output_shape(
                (1, *input_shape[1:]), (*self.kernel_size, input_shape[-1],
                                        self.depth_multiplier), **self._geometry())
        except ValueError as exc:
            raise ValueError(f"DepthwiseConv2D {self.name}: {exc}") from None
        return (input_shape[0], *out[1:])

    def scratch_shapes(self, batch_size):
        rows = batch_size * self.output_shape[1] * self.output_shape[2]
        (bs,) = ops.batch_sum_workspace_shape((rows, self.output_shape[3]))
        return {"bsum": ((bs,), np.float32), **self._z_scratch(batch_size)}

    def forward(self, y, x, training):
        z = y if self._fused() else self.scratch_view("z", x.shape[0])
        ops.depthwise_conv2d_forward(z, x, self.kernel.value,
                                     self.bias.value if self.use_bias else None,
                                     **self._geometry())
        if self._fused() and self.activation != "linear":
            ops.activation_forward(y, y, kind=self.activation)
        self._apply_activation(y, z)

    def backward(self, dx, dy, x, y):
        self._activation_backward(dy, y)
        if self.trainable:
            ops.depthwise_conv2d_backward_filter(self.kernel.grad, dy, x, **self._geometry())
            if self.use_bias:
                ops.batch_sum(self.bias.grad, _rows(dy), self.scratch["bsum"])
        if dx is not None:
            ops.depthwise_conv2d_backward_data(dx, dy, self.kernel.value, **self._geometry())

    def get_config(self):
        return {**self._base_config(), "depth_multiplier": self.depth_multiplier,
                "depthwise_initializer": _init_config(self.depthwise_initializer)}


class SeparableConv2D(_ConvBase):
    """Depthwise (KH, KW, C, DM) then pointwise (1, 1, C*DM, filters), then bias."""
    config_none_keys = ("activity_regularizer", "depthwise_regularizer", "depthwise_constraint",
                        "pointwise_regularizer", "pointwise_constraint", "bias_regularizer",
                        "bias_constraint")

    def __init__(self, filters, kernel_size, strides=(1, 1), padding="valid", data_format=None,
                 dilation_rate=(1, 1), depth_multiplier=1, activation=None, use_bias=True,
                 depthwise_initializer="glorot_uniform", pointwise_initializer="glorot_uniform",
                 bias_initializer="zeros", **kwargs):
        super().__init__("SeparableConv2D", kernel_size, strides, padding, data_format,
                         dilation_rate, activation, use_bias, bias_initializer, **kwargs)
        self.filters = _positive_int("SeparableConv2D", "filters", filters)
        self.depth_multiplier = _positive_int("SeparableConv2D", "depth_multiplier",
                                              depth_multiplier)
        self.depthwise_initializer = depthwise_initializer
        self.pointwise_initializer = pointwise_initializer

    def build(self, input_shape):
        c, dm = input_shape[-1], self.depth_multiplier
        self.depthwise_kernel = self.add_weight(
            "depthwise_kernel", (*self.kernel_size, c, dm), self.depthwise_initializer)
        self.pointwise_kernel = self.add_weight(
            "pointwise_kernel", (1, 1, c * dm, self.filters), self.pointwise_initializer)
        if self.use_bias:
            self.bias = self.add_weight("bias", (self.filters,), self.bias_initializer)

    def compute_output_shape(self, input_shape):
        _rank4(f"SeparableConv2D {self.name}", input_shape)
        try:
            out = ops.depthwise_conv2d_output_shape(
                (1, *input_shape[1:]), (*self.kernel_size, input_shape[-1],
                                        self.depth_multiplier), **self._geometry())
        except ValueError as exc:
            raise ValueError(f"SeparableConv2D {self.name}: {exc}") from None
        return (input_shape[0], out[1], out[2], self.filters)

    def _mid_shape(self, n):
        return (n, self.output_shape[1], self.output_shape[2],
                self.input_shape[-1] * self.depth_multiplier)

    def scratch_shapes(self, batch_size):
        mid = self._mid_shape(batch_size)
        return {"t": (mid, np.float32), "dt": (mid, np.float32),
                **self._z_scratch(batch_size)}

    def _pw(self, grad=False):
        buf = self.pointwise_kernel.grad if grad else self.pointwise_kernel.value
        return buf.reshape(self.pointwise_kernel.shape[2:])

    def forward(self, y, x, training):
        t = self.scratch_view("t", x.shape[0])
        ops.depthwise_conv2d_forward(t, x, self.depthwise_kernel.value, None,
                                     **self._geometry())
        b = self.bias.value if self.use_bias else None
        if self._fused():
            ops.dense_forward(_rows(y), _rows(t), self._pw(), b, activation=self.activation)
        else:
            z = self.scratch_view("z", x.shape[0])
            ops.dense_forward(_rows(z), _rows(t), self._pw(), b)
            self._apply_activation(y, z)

    def backward(self, dx, dy, x, y):
        self._activation_backward(dy, y)
        n = x.shape[0]
        t, dt = self.scratch_view("t", n), self.scratch_view("dt", n)
        if self.trainable:
            ops.dense_backward(_rows(dt), self._pw(True), self._bias_grad(), _rows(dy),
                               _rows(t), self._pw())
            ops.depthwise_conv2d_backward_filter(self.depthwise_kernel.grad, dt, x,
                                                 **self._geometry())
        elif dx is not None:
            ops.matmul(_rows(dt), _rows(dy), self._pw(), trans_b=True)
        if dx is not None:
            ops.depthwise_conv2d_backward_data(dx, dt, self.depthwise_kernel.value,
                                               **self._geometry())

    def get_config(self):
        return {**self._base_config(), "filters": self.filters,
                "depth_multiplier": self.depth_multiplier,
                "depthwise_initializer": _init_config(self.depthwise_initializer),
                "pointwise_initializer": _init_config(self.pointwise_initializer)}
