"""CUDA kernels for kernels_numba.ops.layernorm.

One thread per row for the statistics and dx (grid-stride; two passes over the row, as
the CPU twin), one thread per column for dgamma/dbeta (rows summed in order: fixed
order, no atomics; consecutive threads read consecutive columns). A missing gamma,
beta or gradient is a flag plus a dummy buffer the kernel never indexes.
"""

import math

from numba import float32

from kernels_numba._cuda import cuda, device_function, grid_1d, kernel, launch

F32_1D = "float32[::1]"
F32_2D = "float32[:, ::1]"
_MAX_THREADS = 65536 * 256


@device_function
def _denominator(v, eps):
    s = math.sqrt(v)
    return s if (s > eps or s != s) else eps


# kernels

@kernel(f"void({F32_2D}, {F32_1D}, {F32_1D}, {F32_2D}, {F32_1D}, {F32_1D}, float32, "
        "int32, int32)")
def _forward_kernel(y, mean, rstd, x, gamma, beta, eps, has_gamma, has_beta):
    m = x.shape[0]
    c = x.shape[1]
    inv_c = float32(1.0) / float32(c)
    for r in range(cuda.grid(1), m, cuda.gridsize(1)):
        s = float32(0.0)
        for j in range(c):
            s += x[r, j]
        mu = s * inv_c
        q = float32(0.0)
        for j in range(c):
            d = x[r, j] - mu
            q += d * d
        rs = float32(1.0) / math.sqrt(q * inv_c + eps)
        mean[r] = mu
        rstd[r] = rs
        for j in range(c):
            v = (x[r, j] - mu) * rs
            if has_gamma:
                v = v * gamma[j]
            if has_beta:
                v = v + beta[j]
            y[r, j] = v


@kernel(f"void({F32_2D}, {F32_2D}, {F32_2D}, {F32_1D}, {F32_1D}, {F32_1D}, int32)")
def _backward_dx_kernel(dx, dy, x, gamma, mean, rstd, has_gamma):
    m = x.shape[0]
    c = x.shape[1]
    inv_c = float32(1.0) / float32(c)
    for r in range(cuda.grid(1), m, cuda.gridsize(1)):
        mu = mean[r]
        rs = rstd[r]
        sg = float32(0.0)
        sgx = float32(0.0)
        for j in range(c):
            g = dy[r, j] * gamma[j] if has_gamma else dy[r, j]
            sg += g
            sgx += g * (x[r, j] - mu) * rs
        sg *= inv_c
        sgx *= inv_c
        for j in range(c):
            g = dy[r, j] * gamma[j] if has_gamma else dy[r, j]
            dx[r, j] = rs * (g - sg - (x[r, j] - mu) * rs * sgx)


@kernel(f"void({F32_1D}, {F32_1D}, {F32_2D}, {F32_2D}, {F32_1D}, {F32_1D}, int32, int32)")
def _backward_params_kernel(dgamma, dbeta, dy, x, mean, rstd, want_gamma, want_beta):
    m = x.shape[0]
    c = x.shape[1]
    for j in range(cuda.grid(1), c, cuda.gridsize(1)):
        sg = float32(0.0)
        sb = float32(0.0)
        for r in range(m):
            sg += dy[r, j] * (x[r, j] - mean[r]) * rstd[r]
            sb += dy[r, j]
        if want_gamma:
            dgamma[j] += sg
        if want_beta:
            dbeta[j] += sb


@kernel(f"void({F32_2D}, {F32_2D}, {F32_1D}, {F32_1D}, float32, int32)")
def _normalize_kernel(y, x, mean, variance, eps, invert):
    c = x.shape[1]
    for i in range(cuda.grid(1), x.size, cuda.gridsize(1)):
        r = i // c
        j = i - r * c
        d = _denominator(variance[j], eps)
        if invert:
            y[r, j] = mean[j] + x[r, j] * d
        else:
            y[r, j] = (x[r, j] - mean[j]) / d


@kernel(f"void({F32_2D}, {F32_2D}, {F32_1D}, float32, int32)")
def _normalize_backward_kernel(dx, dy, variance, eps, invert):
    c = dy.shape[1]
    for i in range(cuda.grid(1), dy.size, cuda.gridsize(1)):
        r = i // c
        j = i - r * c
        d = _denominator(variance[j], eps)
        dx[r, j] = dy[r, j] * d if invert else dy[r, j] / d


# launchers

def _grid(n):
    return grid_1d(min(max(n, 1), _MAX_THREADS))


def layernorm_forward(y, mean, rstd, x, gamma, beta, eps):
    grid, block = _grid(x.shape[0])
    launch(_forward_kernel, grid, block, y, mean, rstd, x,
           rstd if gamma is None else gamma, rstd if beta is None else beta, eps,
           int(gamma is not None), int(beta is not None))


def layernorm_backward(dx, dgamma, dbeta, dy, x, gamma, mean, rstd):
    # Parameters first: dx may be dy (in place).
    if dgamma is not None or dbeta is not None:
        dummy = dgamma if dgamma is not None else dbeta
        grid, block = _grid(x.shape[1])
        launch(_backward_params_kernel, grid, block, dgamma if dgamma is not None else dummy,
               dbeta if dbeta is not None else dummy, dy, x, mean, rstd,
               int(dgamma is not None), int(dbeta is not None))
    if dx is not None:
        grid, block = _grid(x.shape[0])
        launch(_backward_dx_kernel, grid, block, dx, dy, x,
               rstd if gamma is None else gamma, mean, rstd, int(gamma is not None))


def feature_normalize_forward(y, x, mean, variance, eps, invert):
    grid, block = _grid(x.size)
    launch(_normalize_kernel, grid, block, y, x, mean, variance, eps, int(invert))


def feature_normalize_backward(dx, dy, variance, eps, invert):
    grid, block = _grid(dy.size)
    launch(_normalize_backward_kernel, grid, block, dx, dy, variance, eps, int(invert))
