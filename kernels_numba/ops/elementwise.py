"""Elementwise utilities: fill, copy, scale, axpy and float16 <-> float32 casts.

Buffers are any shape, C-contiguous; y and x must have the same shape.
Conventions for every kernels_numba op: outputs first, then inputs, then
hyperparameters; ops never allocate; parameter gradients accumulate (+=),
activation gradients overwrite (=).
"""

import numpy as np

from kernels_numba import _check
from kernels_numba.dispatch import impl

__all__ = ["fill", "copy", "scale", "axpy", "scale_rows", "cast_f32_to_f16",
           "cast_f16_to_f32", "cast_i32_to_f32"]
FAMILY = "elementwise"


def fill(y, value):
    """y[...] = value.  y: any shape, float32 or float16."""
    _check.array("fill", "y", y, dtype=None)
    impl("fill", FAMILY, y=y)(y, value)


def copy(y, x):
    """y[...] = x.  y, x: same shape and dtype."""
    shape = _check.array("copy", "x", x, dtype=None)
    _check.array("copy", "y", y, shape=shape, dtype=x.dtype)
    impl("copy", FAMILY, y=y, x=x)(y, x)


def scale(y, x, alpha):
    """y = alpha * x.  y, x: same shape, float32 (y may be x)."""
    shape = _check.array("scale", "x", x)
    _check.array("scale", "y", y, shape=shape)
    impl("scale", FAMILY, y=y, x=x)(y, x, np.float32(alpha))


def axpy(y, x, alpha):
    """y += alpha * x.  y, x: same shape, float32."""
    shape = _check.array("axpy", "x", x)
    _check.array("axpy", "y", y, shape=shape)
    impl("axpy", FAMILY, y=y, x=x)(y, x, np.float32(alpha))


def cast_i32_to_f32(y, x):
    """y = float32(x) (integer labels for traced metrics).  y float32, x int32, same size."""
    _check.array("cast_i32_to_f32", "x", x, dtype=np.int32)
    _check.array("cast_i32_to_f32", "y", y)
    if y.size != x.size:
        raise ValueError(f"cast_i32_to_f32: expected y.size == x.size == {x.size}; received "
                         f"{y.size}")
    impl("cast_i32_to_f32", FAMILY, y=y, x=x)(y, x)


def scale_rows(y, w):
    """y[r, :] *= w[r] (per-sample loss weights).  y: (R, C) float32; w: (R,) float32."""
    shape = _check.array("scale_rows", "y", y, ndim=2)
    _check.array("scale_rows", "w", w, shape=(shape[0],))
    impl("scale_rows", FAMILY, y=y, w=w)(y, w)


def cast_f32_to_f16(y, x):
    """y (float16) = x (float32), round to nearest."""
    shape = _check.array("cast_f32_to_f16", "x", x, dtype=np.float32)
    _check.array("cast_f32_to_f16", "y", y, shape=shape, dtype=np.float16)
    impl("cast_f32_to_f16", FAMILY, y=y, x=x)(y, x)


def cast_f16_to_f32(y, x):
    """y (float32) = x (float16), exact."""
    shape = _check.array("cast_f16_to_f32", "x", x, dtype=np.float16)
    _check.array("cast_f16_to_f32", "y", y, shape=shape, dtype=np.float32)
    impl("cast_f16_to_f32", FAMILY, y=y, x=x)(y, x)
