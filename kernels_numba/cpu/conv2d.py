"""CPU twins of kernels_numba.ops.conv2d (validated arguments only): im2col + BLAS GEMM.

The column matrix col (M = N*Ho*Wo, K = KH*KW*C) has columns ordered (kh, kw, c),
so w (KH, KW, C, F) viewed as (K, F) multiplies it directly:
  forward:          y(M, F)   = col @ w
  backward-data:    dcol(M, K) = dy @ w.T, then dx = col2im(dcol) (per-sample scatter)
  backward-filter:  dw(K, F) += col.T @ dy
A 1x1, stride-1 convolution skips im2col: col is x itself. A one-channel input
stores col transposed, (K, M), which is much faster to build (the IM2COL_T
loop); BLAS takes the transposed view at no cost. Its K rows get a row of ones
below them, so backward-filter's one GEMM also gives the bias gradient,
[dw; db] = col_t_ones @ dy: the separate column-sum pass over dy cost as much as the
whole K = 9 weight GEMM of the first conv, 0.4 ms of a step (for C > 1 the same trick
lost: an (M, K+1) col slows the forward and the odd K+1 weight GEMM more than it saves). The forward
leaves col in the workspace, so backward-filter (columns_ready=True) reuses it.
Dilation (dh, dw) moves tap (i, j) to input offset (i*dh, j*dw); at (1, 1) every index
is the one the undilated loops computed, so those results are unchanged bit for bit.
GEMMs go through kernels_numba.cpu.gemm. Each twin is a bound op: it returns its work
as Bound calls (kernels_numba.cpu._parallel), which a replayed launch plan repeats.
"""

import numba

from kernels_numba.cpu._parallel import (Bound, bound_op, chain, f32_2d, f32_3d, f32_4d,
                                         lazy_part, pack, run_call)
from kernels_numba.cpu.dense import (bias_activation_calls, column_sums_calls, masked_grad_calls,
                                     relu_mask_and_sums_calls)
from kernels_numba.cpu.gemm import _thread_buffer, gemm_calls
from kernels_numba.ops.activation import KIND_CODES
from kernels_numba.ops.conv2d import conv_plan

IM2COL, IM2COL_T, COL2IM = 0, 1, 2


# The one part for all three (one compile), its loops written in place: numba inlines an
# inline="always" helper by copying and re-typing its IR, 0.06-0.1 s of compile each.
@lazy_part
def _conv_part(args, p, parts):
    # (col 2-D, x or dx 4-D, mode, kh, kw, sh, sw, pt, pl, ho, wo, dh, dw) packed
    a = numba.carray(args, 19)
    col, x = f32_2d(a, 0), f32_4d(a, 3)
    mode = a[8]
    kh, kw, sh, sw, pt, pl = a[9], a[10], a[11], a[12], a[13], a[14]
    ho, wo, dh, dw = a[15], a[16], a[17], a[18]
    n, h, w, c = x.shape
    if mode == IM2COL:
        rows = col.shape[0]
    elif mode == IM2COL_T:
        rows = col.shape[0] * n
    else:
        rows = n
    r0, r1 = rows * p // parts, rows * (p + 1) // parts
    if mode == IM2COL:
        # col (M, K) rows r0..r1, columns (kh, kw, c)
        for m in range(r0, r1):
            b = m // (ho * wo)
            r = m - b * ho * wo
            oh = r // wo
            ow = r - oh * wo
            for i in range(kh):
                ih = oh * sh - pt + i * dh
                for j in range(kw):
                    iw = ow * sw - pl + j * dw
                    base = (i * kw + j) * c
                    if 0 <= ih < h and 0 <= iw < w:
                        for ch in range(c):
                            col[m, base + ch] = x[b, ih, iw, ch]
                    else:
                        for ch in range(c):
                            col[m, base + ch] = 0.0
    elif mode == IM2COL_T:
        # Transposed columns (KH*KW, M) for a one-channel x (N, H, W), r over (tap,
        # sample): for one tap and one output row the values are a run of x's row, so
        # this copies runs of Wo floats instead of rows of KH*KW (MNIST's first conv:
        # im2col 1.4 -> 0.3 ms).
        x3 = f32_3d(a, 3)  # (N, H, W): the one channel dropped
        for r in range(r0, r1):
            t = r // n
            b = r - t * n
            i = t // kw
            j = (t - i * kw) * dw  # the tap's column offset
            row_inside = j - pl >= 0 and (wo - 1) * sw + j - pl < w
            for oh in range(ho):
                ih = oh * sh - pt + i * dh
                d = (b * ho + oh) * wo
                if ih < 0 or ih >= h:
                    for ow in range(wo):
                        col[t, d + ow] = 0.0
                elif row_inside and sw == 1:  # a plain copy: vectorizes
                    src = x3[b, ih, j - pl: j - pl + wo]
                    dst = col[t, d: d + wo]
                    for ow in range(wo):
                        dst[ow] = src[ow]
                elif row_inside:
                    for ow in range(wo):
                        col[t, d + ow] = x3[b, ih, ow * sw + j - pl]
                else:
                    for ow in range(wo):
                        iw = ow * sw - pl + j
                        col[t, d + ow] = x3[b, ih, iw] if 0 <= iw < w else 0.0
    else:
        # col2im: a scatter over samples r0..r1 of dx (x here). Each part owns whole
        # samples (race-free, the summation order fixed): col is read once, in order,
        # and the writes land in one sample's dx, which stays in cache (5.3 -> 1.2 ms for
        # the seed CNN's conv2).
        for b in range(r0, r1):
            x[b] = 0.0
            for oh in range(ho):
                for ow in range(wo):
                    m = (b * ho + oh) * wo + ow
                    for i in range(kh):
                        ih = oh * sh - pt + i * dh
                        if ih < 0 or ih >= h:
                            continue
                        for j in range(kw):
                            iw = ow * sw - pl + j * dw
                            if iw < 0 or iw >= w:
                                continue
                            base = (i * kw + j) * c
                            for ch in range(c):
                                x[b, ih, iw, ch] += col[m, base + ch]


def _conv_part_calls(mode, col, x4, geom):
    return [run_call(_conv_part, pack(col, x4, mode, *geom), col.size, (col, x4))]


# launchers: each returns its work as one Bound chain (bound_op): a replayed CPU launch
# plan repeats the chain with no geometry, views or thread split worked out again

def _col_view(workspace, m, k):
    return workspace[: m * k].reshape(m, k)


def _is_pointwise(kh, kw, sh, sw, pt, pl, *_):
    return kh == 1 and kw == 1 and sh == 1 and sw == 1 and pt == 0 and pl == 0


def _columns_calls(workspace, x, m, k, geom, build=True):
    """(the GEMM operand holding x's windows, the calls that fill it): (M, K); for C == 1
    a transposed view (M, K + 1) whose last column is ones (not for a pointwise conv: x
    itself). build=False: the operand a forward already left in the workspace."""
    if _is_pointwise(*geom):
        return x.reshape(m, k), []
    if x.shape[3] == 1:
        col_t = workspace[: m * (k + 1)].reshape(k + 1, m)
        calls = [] if not build else _conv_part_calls(IM2COL_T, col_t[:k], x, geom) + [
            Bound(col_t[k].fill, (1.0,))]
        return col_t.T, calls
    col = _col_view(workspace, m, k)
    return col, (_conv_part_calls(IM2COL, col, x, geom) if build else [])


def _setup(x_shape, w_shape, strides, padding, dilation_rate):
    n, h, wd, c, kh, kw, f, sh, sw, ho, wo, pt, pl, dh, dw = conv_plan(
        x_shape, w_shape, strides, padding, dilation_rate)
    return n * ho * wo, kh * kw * c, f, (kh, kw, sh, sw, pt, pl, ho, wo, dh, dw)


@bound_op
def conv2d_forward(y, x, w, b, workspace, *, strides=(1, 1), padding="valid",
                   activation="linear", dilation_rate=(1, 1)):
    m, k, f, geom = _setup(x.shape, w.shape, strides, padding, dilation_rate)
    y2 = y.reshape(m, f)
    col, calls = _columns_calls(workspace, x, m, k, geom)
    # The dense epilogue (one compiled function for both layers' bias + activation).
    return chain(calls + gemm_calls(y2, col[:, :k], w.reshape(k, f))
                 + bias_activation_calls(y2, b, KIND_CODES[activation]))


@bound_op
def conv2d_backward_data(dx, dy, w, workspace, *, strides=(1, 1), padding="valid",
                         dilation_rate=(1, 1), activation="linear", y=None):
    m, k, f, geom = _setup(dx.shape, w.shape, strides, padding, dilation_rate)
    dy2, calls = masked_grad_calls(dy, y, activation)
    dy2, w2 = dy2.reshape(m, f), w.reshape(k, f)
    if _is_pointwise(*geom):
        return chain(calls + gemm_calls(dx.reshape(m, k), dy2, w2.T))
    dcol = _col_view(workspace, m, k)
    return chain(calls + gemm_calls(dcol, dy2, w2.T) + _conv_part_calls(COL2IM, dcol, dx, geom))


@bound_op
def conv2d_backward_filter(dw, db, dy, x, workspace, *, strides=(1, 1), padding="valid",
                           columns_ready=False, dilation_rate=(1, 1), activation="linear",
                           y=None):
    m, k, f, geom = _setup(x.shape, dw.shape, strides, padding, dilation_rate)
    col, build = _columns_calls(workspace, x, m, k, geom, build=not columns_ready)
    dw2 = dw.reshape(k, f)
    if col.shape[1] == k and activation == "relu" and db is not None and m:
        # C > 1 (or pointwise): db from the ReLU mask's pass over dy
        dy2, calls = relu_mask_and_sums_calls(dy, y, db)
        return chain(calls + build + gemm_calls(dw2, col.T, dy2.reshape(m, f), accumulate=True))
    dy2, calls = masked_grad_calls(dy, y, activation)
    dy2 = dy2.reshape(m, f)
    calls = calls + build
    if col.shape[1] == k:  # no ones column (C > 1, or pointwise: x itself)
        calls += gemm_calls(dw2, col.T, dy2, accumulate=True)
        return chain(calls + (column_sums_calls(db, dy2) if db is not None else []))
    if db is None:
        return chain(calls + gemm_calls(dw2, col[:, :k].T, dy2, accumulate=True))
    # not product_scratch: dy2 may be masked_grad's result in it
    dwb = _thread_buffer("conv_dw_db", (k + 1) * f).reshape(k + 1, f)
    return chain(calls + gemm_calls(dwb, col.T, dy2)
                 + [Bound(_add_weight_and_bias, (dw2, db, dwb))])


def _add_weight_and_bias(dw2, db, dwb):
    dw2 += dwb[:-1]
    db += dwb[-1]
