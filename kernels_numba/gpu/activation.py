"""CUDA kernels for kernels_numba.ops.activation.

Elementwise kinds share one grid-stride kernel per direction; the kind is an int32
code (uniform across the launch, so the branch costs no divergence). Softmax runs
one block per row with shared-memory tree reductions, striding over rows longer
than the block.

NaN propagates as in the CPU twin: a NaN input passes the ReLU selects (`not v <= 0`)
and gets a NaN gradient; softmax rows holding a NaN come out NaN (max may drop it,
but exp(NaN - m) brings it back into the row sum).
"""

import math

from numba import float32, int32

from kernels_numba._cuda import cuda, grid_1d, kernel, launch
from kernels_numba.cpu.activation import SELU_ALPHA, SELU_SCALE
from kernels_numba.ops.activation import KIND_CODES, USES_Y

F32_1D = "float32[::1]"
F32_2D = "float32[:, ::1]"

LINEAR = KIND_CODES["linear"]
RELU = KIND_CODES["relu"]
SIGMOID = KIND_CODES["sigmoid"]
TANH = KIND_CODES["tanh"]
LEAKY_RELU = KIND_CODES["leaky_relu"]
ELU = KIND_CODES["elu"]
GELU = KIND_CODES["gelu"]
SOFTPLUS = KIND_CODES["softplus"]
SILU = KIND_CODES["silu"]
SELU = KIND_CODES["selu"]
RELU6 = KIND_CODES["relu6"]
HARD_SIGMOID = KIND_CODES["hard_sigmoid"]
HARD_SILU = KIND_CODES["hard_silu"]
MISH = KIND_CODES["mish"]
EXPONENTIAL = KIND_CODES["exponential"]
SOFTSIGN = KIND_CODES["softsign"]
_SELU_ALPHA = float(SELU_ALPHA)
_SELU_SCALE = float(SELU_SCALE)

SOFTMAX_MAX_BLOCK = 128  # threads per softmax row (a power of two: tree reduction)


# kernels
# (The math is written inline: a non-inlined device function is compiled for the
# current device, which compile_ptx cannot query without a driver.)

@kernel(f"void({F32_1D}, {F32_1D}, int32, float32)")
def _activation_forward_kernel(y, x, code, alpha):
    zero = float32(0.0)
    one = float32(1.0)
    for i in range(cuda.grid(1), x.size, cuda.gridsize(1)):
        v = x[i]
        if code == RELU:
            v = zero if v <= zero else v  # NaN is not <= 0: it passes through
        elif code == SIGMOID:  # split on the sign: exp never overflows into inf/inf
            e = math.exp(-abs(v))
            v = one / (one + e) if v >= zero else e / (one + e)
        elif code == TANH:
            v = math.tanh(v)
        elif code == LEAKY_RELU:
            v = v if v > zero else alpha * v
        elif code == ELU:
            v = v if v > zero else alpha * math.expm1(v)
        elif code == GELU:
            v = float32(0.5) * v * (one + math.erf(v * float32(0.7071067811865476)))
        elif code == SOFTPLUS:
            v = max(v, zero) + math.log1p(math.exp(-abs(v)))
        elif code == SILU or code == MISH:
            if code == SILU:
                e = math.exp(-abs(v))
                v = v * (one / (one + e) if v >= zero else e / (one + e))
            else:  # softplus spelled out: its max() would drop a NaN, log1p keeps it
                v = v * math.tanh(max(v, zero) + math.log1p(math.exp(-abs(v))))
        elif code == SELU:
            v = float32(_SELU_SCALE) * (v if v > zero else float32(_SELU_ALPHA) * math.expm1(v))
        elif code == RELU6 or code == HARD_SIGMOID or code == HARD_SILU:
            u = v if code == RELU6 else v + float32(3.0)
            # comparisons a NaN fails: it takes the last branch and passes through
            u = zero if u <= zero else (float32(6.0) if u >= float32(6.0) else u)
            if code == HARD_SIGMOID:
                u = u * float32(1.0 / 6.0)
            elif code == HARD_SILU:
                u = v * (u * float32(1.0 / 6.0))
            v = u
        elif code == EXPONENTIAL:
            v = math.exp(v)
        elif code == SOFTSIGN:
            v = v / (abs(v) + one)
        y[i] = v


@kernel(f"void({F32_1D}, {F32_1D}, {F32_1D}, int32, float32)")
def _activation_backward_kernel(dx, dy, s, code, alpha):
    # s is y for relu/sigmoid/tanh and x for the other kinds.
    zero = float32(0.0)
    one = float32(1.0)
    for i in range(cuda.grid(1), dy.size, cuda.gridsize(1)):
        g = dy[i]
        v = s[i]
        if code == RELU:  # v is y: NaN where x was; v - v is +0 for finite v, NaN for NaN
            g = g if v > zero else v - v
        elif code == SIGMOID:
            g = g * v * (one - v)
        elif code == TANH:
            g = g * (one - v * v)
        elif code == LEAKY_RELU:
            g = g if v > zero else (alpha * g if v <= zero else v)
        elif code == ELU:
            g = g if v > zero else g * alpha * math.exp(v)
        elif code == GELU:
            cdf = float32(0.5) * (one + math.erf(v * float32(0.7071067811865476)))
            g = g * (cdf + v * float32(0.3989422804014327) * math.exp(float32(-0.5) * v * v))
        elif code == SOFTPLUS:
            e = math.exp(-abs(v))
            g = g * (one / (one + e) if v >= zero else e / (one + e))
        elif code == SILU or code == MISH:
            e = math.exp(-abs(v))
            sig = one / (one + e) if v >= zero else e / (one + e)
            if code == SILU:
                g = g * (sig * (one + v * (one - sig)))
            else:
                t = math.tanh(max(v, zero) + math.log1p(e))
                g = g * (t + v * sig * (one - t * t))
        elif code == SELU:
            scale = float32(_SELU_SCALE)
            g = g * scale if v > zero else g * (scale * float32(_SELU_ALPHA) * math.exp(v))
        elif code == RELU6 or code == HARD_SIGMOID or code == HARD_SILU:
            lo = zero if code == RELU6 else float32(-3.0)
            hi = float32(6.0) if code == RELU6 else float32(3.0)
            if code == HARD_SIGMOID:
                d = float32(1.0 / 6.0)
            elif code == HARD_SILU:
                d = (v + v + float32(3.0)) * float32(1.0 / 6.0)
            else:
                d = one
            if code == HARD_SILU and v >= hi:
                g = g  # x above 3: hard_silu is x
            elif v > lo and v < hi:
                g = g * d
            else:  # 0 outside the window, NaN for a NaN v
                g = zero if (v <= lo or v >= hi) else v - v
        elif code == EXPONENTIAL:
            g = g * math.exp(v)
        elif code == SOFTSIGN:
            d = one + abs(v)
            g = g / (d * d)
        dx[i] = g


@kernel(f"void({F32_2D}, {F32_2D})")
def _softmax_forward_kernel(y, x):
    # One block per row (grid-strided); blockDim.x is a power of two <= SOFTMAX_MAX_BLOCK.
    buf = cuda.shared.array(SOFTMAX_MAX_BLOCK, float32)
    t = cuda.threadIdx.x
    nt = cuda.blockDim.x
    n = x.shape[1]
    for r in range(cuda.blockIdx.x, x.shape[0], cuda.gridDim.x):
        m = x[r, 0]  # n >= 1: the launcher skips empty buffers
        for j in range(t, n, nt):
            m = max(m, x[r, j])
        buf[t] = m
        cuda.syncthreads()
        step = nt // 2
        while step > 0:  # tree max
            if t < step:
                buf[t] = max(buf[t], buf[t + step])
            cuda.syncthreads()
            step //= 2
        m = buf[0]
        cuda.syncthreads()
        total = float32(0.0)
        for j in range(t, n, nt):
            e = math.exp(x[r, j] - m)  # subtracting the row max: no overflow
            y[r, j] = e  # each thread rereads only the elements it wrote
            total += e
        buf[t] = total
        cuda.syncthreads()
        step = nt // 2
        while step > 0:  # tree sum
            if t < step:
                buf[t] += buf[t + step]
            cuda.syncthreads()
            step //= 2
        inv = float32(1.0) / buf[0]
        cuda.syncthreads()
        for j in range(t, n, nt):
            y[r, j] *= inv


@kernel(f"void({F32_2D}, {F32_2D}, {F32_2D})")
def _softmax_backward_kernel(dx, dy, y):
    buf = cuda.shared.array(SOFTMAX_MAX_BLOCK, float32)
    t = cuda.threadIdx.x
    nt = cuda.blockDim.x
    n = dy.shape[1]
    for r in range(cuda.blockIdx.x, dy.shape[0], cuda.gridDim.x):
        dot = float32(0.0)
        for j in range(t, n, nt):
            dot += dy[r, j] * y[r, j]
        buf[t] = dot
        cuda.syncthreads()
        step = nt // 2
        while step > 0:  # tree sum of dy * y over the row
            if t < step:
                buf[t] += buf[t + step]
            cuda.syncthreads()
            step //= 2
        dot = buf[0]
        cuda.syncthreads()
        for j in range(t, n, nt):  # dx may be dy: each element read before it is written
            dx[r, j] = y[r, j] * (dy[r, j] - dot)


@kernel(f"void({F32_2D}, {F32_2D})")
def _log_softmax_forward_kernel(y, x):
    # As the softmax kernel: one block per row, tree max then tree sum of exp(x - max).
    buf = cuda.shared.array(SOFTMAX_MAX_BLOCK, float32)
    t = cuda.threadIdx.x
    nt = cuda.blockDim.x
    n = x.shape[1]
    for r in range(cuda.blockIdx.x, x.shape[0], cuda.gridDim.x):
        m = x[r, 0]
        for j in range(t, n, nt):
            m = max(m, x[r, j])
        buf[t] = m
        cuda.syncthreads()
        step = nt // 2
        while step > 0:
            if t < step:
                buf[t] = max(buf[t], buf[t + step])
            cuda.syncthreads()
            step //= 2
        m = buf[0]
        cuda.syncthreads()
        total = float32(0.0)
        for j in range(t, n, nt):
            total += math.exp(x[r, j] - m)
        buf[t] = total
        cuda.syncthreads()
        step = nt // 2
        while step > 0:
            if t < step:
                buf[t] += buf[t + step]
            cuda.syncthreads()
            step //= 2
        lse = m + math.log(buf[0])  # a NaN in the row reaches the sum: the row is NaN
        cuda.syncthreads()
        for j in range(t, n, nt):  # y may be x: each element read before it is written
            y[r, j] = x[r, j] - lse


@kernel(f"void({F32_2D}, {F32_2D}, {F32_2D})")
def _log_softmax_backward_kernel(dx, dy, y):
    # dx = dy - softmax * sum(dy), softmax = exp(y).
    buf = cuda.shared.array(SOFTMAX_MAX_BLOCK, float32)
    t = cuda.threadIdx.x
    nt = cuda.blockDim.x
    n = dy.shape[1]
    for r in range(cuda.blockIdx.x, dy.shape[0], cuda.gridDim.x):
        total = float32(0.0)
        for j in range(t, n, nt):
            total += dy[r, j]
        buf[t] = total
        cuda.syncthreads()
        step = nt // 2
        while step > 0:
            if t < step:
                buf[t] += buf[t + step]
            cuda.syncthreads()
            step //= 2
        total = buf[0]
        cuda.syncthreads()
        for j in range(t, n, nt):
            dx[r, j] = dy[r, j] - math.exp(y[r, j]) * total


# launchers

def _flat(a):
    return a.reshape(a.size)


def _rows(a):
    n = a.shape[len(a.shape) - 1]  # the simulator's shapes reject negative indices
    return a.reshape(a.size // n, n)


def _softmax_config(rows, n):
    block = 32
    while block < n and block < SOFTMAX_MAX_BLOCK:
        block *= 2
    return min(rows, 65535), block


def activation_forward(y, x, *, kind, alpha=0.0):
    if x.size == 0:
        return
    if kind in ("softmax", "log_softmax"):
        xr, yr = _rows(x), _rows(y)
        grid, block = _softmax_config(*xr.shape)
        k = _softmax_forward_kernel if kind == "softmax" else _log_softmax_forward_kernel
        launch(k, grid, block, yr, xr)
        return
    grid, block = grid_1d(min(x.size, 65536 * 256))
    launch(_activation_forward_kernel, grid, block, _flat(y), _flat(x),
           int32(KIND_CODES[kind]), float32(alpha))


def activation_backward(dx, dy, x, y, *, kind, alpha=0.0):
    if dy.size == 0:
        return
    if kind in ("softmax", "log_softmax"):
        dxr, dyr, yr = _rows(dx), _rows(dy), _rows(y)
        grid, block = _softmax_config(*dyr.shape)
        k = _softmax_backward_kernel if kind == "softmax" else _log_softmax_backward_kernel
        launch(k, grid, block, dxr, dyr, yr)
        return
    s = dy if kind == "linear" else (y if kind in USES_Y else x)
    grid, block = grid_1d(min(dy.size, 65536 * 256))
    launch(_activation_backward_kernel, grid, block, _flat(dx), _flat(dy), _flat(s),
           int32(KIND_CODES[kind]), float32(alpha))
