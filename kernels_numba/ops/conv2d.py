"""2-D convolution (cross-correlation, as Keras): forward, backward-data, backward-filter.

Shapes: x (N, H, W, C) NHWC; w (KH, KW, C, F) HWIO; b (F,); y (N, Ho, Wo, F).
Padding "valid" or "same" (TensorFlow's asymmetric same: out = ceil(in / stride),
pad_total = max((out - 1) * stride + k - in, 0), pad_before = pad_total // 2, the
rest after). `dilation_rate` (dh, dw) spaces the kernel taps: a KH x KW kernel spans
dh*(KH-1)+1 rows and dw*(KW-1)+1 columns (Keras's atrous convolution). All three ops
lower to im2col + GEMM: the caller-supplied 1-D float32 `workspace` (sized by
`conv2d_workspace_shape`) holds the (N*Ho*Wo, KH*KW*C) column matrix, then the CUDA
backward-filter's deterministic split-K partials (dw with db as one extra output row of
the same GEMM).
Backward ops take the forward's `activation` and output `y`: dy is then the gradient
wrt the conv OUTPUT, and f'(y) is applied as the GEMMs read dy (dy is not modified).
Conventions: outputs first; ops never allocate; dw/db accumulate (+=), dx overwrites.
"""

from kernels_numba import _check
from kernels_numba.dispatch import impl
from kernels_numba.ops.dense import weight_grad_workspace_shape

__all__ = [
    "conv2d_output_shape",
    "conv2d_workspace_shape",
    "conv2d_forward",
    "conv2d_backward_data",
    "conv2d_backward_filter",
]
FAMILY = "conv2d"
PADDINGS = ("valid", "same")
ACTIVATIONS = ("linear", "relu", "sigmoid", "tanh")


def pad_1d(size, k, stride, padding, dilation=1):
    """(out, pad_before) along one axis; out == 0 when a "valid" window does not fit.

    A dilated window of k taps spans dilation*(k-1)+1 positions. A None size (a
    spatial size known only from the data, a model's symbolic pass) gives (None, None)."""
    if size is None:
        return None, None
    k = dilation * (k - 1) + 1
    if padding == "same":
        out = -(-size // stride)
        total = max((out - 1) * stride + k - size, 0)
        return out, total // 2
    if k > size:
        return 0, 0
    return (size - k) // stride + 1, 0


def normalize_pair(op, name, value):
    """An int or a pair of positive ints -> (a, b)."""
    pair = (value, value) if isinstance(value, int) and not isinstance(value, bool) else value
    try:
        a, b = pair
    except (TypeError, ValueError):
        raise ValueError(f"{op}: expected {name} to be a pair of positive integers; "
                         f"received {value!r}") from None
    return _check.positive_int(op, name, a), _check.positive_int(op, name, b)


def window_geometry(op, x_shape, window, strides, padding, what, dilation=(1, 1)):
    """(Ho, Wo, pad_top, pad_left) for a (KH, KW) window over x (N, H, W, C); a None
    H or W gives None for that axis (Keras's symbolic shapes).

    `what` names the window in errors, e.g. "kernel w.shape=(3, 3, 1, 8)".
    """
    _check.choice(op, "padding", padding, PADDINGS)
    sh, sw = normalize_pair(op, "strides", strides)
    dh, dw = normalize_pair(op, "dilation_rate", dilation)
    kh, kw = window
    ho, pt = pad_1d(x_shape[1], kh, sh, padding, dh)
    wo, pl = pad_1d(x_shape[2], kw, sw, padding, dw)
    if ho == 0 or wo == 0:
        dilated = "" if (dh, dw) == (1, 1) else f" dilated by {(dh, dw)}"
        raise ValueError(f"{op}: {what}{dilated} is larger than the input "
                         f"x.shape={tuple(x_shape)} with padding={padding!r}")
    return ho, wo, pt, pl


def _geometry(op, x_shape, w_shape, strides, padding, dilation_rate=(1, 1)):
    x_shape, w_shape = tuple(x_shape), tuple(w_shape)
    if len(x_shape) != 4:
        raise ValueError(f"{op}: expected x with 4 dimensions (N, H, W, C); "
                         f"received shape {x_shape}")
    if len(w_shape) != 4:
        raise ValueError(f"{op}: expected w with 4 dimensions (KH, KW, C, F); "
                         f"received shape {w_shape}")
    if w_shape[2] != x_shape[3]:
        raise ValueError(f"{op}: expected w.shape == (?, ?, {x_shape[3]}, ?) to match the "
                         f"{x_shape[3]} input channels of x.shape={x_shape}; received {w_shape}")
    ho, wo, _, _ = window_geometry(op, x_shape, w_shape[:2], strides, padding,
                                   f"kernel w.shape={w_shape}", dilation_rate)
    return ho, wo


def conv2d_output_shape(x_shape, w_shape, *, strides=(1, 1), padding="valid",
                        dilation_rate=(1, 1)):
    """(N, Ho, Wo, F) for x_shape (N, H, W, C) and w_shape (KH, KW, C, F).

    Raises:
        ValueError: bad padding or strides, channel mismatch, or a kernel larger than
            the (padded) input.
    """
    ho, wo = _geometry("conv2d_output_shape", x_shape, w_shape, strides, padding,
                       dilation_rate)
    return (x_shape[0], ho, wo, w_shape[3])


def conv2d_workspace_shape(x_shape, w_shape, *, strides=(1, 1), padding="valid",
                           dilation_rate=(1, 1)):
    """(S,): the 1-D float32 scratch all three conv2d ops need.

    S = M*K (the im2col matrix, M = N*Ho*Wo, K = KH*KW*C; M*(K+1) for one input
    channel, where the CPU adds a row of ones whose product with dy is db) + the split-K
    partials of dw with db's row (splits*(K+1)*F, ops.dense.weight_grad_workspace_shape).
    """
    ho, wo = _geometry("conv2d_workspace_shape", x_shape, w_shape, strides, padding,
                       dilation_rate)
    k = w_shape[0] * w_shape[1] * w_shape[2]
    m, f = x_shape[0] * ho * wo, w_shape[3]
    scratch = weight_grad_workspace_shape(k, f, m)[0]
    return (m * (k + 1 if w_shape[2] == 1 else k) + scratch,)


def _check_workspace(op, workspace, x_shape, w_shape, strides, padding, dilation_rate):
    (need,) = conv2d_workspace_shape(x_shape, w_shape, strides=strides, padding=padding,
                                     dilation_rate=dilation_rate)
    got = _check.array(op, "workspace", workspace, ndim=1)
    if got[0] < need:
        raise ValueError(f"{op}: expected workspace.shape == ({need},) (or larger, from "
                         f"conv2d_workspace_shape); received {got}")


def conv2d_forward(y, x, w, b, workspace, *, strides=(1, 1), padding="valid",
                   activation="linear", dilation_rate=(1, 1)):
    """y = activation(conv2d(x, w) + b).

    Args:
        y: (N, Ho, Wo, F) float32, output.
        x: (N, H, W, C) float32.
        w: (KH, KW, C, F) float32.
        b: (F,) float32 or None.
        workspace: (S,) float32 scratch, S from `conv2d_workspace_shape`.
        strides: (sh, sw) positive ints.
        padding: "valid" or "same".
        activation: "linear", "relu", "sigmoid" or "tanh" (fused epilogue).
        dilation_rate: (dh, dw) positive ints.
    """
    op = "conv2d_forward"
    x_shape = _check.array(op, "x", x, ndim=4)
    w_shape = _check.array(op, "w", w, ndim=4)
    _check.choice(op, "activation", activation, ACTIVATIONS)
    out = conv2d_output_shape_for(op, x_shape, w_shape, strides, padding, dilation_rate)
    _check.array(op, "y", y, shape=out)
    if b is not None:
        _check.array(op, "b", b, shape=(w_shape[3],))
    _check_workspace(op, workspace, x_shape, w_shape, strides, padding, dilation_rate)
    fn = impl(op, FAMILY, y=y, x=x, w=w, b=b, workspace=workspace)
    fn(y, x, w, b, workspace, strides=strides, padding=padding, activation=activation,
       dilation_rate=dilation_rate)


def conv2d_backward_data(dx, dy, w, workspace, *, strides=(1, 1), padding="valid",
                         dilation_rate=(1, 1), activation="linear", y=None):
    """dx = d(activation(conv2d(x, w) + b)) / dx applied to dy (overwritten).

    Args:
        dx: (N, H, W, C) float32, output (overwritten).
        dy: (N, Ho, Wo, F) float32, gradient wrt the output y (wrt the pre-activation
            when activation is "linear").
        w: (KH, KW, C, F) float32.
        workspace: (S,) float32 scratch, S from `conv2d_workspace_shape`.
        activation: the forward's "linear", "relu", "sigmoid" or "tanh".
        y: (N, Ho, Wo, F) float32, the forward output (unless activation is linear).
    """
    op = "conv2d_backward_data"
    x_shape = _check.array(op, "dx", dx, ndim=4)
    w_shape = _check.array(op, "w", w, ndim=4)
    out = conv2d_output_shape_for(op, x_shape, w_shape, strides, padding, dilation_rate)
    _check.array(op, "dy", dy, shape=out)
    y = _output(op, activation, y, out)
    _check_workspace(op, workspace, x_shape, w_shape, strides, padding, dilation_rate)
    fn = impl(op, FAMILY, dx=dx, dy=dy, w=w, workspace=workspace, y=y)
    fn(dx, dy, w, workspace, strides=strides, padding=padding, dilation_rate=dilation_rate,
       activation=activation, y=y)


def conv2d_backward_filter(dw, db, dy, x, workspace, *, strides=(1, 1), padding="valid",
                           columns_ready=False, dilation_rate=(1, 1), activation="linear",
                           y=None):
    """dw += d/dw, db += d/db of activation(conv2d + b) applied to dy (both accumulate).

    conv2d_forward leaves the column matrix of x in the workspace; pass
    columns_ready=True when nothing has written the workspace since the forward of
    this same x (conv2d_backward_data does), to skip rebuilding it.

    Args:
        dw: (KH, KW, C, F) float32, accumulated.
        db: (F,) float32 or None, accumulated.
        dy: (N, Ho, Wo, F) float32, gradient wrt the output y (wrt the pre-activation
            when activation is "linear").
        x: (N, H, W, C) float32, the forward input.
        workspace: (S,) float32 scratch, S from `conv2d_workspace_shape`.
        activation: the forward's "linear", "relu", "sigmoid" or "tanh".
        y: (N, Ho, Wo, F) float32, the forward output (unless activation is linear).
    """
    op = "conv2d_backward_filter"
    x_shape = _check.array(op, "x", x, ndim=4)
    w_shape = _check.array(op, "dw", dw, ndim=4)
    out = conv2d_output_shape_for(op, x_shape, w_shape, strides, padding, dilation_rate)
    _check.array(op, "dy", dy, shape=out)
    if db is not None:
        _check.array(op, "db", db, shape=(w_shape[3],))
    y = _output(op, activation, y, out)
    _check_workspace(op, workspace, x_shape, w_shape, strides, padding, dilation_rate)
    fn = impl(op, FAMILY, dw=dw, db=db, dy=dy, x=x, workspace=workspace, y=y)
    if not isinstance(columns_ready, bool):
        raise TypeError(f"{op}: expected columns_ready to be a bool; received "
                        f"{type(columns_ready).__name__}")
    fn(dw, db, dy, x, workspace, strides=strides, padding=padding, columns_ready=columns_ready,
       dilation_rate=dilation_rate, activation=activation, y=y)


def _output(op, activation, y, shape):
    """The forward output y the backward ops need for a non-linear activation (else None)."""
    _check.choice(op, "activation", activation, ACTIVATIONS)
    if activation == "linear":
        return None
    if y is None:
        raise ValueError(f"{op}: expected y (the forward output, shape {shape}) with "
                         f"activation={activation!r}; received y=None")
    _check.array(op, "y", y, shape=shape)
    return y


def conv2d_output_shape_for(op, x_shape, w_shape, strides, padding, dilation_rate=(1, 1)):
    """conv2d_output_shape with errors naming `op`."""
    ho, wo = _geometry(op, x_shape, w_shape, strides, padding, dilation_rate)
    return (x_shape[0], ho, wo, w_shape[3])


def conv_plan(x_shape, w_shape, strides, padding, dilation_rate=(1, 1)):
    """Validated geometry for the twins:
    (N, H, W, C, KH, KW, F, sh, sw, Ho, Wo, pt, pl, dh, dw)."""
    n, h, wd, c = x_shape
    kh, kw, _, f = w_shape
    sh, sw = normalize_pair("conv2d", "strides", strides)
    dh, dw = normalize_pair("conv2d", "dilation_rate", dilation_rate)
    ho, pt = pad_1d(h, kh, sh, padding, dh)
    wo, pl = pad_1d(wd, kw, sw, padding, dw)
    return n, h, wd, c, kh, kw, f, sh, sw, ho, wo, pt, pl, dh, dw

