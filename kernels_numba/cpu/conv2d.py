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
GEMMs go through kernels_numba.cpu.gemm, except in the grouped forward and backward-data
(kernels_numba/cpu/conv2d_columns.py, with the column loops): each thread runs one BLAS
call per group of its images while their rows are in cache. Each twin is a bound op: it
returns its work as Bound calls (kernels_numba.cpu._parallel), which a replayed launch
plan repeats.
"""

import numba
import numpy as np

from kernels_numba.cpu import gemm as _gemm
from kernels_numba.cpu._parallel import Bound, bound_op, chain, pack, part_call, run_call, split
from kernels_numba.cpu.conv2d_columns import (ARGS, BACKWARD_DATA, COL2IM, FORWARD, IM2COL,
                                              IM2COL_T, WEIGHTS_TRANSPOSED, _columns_t_part,
                                              _conv_part)
from kernels_numba.cpu.dense import (_NO_BIAS, bias_activation_calls, column_sums_calls,
                                     masked_grad_calls, relu_mask_and_sums_calls)
from kernels_numba.cpu.gemm import _thread_buffer, gemm_calls
from kernels_numba.ops.activation import KIND_CODES
from kernels_numba.ops.conv2d import conv_plan

# A grouped pass's images per group: about this many output rows per BLAS call, at least
# one image (the reference CNN's conv2: 3 images, 363 x 288 column floats = 418 KB, about
# a core's L2).
GROUP_ROWS = 384
_UNGROUPED = (0,) * (ARGS - 19)  # the grouped modes' entries, zeros for the other modes


def _conv_part_calls(mode, col, x4, geom):
    part = _columns_t_part if mode == IM2COL_T else _conv_part
    return [run_call(part, pack(col, x4, mode, *geom, *_UNGROUPED), col.size, (col, x4))]


def _grouped_calls(mode, col, x4, geom, rows, w2, bias=None, flags=0):
    """The grouped FORWARD or BACKWARD_DATA as one call ((M, F) rows: y or the masked dy;
    col: the workspace), or None where the separate passes stay: no bound sgemm, or fewer
    than 4 images per thread (a split by images would leave threads idle where a split
    GEMM keeps them busy)."""
    n, per = x4.shape[0], geom[6] * geom[7]
    parts = numba.get_num_threads() if split(rows.shape[0] * w2.shape[0]) else 1
    if _gemm._SGEMM is None or n < 4 * parts:
        return None
    group = max(1, min(GROUP_ROWS // per, n // parts))
    before = []
    if mode == BACKWARD_DATA:  # each part's scratch rows, then W^T where there is room
        used, (k, f) = parts * group * per, w2.shape
        tail = col.reshape(-1)[used * k:]
        col = col[:used]
        if tail.size >= k * f:
            w_t = tail[: k * f].reshape(f, k)
            before, w2, flags = [Bound(np.copyto, (w_t, w2.T))], w_t, flags | WEIGHTS_TRANSPOSED
    bias = _NO_BIAS if bias is None else bias
    args = pack(col, x4, mode, *geom, rows, w2, bias, flags, group, _gemm.sgemm_address())
    return chain(before + [part_call(_conv_part, args, parts, (col, x4, rows, w2, bias))])


# The grouped pass on the tuner's scratch buffers: the same function, under a name of its
# own, so the launchers' one decision per op stays the only call of _grouped_calls
# (tests/kernels_numba/test_conv2d_grouped.py spies on it).
_grouped_variant = _grouped_calls


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
    if x.shape[3] > 1 and not _is_pointwise(*geom) and m and activation in ("relu", "linear"):
        flags = (int(b is not None) << 8) | int(activation == "relu")
        call = _grouped_calls(FORWARD, _col_view(workspace, m, k), x, geom, y2,
                              w.reshape(k, f), b, flags)
        if call is not None and _tuned(
                "cpu.conv2d_forward", y, workspace, (x, w, geom, activation, b is not None),
                lambda y_, ws: _grouped_variant(FORWARD, _col_view(ws, m, k), x, geom,
                                                y_.reshape(m, f), w.reshape(k, f), b, flags),
                lambda y_, ws: _separate_forward(y_, x, w, b, ws, m, k, f, geom, activation)):
            return call
    return _separate_forward(y, x, w, b, workspace, m, k, f, geom, activation)


def _separate_forward(y, x, w, b, workspace, m, k, f, geom, activation):
    """im2col, a split GEMM, then the dense epilogue (bias + activation), as three passes."""
    y2 = y.reshape(m, f)
    col, calls = _columns_calls(workspace, x, m, k, geom)
    # The dense epilogue (one compiled function for both layers' bias + activation).
    return chain(calls + gemm_calls(y2, col[:, :k], w.reshape(k, f))
                 + bias_activation_calls(y2, b, KIND_CODES[activation]))


def _tuned(op, out, workspace, shapes, grouped, separate):
    """Whether the grouped pass is kept for this conv (kernels_numba/autotune.py): each
    variant timed on scratch copies of `out` and the workspace (never the caller's, which
    a plan's earlier bound ops may still read); `grouped`/`separate` make a variant's
    chain on given (out, workspace). Off, or over budget: grouped, the fixed choice."""
    from kernels_numba import autotune

    if not autotune.enabled():
        return True
    x, w, geom, activation, bias = shapes
    key = (f"x{'x'.join(map(str, x.shape))}|w{'x'.join(map(str, w.shape))}|"
           f"g{'x'.join(map(str, geom))}|{activation}|bias{int(bias)}|"
           f"threads{numba.get_num_threads()}")
    known = autotune.recorded(op, key)
    if known in ("grouped", "separate"):
        return known == "grouped"
    if not autotune.pending(op, key):
        return True
    out_s, ws_s = np.zeros_like(out), np.zeros_like(workspace)
    variants = {"grouped": grouped(out_s, ws_s), "separate": separate(out_s, ws_s)}
    return autotune.decide(op, key, variants, "grouped") == "grouped"


@bound_op
def conv2d_backward_data(dx, dy, w, workspace, *, strides=(1, 1), padding="valid",
                         dilation_rate=(1, 1), activation="linear", y=None):
    m, k, f, geom = _setup(dx.shape, w.shape, strides, padding, dilation_rate)
    dy2, calls = masked_grad_calls(dy, y, activation)
    dy2, w2 = dy2.reshape(m, f), w.reshape(k, f)
    if _is_pointwise(*geom):
        return chain(calls + gemm_calls(dx.reshape(m, k), dy2, w2.T))
    dcol = _col_view(workspace, m, k)
    grouped = _grouped_calls(BACKWARD_DATA, dcol, dx, geom, dy2, w2) if m else None
    if grouped is not None and _tuned(
            "cpu.conv2d_backward_data", dx, workspace, (dx, w, geom, activation, False),
            lambda dx_, ws: _grouped_variant(BACKWARD_DATA, _col_view(ws, m, k), dx_, geom, dy2,
                                             w2),
            lambda dx_, ws: chain(_separate_backward_data(dx_, dy2, w2, _col_view(ws, m, k),
                                                          geom))):
        return chain(calls + [grouped])
    return chain(calls + _separate_backward_data(dx, dy2, w2, dcol, geom))


def _separate_backward_data(dx, dy2, w2, dcol, geom):
    """dcol = dy @ w.T (one split GEMM), then col2im into dx: the calls."""
    return gemm_calls(dcol, dy2, w2.T) + _conv_part_calls(COL2IM, dcol, dx, geom)


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
