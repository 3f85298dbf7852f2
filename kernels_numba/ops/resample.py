"""2-D resampling without arithmetic weights, channels_last (N, H, W, C): nearest
upsampling, zero padding and cropping (Keras's UpSampling2D, ZeroPadding2D, Cropping2D).

Padding and cropping are one gather, `window_copy`: y[n, i, j] = x[n, i + oh, j + ow]
(zero where that falls outside x). Padding by (top, left) is the offset (-top, -left),
cropping by (top, left) is (top, left), and each one's backward is the other's forward.
Upsampling's backward sums each size_h x size_w block in a fixed order (a gather).
Conventions: outputs first; ops never allocate; dx is overwritten.
"""

from kernels_numba import _check
from kernels_numba.dispatch import impl

__all__ = ["upsampling2d_forward", "upsampling2d_backward", "zero_padding2d_forward",
           "zero_padding2d_backward", "cropping2d_forward", "cropping2d_backward"]
FAMILY = "resample"


def _size(op, size):
    try:
        sh, sw = size
    except (TypeError, ValueError):
        raise ValueError(f"{op}: expected size to be a pair of positive integers; "
                         f"received {size!r}") from None
    return _check.positive_int(op, "size", sh), _check.positive_int(op, "size", sw)


def _pads(op, name, value):
    """((top, bottom), (left, right)) of non-negative ints."""
    try:
        (t, b), (l, r) = value
        vals = (t, b, l, r)
    except (TypeError, ValueError):
        vals = None
    if vals is None or not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0
                               for v in vals):
        raise ValueError(f"{op}: expected {name} as ((top, bottom), (left, right)) of "
                         f"non-negative ints; received {value!r}")
    return vals


def upsampling2d_forward(y, x, *, size=(2, 2)):
    """y[n, i, j, c] = x[n, i // size_h, j // size_w, c].

    Args:
        y: (N, H*size_h, W*size_w, C) float32, output.
        x: (N, H, W, C) float32.
        size: (size_h, size_w) positive ints.
    """
    op = "upsampling2d_forward"
    sh, sw = _size(op, size)
    n, h, w, c = _check.array(op, "x", x, ndim=4)
    _check.array(op, "y", y, shape=(n, h * sh, w * sw, c))
    impl(op, FAMILY, y=y, x=x)(y, x, sh, sw)


def upsampling2d_backward(dx, dy, *, size=(2, 2)):
    """dx[n, i, j, c] = sum over the size_h x size_w block of dy (overwritten).

    Args:
        dx: (N, H, W, C) float32, output. dy: (N, H*size_h, W*size_w, C) float32.
    """
    op = "upsampling2d_backward"
    sh, sw = _size(op, size)
    n, h, w, c = _check.array(op, "dx", dx, ndim=4)
    _check.array(op, "dy", dy, shape=(n, h * sh, w * sw, c))
    impl(op, FAMILY, dx=dx, dy=dy)(dx, dy, sh, sw)


def _window(op, y_name, y, x_name, x, want, oh, ow):
    """Check y (the output) has shape `want` and run the window gather at (oh, ow)."""
    _check.array(op, y_name, y, shape=want)
    impl(op, FAMILY, y=y, x=x)(y, x, oh, ow)


def zero_padding2d_forward(y, x, *, padding=((1, 1), (1, 1))):
    """y = x surrounded by zeros.

    Args:
        y: (N, H+top+bottom, W+left+right, C) float32, output.
        x: (N, H, W, C) float32.
        padding: ((top, bottom), (left, right)) non-negative ints.
    """
    op = "zero_padding2d_forward"
    t, b, l, r = _pads(op, "padding", padding)
    n, h, w, c = _check.array(op, "x", x, ndim=4)
    _window(op, "y", y, "x", x, (n, h + t + b, w + l + r, c), -t, -l)


def zero_padding2d_backward(dx, dy, *, padding=((1, 1), (1, 1))):
    """dx = the interior of dy (overwritten). dx: (N, H, W, C); dy: the padded shape."""
    op = "zero_padding2d_backward"
    t, b, l, r = _pads(op, "padding", padding)
    n, h, w, c = _check.array(op, "dx", dx, ndim=4)
    _check.array(op, "dy", dy, shape=(n, h + t + b, w + l + r, c))
    _window(op, "dx", dx, "dy", dy, (n, h, w, c), t, l)


def cropping2d_forward(y, x, *, cropping=((0, 0), (0, 0))):
    """y = x without top/bottom rows and left/right columns.

    Args:
        y: (N, H-top-bottom, W-left-right, C) float32, output (non-empty).
        x: (N, H, W, C) float32.
        cropping: ((top, bottom), (left, right)) non-negative ints.
    """
    op = "cropping2d_forward"
    t, b, l, r = _pads(op, "cropping", cropping)
    n, h, w, c = _check.array(op, "x", x, ndim=4)
    if h - t - b <= 0 or w - l - r <= 0:
        raise ValueError(f"{op}: cropping={cropping!r} leaves nothing of x.shape="
                         f"{(n, h, w, c)}")
    _window(op, "y", y, "x", x, (n, h - t - b, w - l - r, c), t, l)


def cropping2d_backward(dx, dy, *, cropping=((0, 0), (0, 0))):
    """dx = dy surrounded by zeros (overwritten). dx: (N, H, W, C); dy: the cropped shape."""
    op = "cropping2d_backward"
    t, b, l, r = _pads(op, "cropping", cropping)
    n, h, w, c = _check.array(op, "dx", dx, ndim=4)
    _check.array(op, "dy", dy, shape=(n, h - t - b, w - l - r, c))
    _window(op, "dx", dx, "dy", dy, (n, h, w, c), -t, -l)
