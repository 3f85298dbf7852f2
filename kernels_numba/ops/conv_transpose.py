"""Transposed 2-D convolution (Keras's Conv2DTranspose) on top of ops.conv2d.

A transposed convolution of x (N, H, W, C) by a kernel w (KH, KW, F, C) is the
backward-data of the convolution that maps (N, Ho, Wo, F) to (N, H, W, C) with the
same w, strides and padding, so kerasish composes it from ops.conv2d:
  forward:          ops.conv2d_backward_data(y, x, w) (a GEMM + a col2im gather),
                    then bias_activation(y, b) here
  backward-data:    ops.conv2d_forward(dx, dy, w)     (a convolution)
  backward-filter:  ops.conv2d_backward_filter(dw, None, x, dy) (x is the conv's dy)
  bias gradient:    ops.batch_sum over dy viewed as (N*Ho*Wo, F)
Output size (Keras, output_padding=None): "same": H*s; "valid": H*s + max(K - s, 0).
"""

from kernels_numba import _check
from kernels_numba.dispatch import impl
from kernels_numba.ops.conv2d import normalize_pair

__all__ = ["conv2d_transpose_output_shape", "bias_activation"]
FAMILY = "conv_transpose"
ACTIVATIONS = ("linear", "relu", "sigmoid", "tanh")
ACT_CODES = {"linear": 0, "relu": 1, "sigmoid": 2, "tanh": 3}


def conv2d_transpose_output_shape(x_shape, w_shape, *, strides=(1, 1), padding="valid"):
    """(N, Ho, Wo, F) for x (N, H, W, C) and w (KH, KW, F, C)."""
    op = "conv2d_transpose_output_shape"
    x_shape, w_shape = tuple(x_shape), tuple(w_shape)
    if len(x_shape) != 4 or len(w_shape) != 4 or w_shape[3] != x_shape[3]:
        raise ValueError(f"{op}: expected x (N, H, W, C) and w (KH, KW, F, C) with C == "
                         f"x.shape[3]; received x.shape={x_shape}, w.shape={w_shape}")
    _check.choice(op, "padding", padding, ("valid", "same"))
    sh, sw = normalize_pair(op, "strides", strides)
    if padding == "same":
        return (x_shape[0], x_shape[1] * sh, x_shape[2] * sw, w_shape[2])
    return (x_shape[0], x_shape[1] * sh + max(w_shape[0] - sh, 0),
            x_shape[2] * sw + max(w_shape[1] - sw, 0), w_shape[2])


def bias_activation(y, b=None, *, activation="linear"):
    """y = activation(y + b), in place, per row.

    Args:
        y: (M, F) float32, updated in place.
        b: (F,) float32 or None.
        activation: "linear", "relu", "sigmoid" or "tanh" (relu keeps NaN).
    """
    op = "bias_activation"
    m, f = _check.array(op, "y", y, ndim=2)
    if b is not None:
        _check.array(op, "b", b, shape=(f,))
    _check.choice(op, "activation", activation, ACTIVATIONS)
    impl(op, FAMILY, y=y, b=b)(y, b, ACT_CODES[activation])
