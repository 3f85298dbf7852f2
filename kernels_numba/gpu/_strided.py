"""CUDA helpers for the strided descriptors of kernels_numba._strided.

One thread per kept index (grid-stride); a thread unravels its index once per operand
and walks any reduced dimensions itself, in order (deterministic, no atomics).
Descriptors live on the device, copied once per distinct descriptor (cached by value).
"""

from kernels_numba._cuda import cuda, device_function, grid_1d

I64_1D = "int64[::1]"
F32_1D = "float32[::1]"
MAX_THREADS = 65536 * 256
_device_metas = {}


@device_function
def offset(meta, lin, first, num, j):
    """Offset of operand j for linear index `lin` over dimensions [first, first + num)."""
    n = meta[0] + meta[1]
    base = 3 + n * (1 + j)
    o = 0
    d = first + num - 1
    while d >= first:
        size = meta[3 + d]
        o += (lin % size) * meta[base + d]
        lin //= size
        d -= 1
    return o


@device_function
def extent(meta, first, num):
    total = 1
    for d in range(first, first + num):
        total *= meta[3 + d]
    return total


def device_meta(meta):
    """The device copy of descriptor `meta` (an int64 NumPy array), cached by value."""
    key = meta.tobytes()
    dev = _device_metas.get(key)
    if dev is None:
        dev = _device_metas[key] = cuda.to_device(meta)
    return dev


def grid_for(n):
    return grid_1d(max(1, min(int(n), MAX_THREADS)))


def flat(a):
    return a.reshape(a.size) if a.ndim != 1 else a
