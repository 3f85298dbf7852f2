"""CPU twin of kernels_numba.ops.constraint, and the per-group factor both devices share.

w is viewed as (outer, reduced, inner). Work is cut into units of one outer index and a
tile of up to TILE inner columns, so every pass reads rows of w contiguously: each
column's sum of squares is added in reduced order in float64 (in a host buffer, one
slot per group), turned into its factor, then the tile is rescaled. A group's result
does not depend on the tiling, the thread count or the path.
"""

import math

import numba
import numpy as np
from llvmlite import ir
from numba.core import types

from kernels_numba.cpu._parallel import (
    _pointer_intrinsic,
    f32_1d,
    f32_bits,
    from_f32_bits,
    lazy_part,
    pack,
    run_parts,
    split,
)
from kernels_numba.ops.constraint import MAX, UNIT

_ZERO = np.float32(0.0)
_ONE = np.float32(1.0)
_EPS = np.float32(1e-7)  # keras.backend.epsilon()
TILE = 256
_f64_pointer = _pointer_intrinsic(types.float64, ir.DoubleType())


def factor(norm, mode, lo, hi, rate):
    """What each element of a group with this norm is multiplied by (Keras's formulas;
    clip keeps NaN, as ops.clip)."""
    if mode == UNIT:
        return _ONE / (_EPS + norm)
    clipped = norm
    if norm < lo:
        clipped = lo
    if norm > hi:
        clipped = hi
    if mode == MAX:
        return clipped / (_EPS + norm)
    desired = rate * clipped + (_ONE - rate) * norm  # MIN_MAX
    return desired / (_EPS + norm)


_factor = numba.njit(inline="always")(factor)


@lazy_part
def _rescale_part(args, p, parts):
    a = numba.carray(args, 11)
    w = f32_1d(a, 0)
    acc_all = numba.carray(_f64_pointer(a[2]), (a[3],))
    outer, reduced, inner, mode = a[4], a[5], a[6], a[7]
    lo, hi, rate = from_f32_bits(a[8]), from_f32_bits(a[9]), from_f32_bits(a[10])
    if inner == 1:  # norms over trailing axes: each group is one contiguous run
        for o in range(outer * p // parts, outer * (p + 1) // parts):
            seg = w[o * reduced:(o + 1) * reduced]
            s = 0.0
            for r in range(seg.size):
                v = np.float64(seg[r])
                s += v * v
            f = _factor(np.float32(math.sqrt(s)), mode, lo, hi, rate)
            for r in range(seg.size):
                seg[r] = seg[r] * f
        return
    ntile = (inner + TILE - 1) // TILE
    units = outer * ntile
    for u in range(units * p // parts, units * (p + 1) // parts):
        o, t = u // ntile, u % ntile
        i0 = t * TILE
        width = min(inner - i0, TILE)
        acc = acc_all[o * inner + i0:o * inner + i0 + width]  # slices: see cpu.regularize
        for i in range(width):
            acc[i] = 0.0
        for r in range(reduced):
            row = w[(o * reduced + r) * inner + i0:(o * reduced + r) * inner + i0 + width]
            for i in range(width):
                v = np.float64(row[i])
                acc[i] += v * v
        for i in range(width):
            acc[i] = _factor(np.float32(math.sqrt(acc[i])), mode, lo, hi, rate)
        for r in range(reduced):
            row = w[(o * reduced + r) * inner + i0:(o * reduced + r) * inner + i0 + width]
            for i in range(width):
                row[i] = row[i] * np.float32(acc[i])


@lazy_part
def _non_neg_part(args, p, parts):
    a = numba.carray(args, 2)
    w = f32_1d(a, 0)
    ws = w[w.size * p // parts:w.size * (p + 1) // parts]
    for j in range(ws.size):
        if ws[j] < _ZERO:  # NaN compares false: kept, as Keras's ops.maximum
            ws[j] = _ZERO


def _run(part, args, work, units):
    if split(work) and units > 1:
        run_parts(part, args, min(units, numba.get_num_threads()))
    else:
        part.serial(args)


def rescale(w, outer, reduced, inner, mode, lo, hi, rate):
    acc = np.empty(max(1, outer * inner) if inner > 1 else 1, np.float64)  # a slot a group
    args = pack(w.reshape(w.size), acc.ctypes.data, acc.size, outer, reduced, inner,
                int(mode), f32_bits(lo), f32_bits(hi), f32_bits(rate))
    _run(_rescale_part, args, w.size, outer * -(-inner // TILE))


def non_neg(w):
    _run(_non_neg_part, pack(w.reshape(w.size)), w.size, w.size)
