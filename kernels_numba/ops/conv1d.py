"""1-D convolution columns (dilated im2col / col2im) and 1-D upsampling, channels_last.

Conv1D is im2col + one GEMM (ops.dense_forward with the kernel (K, C, F) viewed as
(K*C, F)); backward is ops.dense_backward on the columns, then col2im. Shapes: x (N, T, C),
columns (N*T_out, K*C). Padding: "valid"; "same" (TensorFlow's: pad_left = total // 2);
"causal" (pad_left = dilation*(K-1), nothing on the right).
"""

from kernels_numba import _check
from kernels_numba.dispatch import impl

__all__ = ["conv1d_geometry", "conv1d_im2col", "conv1d_col2im", "upsampling1d_forward",
           "upsampling1d_backward"]
FAMILY = "conv1d"
PADDINGS = ("valid", "same", "causal")


def conv1d_geometry(length, kernel_size, *, strides=1, padding="valid", dilation_rate=1):
    """(T_out, pad_left) of a 1-D convolution; ValueError when the kernel does not fit."""
    op = "conv1d_geometry"
    for name, v in (("kernel_size", kernel_size), ("strides", strides),
                    ("dilation_rate", dilation_rate)):
        _check.positive_int(op, name, v)
    _check.choice(op, "padding", padding, PADDINGS)
    span = dilation_rate * (kernel_size - 1) + 1
    if padding == "valid":
        if length < span:
            raise ValueError(f"{op}: the dilated kernel (span {span}) is longer than the "
                             f"input (length {length}) with padding='valid'")
        return (length - span) // strides + 1, 0
    t_out = (length + strides - 1) // strides
    if padding == "causal":
        return t_out, span - 1
    total = max((t_out - 1) * strides + span - length, 0)
    return t_out, total // 2


def _geometry(op, x_shape, kernel_size, strides, padding, dilation_rate):
    try:
        return conv1d_geometry(x_shape[1], kernel_size, strides=strides, padding=padding,
                               dilation_rate=dilation_rate)
    except ValueError as exc:
        raise ValueError(str(exc).replace("conv1d_geometry", op)) from None


def conv1d_im2col(cols, x, *, kernel_size, strides=1, padding="valid", dilation_rate=1):
    """cols[n*T_out + o, k*C + c] = x[n, o*strides + k*dilation - pad_left, c] (0 outside).

    Args:
        cols: (N*T_out, K*C) float32, output.
        x: (N, T, C) float32.
    """
    op = "conv1d_im2col"
    shape = _check.array(op, "x", x, ndim=3)
    t_out, pad = _geometry(op, shape, kernel_size, strides, padding, dilation_rate)
    _check.array(op, "cols", cols, shape=(shape[0] * t_out, kernel_size * shape[2]))
    impl(op, FAMILY, cols=cols, x=x)(cols, x, kernel_size, strides, dilation_rate, pad)


def conv1d_col2im(dx, cols, *, kernel_size, strides=1, padding="valid", dilation_rate=1):
    """The adjoint of conv1d_im2col: dx (N, T, C) overwritten with the column sums.

    Args:
        dx: (N, T, C) float32, output.
        cols: (N*T_out, K*C) float32, the gradient wrt the columns.
    """
    op = "conv1d_col2im"
    shape = _check.array(op, "dx", dx, ndim=3)
    t_out, pad = _geometry(op, shape, kernel_size, strides, padding, dilation_rate)
    _check.array(op, "cols", cols, shape=(shape[0] * t_out, kernel_size * shape[2]))
    impl(op, FAMILY, dx=dx, cols=cols)(dx, cols, kernel_size, strides, dilation_rate, pad)


def upsampling1d_forward(y, x, *, size=2):
    """y[n, t*size + j] = x[n, t] (Keras's UpSampling1D).

    Args:
        y: (N, T*size, C) float32, output. x: (N, T, C) float32.
    """
    op = "upsampling1d_forward"
    size = _check.positive_int(op, "size", size)
    n, t, c = _check.array(op, "x", x, ndim=3)
    _check.array(op, "y", y, shape=(n, t * size, c))
    impl(op, FAMILY, y=y, x=x)(y, x, size)


def upsampling1d_backward(dx, dy, *, size=2):
    """dx[n, t] = sum_j dy[n, t*size + j]; dx (N, T, C) overwritten."""
    op = "upsampling1d_backward"
    size = _check.positive_int(op, "size", size)
    n, t, c = _check.array(op, "dx", dx, ndim=3)
    _check.array(op, "dy", dy, shape=(n, t * size, c))
    impl(op, FAMILY, dx=dx, dy=dy)(dx, dy, size)
