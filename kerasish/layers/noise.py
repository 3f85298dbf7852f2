"""GaussianNoise, GaussianDropout and SpatialDropout2D (active in training only).

Noise is counter-based (kernels_numba.ops.noise, the hash of ops.dropout): a pure
function of (seed, step, index), so it is reproducible from
kerasish.utils.set_random_seed and the same on CPU and CUDA. Each training forward
advances `step`; seed and step travel in checkpoints like Dropout's.

The step and its optional device buffer (`step_buffer`, `advance_step()`) are
kerasish/layers/step_buffer.py's StepCounter, shared with Dropout.
"""

import math

import numpy as np

from kerasish import random as kr
from kerasish.layers.core import _seed, check_number
from kerasish.layers.layer import Layer
from kerasish.layers.step_buffer import StepCounter
from kernels_numba import ops


class _Noise(StepCounter, Layer):
    """Seed/step bookkeeping shared by the three layers."""

    def __init__(self, seed=None, **kwargs):
        super().__init__(**kwargs)
        self.seed = _seed(type(self).__name__, seed)
        self._init_steps()
        self._applied = False  # whether the last forward drew noise (backward follows it)

    def build(self, input_shape):
        self._seed = int(self.seed) if self.seed is not None else kr.new_seed()


class GaussianNoise(_Noise):
    """y = x + N(0, stddev) in training; y = x otherwise."""

    propagates_mask = True  # Keras's supports_masking: the mask passes on

    def __init__(self, stddev, seed=None, **kwargs):
        super().__init__(seed=seed, **kwargs)
        self.stddev = check_number("GaussianNoise", "stddev", stddev, ">= 0",
                                   lambda v: v >= 0)

    def forward(self, y, x, training):
        self._applied = bool(training) and self.stddev > 0
        if self._applied:
            ops.gaussian_fill(y, mean=0.0, stddev=self.stddev, seed=self._seed,
                              step=self._advance(y))
            ops.axpy(y, x, 1.0)
        else:
            ops.copy(y, x)

    def backward(self, dx, dy, x, y):
        if dx is not None:
            ops.copy(dx, dy)

    def get_config(self):
        return {**super().get_config(), "stddev": self.stddev, "seed": self.seed}


class GaussianDropout(_Noise):
    """y = x * N(1, sqrt(rate / (1 - rate))) in training; y = x otherwise."""

    propagates_mask = True  # Keras's supports_masking: the mask passes on

    def __init__(self, rate, seed=None, **kwargs):
        super().__init__(seed=seed, **kwargs)
        self.rate = check_number("GaussianDropout", "rate", rate, "in [0, 1)",
                                 lambda v: 0 <= v < 1)

    def scratch_shapes(self, batch_size):
        return {"mask": ((batch_size, *self.input_shape[1:]), np.float32)}

    def forward(self, y, x, training):
        self._applied = bool(training) and self.rate > 0
        if self._applied:
            mask = self.scratch_view("mask", x.shape[0])
            ops.gaussian_fill(mask, mean=1.0, stddev=math.sqrt(self.rate / (1.0 - self.rate)),
                              seed=self._seed, step=self._advance(mask))
            ops.multiply(y, x, mask)
        else:
            ops.copy(y, x)

    def backward(self, dx, dy, x, y):
        if dx is None:
            return
        if self._applied:
            ops.multiply(dx, dy, self.scratch_view("mask", dy.shape[0]))
        else:
            ops.copy(dx, dy)

    def get_config(self):
        return {**super().get_config(), "rate": self.rate, "seed": self.seed}


class SpatialDropout2D(_Noise):
    """Drops whole channels: one keep/drop per (sample, channel), kept ones * 1/(1-rate)."""

    def __init__(self, rate, data_format=None, seed=None, name=None, dtype=None, **kwargs):
        super().__init__(seed=seed, name=name, dtype=dtype, **kwargs)
        if data_format not in (None, "channels_last"):
            raise ValueError(f"SpatialDropout2D: only data_format='channels_last' is "
                             f"supported; received data_format={data_format!r}")
        self.rate = check_number("SpatialDropout2D", "rate", rate, "in [0, 1)",
                                 lambda v: 0 <= v < 1)

    def compute_output_shape(self, input_shape):
        if len(input_shape) != 4:
            raise ValueError(f"SpatialDropout2D {self.name}: expected input of rank 4 "
                             f"(batch, H, W, C); received shape {tuple(input_shape)}")
        return tuple(input_shape)

    def scratch_shapes(self, batch_size):
        return {"mask": ((batch_size, self.input_shape[-1]), np.float32)}

    def forward(self, y, x, training):
        self._applied = bool(training) and self.rate > 0
        if self._applied:
            mask = self.scratch_view("mask", x.shape[0])
            ops.dropout_mask(mask, rate=self.rate, seed=self._seed, step=self._advance(mask))
            ops.channel_scale(y, x, mask)
        else:
            ops.copy(y, x)

    def backward(self, dx, dy, x, y):
        if dx is None:
            return
        if self._applied:
            ops.channel_scale(dx, dy, self.scratch_view("mask", dy.shape[0]))
        else:
            ops.copy(dx, dy)

    def get_config(self):
        # Keras 3's SpatialDropout2D takes exactly these keys (no trainable).
        return {"rate": self.rate, "seed": self.seed, "name": self.name, "dtype": "float32",
                "data_format": "channels_last"}
