"""CPU twins of kernels_numba.ops.conv2d (validated arguments only): im2col + BLAS GEMM.

The column matrix col (M = N*Ho*Wo, K = KH*KW*C) has columns ordered (kh, kw, c),
so w (KH, KW, C, F) viewed as (K, F) multiplies it directly:
  forward:          y(M, F)   = col @ w, then one bias + activation pass
  backward-data:    dcol(M, K) = dy @ w.T, then dx = col2im(dcol)
  backward-filter:  dw(K, F) += col.T @ dy
A 1x1, stride-1 convolution skips im2col: col is x itself.

Measured on the reference CNN (numba direct loops lose to BLAS here: with F = 32..64
the vectorized filter loop is too short to pay for its setup):
- im2col copies whole channel runs when C is large and runs along the output row
  when C is small (C = 1: one float per tap, the per-tap loop overhead dominated);
- col2im scatters per sample (parallel over the batch): dcol is read once, in order,
  and each sample's dx stays in cache while its 9 taps add into it;
- products go through kernels_numba.cpu.dense.gemm (blocks on numba's threads,
  single-threaded BLAS each; beta = 1 accumulates dw without a scratch product);
  backward-data multiplies by a contiguous copy of w.T (BLAS was ~30% slower with
  the transposed operand on the (7744, 64) x (64, 288) product).
"""

import numba
import numpy as np

from kernels_numba.cpu.activation import bias_activation
from kernels_numba.cpu.dense import gemm
from kernels_numba.ops.activation import KIND_CODES
from kernels_numba.ops.conv2d import conv_plan

# Below this many channels im2col runs along output rows instead of channel runs.
_NARROW_C = 16


# njit loops

@numba.njit(cache=True)
def window_range(i, k, s, pad, out):
    """Output positions o whose window o*s - pad .. o*s - pad + k - 1 contains i: [o0, o1)."""
    lo = i + pad - k + 1
    o0 = 0 if lo <= 0 else (lo + s - 1) // s
    return o0, min((i + pad) // s + 1, out)


@numba.njit(cache=True)
def tap_range(j, size, s, pad, out):
    """Output positions o whose tap j reads inside the input (0 <= o*s - pad + j < size)."""
    lo = pad - j
    o0 = 0 if lo <= 0 else (lo + s - 1) // s
    hi = size - 1 + pad - j
    o1 = 0 if hi < 0 else min(hi // s + 1, out)
    return min(o0, out), max(o1, min(o0, out))


@numba.njit(parallel=True, cache=True)
def _im2col_wide(col, x, kh, kw, sh, sw, pt, pl, ho, wo):
    # One output pixel per iteration; each tap copies a contiguous run of C floats.
    n, h, w, c = x.shape
    for m in numba.prange(n * ho * wo):
        b = m // (ho * wo)
        r = m - b * ho * wo
        oh = r // wo
        ow = r - oh * wo
        for i in range(kh):
            ih = oh * sh - pt + i
            for j in range(kw):
                iw = ow * sw - pl + j
                base = (i * kw + j) * c
                if 0 <= ih < h and 0 <= iw < w:
                    for ch in range(c):
                        col[m, base + ch] = x[b, ih, iw, ch]
                else:
                    for ch in range(c):
                        col[m, base + ch] = 0.0


@numba.njit(parallel=True, cache=True)
def _im2col_narrow(col, x, kh, kw, sh, sw, pt, pl, ho, wo):
    # One output row per iteration; each (tap, channel) column filled along the row.
    n, h, w, c = x.shape
    for r in numba.prange(n * ho):
        b = r // ho
        oh = r - b * ho
        m0 = r * wo
        for i in range(kh):
            ih = oh * sh - pt + i
            inside = 0 <= ih < h
            for j in range(kw):
                o0, o1 = tap_range(j, w, sw, pl, wo)
                if not inside:
                    o0, o1 = 0, 0
                for ch in range(c):
                    t = (i * kw + j) * c + ch
                    for ow in range(o0):
                        col[m0 + ow, t] = 0.0
                    for ow in range(o0, o1):
                        col[m0 + ow, t] = x[b, ih, ow * sw - pl + j, ch]
                    for ow in range(max(o1, o0), wo):
                        col[m0 + ow, t] = 0.0


def _im2col(col, x, kh, kw, sh, sw, pt, pl, ho, wo):
    fn = _im2col_narrow if x.shape[3] < _NARROW_C else _im2col_wide
    fn(col, x, kh, kw, sh, sw, pt, pl, ho, wo)


@numba.njit(parallel=True, cache=True)
def _col2im(dx, col, kh, kw, sh, sw, pt, pl, ho, wo):
    # Scatter-add per sample (overwrites dx): samples are independent, so parallel
    # over the batch is race-free; col is streamed once in order.
    n, h, w, c = dx.shape
    for b in numba.prange(n):
        dxb = dx[b]
        for ih in range(h):
            for iw in range(w):
                for ch in range(c):
                    dxb[ih, iw, ch] = 0.0
        for oh in range(ho):
            for ow in range(wo):
                row = col[(b * ho + oh) * wo + ow]
                for i in range(kh):
                    ih = oh * sh - pt + i
                    if ih < 0 or ih >= h:
                        continue
                    for j in range(kw):
                        iw = ow * sw - pl + j
                        if iw < 0 or iw >= w:
                            continue
                        base = (i * kw + j) * c
                        dst = dxb[ih, iw]
                        for ch in range(c):
                            dst[ch] += row[base + ch]


@numba.njit(parallel=True, cache=True)
def _bias_grad(db, dy):
    # Per-chunk float64 partial sums, so the reduction parallelises without races.
    rows, f = dy.shape
    chunks = min(rows, 64)
    part = np.zeros((chunks, f))
    for k in numba.prange(chunks):
        for m in range(k * rows // chunks, (k + 1) * rows // chunks):
            for j in range(f):
                part[k, j] += dy[m, j]
    for j in range(f):
        s = 0.0
        for k in range(chunks):
            s += part[k, j]
        db[j] += s


# launchers

def _views(workspace, m, k, f):
    col = workspace[: m * k].reshape(m, k)
    scratch = workspace[m * k: m * k + k * f]
    return col, scratch


def _is_pointwise(kh, kw, sh, sw, pt, pl):
    return kh == 1 and kw == 1 and sh == 1 and sw == 1 and pt == 0 and pl == 0


def conv2d_forward(y, x, w, b, workspace, *, strides=(1, 1), padding="valid",
                   activation="linear"):
    n, h, wd, c, kh, kw, f, sh, sw, ho, wo, pt, pl = conv_plan(x.shape, w.shape, strides, padding)
    m, k = n * ho * wo, kh * kw * c
    y2 = y.reshape(m, f)
    if _is_pointwise(kh, kw, sh, sw, pt, pl):
        col = x.reshape(m, k)
    else:
        col, _ = _views(workspace, m, k, f)
        _im2col(col, x, kh, kw, sh, sw, pt, pl, ho, wo)
    gemm(y2, col, w.reshape(k, f))
    bias_activation(y2, b, KIND_CODES[activation])


def conv2d_backward_data(dx, dy, w, workspace, *, strides=(1, 1), padding="valid"):
    n, h, wd, c, kh, kw, f, sh, sw, ho, wo, pt, pl = conv_plan(dx.shape, w.shape, strides, padding)
    m, k = n * ho * wo, kh * kw * c
    dy2 = dy.reshape(m, f)
    dcol, scratch = _views(workspace, m, k, f)
    w_t = scratch.reshape(f, k)  # w.T contiguous: BLAS was ~30% slower with trans_b here
    np.copyto(w_t, w.reshape(k, f).T)
    if _is_pointwise(kh, kw, sh, sw, pt, pl):
        gemm(dx.reshape(m, k), dy2, w_t)
        return
    gemm(dcol, dy2, w_t)
    _col2im(dx, dcol, kh, kw, sh, sw, pt, pl, ho, wo)


def conv2d_backward_filter(dw, db, dy, x, workspace, *, strides=(1, 1), padding="valid"):
    n, h, wd, c, kh, kw, f, sh, sw, ho, wo, pt, pl = conv_plan(x.shape, dw.shape, strides, padding)
    m, k = n * ho * wo, kh * kw * c
    dy2 = dy.reshape(m, f)
    if _is_pointwise(kh, kw, sh, sw, pt, pl):
        col = x.reshape(m, k)
    else:
        col, _ = _views(workspace, m, k, f)
        _im2col(col, x, kh, kw, sh, sw, pt, pl, ho, wo)
    gemm(dw.reshape(k, f), col, dy2, trans_a=True, beta=1.0)
    if db is not None:
        _bias_grad(db, dy2)
