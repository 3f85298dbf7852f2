"""CUDA kernels for kernels_numba.ops.regularize: one block per part writes each element's
gradient term (every element has one thread: no atomics) and its part's two partial sums
(fixed tree); one thread adds the partials in index order into the penalty.
"""

import numpy as np
from numba import float32

from kernels_numba._cuda import cuda, device_function, kernel, launch
from kernels_numba.cpu import regularize as _math
from kernels_numba.gpu.reduction import BLOCK, block_sum, cached_scratch
from kernels_numba.ops.regularize import parts_for

F32_1D = "float32[::1]"
_ZERO = float32(0.0)

_grad_term = device_function(_math.grad_term, inline="always")
_total = device_function(_math.total, inline="always")


@kernel(f"void({F32_1D}, {F32_1D}, {F32_1D}, float32, float32, float32, boolean)")
def _partials_kernel(part, grad, x, l1, l2, scale, has_grad):
    buf = cuda.shared.array(BLOCK, float32)
    if cuda.blockDim.x > BLOCK:  # larger than the shared buffer: refuse, never overrun
        return
    parts = cuda.gridDim.x
    a = _ZERO
    b = _ZERO
    j = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    stride = parts * cuda.blockDim.x
    while j < x.size:
        v = x[j]
        if has_grad and j < grad.size:
            grad[j] += _grad_term(v, l1, l2, scale)
        a += abs(v)
        b += v * v
        j += stride
    s1 = block_sum(buf, a)  # every thread reaches both: the loop above has no sync
    s2 = block_sum(buf, b)
    k = cuda.blockIdx.x
    if cuda.threadIdx.x == 0 and 2 * k + 1 < part.size:
        part[2 * k] = s1
        part[2 * k + 1] = s2


@kernel(f"void({F32_1D}, {F32_1D}, int32, float32, float32, float32)")
def _finish_kernel(penalty, part, parts, l1, l2, scale):
    if cuda.grid(1) == 0:
        s1 = _ZERO
        s2 = _ZERO
        for k in range(min(parts, part.size // 2)):
            s1 += part[2 * k]
            s2 += part[2 * k + 1]
        penalty[0] += _total(s1, s2, l1, l2, scale)


_NO_GRAD = []


def _no_grad():
    if not _NO_GRAD:
        from kernels_numba import device

        _NO_GRAD.append(device.zeros((1,), device=device.CUDA))
    return _NO_GRAD[0]


def penalty(penalty, grad, x, l1, l2, scale, workspace):
    parts = parts_for(x.size)
    ws = cached_scratch(2 * parts) if workspace is None else workspace
    has_grad = grad is not None
    g = grad.reshape(grad.size) if has_grad else _no_grad()
    launch(_partials_kernel, parts, BLOCK, ws, g, x.reshape(x.size), l1, l2, scale, has_grad)
    launch(_finish_kernel, 1, 32, penalty, ws, np.int32(parts), l1, l2, scale)
