"""CUDA kernels for kernels_numba.ops.broadcast: one thread per output (or gradient)
element over a strided descriptor (gpu/_strided.py); a gradient thread adds its
broadcast axes in order, so sums are deterministic without atomics. The scalar rules
match the CPU twin's, written as selects so NaN propagates (no fmaxf/fminf).
"""

import math

from numba import float32

from kernels_numba._cuda import cuda, device_function, kernel, launch
from kernels_numba.gpu._strided import F32_1D, I64_1D, device_meta, extent, flat, grid_for, offset

ADD, SUB, MUL, DIV, POW, MAX, MIN, EQ, NE, LT, LE, GT, GE, WHERE = range(14)
_NAN = float32(math.nan)


@device_function
def binary_scalar(code, u, v):
    zero, one = float32(0.0), float32(1.0)
    if code == ADD:
        return u + v
    if code == SUB:
        return u - v
    if code == MUL:
        return u * v
    if code == DIV:
        return u / v
    if code == POW:
        return u ** v
    if code == MAX:
        return u if (u > v or u != u) else v
    if code == MIN:
        return u if (u < v or u != u) else v
    if code == EQ:
        return one if u == v else zero
    if code == NE:
        return one if u != v else zero
    if code == LT:
        return one if u < v else zero
    if code == LE:
        return one if u <= v else zero
    if code == GT:
        return one if u > v else zero
    return one if u >= v else zero


@device_function
def grad_scalar(code, which, g, u, v):
    zero, one = float32(0.0), float32(1.0)
    if code == ADD:
        return g
    if code == SUB:
        return g if which == 0 else -g
    if code == MUL:
        return g * v if which == 0 else g * u
    if code == DIV:
        return g / v if which == 0 else -g * u / (v * v)
    if code == POW:
        if which == 0:
            return g * v * u ** (v - one)
        if u == zero and v >= zero:
            return zero
        if not u > zero:  # log of a negative (or NaN) base: NaN (the simulator's math raises)
            return u if u != u else _NAN
        return g * u ** v * math.log(u)
    if code == MAX or code == MIN:
        if u == v:
            return g * float32(0.5)
        if u != u or v != v:
            return g
        wins = (u > v) if code == MAX else (u < v)
        if which == 1:
            wins = not wins
        return g if wins else zero
    if code == WHERE:
        if which == 0:
            return g if u != zero else zero
        return zero if u != zero else g
    return zero


@kernel(f"void({F32_1D}, {F32_1D}, {F32_1D}, {I64_1D}, int32)")
def _binary_kernel(y, a, b, meta, code):
    nk = meta[0]
    for i in range(cuda.grid(1), y.size, cuda.gridsize(1)):
        y[i] = binary_scalar(code, a[offset(meta, i, 0, nk, 0)], b[offset(meta, i, 0, nk, 1)])


@kernel(f"void({F32_1D}, {F32_1D}, {F32_1D}, {F32_1D}, {I64_1D}, int32, int32)")
def _binary_grad_kernel(t, dy, a, b, meta, code, which):
    nk, nr = meta[0], meta[1]
    reduced = extent(meta, nk, nr)
    for i in range(cuda.grid(1), t.size, cuda.gridsize(1)):
        o0 = offset(meta, i, 0, nk, 0)
        o1 = offset(meta, i, 0, nk, 1)
        o2 = offset(meta, i, 0, nk, 2)
        acc = float32(0.0)
        for r in range(reduced):
            acc += grad_scalar(code, which, dy[o0 + offset(meta, r, nk, nr, 0)],
                               a[o1 + offset(meta, r, nk, nr, 1)],
                               b[o2 + offset(meta, r, nk, nr, 2)])
        t[i] = acc


@kernel(f"void({F32_1D}, {F32_1D}, {F32_1D}, {F32_1D}, {I64_1D})")
def _where_kernel(y, c, a, b, meta):
    nk = meta[0]
    for i in range(cuda.grid(1), y.size, cuda.gridsize(1)):
        if c[offset(meta, i, 0, nk, 0)] != float32(0.0):
            y[i] = a[offset(meta, i, 0, nk, 1)]
        else:
            y[i] = b[offset(meta, i, 0, nk, 2)]


def broadcast_binary(y, a, b, meta, code):
    grid, block = grid_for(y.size)
    launch(_binary_kernel, grid, block, flat(y), flat(a), flat(b), device_meta(meta), code)


def broadcast_binary_backward(t, dy, a, b, meta, code, which):
    grid, block = grid_for(t.size)
    launch(_binary_grad_kernel, grid, block, flat(t), flat(dy), flat(a), flat(b),
           device_meta(meta), code, which)


broadcast_where_backward = broadcast_binary_backward


def broadcast_where(y, cond, a, b, meta):
    grid, block = grid_for(y.size)
    launch(_where_kernel, grid, block, flat(y), flat(cond), flat(a), flat(b),
           device_meta(meta))

