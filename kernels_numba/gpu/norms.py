"""CUDA kernels for kernels_numba.ops.norms: deterministic segmented sums of squares
(fixed blocks per segment, fixed-tree block sums, partials added in index order by one
thread per segment: no float atomics) and the clipping scales (cpu.norms's formulas).
"""

import numpy as np
from numba import float32

from kernels_numba._cuda import MAX_GRID_YZ, ceil_div, cuda, device_function, kernel, launch
from kernels_numba.cpu import norms as _math
from kernels_numba.gpu.optim import grad_args
from kernels_numba.gpu.reduction import BLOCK, block_sum, cached_scratch
from kernels_numba.ops.norms import parts_for

F32_1D = "float32[::1]"
SEG = "int64[:, ::1]"
_ZERO = float32(0.0)

_each_scale = device_function(_math.each_scale, inline="always")
_global_scale = device_function(_math.global_scale, inline="always")


@kernel(f"void({F32_1D}, {F32_1D}, {SEG}, boolean)")
def _partials_kernel(part, x, segments, whole):
    buf = cuda.shared.array(BLOCK, float32)
    if cuda.blockDim.x > BLOCK:  # larger than the shared buffer: refuse, never overrun
        return
    k = cuda.blockIdx.y
    parts = cuda.gridDim.x
    start, end = 0, x.size
    if not whole:
        start = max(segments[k, 0], 0)
        end = min(segments[k, 1], x.size)
    acc = _ZERO
    j = start + cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    stride = parts * cuda.blockDim.x
    while j < end:
        v = x[j]
        acc += v * v
        j += stride
    total = block_sum(buf, acc)  # every thread reaches it: the loop above has no sync
    if cuda.threadIdx.x == 0:
        part[k * parts + cuda.blockIdx.x] = total


@kernel(f"void({F32_1D}, {F32_1D}, int32)")
def _finish_kernel(out, part, parts):
    k = cuda.grid(1)
    if k < out.size:
        s = _ZERO
        for c in range(parts):
            s += part[k * parts + c]
        out[k] = s


@kernel(f"void({F32_1D}, {F32_1D}, float32, boolean)")
def _scales_kernel(scales, s, clipnorm, global_norm):
    k = cuda.grid(1)
    if global_norm:
        if k == 0:
            total = _ZERO
            for j in range(s.size):
                total += s[j]
            scale = _global_scale(total, clipnorm)
            for j in range(scales.size):
                scales[j] = scale
    elif k < s.size:
        scales[k] = _each_scale(s[k], clipnorm)


def sum_squares(out, x, segments, workspace):
    n_seg = out.shape[0]
    whole = segments is None
    if whole:
        segments = grad_args((0, 0.0, None, None))[3]  # the cached stand-in
    parts = parts_for(x.size)
    part = out
    if parts > 1:
        ws = cached_scratch(parts * n_seg) if workspace is None else workspace
        part = ws[:parts * n_seg]
    if n_seg > MAX_GRID_YZ:  # one grid row per segment
        raise ValueError(f"sum_squares: expected at most {MAX_GRID_YZ} segments (CUDA's "
                         f"gridDim.y limit); received {n_seg}")
    launch(_partials_kernel, (parts, n_seg), BLOCK, part, x.reshape(x.size), segments, whole)
    if parts > 1:
        launch(_finish_kernel, ceil_div(n_seg, 128), 128, out, part, np.int32(parts))


def clip_norm_scales(scales, sum_squares, *, clipnorm, global_norm):
    n = sum_squares.shape[0]
    launch(_scales_kernel, ceil_div(n, 128), 128, scales, sum_squares, clipnorm, global_norm)
