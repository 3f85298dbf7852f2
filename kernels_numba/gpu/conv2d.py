"""CUDA kernels for kernels_numba.ops.conv2d: im2col / col2im + the tiled GEMM of gpu.dense.

The column matrix col (M = N*Ho*Wo, K = KH*KW*C), columns ordered (kh, kw, c), lives
in the workspace; w (KH, KW, C, F) viewed as (K, F) multiplies it directly:
  forward:          y(M, F)    = col @ w, then bias + activation (one pass)
  backward-data:    dcol(M, K) = dy @ w.T, then dx = col2im(dcol) (a gather, no atomics)
  backward-filter:  dw(K, F)  += col.T @ dy (GEMM with beta = 1); db += column sums of dy
                    as the same GEMM's extra output row
With a forward activation, both backward GEMMs read dy * f'(y) (masked as loaded).
A 1x1, stride-1 convolution skips im2col: col is x itself.
"""

from numba import float32

from kernels_numba._cuda import cuda, grid_1d, kernel, launch
from kernels_numba.gpu.dense import gemm
from kernels_numba.ops.activation import KIND_CODES
from kernels_numba.ops.conv2d import conv_plan

F32_1D = "float32[::1]"
F32_2D = "float32[:, ::1]"
F32_4D = "float32[:, :, :, ::1]"
GEOM = ", ".join(["int64"] * 10)  # kh, kw, sh, sw, pt, pl, ho, wo, dh, dw
MAX_THREADS = 65536 * 256  # grid-stride loops cover anything larger


# kernels

@kernel(f"void({F32_2D}, {F32_4D}, {GEOM})")
def _im2col_kernel(col, x, kh, kw, sh, sw, pt, pl, ho, wo, dh, dw):
    # Consecutive threads walk a column row (kh, kw, c): reads of x are contiguous in c.
    h = x.shape[1]
    w = x.shape[2]
    c = x.shape[3]
    k = col.shape[1]
    for idx in range(cuda.grid(1), col.shape[0] * k, cuda.gridsize(1)):
        m = idx // k
        kk = idx - m * k
        pos = kk // c
        ch = kk - pos * c
        i = pos // kw
        j = pos - i * kw
        b = m // (ho * wo)
        r = m - b * (ho * wo)
        oh = r // wo
        ih = oh * sh - pt + i * dh
        iw = (r - oh * wo) * sw - pl + j * dw
        v = float32(0.0)
        if ih >= 0 and ih < h and iw >= 0 and iw < w and b < x.shape[0]:
            v = x[b, ih, iw, ch]
        col[m, kk] = v


@kernel(f"void({F32_4D}, {F32_2D}, {GEOM})")
def _col2im_kernel(dx, col, kh, kw, sh, sw, pt, pl, ho, wo, dh, dw):
    # One thread per dx element sums the column entries that read it (overwrites dx).
    h = dx.shape[1]
    w = dx.shape[2]
    c = dx.shape[3]
    total = dx.shape[0] * h * w * c
    for idx in range(cuda.grid(1), total, cuda.gridsize(1)):
        ch = idx % c
        p = idx // c
        iw = p % w
        p = p // w
        ih = p % h
        b = p // h
        s = float32(0.0)
        for i in range(kh):
            t = ih + pt - i * dh
            if t >= 0 and t % sh == 0 and t // sh < ho:
                for j in range(kw):
                    u = iw + pl - j * dw
                    if u >= 0 and u % sw == 0 and u // sw < wo:
                        m = (b * ho + t // sh) * wo + u // sw
                        if m < col.shape[0]:
                            s += col[m, (i * kw + j) * c + ch]
        dx[b, ih, iw, ch] = s


# launchers

def _grid(n):
    return grid_1d(min(max(n, 1), MAX_THREADS))


def _geometry(x_shape, w_shape, strides, padding, dilation_rate):
    n, h, wd, c, kh, kw, f, sh, sw, ho, wo, pt, pl, dh, dw = conv_plan(
        x_shape, w_shape, strides, padding, dilation_rate)
    pointwise = kh == 1 and kw == 1 and sh == 1 and sw == 1 and pt == 0 and pl == 0
    return n * ho * wo, kh * kw * c, f, (kh, kw, sh, sw, pt, pl, ho, wo, dh, dw), pointwise


def _im2col(workspace, x, m, k, geom):
    col = workspace[: m * k].reshape(m, k)
    grid, block = _grid(m * k)
    launch(_im2col_kernel, grid, block, col, x, *geom)
    return col


def conv2d_forward(y, x, w, b, workspace, *, strides=(1, 1), padding="valid",
                   activation="linear", dilation_rate=(1, 1)):
    m, k, f, geom, pointwise = _geometry(x.shape, w.shape, strides, padding, dilation_rate)
    if m == 0:
        return
    col = x.reshape(m, k) if pointwise else _im2col(workspace, x, m, k, geom)
    gemm(y.reshape(m, f), col, w.reshape(k, f), b, act=KIND_CODES[activation])


def _mask(y, m, f, activation):
    """(g, gact, gop) arguments of gemm masking its A operand (dy) by f'(y)."""
    code = KIND_CODES[activation]
    if y is None or code == KIND_CODES["linear"]:
        return None, code, 0
    return y.reshape(m, f), code, 1


def conv2d_backward_data(dx, dy, w, workspace, *, strides=(1, 1), padding="valid",
                         dilation_rate=(1, 1), activation="linear", y=None):
    m, k, f, geom, pointwise = _geometry(dx.shape, w.shape, strides, padding, dilation_rate)
    if m == 0:
        return
    dy2, w2 = dy.reshape(m, f), w.reshape(k, f)
    g, gact, gop = _mask(y, m, f, activation)
    if pointwise:
        gemm(dx.reshape(m, k), dy2, w2, trans_b=True, g=g, gact=gact, gop=gop)
        return
    dcol = workspace[: m * k].reshape(m, k)
    gemm(dcol, dy2, w2, trans_b=True, g=g, gact=gact, gop=gop)
    grid, block = _grid(dx.size)
    launch(_col2im_kernel, grid, block, dx, dcol, *geom)


def conv2d_backward_filter(dw, db, dy, x, workspace, *, strides=(1, 1), padding="valid",
                           columns_ready=False, dilation_rate=(1, 1), activation="linear",
                           y=None):
    m, k, f, geom, pointwise = _geometry(x.shape, dw.shape, strides, padding, dilation_rate)
    if m == 0:
        return
    if pointwise:
        col = x.reshape(m, k)
    elif columns_ready:
        col = workspace[: m * k].reshape(m, k)
    else:
        col = _im2col(workspace, x, m, k, geom)
    dy2 = dy.reshape(m, f)
    scratch = workspace[m * k:]  # behind the columns, which the GEMM still reads
    g, gact, gop = _mask(y, m, f, activation)
    # dw += col.T @ dy and db += column sums of dy: one GEMM (db is its extra row).
    gemm(dw.reshape(k, f), col, dy2, trans_a=True, beta=1.0, workspace=scratch, db=db,
         g=g, gact=gact, gop=2 if gop else 0)
