"""conv2d's CPU loops, called by the launchers in kernels_numba/cpu/conv2d.py: the column
matrix, its scatter back into dx, and the grouped forms that also run the GEMM.

Two parts, each one compile; their loops are written in place (numba inlines an
inline="always" helper by copying and re-typing its IR, 0.06-0.1 s of compile each).
- `_columns_t_part`: the transposed columns of a one-channel input. This is an image
  model's first conv, so its first step needs only this loop before the first GEMM.
- `_conv_part`: im2col (IM2COL) and col2im (COL2IM), and their grouped forms. The grouped
  forms run on each thread over its share of the images, a group of images at a time:
  - FORWARD builds the group's column rows, multiplies them by w (one single-threaded
    BLAS call) and adds bias + ReLU while the rows are in cache. It replaces im2col, a
    split GEMM and the epilogue pass. The rows still go to the workspace, where
    backward-filter reuses them.
  - BACKWARD_DATA multiplies the group's dy rows by w.T into this thread's rows of the
    workspace and scatters them into dx. It replaces a GEMM writing the whole (M, K)
    matrix (8.9 MB for the reference CNN's conv2, zeroed by BLAS first for beta = 0) and
    a col2im reading it back.
  The reference CNN's step, alternating pairs: backward-data 12.35 -> 11.64 ms (median of
  8 pairs). In isolation, conv2's forward went 2.37 -> 1.94 ms and its backward-data 2.27
  -> 1.88 ms.
"""

import numba
import numpy as np

from kernels_numba._blas import NO_TRANS, TRANS
from kernels_numba.cpu import gemm as _gemm
from kernels_numba.cpu._parallel import f32_1d, f32_2d, f32_3d, f32_4d, lazy_part
from kernels_numba.cpu.gemm import _sgemm_at

IM2COL, IM2COL_T, COL2IM, FORWARD, BACKWARD_DATA = 0, 1, 2, 3, 4
# BACKWARD_DATA's flags: the weights come as W^T (F, K) rows, so each group's product
# reads them in place (a transposed operand would be packed again in every group's call)
WEIGHTS_TRANSPOSED = 1 << 16
_ZERO = np.float32(0.0)
_INT_MARKER = _gemm._INT_MARKER if _gemm._SGEMM is not None else np.int64(0)
# The packed argument vector: (col 2-D, x or dx 4-D, mode, kh, kw, sh, sw, pt, pl, ho, wo,
# dh, dw), then for the grouped modes (y or dy 2-D, w 2-D, b 1-D, bias << 8 | relu, images
# per group, the sgemm's address); the other modes pack zeros there.
ARGS = 30


@lazy_part
def _columns_t_part(args, p, parts):
    # Transposed columns (KH*KW, M) for a one-channel x (N, H, W), r over (tap, sample):
    # for one tap and one output row the values are a run of x's row, so this copies runs
    # of Wo floats instead of rows of KH*KW (MNIST's first conv: im2col 1.4 -> 0.3 ms).
    a = numba.carray(args, ARGS)
    col, x3 = f32_2d(a, 0), f32_3d(a, 3)  # (N, H, W): the one channel dropped
    kw, sh, sw, pt, pl = a[10], a[11], a[12], a[13], a[14]
    ho, wo, dh, dw = a[15], a[16], a[17], a[18]
    n, h, w = x3.shape
    rows = col.shape[0] * n
    for r in range(rows * p // parts, rows * (p + 1) // parts):
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


def _make_conv_part(int_marker):
    """The part, with the BLAS int width of its sgemm calls a constant of it (and so in its
    cache key), as gemm._make_split_part's."""
    def _conv_part(args, p, parts):
        a = numba.carray(args, ARGS)
        col, x = f32_2d(a, 0), f32_4d(a, 3)
        mode = a[8]
        kh, kw, sh, sw, pt, pl = a[9], a[10], a[11], a[12], a[13], a[14]
        ho, wo, dh, dw = a[15], a[16], a[17], a[18]
        n, h, w, c = x.shape
        per = ho * wo
        if mode == IM2COL:  # rows of col
            r0, r1 = col.shape[0] * p // parts, col.shape[0] * (p + 1) // parts
            group = r1 - r0
        else:  # whole samples: the grouped modes, and col2im (race-free scatters)
            r0, r1 = n * p // parts, n * (p + 1) // parts
            group = r1 - r0 if mode == COL2IM else a[28]
        if mode == IM2COL or mode == FORWARD:
            if mode == FORWARD:  # the images' rows
                r0, r1, group = r0 * per, r1 * per, group * per
            for g0 in range(r0, r1, max(group, 1)):
                g1 = min(g0 + group, r1)
                # col (M, K) rows g0..g1, columns (kh, kw, c)
                for m in range(g0, g1):
                    b = m // per
                    r = m - b * per
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
                if mode == FORWARD:
                    y, wk, bias = f32_2d(a, 19), f32_2d(a, 22), f32_1d(a, 25)
                    k, f = wk.shape
                    _sgemm_at(a[29], NO_TRANS, NO_TRANS, g1 - g0, f, k, a[0] + 4 * g0 * k, k,
                              a[22], f, 0.0, a[19] + 4 * g0 * f, f, int_marker)
                    has_bias, relu = a[27] >> 8 != 0, a[27] & 255 != 0
                    for m in range(g0, g1):
                        row = y[m]
                        if has_bias and relu:
                            for j in range(f):
                                v = row[j] + bias[j]
                                row[j] = _ZERO if v <= _ZERO else v  # NaN passes through
                        elif relu:
                            for j in range(f):
                                row[j] = _ZERO if row[j] <= _ZERO else row[j]
                        elif has_bias:
                            for j in range(f):
                                row[j] += bias[j]
            return
        # col2im: a scatter over samples r0..r1 of dx (x here). Each part owns whole
        # samples (race-free, the summation order fixed): col is read once, in order,
        # and the writes land in one sample's dx, which stays in cache (5.3 -> 1.2 ms for
        # the seed CNN's conv2). BACKWARD_DATA first fills this part's rows of col.
        for g0 in range(r0, r1, max(group, 1)):
            g1 = min(g0 + group, r1)
            off = g0 * per  # col's row of sample g0's first output
            if mode == BACKWARD_DATA:
                off = p * group * per
                k, f = col.shape[1], f32_2d(a, 19).shape[1]  # dy (M, F)
                if a[27] & WEIGHTS_TRANSPOSED:
                    tb, ldb = NO_TRANS, k
                else:
                    tb, ldb = TRANS, f
                _sgemm_at(a[29], NO_TRANS, tb, (g1 - g0) * per, k, f,
                          a[19] + 4 * g0 * per * f, f, a[22], ldb, 0.0, a[0] + 4 * off * k, k,
                          int_marker)
            for b in range(g0, g1):
                x[b] = 0.0
                for oh in range(ho):
                    for ow in range(wo):
                        m = off + ((b - g0) * ho + oh) * wo + ow
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

    return lazy_part(_conv_part)


_conv_part = _make_conv_part(_INT_MARKER)
