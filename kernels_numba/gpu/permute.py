"""CUDA kernel for kernels_numba.ops.permute: one thread per output element (grid-stride),
consecutive threads on consecutive output elements (coalesced writes)."""

from kernels_numba._cuda import cuda, grid_1d, kernel, launch

F32_1D = "float32[::1]"
_MAX_THREADS = 65536 * 256


@kernel(f"void({F32_1D}, {F32_1D}, " + ", ".join(["int64"] * 8) + ")")
def _permute_kernel(y, x, o0, o1, o2, o3, s0, s1, s2, s3):
    per = o0 * o1 * o2 * o3
    for idx in range(cuda.grid(1), y.size, cuda.gridsize(1)):
        q = idx
        i3 = q % o3
        q //= o3
        i2 = q % o2
        q //= o2
        i1 = q % o1
        q //= o1
        i0 = q % o0
        b = q // o0
        y[idx] = x[b * per + i0 * s0 + i1 * s1 + i2 * s2 + i3 * s3]


def permute_axes(y, x, *plan):
    grid, block = grid_1d(min(max(y.size, 1), _MAX_THREADS))
    launch(_permute_kernel, grid, block, y.reshape(y.size), x.reshape(x.size), *plan)


permute_axes_backward = permute_axes
