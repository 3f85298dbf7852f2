"""Dense, Activation, Rescaling, Flatten, Reshape and Dropout."""

import math

import numpy as np

import kernels_numba
from kerasish import activations
from kerasish import config as kconfig
from kerasish import random as kr
from kerasish.layers.layer import Layer
from kerasish.layers.step_buffer import StepCounter
from kernels_numba import ops


def _positive_int(layer, name, value):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value <= 0:
        raise ValueError(f"{layer}: expected `{name}` to be a positive integer; "
                         f"received {name}={value!r}")
    return int(value)


def check_number(layer, name, value, expected, ok):
    """float(value) for a real, finite number with ok(value); else a ValueError naming the
    layer, the argument, what was expected (`expected`, e.g. "> 0") and what was received."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.number)) \
            or not math.isfinite(value) or not ok(value):
        raise ValueError(f"{layer}: expected {name} {expected} (a finite float); "
                         f"received {name}={value!r}")
    return float(value)


def _seed(layer, seed):
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, (int, np.integer))):
        raise ValueError(f"{layer}: expected `seed` to be None or an integer; "
                         f"received seed={seed!r}")
    return seed


class Dense(Layer):
    """Densely connected layer: y = activation(x @ kernel + bias).

    Input shape: (batch, ..., input_dim). Output shape: (batch, ..., units).
    """
    config_none_keys = ("kernel_regularizer", "kernel_constraint", "bias_regularizer",
                        "bias_constraint")

    propagates_mask = True  # Keras's supports_masking: the mask passes on

    def __init__(self, units, activation=None, use_bias=True, kernel_initializer="glorot_uniform",
                 bias_initializer="zeros", **kwargs):
        super().__init__(**kwargs)
        self.units = _positive_int("Dense", "units", units)
        self.activation = activations.get(activation)
        self.use_bias = bool(use_bias)
        self.kernel_initializer = kernel_initializer
        self.bias_initializer = bias_initializer
        self._defer_softmax = False

    def defer_softmax(self, flag=True):
        """Leave a softmax output to a fused loss op (ops.softmax_sparse_ce_train).

        When set (softmax layers only), a training forward writes only the logits, into
        `logits_view(n)`, and leaves y to the loss op, which also produces the gradient
        wrt the logits: backward then takes dy as that gradient (no softmax backward).
        Inference forwards still apply the softmax.
        """
        flag = bool(flag)
        if flag and self.activation != "softmax":
            raise ValueError(f"Dense {self.name}: defer_softmax needs activation='softmax'; "
                             f"received activation={self.activation!r}")
        self._defer_softmax = flag

    def logits_view(self, n):
        """The (n, units) logits a deferred-softmax training forward wrote (2-D input)."""
        return self.scratch_view("z", n)

    def build(self, input_shape):
        self.kernel = self.add_weight("kernel", (input_shape[-1], self.units),
                                      self.kernel_initializer)
        self.bias = self.add_weight("bias", (self.units,), self.bias_initializer) \
            if self.use_bias else None

    def compute_output_shape(self, input_shape):
        if len(input_shape) < 2:
            raise ValueError(f"Dense {self.name}: expected input of rank >= 2 (batch, features); "
                             f"received shape {input_shape}")
        return tuple(input_shape[:-1]) + (self.units,)

    def _fused(self):
        return self.activation in activations.FUSABLE

    def scratch_shapes(self, batch_size):
        if self._fused():
            return {}
        rows = batch_size * int(np.prod(self.input_shape[1:-1], dtype=np.int64))
        return {"z": ((rows, self.units), np.float32)}

    def _rows(self, a, width):
        return a if a.ndim == 2 else a.reshape((a.size // width, width))

    def forward(self, y, x, training):
        x2, y2 = self._rows(x, x.shape[x.ndim - 1]), self._rows(y, self.units)
        b = self.bias.value if self.use_bias else None
        if self._fused():
            ops.dense_forward(y2, x2, self.kernel.value, b, activation=self.activation)
        else:
            z = self.scratch_view("z", y2.shape[0])
            ops.dense_forward(z, x2, self.kernel.value, b)
            if training and self._defer_softmax:
                return  # the fused loss op writes y from the logits in z
            ops.activation_forward(y2, z, kind=self.activation,
                                   alpha=activations.alpha(self.activation))

    def backward(self, dx, dy, x, y):
        x2, y2, dy2 = self._rows(x, x.shape[x.ndim - 1]), self._rows(y, self.units), \
            self._rows(dy, self.units)
        # relu/sigmoid/tanh: f'(y) is applied inside the backward GEMMs (no extra pass);
        # a deferred softmax's dy is already the gradient wrt the logits.
        act = "linear" if self._defer_softmax else self.activation
        if act != "linear" and not self._fused():
            ops.activation_backward(dy2, dy2, self.scratch_view("z", y2.shape[0]), y2,
                                    kind=act, alpha=activations.alpha(act))
            act = "linear"
        dx2 = None if dx is None else self._rows(dx, x.shape[x.ndim - 1])
        if not self.trainable:  # frozen: dx only, the weights have no gradient buffers to touch
            if dx2 is not None:
                if act != "linear":
                    ops.activation_backward(dy2, dy2, None, y2, kind=act)
                ops.matmul(dx2, dy2, self.kernel.value, trans_b=True)
            return
        ops.dense_backward(dx2, self.kernel.grad, self.bias.grad if self.use_bias else None,
                           dy2, x2, self.kernel.value, activation=act,
                           y=None if act == "linear" else y2)

    def get_config(self):
        config = super().get_config()
        config.update({
            "units": self.units, "activation": self.activation, "use_bias": self.use_bias,
            "kernel_initializer": _init_config(self.kernel_initializer),
            "bias_initializer": _init_config(self.bias_initializer),
        })
        return config


def _init_config(init):
    from kerasish import initializers

    if isinstance(init, str):
        init = initializers.get(init)
    if isinstance(init, dict):
        return init
    return {"module": "keras.initializers", "class_name": type(init).__name__,
            "config": init.get_config() if hasattr(init, "get_config") else {},
            "registered_name": None}


class Activation(Layer):
    """Applies an activation function: Activation('relu')."""

    propagates_mask = True  # Keras's supports_masking: the mask passes on

    def __init__(self, activation, **kwargs):
        super().__init__(**kwargs)
        self.activation = activations.get(activation)
        self.alpha = activations.alpha(self.activation)  # leaky_relu slope, elu scale

    def forward(self, y, x, training):
        ops.activation_forward(y, x, kind=self.activation, alpha=self.alpha)

    def backward(self, dx, dy, x, y):
        if dx is not None:
            ops.activation_backward(dx, dy, x, y, kind=self.activation, alpha=self.alpha)

    def get_config(self):
        return {**super().get_config(), "activation": self.activation}


class Rescaling(Layer):
    """y = x * scale + offset (Keras's preprocessing layer, e.g. Rescaling(1 / 255)).

    scale and offset are numbers, or per-channel lists over the last axis (EfficientNet's
    ImageNet stem): those run as ops.broadcast_binary with a (1, ..., C) device array."""

    propagates_mask = True  # Keras's supports_masking: the mask passes on

    def __init__(self, scale, offset=0.0, **kwargs):
        super().__init__(**kwargs)
        for arg, value in (("scale", scale), ("offset", offset)):
            if isinstance(value, (list, tuple, np.ndarray)):
                flat = np.asarray(value, np.float64).reshape(-1)
                if flat.size == 0 or not np.all(np.isfinite(flat)):
                    raise ValueError(f"Rescaling: expected {arg} to be a number or a "
                                     f"non-empty list of finite numbers (one per channel); "
                                     f"received {arg}={value!r}")
            elif isinstance(value, bool) or not isinstance(value, (int, float, np.number)):
                raise TypeError(f"Rescaling: expected {arg} to be a number or a per-channel "
                                f"list; received {arg}={value!r}")
        self._lists = [isinstance(v, (list, tuple, np.ndarray)) for v in (scale, offset)]
        self.scale, self.offset = (
            [float(x) for x in np.asarray(v, np.float64).reshape(-1)] if is_list else float(v)
            for v, is_list in zip((scale, offset), self._lists))
        self._host = None  # per-channel lists: (scale, offset) as (1, ..., C) host arrays

    def build(self, input_shape):
        if not any(self._lists):
            return
        channels = input_shape[-1]
        arrays = []
        for arg, value in (("scale", self.scale), ("offset", self.offset)):
            flat = np.asarray(value, np.float32).reshape(-1)
            if flat.size not in (1, channels):
                raise ValueError(f"Rescaling {self.name}: {arg} has {flat.size} values for an "
                                 f"input with {channels} channels (input_shape="
                                 f"{tuple(input_shape)})")
            arrays.append(flat.reshape((1,) * (len(input_shape) - 1) + (flat.size,)).copy())
        self._host = arrays
        self._consts = {}
        self._per_channel(kconfig.get_device())  # made now: forwards do not allocate

    def _per_channel(self, device):
        """(scale, offset) as (1, ..., C) arrays on `device` (one copy per device)."""
        consts = self._consts.get(device)
        if consts is None:
            consts = self._consts[device] = tuple(kernels_numba.to_device(a, device)
                                                  for a in self._host)
        return consts

    def forward(self, y, x, training):
        if self._host is not None:
            factor, shift = self._per_channel(kernels_numba.device_of(x))
            ops.broadcast_binary(y, x, factor, kind="multiply")
            if np.any(self.offset):
                ops.broadcast_binary(y, y, shift, kind="add")
        elif self.offset:
            ops.fill(y, self.offset)
            ops.axpy(y, x, self.scale)
        else:
            ops.scale(y, x, self.scale)

    def backward(self, dx, dy, x, y):
        if dx is None:
            return
        if self._host is not None:
            factor = self._per_channel(kernels_numba.device_of(x))[0]
            ops.broadcast_binary_backward(dx, None, dy, x, factor, kind="multiply")
        else:
            ops.scale(dx, dy, self.scale)

    def get_config(self):
        return {**super().get_config(), "scale": self.scale, "offset": self.offset}


class Flatten(Layer):
    """Flattens all but the batch axis. Zero-copy: the output aliases the input buffer."""

    aliases_input = True

    def __init__(self, data_format=None, **kwargs):
        super().__init__(**kwargs)

    def compute_output_shape(self, input_shape):
        if None in tuple(input_shape[1:]):  # Keras: unknown until the data says
            return (input_shape[0], None)
        return (input_shape[0], int(np.prod(input_shape[1:], dtype=np.int64)))

    def get_config(self):
        return {**super().get_config(), "data_format": "channels_last"}


class Reshape(Layer):
    """Reshapes the per-sample shape (one entry may be -1). Zero-copy like Flatten."""

    aliases_input = True

    def __init__(self, target_shape, **kwargs):
        super().__init__(**kwargs)
        try:
            dims = tuple(target_shape)
        except TypeError:
            dims = None
        if dims is None or not all(
                isinstance(d, (int, np.integer)) and not isinstance(d, bool) and (d > 0 or d == -1)
                for d in dims):
            raise ValueError(f"Reshape: expected `target_shape` to be a tuple of positive ints "
                             f"(one may be -1); received target_shape={target_shape!r}")
        self.target_shape = tuple(int(d) for d in dims)

    def compute_output_shape(self, input_shape):
        size = int(np.prod(input_shape[1:], dtype=np.int64))
        shape = list(self.target_shape)
        if shape.count(-1) > 1:
            raise ValueError(f"Reshape {self.name}: at most one -1 in target_shape; "
                             f"received {self.target_shape}")
        known = int(np.prod([s for s in shape if s != -1], dtype=np.int64))
        if -1 in shape:
            if known == 0 or size % known:
                raise ValueError(f"Reshape {self.name}: cannot reshape input {input_shape} "
                                 f"to target_shape {self.target_shape}")
            shape[shape.index(-1)] = size // known
        if int(np.prod(shape, dtype=np.int64)) != size:
            raise ValueError(f"Reshape {self.name}: total size of the input {input_shape} "
                             f"does not match target_shape {self.target_shape}")
        return (input_shape[0], *shape)

    def get_config(self):
        return {**super().get_config(), "target_shape": tuple(self.target_shape)}


class Dropout(StepCounter, Layer):
    """Randomly zeroes inputs at `rate` during training, scaling the rest by 1/(1-rate).

    Masks come from a counter-based hash of (seed, step, index): reproducible from
    kerasish.utils.set_random_seed and identical on CPU and CUDA. `noise_shape` (Keras's:
    None entries take the input's size, others must be 1 or that size) draws one mask of
    that shape (ops.dropout_mask) and broadcasts it over the input, e.g. (None, 1, 1, 1)
    drops whole samples (EfficientNet's stochastic depth). The step and its optional
    device buffer (`step_buffer`, `advance_step()`) are layers/step_buffer.py's.
    """

    propagates_mask = True  # Keras's supports_masking: the mask passes on

    def __init__(self, rate, noise_shape=None, seed=None, **kwargs):
        super().__init__(**kwargs)
        self.rate = check_number("Dropout", "rate", rate, "in [0, 1)",
                                 lambda v: 0 <= v < 1)
        if noise_shape is not None:
            try:
                noise_shape = tuple(None if d is None else _positive_int(
                    "Dropout", "noise_shape entries", d) for d in noise_shape)
            except TypeError:
                raise ValueError(f"Dropout: expected noise_shape to be None or a tuple of "
                                 f"positive ints / None; received noise_shape="
                                 f"{noise_shape!r}") from None
        self.noise_shape = noise_shape
        self.seed = _seed("Dropout", seed)
        self._init_steps()

    def _mask_shape(self, batch_size):
        """The drawn mask's shape for a batch (the input's with noise_shape's 1s)."""
        full = (batch_size, *self.input_shape[1:])
        if self.noise_shape is None:
            return full
        if len(self.noise_shape) != len(full) or any(
                n not in (None, 1, d) for n, d in zip(self.noise_shape[1:], full[1:])):
            raise ValueError(f"Dropout {self.name}: noise_shape={self.noise_shape} does not "
                             f"broadcast to the input shape {tuple(self.input_shape)}")
        return (batch_size, *(d if n is None else n
                              for n, d in zip(self.noise_shape[1:], full[1:])))

    def build(self, input_shape):
        self._seed = int(self.seed) if self.seed is not None else kr.new_seed()
        if self.noise_shape is not None:
            self.input_shape = tuple(input_shape)
            self._mask_shape(None)  # checks noise_shape against the input now

    def scratch_shapes(self, batch_size):
        return {"mask": (self._mask_shape(batch_size), np.float32)}

    def forward(self, y, x, training):
        if not (training and self.rate > 0):
            ops.copy(y, x)
        elif self.noise_shape is None:
            mask = self.scratch_view("mask", x.shape[0])
            ops.dropout_forward(y, mask, x, rate=self.rate, seed=self._seed,
                                step=self._advance(x))
        else:
            mask = self.scratch_view("mask", x.shape[0])
            ops.dropout_mask(mask, rate=self.rate, seed=self._seed, step=self._advance(mask))
            ops.broadcast_binary(y, x, mask, kind="multiply")

    def backward(self, dx, dy, x, y):
        if dx is None:
            return
        if self.rate <= 0:
            ops.copy(dx, dy)
        elif self.noise_shape is None:
            ops.dropout_backward(dx, dy, self.scratch_view("mask", dy.shape[0]))
        else:
            ops.broadcast_binary_backward(dx, None, dy, x, self.scratch_view(
                "mask", dy.shape[0]), kind="multiply")

    def get_config(self):
        noise_shape = None if self.noise_shape is None else tuple(self.noise_shape)
        return {**super().get_config(), "rate": self.rate, "seed": self.seed,
                "noise_shape": noise_shape}
