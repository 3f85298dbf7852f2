"""CUDA kernels for kernels_numba.ops.layout: one thread per written element. The take
gradient is a gather (each dx element walks the indices that may name it), so no
thread writes another's element and nothing needs atomics."""

from numba import float32

from kernels_numba._cuda import cuda, device_function, kernel, launch
from kernels_numba.gpu._strided import F32_1D, I64_1D, device_meta, flat, grid_for, offset

_NAN = float32(float("nan"))


@kernel(f"void({F32_1D}, {F32_1D}, {I64_1D}, int64, int64, int64)")
def _copy_kernel(y, x, meta, yo, xo, total):
    nk = meta[0]
    for i in range(cuda.grid(1), total, cuda.gridsize(1)):
        y[yo + offset(meta, i, 0, nk, 0)] = x[xo + offset(meta, i, 0, nk, 1)]


@device_function
def _index(v, d):
    if v != v:
        return -1
    k = int(v)
    if k < 0:
        k += d
    return k if (k >= 0 and k < d) else -1


@kernel(f"void({F32_1D}, {F32_1D}, {F32_1D}, int64, int64, int64)")
def _take_kernel(y, x, idx, outer, d, inner):
    m = idx.size
    for e in range(cuda.grid(1), y.size, cuda.gridsize(1)):
        i = e % inner
        p = (e // inner) % m
        o = e // (inner * m)
        k = _index(idx[p], d)
        y[e] = _NAN if k < 0 else x[(o * d + k) * inner + i]


@kernel(f"void({F32_1D}, {F32_1D}, {F32_1D}, int64, int64, int64)")
def _take_grad_kernel(dx, dy, idx, outer, d, inner):
    m = idx.size
    for e in range(cuda.grid(1), dx.size, cuda.gridsize(1)):
        i = e % inner
        k = (e // inner) % d
        o = e // (inner * d)
        acc = float32(0.0)
        for p in range(m):  # in index order: a fixed sum
            if _index(idx[p], d) == k:
                acc += dy[(o * m + p) * inner + i]
        dx[e] = acc


@kernel(f"void({F32_1D}, {F32_1D}, int64)")
def _one_hot_kernel(y, idx, c):
    for e in range(cuda.grid(1), y.size, cuda.gridsize(1)):
        v = idx[e // c]
        if v != v:
            y[e] = v
        else:
            k = int(v) if (v >= float32(0.0) and v < float32(c)) else -1
            y[e] = float32(1.0) if k == e % c else float32(0.0)


def strided_copy(y, x, meta, y_offset, x_offset):
    total = 1
    for d in range(int(meta[0])):
        total *= int(meta[3 + d])
    grid, block = grid_for(total)
    launch(_copy_kernel, grid, block, flat(y), flat(x), device_meta(meta), y_offset,
           x_offset, total)


def take(y, x, indices, outer, d, inner):
    grid, block = grid_for(y.size)
    launch(_take_kernel, grid, block, flat(y), flat(x), flat(indices), outer, d, inner)


def take_backward(dx, dy, indices, outer, d, inner):
    grid, block = grid_for(dx.size)
    launch(_take_grad_kernel, grid, block, flat(dx), flat(dy), flat(indices), outer, d, inner)


def one_hot(y, indices, num_classes):
    grid, block = grid_for(y.size)
    launch(_one_hot_kernel, grid, block, flat(y), flat(indices), num_classes)
