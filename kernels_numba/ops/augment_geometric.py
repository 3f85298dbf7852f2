"""Geometric image augmentation on a channels_last (N, H, W, C) float32 batch: per-sample
random flips, one inverse-affine sampler (rotation, zoom, translation, resizing) and
per-sample crops, plus the tiny kernels that draw each sample's parameters.

Parameters are a pure function of (seed, step, sample index) through the counter-based
hash Dropout uses (kernels_numba.cpu.dropout.hash_uniform), drawn on the device, so a
batch's transforms are identical on the CPU and CUDA and need no host round trip.
The sampler follows Keras 3's affine_transform (torch backend): output pixel (x, y)
reads the input at (a0*x + a1*y + a2, b0*x + b1*y + b2) with m[n] = (a0, a1, a2, b0,
b1, b2); fill_mode reflect (d c b a | a b c d | d c b a), wrap, constant (fill_value
weighted per corner) or nearest; interpolation bilinear or nearest (round half to even),
and "nearest_exact" (floor(src + 0.5), PyTorch's nearest-exact resize).
Conventions: outputs first; ops never allocate; dx is overwritten.
"""

import math

import numpy as np

from kernels_numba import _check
from kernels_numba.cpu.dropout import dropout_key
from kernels_numba.dispatch import impl

__all__ = ["random_flip_params", "flip_images", "random_affine_params", "resize_matrices",
           "affine_transform_forward", "affine_transform_backward", "random_crop_params",
           "crop_images_forward", "crop_images_backward"]
FAMILY = "augment_geometric"
FILL_MODES = {"reflect": 0, "wrap": 1, "constant": 2, "nearest": 3}
INTERPOLATIONS = {"nearest": 0, "bilinear": 1, "nearest_exact": 2}
AFFINE_DRAWS = 5  # uniforms per sample: angle, zoom h, zoom w, translation h, translation w


def _integer(op, name, value, minimum=None):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{op}: expected {name} to be an integer; received {value!r}")
    if minimum is not None and value < minimum:
        raise ValueError(f"{op}: expected {name} >= {minimum}; received {value!r}")
    return int(value)


def _key(op, seed, step):
    return dropout_key(_integer(op, "seed", seed), _integer(op, "step", step, minimum=0))


def _number(op, name, value):
    if isinstance(value, bool) or not isinstance(value, (int, float, np.number)) or \
            not math.isfinite(value):
        raise ValueError(f"{op}: expected {name} to be a finite number; received {value!r}")
    return np.float32(value)


def _range(op, name, value):
    try:
        lo, hi = value
    except (TypeError, ValueError):
        raise ValueError(f"{op}: expected {name} as a (low, high) pair of numbers; "
                         f"received {value!r}") from None
    lo, hi = _number(op, name, lo), _number(op, name, hi)
    if lo > hi:
        raise ValueError(f"{op}: expected {name} with low <= high; received {value!r}")
    return lo, hi


def random_flip_params(flips, *, seed, step):
    """flips[n] = 1.0 where uniform(seed, step, n) <= 0.5 (Keras's draw), else 0.0.

    Args:
        flips: (N,) float32, output.
        seed: integer; step: integer >= 0.
    """
    op = "random_flip_params"
    _check.array(op, "flips", flips, ndim=1)
    impl(op, FAMILY, flips=flips)(flips, _key(op, seed, step))


def flip_images(y, x, flips, *, horizontal, vertical):
    """y[n] = x[n] mirrored left-right (horizontal) and/or top-bottom (vertical) where
    flips[n] != 0, else a copy. Its own backward: flip_images(dx, dy, flips, ...).

    Args:
        y: (N, H, W, C) float32, output (not x). x: (N, H, W, C) float32.
        flips: (N,) float32 from random_flip_params.
    """
    op = "flip_images"
    n, h, w, c = _check.array(op, "x", x, ndim=4)
    _check.array(op, "y", y, shape=(n, h, w, c))
    _check.array(op, "flips", flips, shape=(n,))
    impl(op, FAMILY, y=y, x=x, flips=flips)(y, x, flips, bool(horizontal), bool(vertical))


def random_affine_params(m, *, seed, step, height, width, rotation=(0.0, 0.0),
                         zoom_height=(0.0, 0.0), zoom_width=None, translate_height=(0.0, 0.0),
                         translate_width=(0.0, 0.0)):
    """Per-sample inverse-affine matrices about the image centre ((W-1)/2, (H-1)/2).

    angle ~ U(rotation) radians, zoom_y ~ 1 + U(zoom_height), zoom_x ~ 1 + U(zoom_width)
    (zoom_width None: zoom_x = zoom_y), ty ~ H*U(translate_height), tx ~ W*U(translate_width);
    the uniforms are hash_uniform(key, 5n + k). x_in = zx*(cos*(x-cx) - sin*(y-cy)) + cx - tx,
    y_in = zy*(sin*(x-cx) + cos*(y-cy)) + cy - ty: Keras's rotation, zoom and translation
    matrices when only one of them is drawn.

    Args:
        m: (N, 6) float32, output (a0, a1, a2, b0, b1, b2).
        height, width: the image size (positive ints).
        rotation, zoom_height, zoom_width, translate_height, translate_width: (low, high).
    """
    op = "random_affine_params"
    _check.array(op, "m", m, shape=(None, 6))
    h = _check.positive_int(op, "height", height)
    w = _check.positive_int(op, "width", width)
    rot = _range(op, "rotation", rotation)
    zh = _range(op, "zoom_height", zoom_height)
    same = zoom_width is None
    zw = zh if same else _range(op, "zoom_width", zoom_width)
    th = _range(op, "translate_height", translate_height)
    tw = _range(op, "translate_width", translate_width)
    ranges = np.array([*rot, *zh, *zw, *th, *tw], np.float32)
    impl(op, FAMILY, m=m)(m, _key(op, seed, step), ranges, np.float32(h), np.float32(w), same)


def resize_matrices(n, out_size, in_size):
    """(n, 6) float32 matrices that make affine_transform_forward (fill_mode "nearest")
    resize an in_size image to out_size with half-pixel centres (PyTorch's
    align_corners=False: its clamp of source coordinates to the edges is the "nearest"
    fill). Host-side: the matrix is the same for every sample."""
    (ho, wo), (h, w) = out_size, in_size
    sy, sx = h / ho, w / wo
    row = [sx, 0.0, 0.5 * sx - 0.5, 0.0, sy, 0.5 * sy - 0.5]
    return np.tile(np.array(row, np.float32), (n, 1))


def _sampler_args(op, y, x, m, interpolation, fill_mode, fill_value, dx_name="x"):
    n, h, w, c = _check.array(op, dx_name, x, ndim=4)
    _check.array(op, "y" if dx_name == "x" else "dy", y, shape=(n, None, None, c))
    _check.array(op, "m", m, shape=(n, 6))
    interp = INTERPOLATIONS[_check.choice(op, "interpolation", interpolation, INTERPOLATIONS)]
    fill = FILL_MODES[_check.choice(op, "fill_mode", fill_mode, FILL_MODES)]
    return interp, fill, _number(op, "fill_value", fill_value)


def affine_transform_forward(y, x, m, *, interpolation="bilinear", fill_mode="reflect",
                             fill_value=0.0):
    """y[n, i, j] = x[n] sampled at (b0*j + b1*i + b2, a0*j + a1*i + a2) (row, column).

    Args:
        y: (N, Ho, Wo, C) float32, output (not x). x: (N, H, W, C) float32.
        m: (N, 6) float32 (random_affine_params or resize_matrices).
        interpolation: "bilinear", "nearest" or "nearest_exact".
        fill_mode: "reflect", "wrap", "constant" or "nearest"; fill_value for "constant".
    """
    op = "affine_transform_forward"
    args = _sampler_args(op, y, x, m, interpolation, fill_mode, fill_value)
    impl(op, FAMILY, y=y, x=x, m=m)(y, x, m, *args)


def affine_transform_backward(dx, dy, m, *, interpolation="bilinear", fill_mode="reflect",
                              fill_value=0.0):
    """dx = the transpose of the sampler applied to dy (overwritten): every output's
    gradient goes to the input pixels it read, with their weights (fill cells get none).
    One thread per (sample, channel) walks the outputs in order: no atomics.

    Args:
        dx: (N, H, W, C) float32, output. dy: (N, Ho, Wo, C) float32. m: (N, 6) float32.
    """
    op = "affine_transform_backward"
    args = _sampler_args(op, dy, dx, m, interpolation, fill_mode, fill_value, dx_name="dx")
    impl(op, FAMILY, dx=dx, dy=dy, m=m)(dx, dy, m, *args)


def random_crop_params(offsets, *, seed, step, height, width, crop_height, crop_width):
    """offsets[n] = (top, left), uniform integers in [0, height-crop_height] x
    [0, width-crop_width] from hash_uniform(key, 2n) and (key, 2n + 1).

    Args:
        offsets: (N, 2) int32, output.
        height, width: the input size; crop_height, crop_width: the crop (<= the input).
    """
    op = "random_crop_params"
    _check.array(op, "offsets", offsets, shape=(None, 2), dtype=np.int32)
    h, w = _check.positive_int(op, "height", height), _check.positive_int(op, "width", width)
    ch = _check.positive_int(op, "crop_height", crop_height)
    cw = _check.positive_int(op, "crop_width", crop_width)
    if ch > h or cw > w:
        raise ValueError(f"{op}: expected the crop (crop_height, crop_width) <= "
                         f"(height, width) = {(h, w)}; received {(ch, cw)}")
    impl(op, FAMILY, offsets=offsets)(offsets, _key(op, seed, step), h - ch, w - cw)


def _crop_check(op, small_name, small, big_name, big, offsets):
    n, h, w, c = _check.array(op, big_name, big, ndim=4)
    _, ch, cw, _ = _check.array(op, small_name, small, shape=(n, None, None, c))
    if ch > h or cw > w:
        raise ValueError(f"{op}: expected {small_name} no larger than {big_name} "
                         f"{(n, h, w, c)}; received {tuple(small.shape)}")
    _check.array(op, "offsets", offsets, shape=(n, 2), dtype=np.int32)


def crop_images_forward(y, x, offsets):
    """y[n, i, j] = x[n, top_n + i, left_n + j] (offsets clamped into x).

    Args:
        y: (N, h, w, C) float32, output. x: (N, H, W, C) float32 (H >= h, W >= w).
        offsets: (N, 2) int32 (top, left).
    """
    op = "crop_images_forward"
    _crop_check(op, "y", y, "x", x, offsets)
    impl(op, FAMILY, y=y, x=x, offsets=offsets)(y, x, offsets)


def crop_images_backward(dx, dy, offsets):
    """dx = dy placed at each sample's offsets, zeros elsewhere (overwritten).

    Args:
        dx: (N, H, W, C) float32, output. dy: (N, h, w, C) float32. offsets: (N, 2) int32.
    """
    op = "crop_images_backward"
    _crop_check(op, "dy", dy, "dx", dx, offsets)
    impl(op, FAMILY, dx=dx, dy=dy, offsets=offsets)(dx, dy, offsets)
