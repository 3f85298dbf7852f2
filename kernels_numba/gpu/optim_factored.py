"""CUDA kernel for kernels_numba.ops.optim_factored: Adafactor's update of one variable
by one block of 256 threads (phases separated by barriers; the two rms sums are the
block's tree reduction in a fixed order, so the update is deterministic)."""

import math

from numba import float32

from kernels_numba._cuda import cuda, kernel, launch
from kernels_numba.cpu.optim_factored import views

_THREADS = 256
F32_3D = "float32[:, :, ::1]"
F32_2D = "float32[:, ::1]"


# kernels

@kernel(f"void({F32_3D}, {F32_3D}, {F32_2D}, {F32_2D}, {F32_3D}, float32[::1], float32[::1], "
        f"float32, float32, float32, boolean, boolean)")
def _adafactor_kernel(w, g, r, c, v, ws, s, eps1, eps2, clip, factored, zero_grad):
    sh = cuda.shared.array(_THREADS, float32)
    t = cuda.threadIdx.x
    rho, beta, decay = s[0], s[1], s[2]
    nb, nr, nc = w.shape[0], w.shape[1], w.shape[2]
    plane = nr * nc
    total = nb * plane
    n = float32(total)
    part = float32(0.0)
    for k in range(t, total, _THREADS):
        b = k // plane
        i = (k - b * plane) // nc
        j = k - b * plane - i * nc
        x = w[b, i, j] - w[b, i, j] * decay
        w[b, i, j] = x
        part += x * x
    sh[t] = part
    cuda.syncthreads()
    stride = _THREADS // 2
    while stride > 0:
        if t < stride:
            sh[t] += sh[t + stride]
        cuda.syncthreads()
        stride //= 2
    alpha = max(eps2, math.sqrt(sh[0] / n)) * rho
    cuda.syncthreads()
    keep = float32(1.0) - beta
    if factored:
        for k in range(t, nb * nr, _THREADS):
            b = k // nr
            i = k - b * nr
            acc = float32(0.0)
            for j in range(nc):
                acc += g[b, i, j] * g[b, i, j] + eps1
            r[b, i] = beta * r[b, i] + keep * (acc / float32(nc))
        for k in range(t, nb * nc, _THREADS):
            b = k // nc
            j = k - b * nc
            acc = float32(0.0)
            for i in range(nr):
                acc += g[b, i, j] * g[b, i, j] + eps1
            c[b, j] = beta * c[b, j] + keep * (acc / float32(nr))
        cuda.syncthreads()
        for b in range(t, nb, _THREADS):
            acc = float32(0.0)
            for i in range(nr):
                acc += r[b, i]
            ws[b] = acc / float32(nr)
        cuda.syncthreads()
        for k in range(t, total, _THREADS):
            b = k // plane
            i = (k - b * plane) // nc
            j = k - b * plane - i * nc
            v[b, i, j] = (r[b, i] / ws[b]) * c[b, j]
    else:
        for k in range(t, total, _THREADS):
            b = k // plane
            i = (k - b * plane) // nc
            j = k - b * plane - i * nc
            v[b, i, j] = beta * v[b, i, j] + keep * (g[b, i, j] * g[b, i, j] + eps1)
    cuda.syncthreads()
    part = float32(0.0)
    for k in range(t, total, _THREADS):
        b = k // plane
        i = (k - b * plane) // nc
        j = k - b * plane - i * nc
        u = g[b, i, j] / math.sqrt(v[b, i, j])
        part += u * u
    sh[t] = part
    cuda.syncthreads()
    stride = _THREADS // 2
    while stride > 0:
        if t < stride:
            sh[t] += sh[t + stride]
        cuda.syncthreads()
        stride //= 2
    scale = max(float32(1.0), math.sqrt(sh[0] / n) / clip)
    for k in range(t, total, _THREADS):
        b = k // plane
        i = (k - b * plane) // nc
        j = k - b * plane - i * nc
        w[b, i, j] -= alpha * ((g[b, i, j] / math.sqrt(v[b, i, j])) / scale)
        if zero_grad:
            g[b, i, j] = float32(0.0)


# launchers

def adafactor_update(w, g, r, c, v, workspace, s, eps1, eps2, clip, zero_grad):
    w3, g3, r2, c2, v3, factored = views(w, g, r, c, v, workspace)
    launch(_adafactor_kernel, 1, _THREADS, w3, g3, r2, c2, v3, workspace, s, eps1, eps2, clip,
           factored, zero_grad)
