"""Depthwise 2-D convolution (Keras's DepthwiseConv2D, the first half of SeparableConv2D).

Shapes: x (N, H, W, C) NHWC; w (KH, KW, C, DM) with DM the depth multiplier;
b (C*DM,); y (N, Ho, Wo, C*DM), output channel c*DM + m = input channel c through
w[:, :, c, m] (TensorFlow's order). Strides, "valid"/"same" padding and dilation follow
ops.conv2d (TensorFlow's asymmetric same padding).

Every op is a direct loop (no im2col: each output reads only KH*KW inputs), and every
one is a gather: backward-data sums, per input element, the outputs whose windows hold
it; backward-filter reduces each weight over all N*Ho*Wo positions in a fixed order
(per-weight partial sums, no atomics). Bias gradients are ops.batch_sum over dy viewed
as (N*Ho*Wo, C*DM). Conventions: outputs first; ops never allocate; dw accumulates (+=),
dx overwrites.
"""

from kernels_numba import _check
from kernels_numba.dispatch import impl
from kernels_numba.ops.conv2d import conv_plan, window_geometry

__all__ = ["depthwise_conv2d_output_shape", "depthwise_conv2d_forward",
           "depthwise_conv2d_backward_data", "depthwise_conv2d_backward_filter"]
FAMILY = "depthwise"


def _geometry(op, x_shape, w_shape, strides, padding, dilation_rate):
    x_shape, w_shape = tuple(x_shape), tuple(w_shape)
    if len(x_shape) != 4:
        raise ValueError(f"{op}: expected x with 4 dimensions (N, H, W, C); received shape "
                         f"{x_shape}")
    if len(w_shape) != 4 or w_shape[2] != x_shape[3]:
        raise ValueError(f"{op}: expected w.shape == (?, ?, {x_shape[3]}, ?) (KH, KW, C, DM) "
                         f"for x.shape={x_shape}; received {w_shape}")
    ho, wo, _, _ = window_geometry(op, x_shape, w_shape[:2], strides, padding,
                                   f"kernel w.shape={w_shape}", dilation_rate)
    return (x_shape[0], ho, wo, w_shape[2] * w_shape[3])


def depthwise_conv2d_output_shape(x_shape, w_shape, *, strides=(1, 1), padding="valid",
                                  dilation_rate=(1, 1)):
    """(N, Ho, Wo, C*DM) for x_shape (N, H, W, C), w_shape (KH, KW, C, DM).

    Raises ValueError for a bad padding/stride/dilation, a channel mismatch, or a
    (dilated) kernel larger than the (padded) input."""
    return _geometry("depthwise_conv2d_output_shape", x_shape, w_shape, strides, padding,
                     dilation_rate)


def _plan(x_shape, w_shape, strides, padding, dilation_rate):
    # The twins take (kh, kw, sh, sw, pt, pl, dh, dw); Ho, Wo come from y / dy.
    p = conv_plan(x_shape, w_shape[:2] + (x_shape[3], 1), strides, padding, dilation_rate)
    return p[4], p[5], p[7], p[8], p[11], p[12], p[13], p[14]


def depthwise_conv2d_forward(y, x, w, b=None, *, strides=(1, 1), padding="valid",
                             dilation_rate=(1, 1)):
    """y[n, o, p, c*DM + m] = sum_ij x[n, o*sh - pt + i*dh, p*sw - pl + j*dw, c] w[i, j, c, m]
    + b[c*DM + m] (zero padding outside x).

    Args:
        y: (N, Ho, Wo, C*DM) float32, output.
        x: (N, H, W, C) float32.
        w: (KH, KW, C, DM) float32.
        b: (C*DM,) float32 or None.
        strides, dilation_rate: pairs of positive ints; padding: "valid" or "same".
    """
    op = "depthwise_conv2d_forward"
    x_shape = _check.array(op, "x", x, ndim=4)
    w_shape = _check.array(op, "w", w, ndim=4)
    out = _geometry(op, x_shape, w_shape, strides, padding, dilation_rate)
    _check.array(op, "y", y, shape=out)
    if b is not None:
        _check.array(op, "b", b, shape=(out[3],))
    fn = impl(op, FAMILY, y=y, x=x, w=w, b=b)
    fn(y, x, w, b, *_plan(x_shape, w_shape, strides, padding, dilation_rate))


def depthwise_conv2d_backward_data(dx, dy, w, *, strides=(1, 1), padding="valid",
                                   dilation_rate=(1, 1)):
    """dx = d(depthwise_conv2d(x, w)) / dx applied to dy (overwritten).

    Args:
        dx: (N, H, W, C) float32, output.
        dy: (N, Ho, Wo, C*DM) float32, gradient wrt the output (pre-activation).
        w: (KH, KW, C, DM) float32.
    """
    op = "depthwise_conv2d_backward_data"
    x_shape = _check.array(op, "dx", dx, ndim=4)
    w_shape = _check.array(op, "w", w, ndim=4)
    _check.array(op, "dy", dy, shape=_geometry(op, x_shape, w_shape, strides, padding,
                                               dilation_rate))
    fn = impl(op, FAMILY, dx=dx, dy=dy, w=w)
    fn(dx, dy, w, *_plan(x_shape, w_shape, strides, padding, dilation_rate))


def depthwise_conv2d_backward_filter(dw, dy, x, *, strides=(1, 1), padding="valid",
                                     dilation_rate=(1, 1)):
    """dw[i, j, c, m] += sum over (n, o, p) of dy[n, o, p, c*DM + m] * x[n, ih, iw, c].

    Args:
        dw: (KH, KW, C, DM) float32, accumulated.
        dy: (N, Ho, Wo, C*DM) float32, gradient wrt the output (pre-activation).
        x: (N, H, W, C) float32, the forward input.
    """
    op = "depthwise_conv2d_backward_filter"
    x_shape = _check.array(op, "x", x, ndim=4)
    w_shape = _check.array(op, "dw", dw, ndim=4)
    _check.array(op, "dy", dy, shape=_geometry(op, x_shape, w_shape, strides, padding,
                                               dilation_rate))
    fn = impl(op, FAMILY, dw=dw, dy=dy, x=x)
    fn(dw, dy, x, *_plan(x_shape, w_shape, strides, padding, dilation_rate))
