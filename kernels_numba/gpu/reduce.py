"""CUDA kernels for kernels_numba.ops.reduce: one thread per output walks its reduced
axes in order (float32 accumulators; deterministic, no atomics). Gradients: one thread
per input element (sum, mean, logsumexp), or one per output that counts its ties and
then writes its own slice (max, min: disjoint writes)."""

import math

from numba import float32

from kernels_numba._cuda import cuda, device_function, kernel, launch
from kernels_numba.gpu._strided import F32_1D, I64_1D, device_meta, extent, flat, grid_for, offset

SUM, MEAN, MAX, MIN, ARGMAX, ARGMIN, LSE = range(7)
_INF = float32(math.inf)


@device_function
def _better(code, v, best):
    if best != best:
        return False
    if v != v:
        return True
    return v > best if (code == MAX or code == ARGMAX or code == LSE) else v < best


@kernel(f"void({F32_1D}, {F32_1D}, {I64_1D}, int32, float32)")
def _reduce_kernel(y, x, meta, code, scale):
    nk, nr = meta[0], meta[1]
    count = extent(meta, nk, nr)
    for t in range(cuda.grid(1), y.size, cuda.gridsize(1)):
        base = offset(meta, t, 0, nk, 0)
        if code == SUM or code == MEAN:
            acc = float32(0.0)
            for r in range(count):
                acc += x[base + offset(meta, r, nk, nr, 0)]
            y[t] = acc * scale if code == MEAN else acc
            continue
        best = x[base]
        arg = 0
        for r in range(count):
            v = x[base + offset(meta, r, nk, nr, 0)]
            if _better(code, v, best):
                best = v
                arg = r
        if code == ARGMAX or code == ARGMIN:
            y[t] = float32(arg)
        elif code != LSE or not (best == best and abs(best) < _INF):
            y[t] = best
        else:
            acc = float32(0.0)
            for r in range(count):
                acc += math.exp(x[base + offset(meta, r, nk, nr, 0)] - best)
            y[t] = best + math.log(acc)


@kernel(f"void({F32_1D}, {F32_1D}, {F32_1D}, {F32_1D}, {I64_1D}, int32, float32)")
def _map_grad_kernel(dx, dy, x, y, meta, code, scale):
    nk = meta[0]
    for i in range(cuda.grid(1), dx.size, cuda.gridsize(1)):
        g = dy[offset(meta, i, 0, nk, 0)]
        if code == SUM:
            dx[i] = g
        elif code == MEAN:
            dx[i] = g * scale
        elif code == LSE:
            dx[i] = g * math.exp(x[i] - y[offset(meta, i, 0, nk, 2)])
        else:
            dx[i] = float32(0.0)


@kernel(f"void({F32_1D}, {F32_1D}, {F32_1D}, {F32_1D}, {I64_1D})")
def _extremum_grad_kernel(dx, dy, x, y, meta):
    nk, nr = meta[0], meta[1]
    count = extent(meta, nk, nr)
    for t in range(cuda.grid(1), y.size, cuda.gridsize(1)):
        base = offset(meta, t, 0, nk, 0)
        m = y[t]
        ties = 0
        for r in range(count):
            v = x[base + offset(meta, r, nk, nr, 0)]
            if v == m or (v != v and m != m):
                ties += 1
        share = dy[t] / float32(ties)
        for r in range(count):
            o = base + offset(meta, r, nk, nr, 0)
            v = x[o]
            dx[o] = share if (v == m or (v != v and m != m)) else float32(0.0)


def reduce_axes(y, x, meta, code, scale):
    grid, block = grid_for(y.size)
    launch(_reduce_kernel, grid, block, flat(y), flat(x), device_meta(meta), code, scale)


def reduce_axes_backward(dx, dy, x, y, meta, code, scale):
    if code == MAX or code == MIN:
        grid, block = grid_for(y.size)
        launch(_extremum_grad_kernel, grid, block, flat(dx), flat(dy), flat(x), flat(y),
               device_meta(meta))
    else:
        grid, block = grid_for(dx.size)
        launch(_map_grad_kernel, grid, block, flat(dx), flat(dy), flat(x), flat(y),
               device_meta(meta), code, scale)
