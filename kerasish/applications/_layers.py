"""Four Keras behaviours MobileNetV2/EfficientNet need that kerasish.layers refuses
today, written here on kernels_numba's ops (the lead may fold them into the layers);
without the extra argument each runs kerasish's own layer unchanged:

- `Multiply` of a (B, H, W, C) map by a (B, 1, 1, C) squeeze-excite gate: Keras's
  Multiply broadcasts size-1 dimensions; kerasish's refuses them by name.
- `Dropout(rate, noise_shape=(None, 1, 1, 1))`: one keep/drop draw per sample
  (stochastic depth); kerasish's Dropout refuses noise_shape.
- `ReLU(6.0)` (MobileNetV2's ReLU6): kerasish's ReLU refuses max_value; here
  max_value=6 runs the "relu6" activation kernel (other max_values stay refused).
- `Rescaling(scale=[s_r, s_g, s_b])`: a per-channel scale (EfficientNet's ImageNet
  stem); kerasish's Rescaling takes numbers only.

All keep Keras's class names, so weight files, .h5 model files and names cross with
Keras. Limits until they move into kerasish.layers: reloading a whole saved model here
needs custom_objects=CUSTOM_OBJECTS (else the built-in layers refuse the arguments), and
a .keras file written here records their module as kerasish.applications._layers, which
Keras cannot import (weights-only files and .h5 model files are unaffected).
"""

import numpy as np

import kernels_numba
from kerasish import config as kconfig
from kerasish.layers import activation_layers, core, merging
from kernels_numba import ops


def _broadcast(a, b):
    """NumPy broadcasting of two per-sample shapes of one rank (None: unknown size)."""
    if len(a) != len(b):
        return None
    out = []
    for i, j in zip(a, b):
        if i == j or j == 1:
            out.append(i)
        elif i == 1:
            out.append(j)
        elif i is None or j is None:
            out.append(j if i is None else i)
        else:
            return None
    return tuple(out)


class ReLU(activation_layers.ReLU):
    """Keras's ReLU, with max_value=6 as the relu6 kernel: min(max(x, 0), 6)."""

    def __init__(self, max_value=None, negative_slope=0.0, threshold=0.0, **kwargs):
        if max_value is None or float(max_value) != 6.0 or negative_slope or threshold:
            super().__init__(max_value, negative_slope, threshold, **kwargs)
            self.max_value = None
            return
        core.Activation.__init__(self, "relu6", **kwargs)
        self.negative_slope, self.max_value = 0.0, 6.0

    def get_config(self):
        return {**super().get_config(), "max_value": self.max_value}


class Multiply(merging.Multiply):
    """Keras's Multiply; two inputs whose size-1 dimensions differ broadcast (the
    squeeze-excite gate), equal shapes run kerasish's own Multiply."""

    def _merged_shape(self, input_shape):
        shapes, batch = merging._as_shapes(self, input_shape)
        if len(shapes) != 2 or shapes[0][1:] == shapes[1][1:]:
            self._broadcasting = False
            return super()._merged_shape(input_shape)
        inner = _broadcast(shapes[0][1:], shapes[1][1:])
        if inner is None:
            raise ValueError(f"Multiply '{self.name}': inputs of shapes {shapes} do not "
                             f"broadcast (same rank, each dimension equal or 1)")
        self._broadcasting = True
        return (batch, *inner), 2

    def forward(self, y, x, training):
        if not self._broadcasting:
            return super().forward(y, x, training)
        x = self._inputs(x)
        ops.broadcast_binary(y, x[0], x[1], kind="multiply")

    def backward(self, dx, dy, x, y):
        if not self._broadcasting:
            return super().backward(dx, dy, x, y)
        if dx[0] is not None or dx[1] is not None:
            ops.broadcast_binary_backward(dx[0], dx[1], dy, x[0], x[1], kind="multiply")


class Dropout(core.Dropout):
    """Dropout with Keras's `noise_shape`: one mask of shape noise_shape (None = the
    input's size) broadcast over the input, scaled by 1/(1-rate) like Dropout."""

    def __init__(self, rate, noise_shape=None, seed=None, **kwargs):
        super().__init__(rate, noise_shape=None, seed=seed, **kwargs)
        if noise_shape is not None:
            noise_shape = tuple(None if d is None else int(d) for d in noise_shape)
        self.noise_shape = noise_shape

    def _mask_shape(self, batch_size):
        full = (batch_size, *self.input_shape[1:])
        if self.noise_shape is None:
            return full
        if len(self.noise_shape) != len(full) or any(
                n not in (None, 1, d) for n, d in zip(self.noise_shape[1:], full[1:])):
            raise ValueError(f"Dropout '{self.name}': noise_shape={self.noise_shape} does "
                             f"not broadcast to the input shape {self.input_shape}")
        return (batch_size, *(d if n is None else n
                              for n, d in zip(self.noise_shape[1:], full[1:])))

    def build(self, input_shape):
        super().build(input_shape)
        self.input_shape = tuple(input_shape)
        self._mask_shape(None)  # checks noise_shape against the input now

    def scratch_shapes(self, batch_size):
        if self.noise_shape is None:
            return super().scratch_shapes(batch_size)
        return {"mask": (self._mask_shape(batch_size), np.float32),
                "draw": (self._mask_shape(batch_size), np.float32)}

    def forward(self, y, x, training):
        if self.noise_shape is None:
            return super().forward(y, x, training)
        if not (training and self.rate > 0):
            ops.copy(y, x)
            return
        n = x.shape[0]
        mask, draw = self.scratch_view("mask", n), self.scratch_view("draw", n)
        ops.fill(draw, 1.0)
        # The mask output of dropout on ones is the scaled mask: 1/(1-rate) or 0.
        ops.dropout_forward(draw, mask, draw, rate=self.rate, seed=self._seed,
                            step=self._step)
        self._step += 1
        ops.broadcast_binary(y, x, mask, kind="multiply")

    def backward(self, dx, dy, x, y):
        if self.noise_shape is None:
            return super().backward(dx, dy, x, y)
        if dx is None:
            return
        if self.rate > 0:
            mask = self.scratch_view("mask", dy.shape[0])
            ops.broadcast_binary_backward(dx, None, dy, x, mask, kind="multiply")
        else:
            ops.copy(dx, dy)

    def get_config(self):
        config = super().get_config()
        config["noise_shape"] = None if self.noise_shape is None else list(self.noise_shape)
        return config


class Rescaling(core.Rescaling):
    """y = x * scale with a per-channel `scale` (a list over the last axis; offset 0)."""

    def __init__(self, scale, offset=0.0, **kwargs):
        if not isinstance(scale, (list, tuple, np.ndarray)):
            super().__init__(scale, offset, **kwargs)
            self.channel_scale = None
            return
        if offset:
            raise ValueError(f"Rescaling (applications): a per-channel scale takes offset=0; "
                             f"received offset={offset!r}")
        super().__init__(1.0, 0.0, **kwargs)
        self.channel_scale = np.asarray(scale, np.float32).reshape(-1)
        self.scale = [float(v) for v in np.asarray(scale, np.float64).reshape(-1)]
        self._factor = None

    def build(self, input_shape):
        if self.channel_scale is not None:
            if input_shape[-1] != self.channel_scale.size:
                raise ValueError(f"Rescaling '{self.name}': {self.channel_scale.size} scales "
                                 f"for an input with {input_shape[-1]} channels "
                                 f"(input_shape={tuple(input_shape)})")
            shape = (1,) * (len(input_shape) - 1) + (self.channel_scale.size,)
            self._factor = kernels_numba.to_device(
                self.channel_scale.reshape(shape).copy(), kconfig.get_device())
        self.built = True

    def forward(self, y, x, training):
        if self.channel_scale is None:
            return super().forward(y, x, training)
        ops.broadcast_binary(y, x, self._factor, kind="multiply")

    def backward(self, dx, dy, x, y):
        if self.channel_scale is None:
            return super().backward(dx, dy, x, y)
        if dx is not None:
            ops.broadcast_binary_backward(dx, None, dy, x, self._factor, kind="multiply")


# For load_model/model_from_json of a saved application model:
# kerasish.models.load_model(path, custom_objects=kerasish.applications.CUSTOM_OBJECTS).
CUSTOM_OBJECTS = {cls.__name__: cls for cls in (ReLU, Multiply, Dropout, Rescaling)}
