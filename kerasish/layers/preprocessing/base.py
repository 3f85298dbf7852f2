"""Shared pieces of the image preprocessing layers: argument checks with Keras 3's
factor semantics, and the random-layer base (seed, step, channels_last images).

Random parameters come from kernels_numba's counter-based hash of (seed, step, sample),
drawn on the device: the seed is the layer's `seed` or one drawn from kerasish.random at
build (so kerasish.utils.set_random_seed makes runs repeat), the step counts training
calls (each batch differs) and is saved with checkpoints, as Dropout's is.
"""

import math

import numpy as np

from kerasish import random as kr
from kerasish.layers.layer import Layer
from kernels_numba import device as kdevice
from kernels_numba import ops
from kernels_numba.ops import augment_color as ac  # noqa: F401 (used by image_color)
from kernels_numba.ops import augment_geometric as ag

FILL_MODES = ("reflect", "wrap", "constant", "nearest")
INTERPOLATIONS = ("bilinear", "nearest")


def is_number(v):
    return not isinstance(v, (bool, np.bool_)) and isinstance(v, (int, float, np.number)) \
        and math.isfinite(v)


def number(layer, name, value):
    if not is_number(value):
        raise ValueError(f"{layer}: expected `{name}` to be a finite number; "
                         f"received {name}={value!r}")
    return float(value)


def factor_pair(layer, name, factor, bounds, symmetric_floor=True):
    """Keras's BaseImagePreprocessingLayer._set_factor: a number f gives
    (max(-|f|, low), |f|), a pair is sorted; values outside `bounds` are refused."""
    msg = (f"{layer}: the `{name}` argument should be a number (or a list of two numbers) "
           f"in the range [{bounds[0]}, {bounds[1]}]. Received: {name}={factor!r}")
    if isinstance(factor, (tuple, list)):
        if len(factor) != 2 or not all(is_number(v) for v in factor):
            raise ValueError(msg)
        if factor[0] > bounds[1] or factor[1] < bounds[0]:
            raise ValueError(msg)
        lo, hi = sorted(float(v) for v in factor)
        return lo, hi
    if not is_number(factor) or factor < bounds[0] or factor > bounds[1]:
        raise ValueError(msg)
    f = abs(float(factor))
    return (max(-f, bounds[0]) if symmetric_floor else -f), f


def zoom_pair(layer, name, factor, open_low):
    """RandomZoom / RandomTranslation's _set_factor: a number f gives (-|f|, |f|); each
    value must lie in (-1, 1] (zoom) or [-1, 1] (translation)."""
    def check(v):
        if not is_number(v) or v > 1.0 or v < -1.0 or (open_low and v == -1.0):
            low = "(-1" if open_low else "[-1"
            raise ValueError(f"{layer}: expected `{name}` values in {low}, 1]; "
                             f"received {name}={factor!r}")
    if isinstance(factor, (tuple, list)):
        if len(factor) != 2:
            raise ValueError(f"{layer}: expected `{name}` as a number or a pair; "
                             f"received {name}={factor!r}")
        check(factor[0])
        check(factor[1])
        return tuple(sorted(float(v) for v in factor))
    check(factor)
    return -abs(float(factor)), abs(float(factor))


def choice(layer, name, value, allowed):
    if value not in allowed:
        raise ValueError(f"{layer}: expected `{name}` in {list(allowed)}; "
                         f"received {name}={value!r}")
    return value


def positive_int(layer, name, value):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value <= 0:
        raise ValueError(f"{layer}: expected `{name}` to be a positive integer; "
                         f"received {name}={value!r}")
    return int(value)


def check_data_format(layer, value):
    if value not in (None, "channels_last"):
        raise ValueError(f"{layer}: only data_format='channels_last' is supported; "
                         f"received data_format={value!r}")
    return "channels_last"


def aspect_box(h, w, th, tw):
    """Keras's crop_to_aspect_ratio / smart_resize box (top, left, height, width)."""
    ch = max(min(h, int(float(w * th) / tw)), 1)
    cw = max(min(w, int(float(h * tw) / th)), 1)
    return int(float(h - ch) / 2), int(float(w - cw) / 2), ch, cw


class ImageLayer(Layer):
    """A layer on (batch, height, width, channels) images. A None height or width (known
    only from the data, as Keras allows) is None in the symbolic pass; the plan binds
    each batch's concrete sizes before scratch_shapes and forward read input_shape."""

    def _image_shape(self, input_shape):
        if len(input_shape) != 4 or input_shape[3] is None:
            raise ValueError(f"{type(self).__name__} {self.name}: expected a batch of images "
                             f"(batch, height, width, channels) with known channels (a None "
                             f"height or width is taken: each batch brings its known height "
                             f"and width); received input shape {tuple(input_shape)}")
        h, w = (None if d is None else int(d) for d in input_shape[1:3])
        return h, w, input_shape[3]

    def _box_scratch(self, batch_size, box):
        """The scratch a resize of `box` needs: a copy of the box unless it is the image."""
        h, w, c = self._image_shape(self.input_shape)
        if box is None or box[2:] == (h, w):
            return {}
        return {"box": ((batch_size, box[2], box[3], c), np.float32)}

    def _resize(self, y, x, size, box, interpolation):
        """y = x's `box` (top, left, height, width; None: all of x) resized to `size`
        (PyTorch's half-pixel resize, as Keras's torch backend): the box is copied out
        (its edges are where the resize clamps), then the affine sampler runs with
        constant matrices, uploaded once per device and batch size. Returns what
        _resize_backward needs."""
        n, h, w = x.shape[0], x.shape[1], x.shape[2]
        crops = None
        if box is not None and box[2:] != (h, w):
            top, left, bh, bw = box
            crops = ((top, h - bh - top), (left, w - bw - left))
            src = self.scratch_view("box", n)
            ops.cropping2d_forward(src, x, cropping=crops)
            x = src
        key = (kdevice.device_of(x), n, tuple(x.shape[1:3]), size)
        cache = self.__dict__.setdefault("_matrix_cache", {})
        if key not in cache:
            cache[key] = kdevice.to_device(ag.resize_matrices(n, size, key[2]), key[0])
        mode = "bilinear" if interpolation == "bilinear" else "nearest_exact"
        ag.affine_transform_forward(y, x, cache[key], interpolation=mode, fill_mode="nearest")
        return cache[key], mode, crops

    def _resize_backward(self, dx, dy, m, mode, crops):
        if crops is None:
            ag.affine_transform_backward(dx, dy, m, interpolation=mode, fill_mode="nearest")
            return
        buf = self.scratch_view("box", dy.shape[0])  # the box copy is no longer needed
        ag.affine_transform_backward(buf, dy, m, interpolation=mode, fill_mode="nearest")
        ops.cropping2d_backward(dx, buf, cropping=crops)


class RandomImageLayer(ImageLayer):
    """An image layer with a per-layer random stream; identity at inference."""

    def __init__(self, seed=None, **kwargs):
        super().__init__(**kwargs)
        if seed is not None and (isinstance(seed, bool) or
                                 not isinstance(seed, (int, np.integer))):
            raise ValueError(f"{type(self).__name__}: expected `seed` to be None or an "
                             f"integer; received seed={seed!r}")
        self.seed = None if seed is None else int(seed)
        self._seed = None
        self._step = 0
        self._applied = False

    def build(self, input_shape):
        self._image_shape(input_shape)
        self._seed = self.seed if self.seed is not None else kr.new_seed()

    def _next_step(self):
        step = self._step
        self._step += 1
        return step

    def forward(self, y, x, training):
        self._applied = bool(training)
        if not training:
            ops.copy(y, x)
            return
        self.augment(y, x, self._seed, self._next_step())

    def backward(self, dx, dy, x, y):
        if dx is None:
            return
        if not self._applied:
            ops.copy(dx, dy)
            return
        self.augment_backward(dx, dy, x)

    def get_extra_state(self):
        """Seed and step, saved in checkpoints so resumed training repeats the transforms."""
        return {"seed": np.int64(self._seed), "step": np.int64(self._step)}

    def set_extra_state(self, state):
        self._seed, self._step = int(state["seed"]), int(state["step"])

