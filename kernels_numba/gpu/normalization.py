"""CUDA kernels for kernels_numba.ops.normalization on (M, C) views.

Training forward and backward run one block per channel (grid-stride over
channels): the block reduces its channel's M rows in shared memory (two passes
for a stable variance), thread 0 writes the per-channel results, then the same
block writes the channel's outputs, so each op is one launch and needs no
workspace. Inference and its backward are elementwise grid-stride loops.
"""

import math

from numba import float32

from kernels_numba._cuda import cuda, grid_1d, kernel, launch
from kernels_numba.gpu.reduction import BLOCK, block_sum

F32_1D = "float32[::1]"
F32_2D = "float32[:, ::1]"
MAX_GRID = 65535
_ZERO = float32(0.0)
_ONE = float32(1.0)


# kernels


@kernel(
    f"void({F32_2D}, {F32_1D}, {F32_1D}, {F32_1D}, {F32_1D}, "
    f"{F32_2D}, {F32_1D}, {F32_1D}, float32, float32)"
)
def _train_kernel(y, mean, rstd, moving_mean, moving_var, x, gamma, beta, momentum, epsilon):
    buf = cuda.shared.array(BLOCK, float32)
    if cuda.blockDim.x > BLOCK:  # larger than the shared buffer: refuse, never overrun
        return
    tid = cuda.threadIdx.x
    nt = cuda.blockDim.x
    m, channels = x.shape
    inv_m = _ONE / float32(m)
    for c in range(cuda.blockIdx.x, channels, cuda.gridDim.x):
        s = _ZERO
        for r in range(tid, m, nt):
            s += x[r, c]
        mu = block_sum(buf, s) * inv_m
        s = _ZERO
        for r in range(tid, m, nt):
            d = x[r, c] - mu
            s += d * d
        var = block_sum(buf, s) * inv_m
        rs = _ONE / math.sqrt(var + epsilon)
        if tid == 0:
            mean[c] = mu
            rstd[c] = rs
            moving_mean[c] = moving_mean[c] * momentum + mu * (_ONE - momentum)
            moving_var[c] = moving_var[c] * momentum + var * (_ONE - momentum)
        # All reads of x for this channel finished inside block_sum: y may be x.
        factor = rs * gamma[c]
        shift = beta[c]
        for r in range(tid, m, nt):
            y[r, c] = (x[r, c] - mu) * factor + shift


@kernel(f"void({F32_2D}, {F32_2D}, {F32_1D}, {F32_1D}, {F32_1D}, {F32_1D}, float32)")
def _infer_kernel(y, x, gamma, beta, moving_mean, moving_var, epsilon):
    m, channels = x.shape
    for i in range(cuda.grid(1), m * channels, cuda.gridsize(1)):
        r = i // channels
        c = i - r * channels
        factor = gamma[c] / math.sqrt(moving_var[c] + epsilon)
        y[r, c] = (x[r, c] - moving_mean[c]) * factor + beta[c]


@kernel(f"void({F32_2D}, {F32_2D}, {F32_1D}, {F32_1D}, float32)")
def _backward_infer_kernel(dx, dy, gamma, moving_var, epsilon):
    m, channels = dy.shape
    for i in range(cuda.grid(1), m * channels, cuda.gridsize(1)):
        r = i // channels
        c = i - r * channels
        factor = gamma[c] / math.sqrt(moving_var[c] + epsilon)  # as _infer_kernel
        dx[r, c] = dy[r, c] * factor


@kernel(f"void({F32_2D}, {F32_1D}, {F32_1D}, {F32_2D}, {F32_2D}, {F32_1D}, {F32_1D}, {F32_1D})")
def _backward_kernel(dx, dgamma, dbeta, dy, x, gamma, mean, rstd):
    buf = cuda.shared.array(BLOCK, float32)
    if cuda.blockDim.x > BLOCK:  # larger than the shared buffer: refuse, never overrun
        return
    tid = cuda.threadIdx.x
    nt = cuda.blockDim.x
    m, channels = x.shape
    inv_m = _ONE / float32(m)
    for c in range(cuda.blockIdx.x, channels, cuda.gridDim.x):
        mu = mean[c]
        rs = rstd[c]
        s_dy = _ZERO
        s_dy_xhat = _ZERO
        for r in range(tid, m, nt):
            g = dy[r, c]
            s_dy += g
            s_dy_xhat += g * (x[r, c] - mu) * rs
        sum_dy = block_sum(buf, s_dy)
        sum_dy_xhat = block_sum(buf, s_dy_xhat)
        if tid == 0:
            dgamma[c] += sum_dy_xhat
            dbeta[c] += sum_dy
        mean_dy = sum_dy * inv_m
        mean_dy_xhat = sum_dy_xhat * inv_m
        factor = gamma[c] * rs
        for r in range(tid, m, nt):
            xhat = (x[r, c] - mu) * rs
            dx[r, c] = factor * (dy[r, c] - mean_dy - xhat * mean_dy_xhat)


# launchers


def _channels(a):
    return tuple(a.shape)[-1]  # the simulator's shape object rejects negative indices


def _as_2d(a):
    c = _channels(a)
    return a.reshape(a.size // c, c)


def batchnorm_forward_train(
    y, mean, rstd, moving_mean, moving_var, x, gamma, beta, *, momentum, epsilon
):
    grid = min(_channels(x), MAX_GRID)
    launch(
        _train_kernel,
        grid,
        BLOCK,
        _as_2d(y),
        mean,
        rstd,
        moving_mean,
        moving_var,
        _as_2d(x),
        gamma,
        beta,
        float32(momentum),
        float32(epsilon),
    )


def batchnorm_forward_infer(y, x, gamma, beta, moving_mean, moving_var, *, epsilon):
    grid, block = grid_1d(min(x.size, 65536 * 256))
    launch(
        _infer_kernel,
        grid,
        block,
        _as_2d(y),
        _as_2d(x),
        gamma,
        beta,
        moving_mean,
        moving_var,
        float32(epsilon),
    )


def batchnorm_backward(dx, dgamma, dbeta, dy, x, gamma, mean, rstd):
    grid = min(_channels(x), MAX_GRID)
    launch(
        _backward_kernel,
        grid,
        BLOCK,
        _as_2d(dx),
        dgamma,
        dbeta,
        _as_2d(dy),
        _as_2d(x),
        gamma,
        mean,
        rstd,
    )


def batchnorm_backward_infer(dx, dy, gamma, moving_var, *, epsilon):
    grid, block = grid_1d(min(dy.size, 65536 * 256))
    launch(
        _backward_infer_kernel, grid, block, _as_2d(dx), _as_2d(dy), gamma, moving_var,
        float32(epsilon),
    )
