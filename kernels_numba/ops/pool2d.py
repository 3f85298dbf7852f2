"""2-D pooling over NHWC inputs: max (with an argmax buffer for backward), average, global average.

Shapes: x (N, H, W, C); y (N, Ho, Wo, C); pool_size and strides are (ph, pw) / (sh, sw)
pairs of positive ints (or one int for both); strides=None means strides = pool_size
(Keras's default). Padding "valid" or "same" (TensorFlow's asymmetric same, as conv2d):
max pooling treats padded cells as -inf, average pooling leaves them out of the divisor.
argmax: int32, same shape as y, the flat index (ih*W + iw)*C + c of the max into the
sample's (H, W, C) block.
Conventions: outputs first; ops never allocate; dx is overwritten (=).
"""

import numpy as np

from kernels_numba import _check
from kernels_numba.dispatch import impl
from kernels_numba.ops.conv2d import normalize_pair, window_geometry

__all__ = [
    "pool2d_output_shape",
    "maxpool2d_forward",
    "maxpool2d_backward",
    "avgpool2d_forward",
    "avgpool2d_backward",
    "global_avgpool2d_forward",
    "global_avgpool2d_backward",
]
FAMILY = "pool2d"


def _output_shape(op, x_shape, pool_size, strides, padding):
    x_shape = tuple(x_shape)
    if len(x_shape) != 4:
        raise ValueError(f"{op}: expected x with 4 dimensions (N, H, W, C); "
                         f"received shape {x_shape}")
    pool = normalize_pair(op, "pool_size", pool_size)
    strides = pool if strides is None else strides
    ho, wo, _, _ = window_geometry(op, x_shape, pool, strides, padding, f"pool_size={pool}")
    return (x_shape[0], ho, wo, x_shape[3])


def pool2d_output_shape(x_shape, *, pool_size, strides, padding="valid"):
    """(N, Ho, Wo, C) for x_shape (N, H, W, C).

    Raises:
        ValueError: bad pool_size, strides or padding, or a window larger than the
            (padded) input.
    """
    return _output_shape("pool2d_output_shape", x_shape, pool_size, strides, padding)


def pool_plan(x_shape, pool_size, strides, padding):
    """Validated geometry for the twins: (ph, pw, sh, sw, Ho, Wo, pad_top, pad_left)."""
    pool = normalize_pair("pool2d", "pool_size", pool_size)
    sh, sw = normalize_pair("pool2d", "strides", pool if strides is None else strides)
    ho, wo, pt, pl = window_geometry("pool2d", x_shape, pool, (sh, sw), padding, "pool_size")
    return pool[0], pool[1], sh, sw, ho, wo, pt, pl


def maxpool2d_forward(y, argmax, x, *, pool_size, strides, padding="valid", relu_bias=None):
    """y = max over each window; argmax = where it was.

    Args:
        y: (N, Ho, Wo, C) float32, output.
        argmax: (N, Ho, Wo, C) int32, output: flat index into x[n] of each max.
        x: (N, H, W, C) float32.
        pool_size, strides: (ph, pw), (sh, sw); strides None = pool_size.
        padding: "valid" or "same".
        relu_bias: (C,) float32 or None. Given, the pool of relu(x + relu_bias), the
            value each cell would hold after a ReLU conv's epilogue (x its linear output,
            without bias): the conv + pool forward of kerasish/engine/conv_pool.py, which
            skips that epilogue's pass. The same y and argmax, bit for bit.
    """
    op = "maxpool2d_forward"
    x_shape = _check.array(op, "x", x, ndim=4)
    out = _output_shape(op, x_shape, pool_size, strides, padding)
    _check.array(op, "y", y, shape=out)
    _check.array(op, "argmax", argmax, shape=out, dtype=np.int32)
    if relu_bias is not None:
        _check.array(op, "relu_bias", relu_bias, shape=(x_shape[3],))
    fn = impl(op, FAMILY, y=y, argmax=argmax, x=x, relu_bias=relu_bias)
    if relu_bias is None:  # (the common call: no keyword the twins need not see)
        fn(y, argmax, x, pool_size=pool_size, strides=strides, padding=padding)
    else:
        fn(y, argmax, x, pool_size=pool_size, strides=strides, padding=padding,
           relu_bias=relu_bias)


def maxpool2d_backward(dx, dy, argmax, *, pool_size, strides, padding="valid"):
    """dx[n].flat[p] = sum of dy[n, o] over the windows o that contain p and whose argmax is p.

    A gather in a fixed (oh, ow) order (deterministic on both devices, no atomics): each dx
    element looks up only the windows that contain it (one when windows do not overlap).

    Args:
        dx: (N, H, W, C) float32, output (overwritten).
        dy: (N, Ho, Wo, C) float32.
        argmax: (N, Ho, Wo, C) int32 from maxpool2d_forward; an entry that is not a cell of
            its own window (out of range, another window's) contributes nothing.
        pool_size, strides, padding: the forward's.
    """
    op = "maxpool2d_backward"
    x_shape = _check.array(op, "dx", dx, ndim=4)
    out = _output_shape(op, x_shape, pool_size, strides, padding)
    _check.array(op, "dy", dy, shape=out)
    _check.array(op, "argmax", argmax, shape=out, dtype=np.int32)
    fn = impl(op, FAMILY, dx=dx, dy=dy, argmax=argmax)
    fn(dx, dy, argmax, pool_size=pool_size, strides=strides, padding=padding)


def avgpool2d_forward(y, x, *, pool_size, strides, padding="valid"):
    """y = mean over each window's in-bounds cells.

    Args:
        y: (N, Ho, Wo, C) float32, output.
        x: (N, H, W, C) float32.
        pool_size, strides: (ph, pw), (sh, sw); strides None = pool_size.
        padding: "valid" or "same" (padded cells excluded from the divisor).
    """
    op = "avgpool2d_forward"
    x_shape = _check.array(op, "x", x, ndim=4)
    out = _output_shape(op, x_shape, pool_size, strides, padding)
    _check.array(op, "y", y, shape=out)
    fn = impl(op, FAMILY, y=y, x=x)
    fn(y, x, pool_size=pool_size, strides=strides, padding=padding)


def avgpool2d_backward(dx, dy, *, pool_size, strides, padding="valid"):
    """dx = gradient of avgpool2d_forward applied to dy (overwritten).

    Args:
        dx: (N, H, W, C) float32, output (overwritten).
        dy: (N, Ho, Wo, C) float32.
    """
    op = "avgpool2d_backward"
    x_shape = _check.array(op, "dx", dx, ndim=4)
    out = _output_shape(op, x_shape, pool_size, strides, padding)
    _check.array(op, "dy", dy, shape=out)
    fn = impl(op, FAMILY, dx=dx, dy=dy)
    fn(dx, dy, pool_size=pool_size, strides=strides, padding=padding)


def global_avgpool2d_forward(y, x):
    """y[n, c] = mean over (h, w) of x[n, :, :, c].

    Args:
        y: (N, C) float32, output.
        x: (N, H, W, C) float32.
    """
    op = "global_avgpool2d_forward"
    x_shape = _check.array(op, "x", x, ndim=4)
    _check.array(op, "y", y, shape=(x_shape[0], x_shape[3]))
    impl(op, FAMILY, y=y, x=x)(y, x)


def global_avgpool2d_backward(dx, dy):
    """dx[n, h, w, c] = dy[n, c] / (H * W) (overwritten).

    Args:
        dx: (N, H, W, C) float32, output.
        dy: (N, C) float32.
    """
    op = "global_avgpool2d_backward"
    x_shape = _check.array(op, "dx", dx, ndim=4)
    _check.array(op, "dy", dy, shape=(x_shape[0], x_shape[3]))
    impl(op, FAMILY, dx=dx, dy=dy)(dx, dy)
