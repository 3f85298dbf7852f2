"""CPU twins of kernels_numba.ops.pool2d (validated arguments only): max pooling here, the
average poolings in kernels_numba/cpu/pool2d_average.py.

Serial loops over a range of (sample, row) pairs, split across threads by
kernels_numba.cpu._parallel (one compiled parallel loop for all kernels: a cold start
compiles these as serial functions). Channels innermost so every access is contiguous.
The backward is a gather over the windows containing each dx element, in (oh, ow) order:
it adds the dy of the windows whose argmax is that element (the same sums, in the same
order, as the CUDA kernel). A NaN in a window wins it (the max is NaN and argmax points
at the last NaN, as PyTorch). np.empty in a part would compile numba's allocator
(~0.3 s): the forward keeps its running max in y and argmax instead of scratch.
"""

import numba
import numpy as np

from kernels_numba.cpu._parallel import (
    bound_op,
    f32_2d,
    f32_4d,
    i32_4d,
    lazy_part,
    pack,
    part_call,
    run_call,
    split,
)
from kernels_numba.cpu._window import _hi, _lo, window_range
from kernels_numba.cpu.gemm import _thread_buffer
from kernels_numba.cpu.pool2d_average import (  # noqa: F401 (the family's ops, for dispatch)
    avgpool2d_backward,
    avgpool2d_forward,
    global_avgpool2d_backward,
    global_avgpool2d_forward,
)
from kernels_numba.ops.pool2d import pool_plan

# The max-pool parts' packed arguments: (out, src, argmax, ph, pw, sh, sw, pt, pl, mode,
# pv, sums); pv and sums are read only by MASKED, pv by FORWARD_RELU (its bias, viewed
# (1, 1, 1, C)); stand-ins otherwise.
ARGS = 30
FORWARD, BACKWARD, MASKED, SUM_PARTS, FORWARD_RELU = 0, 1, 2, 3, 4
_ZERO = np.float32(0.0)
_UNMASKED = (np.zeros((1, 1, 1, 1), np.float32), np.zeros((1, 1), np.float32))


# njit loops

@numba.njit(inline="always")
def _maxpool_backward(dx, dy, argmax, ph, pw, sh, sw, pt, pl, r0, r1, pv, sums, masked):
    # Any geometry (overlapping windows too): each dx cell of input rows r0..r1 of the
    # (sample, input row) pairs adds the dy of every window containing it whose argmax
    # it is, in (oh, ow) order. Adding a selected +0 leaves a sum's bits alone, so the
    # channel loops are selects (they vectorize) and the sums match a scatter in (oh, ow)
    # order. masked: dy * relu'(pv) (masked_backward_calls), and sums += what is added.
    n, h, w, c = dx.shape
    _, ho, wo, _ = dy.shape
    zero = np.float32(0.0)
    if masked:
        sums[:] = zero
    for r in range(r0, r1):
        b = r // h
        ih = r - b * h
        oh0, oh1 = window_range(ih, ph, sh, pt, ho)
        for iw in range(w):
            for ch in range(c):
                dx[b, ih, iw, ch] = zero
        for oh in range(oh0, oh1):
            for ow in range(wo):
                w0, w1 = _lo(ow * sw - pl), _hi(ow * sw - pl + pw, w)
                for iw in range(w0, w1):
                    k = np.int32((ih * w + iw) * c)  # int32 compares vectorize wider
                    if masked:
                        out, am, gs, vs = dx[b, ih, iw], argmax[b, oh, ow], dy[b, oh, ow], \
                            pv[b, oh, ow]
                        for ch in range(c):
                            v = vs[ch]
                            g = gs[ch] if v > zero else v - v
                            g = g if am[ch] == k + ch else zero
                            out[ch] += g
                            sums[ch] += g
                        continue
                    for ch in range(c):
                        hit = argmax[b, oh, ow, ch] == k + ch
                        dx[b, ih, iw, ch] += dy[b, oh, ow, ch] if hit else zero


@numba.njit(inline="always")
def _maxpool_backward_disjoint(dx, dy, argmax, ph, pw, sh, sw, pt, pl, p, parts, pv, sums,
                               masked):
    # Backward of windows that do not overlap (sh >= ph, sw >= pw: the usual 2x2/2),
    # as a gather over (sample, input row) pairs: an input row lies in at most one
    # window row and a cell in at most one window, so one lookup per cell and no
    # zeroing pass (0.20 -> 0.18 ms against a scatter for the seed CNN's pool). The
    # one window that can hold iw is the last one starting at or before it; cells
    # between windows, past the last one or in a row no window covers get 0. An
    # argmax entry that is not a cell of its own window is never matched. masked: dy *
    # relu'(pv), and sums += what is written (masked_backward_calls).
    n, h, w, c = dx.shape
    _, ho, wo, _ = dy.shape
    zero = np.float32(0.0)
    if masked:
        sums[:] = zero
    rows = n * h
    for r in range(rows * p // parts, rows * (p + 1) // parts):
        b = r // h
        ih = r - b * h
        oh = (ih + pt) // sh  # the window row that can hold ih
        covered = (oh < ho) & (ih + pt - oh * sh < ph)
        oh = oh if oh < ho else ho - 1  # (never read when not covered)
        ow = 0
        for iw in range(w):
            if (ow + 1 < wo) & (iw >= (ow + 1) * sw - pl):  # iw steps by 1, windows by sw
                ow += 1
            if covered & (iw >= ow * sw - pl) & (iw < ow * sw - pl + pw):
                k = np.int32((ih * w + iw) * c)  # int32 compares vectorize wider
                if masked:  # (1-D views: with 4-D indexing this loop did not vectorize)
                    out, am, gs, vs = dx[b, ih, iw], argmax[b, oh, ow], dy[b, oh, ow], \
                        pv[b, oh, ow]
                    for ch in range(c):
                        v = vs[ch]
                        g = gs[ch] if v > zero else v - v  # NaN for a NaN pv
                        g = g if am[ch] == k + ch else zero
                        out[ch] = g
                        sums[ch] += g
                    continue
                for ch in range(c):
                    hit = argmax[b, oh, ow, ch] == k + ch
                    dx[b, ih, iw, ch] = dy[b, oh, ow, ch] if hit else zero
            else:
                for ch in range(c):
                    dx[b, ih, iw, ch] = zero


# parts for kernels_numba.cpu._parallel: (a1, a2, a3, ph, pw, sh, sw, pt, pl) packed

# The general forward and the disjoint-window backward in one part (one compile), the
# forward's loops written in place: numba inlines an inline="always" helper by copying
# and re-typing its IR (0.06-0.09 s of compile each), so only the backward, which the
# 2x2 part below shares, is a helper (inlined once per part). The loops clamp with
# selects, not _lo/_hi, for the same reason. With the overlapping-window backward in a
# part of its own, the reference CNN's max-pool compile went 1.5 -> 0.8 CPU s.
@lazy_part
def _maxpool_part(args, p, parts):
    # (out, src, argmax, geometry, mode, pv, sums); forward: out y, src x; backward: out
    # dx, src dy (MASKED: pv, sums as masked_backward_calls packs them)
    a = numba.carray(args, ARGS)
    out, src, argmax = f32_4d(a, 0), f32_4d(a, 5), i32_4d(a, 10)
    ph, pw, sh, sw, pt, pl = a[15], a[16], a[17], a[18], a[19], a[20]
    if a[21] == FORWARD or a[21] == FORWARD_RELU:
        # Forward over (sample, output row) pairs. The running max and argmax live in y
        # and argmax themselves (no scratch, no copy-out loop: a smaller compile).
        y, x = out, src
        relu, bias = a[21] == FORWARD_RELU, f32_4d(a, 22)[0, 0, 0]
        n, h, w, c = x.shape
        _, ho, wo, _ = y.shape
        rows = n * ho
        for r in range(rows * p // parts, rows * (p + 1) // parts):
            b = r // ho
            oh = r - b * ho
            h0, h1 = oh * sh - pt, oh * sh - pt + ph
            h0, h1 = (h0 if h0 > 0 else 0), (h1 if h1 < h else h)
            for ow in range(wo):
                w0, w1 = ow * sw - pl, ow * sw - pl + pw
                w0, w1 = (w0 if w0 > 0 else 0), (w1 if w1 < w else w)
                best, where = y[b, oh, ow], argmax[b, oh, ow]
                # Padded cells count as -inf, so they never win: the first real cell
                # (every window holds one, for "same" padding too) is taken whatever y held.
                for ih in range(h0, h1):
                    for iw in range(w0, w1):
                        k = np.int32((ih * w + iw) * c)
                        first = (ih == h0) & (iw == w0)
                        # Selects, not branches, so the channel loop vectorizes (1.6 ->
                        # 1.0 ms); | not `or`: no short-circuit branches to type and lower.
                        cell = x[b, ih, iw]
                        for ch in range(c):
                            v = cell[ch]
                            if relu:  # FORWARD_RELU: relu(v + bias), see the 2x2 part
                                v += bias[ch]
                                v = _ZERO if v <= _ZERO else v
                            # NaN wins; nothing beats a NaN best
                            take = first | (v > best[ch]) | (v != v)
                            best[ch] = v if take else best[ch]
                            where[ch] = k + ch if take else where[ch]
    else:
        _maxpool_backward_disjoint(out, src, argmax, ph, pw, sh, sw, pt, pl, p, parts,
                                   f32_4d(a, 22), f32_2d(a, 27)[p if a[21] == MASKED else 0],
                                   a[21] == MASKED)


@numba.njit(inline="always")
def _maxpool_2x2_forward(y, argmax, x, bias, sh, sw, p, parts, relu):
    # The usual pool, 2x2 with "valid" padding (every window whole), over (sample, output
    # row) pairs: a window's four cells go through one channel loop, the running max in
    # registers, y and argmax written once (the reference CNN's first pool 0.95 -> 0.39
    # ms), the same selects, in the same cell order, as _maxpool_part's loop. relu (a
    # constant at each call: the other branch is pruned): the pool of relu(x + bias), the
    # values a ReLU conv's epilogue would have written from its linear output x.
    n, h, w, c = x.shape
    _, ho, wo, _ = y.shape
    rows = n * ho
    for r in range(rows * p // parts, rows * (p + 1) // parts):
        b = r // ho
        oh = r - b * ho
        h0 = oh * sh
        for ow in range(wo):
            w0 = ow * sw
            best, where = y[b, oh, ow], argmax[b, oh, ow]
            k0 = np.int32((h0 * w + w0) * c)
            k2 = np.int32(k0 + w * c)
            x0, x1, x2, x3 = x[b, h0, w0], x[b, h0, w0 + 1], x[b, h0 + 1, w0], \
                x[b, h0 + 1, w0 + 1]
            for ch in range(c):
                v0, v1, v2, v3 = x0[ch], x1[ch], x2[ch], x3[ch]
                if relu:
                    bc = bias[ch]
                    v0, v1, v2, v3 = v0 + bc, v1 + bc, v2 + bc, v3 + bc
                    v0 = _ZERO if v0 <= _ZERO else v0  # NaN passes through
                    v1 = _ZERO if v1 <= _ZERO else v1
                    v2 = _ZERO if v2 <= _ZERO else v2
                    v3 = _ZERO if v3 <= _ZERO else v3
                m, at = v0, k0 + ch
                take = (v1 > m) | (v1 != v1)  # NaN wins; nothing beats a NaN best
                m, at = (v1 if take else m), (k0 + c + ch if take else at)
                take = (v2 > m) | (v2 != v2)
                m, at = (v2 if take else m), (k2 + ch if take else at)
                take = (v3 > m) | (v3 != v3)
                best[ch], where[ch] = (v3 if take else m), (k2 + c + ch if take else at)


@numba.njit(inline="always")
def _maxpool_2x2_masked(dz, dy, argmax, pv, p, parts, sums):
    # MASKED for 2x2 windows at stride 2 (they tile x), over (sample, output row) pairs as
    # the forward: a window's dy, pv and argmax are read once for its four cells (the
    # per-cell loop read them four times: 0.56 -> 0.27-0.31 ms for the reference CNN's
    # first pool, alternating runs). The same values: g = dy * relu'(pv) at the argmax
    # cell, 0 elsewhere, a NaN pv giving NaN there; sums += g where the argmax is one of
    # the window's cells. A last row or column no window covers (odd H or W) gets 0.
    n, h, w, c = dz.shape
    _, ho, wo, _ = dy.shape
    zero = np.float32(0.0)
    sums[:] = zero
    rows = n * ho
    for r in range(rows * p // parts, rows * (p + 1) // parts):
        b = r // ho
        oh = r - b * ho
        h0 = 2 * oh
        for ow in range(wo):
            w0 = 2 * ow
            k0 = np.int32((h0 * w + w0) * c)
            k2 = np.int32(k0 + w * c)
            am, gs, vs = argmax[b, oh, ow], dy[b, oh, ow], pv[b, oh, ow]
            # one loop per cell and one for the sums: one store each, so each vectorizes
            # (with five stores in one loop it did not: 0.94 ms)
            for q in range(4):
                k = np.int32((k2 if q >= 2 else k0) + (q & 1) * c)
                out = dz[b, h0 + (q >> 1), w0 + (q & 1)]
                for ch in range(c):
                    v = vs[ch]
                    g = gs[ch] if v > zero else v - v  # NaN for a NaN pv
                    out[ch] = g if am[ch] == k + ch else zero
            for ch in range(c):
                v, at = vs[ch], am[ch] - ch
                g = gs[ch] if v > zero else v - v
                inside = (at == k0) | (at == k0 + c) | (at == k2) | (at == k2 + c)
                sums[ch] += g if inside else zero
        for ih in range(h0, h0 + 2):
            for iw in range(2 * wo, w):
                for ch in range(c):
                    dz[b, ih, iw, ch] = zero
        if oh == ho - 1:
            for ih in range(2 * ho, h):
                for iw in range(w):
                    for ch in range(c):
                        dz[b, ih, iw, ch] = zero


# Three 2x2 parts, so a model compiles only what it uses: plain (FORWARD, BACKWARD) and,
# for a ReLU conv's pool (kerasish/engine/conv_pool.py), FORWARD_RELU apart from MASKED
# and SUM_PARTS: a fresh machine's first step compiles the forward while the compile-ahead
# helper (cpu/compile_ahead.py) compiles the backward's part (the two in one part: 1.64
# CPU s, all of it on the first step's path).

@lazy_part
def _maxpool_2x2_part(args, p, parts):
    a = numba.carray(args, ARGS)
    out, src, argmax = f32_4d(a, 0), f32_4d(a, 5), i32_4d(a, 10)
    if a[21] == BACKWARD:
        _maxpool_backward_disjoint(out, src, argmax, 2, 2, a[17], a[18], 0, 0, p, parts,
                                   f32_4d(a, 22), f32_2d(a, 27)[0], False)
        return
    _maxpool_2x2_forward(out, argmax, src, f32_4d(a, 22)[0, 0, 0], a[17], a[18], p, parts,
                         False)


@lazy_part
def _maxpool_2x2_relu_part(args, p, parts):
    a = numba.carray(args, ARGS)
    _maxpool_2x2_forward(f32_4d(a, 0), i32_4d(a, 10), f32_4d(a, 5), f32_4d(a, 22)[0, 0, 0],
                         a[17], a[18], p, parts, True)


@lazy_part
def _maxpool_2x2_masked_part(args, p, parts):
    # MASKED (strides (2, 2) only: _backward_part) and SUM_PARTS
    a = numba.carray(args, ARGS)
    out = f32_4d(a, 0)
    if a[21] == SUM_PARTS:  # out[0, 0, 0] (db) += each part's row of sums, in part order
        sums, db = f32_2d(a, 27), out[0, 0, 0]
        for q in range(sums.shape[0]):
            for ch in range(db.shape[0]):
                db[ch] += sums[q, ch]
        return
    _maxpool_2x2_masked(out, f32_4d(a, 5), i32_4d(a, 10), f32_4d(a, 22), p, parts,
                        f32_2d(a, 27)[p])


@lazy_part
def _maxpool_overlap_part(args, p, parts):
    # The backward of overlapping windows (pool 3, stride 2, ...): compiled only by a model
    # that has them. (dx, dy, argmax, geometry, mode, pv, sums)
    a = numba.carray(args, ARGS)
    dx, dy, argmax = f32_4d(a, 0), f32_4d(a, 5), i32_4d(a, 10)
    rows = dx.shape[0] * dx.shape[1]
    _maxpool_backward(dx, dy, argmax, a[15], a[16], a[17], a[18], a[19], a[20],
                      rows * p // parts, rows * (p + 1) // parts, f32_4d(a, 22),
                      f32_2d(a, 27)[p if a[21] == MASKED else 0], a[21] == MASKED)


def _whole_2x2(ph, pw, padding):
    """A 2x2 pool with "valid" padding: every window lies whole inside x."""
    return ph == 2 and pw == 2 and padding == "valid"


def _max_part(ph, pw, padding, relu=False):
    """The forward's part, which the disjoint-window backward shares (one compile); relu:
    FORWARD_RELU's (a 2x2 pool's backward then has its own part: _backward_part)."""
    if not _whole_2x2(ph, pw, padding):
        return _maxpool_part
    return _maxpool_2x2_relu_part if relu else _maxpool_2x2_part


# launchers: bound ops (kernels_numba.cpu._parallel.bound_op), so a replayed CPU launch
# plan repeats each one's packed call without its geometry worked out again

def _backward_part(ph, pw, sh, sw, padding, relu=False):
    # A ReLU conv's whole 2x2 pool: its masked part at strides (2, 2); at other strides
    # (rare) the general loop, so the masked part compiles one backward loop, not two.
    if relu and _whole_2x2(ph, pw, padding):
        return _maxpool_2x2_masked_part if (sh, sw) == (2, 2) else _maxpool_overlap_part
    return _max_part(ph, pw, padding, relu) if sh >= ph and sw >= pw else _maxpool_overlap_part


@bound_op
def maxpool2d_forward(y, argmax, x, *, pool_size, strides, padding="valid", relu_bias=None):
    ph, pw, sh, sw, _, _, pt, pl = pool_plan(x.shape, pool_size, strides, padding)
    if relu_bias is None:
        mode, extra = FORWARD, _UNMASKED
    else:
        mode, extra = FORWARD_RELU, (relu_bias.reshape(1, 1, 1, -1), _UNMASKED[1])
    return run_call(_max_part(ph, pw, padding, relu_bias is not None),
                    pack(y, x, argmax, ph, pw, sh, sw, pt, pl, mode, *extra), x.size,
                    (y, x, argmax, *extra))


@bound_op
def maxpool2d_backward(dx, dy, argmax, *, pool_size, strides, padding="valid"):
    ph, pw, sh, sw, _, _, pt, pl = pool_plan(dx.shape, pool_size, strides, padding)
    return run_call(_backward_part(ph, pw, sh, sw, padding),
                    pack(dx, dy, argmax, ph, pw, sh, sw, pt, pl, BACKWARD, *_UNMASKED),
                    dx.size, (dx, dy, argmax))


def masked_backward_calls(dz, dy, y, argmax, db, pool_size, strides, padding):
    """maxpool2d_backward's dz of dy * relu'(y), and db += the sums of what it adds, as
    Bound calls (kernels_numba/cpu/conv2d_pool.py: y is the pool's output, the max of
    a ReLU, so relu'(y) is the mask at its argmax). Each part sums its own rows of dz;
    the parts are added in order."""
    ph, pw, sh, sw, _, _, pt, pl = pool_plan(dz.shape, pool_size, strides, padding)
    part = _backward_part(ph, pw, sh, sw, padding, relu=True)
    parts = numba.get_num_threads() if split(dz.size) else 1
    sums = _thread_buffer("pool_sums", parts * dz.shape[3]).reshape(parts, dz.shape[3])
    keep = (dz, dy, argmax, y, sums)
    calls = [part_call(part, pack(dz, dy, argmax, ph, pw, sh, sw, pt, pl, MASKED, y, sums),
                       parts, keep)]
    if db is not None:  # (the 2x2 masked part: a one-row loop, whatever the pool)
        db4 = db.reshape(1, 1, 1, -1)
        calls.append(part_call(_maxpool_2x2_masked_part,
                               pack(db4, y, argmax, 0, 0, 0, 0, 0, 0, SUM_PARTS, y, sums), 1,
                               (db4, *keep)))
    return calls

