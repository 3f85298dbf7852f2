"""Conv2D: 2-D convolution, channels_last (NHWC) inputs, HWIO kernels (Keras layouts);
groups > 1 runs per group (kerasish/layers/conv2d_grouped.py)."""

import numpy as np

from kerasish import activations
from kerasish.layers import conv2d_grouped as grouped
from kerasish.layers.channels_first import ChannelsFirst
from kerasish.layers.core import _init_config
from kerasish.layers.layer import Layer
from kernels_numba import ops


def normalize_tuple(value, n, name, layer):
    """An int or an n-tuple of positive ints -> n-tuple; clear error otherwise."""
    received = value
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        value = (value,) * n
    try:
        value = tuple(value)
    except TypeError:
        value = None
    # Exact ints only: int(2.7) and int("3") would silently accept a float or a string.
    if value is None or len(value) != n or not all(
            isinstance(v, (int, np.integer)) and not isinstance(v, bool) and v > 0
            for v in value):
        raise ValueError(f"{layer}: expected `{name}` to be a positive int or a tuple of {n} "
                         f"positive ints; received {name}={received!r}")
    return tuple(int(v) for v in value)


def check_dilation(value, strides, layer):
    """dilation_rate as a pair; strides > 1 together with dilation > 1 refused (as Keras)."""
    dilation = normalize_tuple(value, 2, "dilation_rate", layer)
    if max(dilation) > 1 and max(strides) > 1:
        raise ValueError(f"{layer}: `strides > 1` not supported in conjunction with "
                         f"`dilation_rate > 1`; received strides={strides}, "
                         f"dilation_rate={dilation}")
    return dilation


def normalize_padding(value, layer):
    padding = str(value).lower()
    if padding not in ("valid", "same"):
        raise ValueError(f"{layer}: expected padding 'valid' or 'same'; received padding={value!r}")
    return padding


class Conv2D(ChannelsFirst, Layer):
    """2-D convolution. Input (batch, H, W, C) -> output (batch, H', W', filters)."""
    config_none_keys = ("activity_regularizer", "kernel_regularizer", "kernel_constraint",
                        "bias_regularizer", "bias_constraint")

    def __init__(self, filters, kernel_size, strides=(1, 1), padding="valid", data_format=None,
                 dilation_rate=(1, 1), groups=1, activation=None, use_bias=True,
                 kernel_initializer="glorot_uniform", bias_initializer="zeros", **kwargs):
        super().__init__(**kwargs)
        if isinstance(filters, bool) or not isinstance(filters, (int, np.integer)) or filters <= 0:
            raise ValueError(f"Conv2D: expected `filters` to be a positive integer; "
                             f"received filters={filters!r}")
        if data_format not in (None, "channels_last"):
            raise ValueError(f"Conv2D: only data_format='channels_last' is supported; "
                             f"received {data_format!r}")
        if isinstance(groups, bool) or not isinstance(groups, (int, np.integer)) or \
                groups < 1 or filters % groups:
            raise ValueError(f"Conv2D: expected `groups` to be a positive integer dividing "
                             f"filters={filters!r}; received groups={groups!r}")
        self.groups = int(groups)
        self.filters = int(filters)
        self.kernel_size = normalize_tuple(kernel_size, 2, "kernel_size", "Conv2D")
        self.strides = normalize_tuple(strides, 2, "strides", "Conv2D")
        self.dilation_rate = check_dilation(dilation_rate, self.strides, "Conv2D")
        self.padding = normalize_padding(padding, "Conv2D")
        self.activation = activations.get(activation)
        self.use_bias = bool(use_bias)
        self.kernel_initializer = kernel_initializer
        self.bias_initializer = bias_initializer
        self._workspaces = {}
        self._columns_ready = False

    def build(self, input_shape):
        if self.groups != 1:
            grouped.check_groups(self, input_shape)
        self.kernel = self.add_weight(
            "kernel", self._w_shape(input_shape), self.kernel_initializer)
        self.bias = self.add_weight("bias", (self.filters,), self.bias_initializer) \
            if self.use_bias else None

    def _geometry(self):
        return {"strides": self.strides, "padding": self.padding,
                "dilation_rate": self.dilation_rate}

    def _w_shape(self, input_shape):
        return (*self.kernel_size, input_shape[-1] // self.groups, self.filters)

    def compute_output_shape(self, input_shape):
        if len(input_shape) != 4:
            raise ValueError(f"Conv2D {self.name}: expected input of rank 4 (batch, H, W, C); "
                             f"received shape {tuple(input_shape)}")
        if self.groups != 1:
            grouped.check_groups(self, input_shape)
        g = self.groups  # the shape of one group's convolution, then every filter
        try:
            out = ops.conv2d_output_shape((1, *input_shape[1:3], input_shape[3] // g),
                                          grouped.group_w_shape(self, input_shape),
                                          **self._geometry())
        except ValueError as exc:
            raise ValueError(f"Conv2D {self.name}: {exc}") from None
        return (input_shape[0], *out[1:3], self.filters)

    def scratch_shapes(self, batch_size):
        if self.groups != 1:
            return grouped.scratch_shapes(self, batch_size)
        ws = ops.conv2d_workspace_shape((batch_size, *self.input_shape[1:]),
                                        self._w_shape(self.input_shape), **self._geometry())
        scratch = {"workspace": ((int(np.prod(ws, dtype=np.int64)),), np.float32)}
        if self.activation not in activations.FUSABLE:
            scratch["z"] = ((batch_size, *self.output_shape[1:]), np.float32)
        return scratch

    def _workspace(self, n):
        """A view of the flat workspace shaped for batch n (cached: no per-step work)."""
        key = (n, tuple(self.input_shape))  # a None-size model binds H, W per signature
        ws = self._workspaces.get(key)
        if ws is None or ws[0] is not self.scratch["workspace"]:
            shape = ops.conv2d_workspace_shape((n, *self.input_shape[1:]),
                                               self._w_shape(self.input_shape),
                                               **self._geometry())
            flat = self.scratch["workspace"]
            view = flat[: int(np.prod(shape, dtype=np.int64))].reshape(shape)
            ws = self._workspaces[key] = (flat, view)
        return ws[1]

    def forward(self, y, x, training):
        if self.groups != 1:
            return grouped.forward(self, y, x, training)
        b = self.bias.value if self.use_bias else None
        ws = self._workspace(x.shape[0])
        # The forward's im2col columns stay in the workspace for backward-filter.
        self._columns_ready = bool(training)
        kw = self._geometry()
        if self.activation in activations.FUSABLE:
            ops.conv2d_forward(y, x, self.kernel.value, b, ws, activation=self.activation, **kw)
        else:
            z = self.scratch_view("z", x.shape[0])
            ops.conv2d_forward(z, x, self.kernel.value, b, ws, **kw)
            ops.activation_forward(y, z, kind=self.activation,
                                   alpha=activations.alpha(self.activation))

    def forward_linear(self, y, x, training):
        """forward() without bias or activation: the conv half of a fused Conv2D(relu) ->
        MaxPooling2D forward, whose pool adds them (kerasish/engine/conv_pool.py)."""
        self._columns_ready = bool(training)
        ops.conv2d_forward(y, x, self.kernel.value, None, self._workspace(x.shape[0]),
                           **self._geometry())

    def backward(self, dx, dy, x, y):
        if self.groups != 1:
            return grouped.backward(self, dx, dy, x, y)
        n = x.shape[0]
        act = self.activation
        if act not in activations.FUSABLE:
            ops.activation_backward(dy, dy, self.scratch_view("z", n), y, kind=act,
                                    alpha=activations.alpha(act))
            act = "linear"
        ws = self._workspace(n)
        # relu/sigmoid/tanh: both backward GEMMs read dy * f'(y) (no extra pass).
        kw = {**self._geometry(), "activation": act, "y": None if act == "linear" else y}
        if self.trainable:
            ops.conv2d_backward_filter(self.kernel.grad, self.bias.grad if self.use_bias else None,
                                       dy, x, ws, columns_ready=self._columns_ready, **kw)
        self._columns_ready = False  # backward-data overwrites the workspace
        if dx is not None:
            ops.conv2d_backward_data(dx, dy, self.kernel.value, ws, **kw)

    def backward_pooled(self, pool, dx, dp, x, p, argmax, dz):
        """backward() of this relu call and of the MaxPooling2D `pool` after it, from the
        pool's gradient dp, output p and argmax (kerasish/engine/conv_pool.py); dz: the
        storage of this call's output gradient, the op's scratch."""
        train = self.trainable
        ops.conv2d_relu_maxpool_backward(
            dx, self.kernel.grad if train else None,
            self.bias.grad if train and self.use_bias else None, dp, p, argmax, x,
            self.kernel.value, self._workspace(x.shape[0]), dz,
            columns_ready=self._columns_ready, **self._geometry(),
            pool_size=pool.pool_size, pool_strides=pool.strides, pool_padding=pool.padding)
        self._columns_ready = False  # backward-data overwrites the workspace

    def get_config(self):
        config = super().get_config()
        config.update({
            "filters": self.filters, "kernel_size": tuple(self.kernel_size),
            "strides": tuple(self.strides), "padding": self.padding,
            "data_format": "channels_last", "dilation_rate": tuple(self.dilation_rate),
            "groups": self.groups,
            "activation": self.activation, "use_bias": self.use_bias,
            "kernel_initializer": _init_config(self.kernel_initializer),
            "bias_initializer": _init_config(self.bias_initializer),
        })
        return config
