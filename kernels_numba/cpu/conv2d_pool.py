"""CPU twin of kernels_numba.ops.conv2d_pool (validated arguments only): the backward of
relu(conv2d) then max-pool, from the pooled gradient.

One pass (`_masked_grad_part`) writes the conv's masked output gradient dz: g = dp *
relu'(p) at each valid argmax, zeros elsewhere, the sums in maxpool2d_backward's order;
each part sums its g per channel for db (the parts added in order). Then the
conv2d launchers run on dz as on a linear conv's gradient (kernels_numba/cpu/conv2d.py:
backward-filter's GEMM on the forward's columns, the grouped backward-data).
This replaces the separate ops' pool-backward pass and the ReLU mask that each of the
conv's backward ops applied on its own (the mask read dy and y, 2 x 5.5 MB for the
reference CNN's first conv, and wrote 5.5 MB).
"""

import numba
import numpy as np

from kernels_numba.cpu import conv2d as _conv2d
from kernels_numba.cpu._parallel import (
    bound_op,
    chain,
    f32_1d,
    f32_2d,
    f32_4d,
    i32_4d,
    lazy_part,
    pack,
    part_call,
    split,
)
from kernels_numba.cpu.gemm import _thread_buffer
from kernels_numba.ops.conv2d_pool import pooled_plan

MASK, SUM_PARTS = 0, 1
_ZERO = np.float32(0.0)
# Packed: dz, dp, p (f32 4-D, 5 entries each), argmax (i32 4-D, 5), scratch (f32 2-D
# (2 * parts, F), 3), db (f32 1-D, 2), then mode, disjoint and the pool's ph, pw, psh,
# psw, ppt, ppl.
ARGS = 33
_NO_DB = np.zeros(1, np.float32)  # packed when db is None (no SUM_PARTS call reads it)


@lazy_part
def _masked_grad_part(args, p, parts):
    a = numba.carray(args, ARGS)
    dz, dp, pv, arg = f32_4d(a, 0), f32_4d(a, 5), f32_4d(a, 10), i32_4d(a, 15)
    scratch, db = f32_2d(a, 20), f32_1d(a, 23)
    mode, disjoint = a[25], a[26] != 0
    ph, pw, psh, psw, ppt, ppl = a[27], a[28], a[29], a[30], a[31], a[32]
    n, ho, wo, f = dz.shape
    _, hp, wp, _ = dp.shape
    if mode == SUM_PARTS:  # db += each part's sums, in part order
        for q in range(scratch.shape[0] // 2):
            sums = scratch[2 * q]
            for fo in range(f):
                db[fo] += sums[fo]
        return
    sums, gv = scratch[2 * p], scratch[2 * p + 1]
    sums[:] = 0.0
    if disjoint:
        # Windows that do not overlap (the usual 2x2/2): a gather over (sample, z row)
        # pairs, as pool2d's disjoint backward: a z cell lies in at most one window, so
        # one lookup per cell, channels innermost (selects: the loop vectorizes).
        rows = n * ho
        for r in range(rows * p // parts, rows * (p + 1) // parts):
            b = r // ho
            oh = r - b * ho
            ohp = (oh + ppt) // psh  # the window row that can hold oh
            covered = (ohp < hp) & (oh + ppt - ohp * psh < ph)
            ohp = ohp if ohp < hp else hp - 1  # (never read when not covered)
            owp = 0
            for ow in range(wo):
                if (owp + 1 < wp) & (ow >= (owp + 1) * psw - ppl):
                    owp += 1
                out = dz[b, oh, ow]
                if covered & (ow >= owp * psw - ppl) & (ow < owp * psw - ppl + pw):
                    k = np.int32((oh * wo + ow) * f)
                    am, gs, vs = arg[b, ohp, owp], dp[b, ohp, owp], pv[b, ohp, owp]
                    for fo in range(f):
                        v = vs[fo]
                        g = gs[fo] if v > _ZERO else v - v  # relu'(p): NaN for a NaN p
                        g = g if am[fo] == k + fo else _ZERO
                        out[fo] = g
                        sums[fo] += g
                else:
                    out[:] = 0.0
        return
    # Overlapping windows: zeros, then a scatter in (ohp, owp) order. An entry is checked
    # in float64 (vectorized, no integer division): d = argmax - f a multiple of F, its
    # cell (q // Wo, q % Wo), q = d / F, a cell of the window (exact below 2^52).
    size, inv_f, inv_wo = ho * wo * f, 1.0 / f, 1.0 / wo
    for b in range(n * p // parts, n * (p + 1) // parts):
        zb = dz[b].reshape(size)
        zb[:] = 0.0
        for ohp in range(hp):
            oh0 = ohp * psh - ppt
            for owp in range(wp):
                ow0 = owp * psw - ppl
                am, gs, vs = arg[b, ohp, owp], dp[b, ohp, owp], pv[b, ohp, owp]
                for fo in range(f):  # g, or 0 where the entry is not a cell of the window
                    d = np.float64(am[fo] - np.int32(fo))
                    q = np.floor((d + 0.5) * inv_f)
                    oh = np.floor((q + 0.5) * inv_wo)
                    ow = q - oh * wo
                    ok = (d >= 0) & (d < size) & (q * f == d) & (oh >= oh0) & \
                        (oh < oh0 + ph) & (ow >= ow0) & (ow < ow0 + pw)
                    v = vs[fo]
                    g = gs[fo] if v > _ZERO else v - v
                    g = g if ok else _ZERO
                    gv[fo] = g
                    sums[fo] += g
                for fo in range(f):  # (a zero g adds nothing: skipped)
                    if gv[fo] != _ZERO:
                        zb[am[fo]] += gv[fo]


def _mask_calls(dz, dp, p, argmax, db, pool):
    n, ho, f = dz.shape[0], dz.shape[1], dz.shape[3]
    ph, pw, psh, psw = pool[:4]
    disjoint = psh >= ph and psw >= pw
    parts = min(numba.get_num_threads(), n * ho if disjoint else n) if split(dz.size) else 1
    scratch = _thread_buffer("conv_pool_sums", 2 * parts * f).reshape(2 * parts, f)
    head = (dz, dp, p, argmax, scratch, _NO_DB if db is None else db)

    def args(mode):
        return pack(*head, mode, disjoint, *pool)

    calls = [part_call(_masked_grad_part, args(MASK), parts, head)]
    if db is not None:
        calls.append(part_call(_masked_grad_part, args(SUM_PARTS), 1, head))
    return calls


@bound_op
def conv2d_relu_maxpool_backward(dx, dw, db, dp, p, argmax, x, w, workspace, dz, *,
                                 strides=(1, 1), padding="valid", dilation_rate=(1, 1),
                                 pool_size=(2, 2), pool_strides=None, pool_padding="valid",
                                 columns_ready=False):
    _, pool = pooled_plan(x.shape, w.shape, strides, padding, dilation_rate, pool_size,
                             pool_strides, pool_padding)
    if dx is None and dw is None and db is None:
        return chain([])
    geometry = {"strides": strides, "padding": padding, "dilation_rate": dilation_rate}
    calls = _mask_calls(dz, dp, p, argmax, db, pool)
    if dw is not None:  # first: backward-data overwrites the forward's columns
        calls.append(_conv2d.conv2d_backward_filter.bind(
            dw, None, dz, x, workspace, columns_ready=columns_ready, **geometry))
    if dx is not None:
        calls.append(_conv2d.conv2d_backward_data.bind(dx, dz, w, workspace, **geometry))
    return chain(calls)
