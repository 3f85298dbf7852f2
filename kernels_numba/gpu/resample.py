"""CUDA kernels for kernels_numba.ops.resample: one thread per output element
(grid-stride), consecutive threads on consecutive channels (coalesced)."""

from numba import float32

from kernels_numba._cuda import cuda, grid_1d, kernel, launch

F32_4D = "float32[:, :, :, ::1]"
_MAX_THREADS = 65536 * 256


# kernels

@kernel(f"void({F32_4D}, {F32_4D}, int64, int64)")
def _upsample_kernel(y, x, sh, sw):
    ho = y.shape[1]
    wo = y.shape[2]
    c = y.shape[3]
    for idx in range(cuda.grid(1), y.size, cuda.gridsize(1)):
        ch = idx % c
        p = idx // c
        j = p % wo
        p = p // wo
        i = p % ho
        b = p // ho
        y[b, i, j, ch] = x[b, i // sh, j // sw, ch]


@kernel(f"void({F32_4D}, {F32_4D}, int64, int64)")
def _upsample_backward_kernel(dx, dy, sh, sw):
    h = dx.shape[1]
    w = dx.shape[2]
    c = dx.shape[3]
    for idx in range(cuda.grid(1), dx.size, cuda.gridsize(1)):
        ch = idx % c
        p = idx // c
        j = p % w
        p = p // w
        i = p % h
        b = p // h
        s = float32(0.0)
        for a in range(sh):
            for e in range(sw):
                s += dy[b, i * sh + a, j * sw + e, ch]
        dx[b, i, j, ch] = s


@kernel(f"void({F32_4D}, {F32_4D}, int64, int64)")
def _window_kernel(y, x, oh, ow):
    ho = y.shape[1]
    wo = y.shape[2]
    c = y.shape[3]
    h = x.shape[1]
    w = x.shape[2]
    for idx in range(cuda.grid(1), y.size, cuda.gridsize(1)):
        ch = idx % c
        p = idx // c
        j = p % wo
        p = p // wo
        i = p % ho
        b = p // ho
        si = i + oh
        sj = j + ow
        v = float32(0.0)
        if si >= 0 and si < h and sj >= 0 and sj < w:
            v = x[b, si, sj, ch]
        y[b, i, j, ch] = v


# launchers

def _grid(n):
    return grid_1d(min(max(n, 1), _MAX_THREADS))


def upsampling2d_forward(y, x, sh, sw):
    grid, block = _grid(y.size)
    launch(_upsample_kernel, grid, block, y, x, sh, sw)


def upsampling2d_backward(dx, dy, sh, sw):
    grid, block = _grid(dx.size)
    launch(_upsample_backward_kernel, grid, block, dx, dy, sh, sw)


def window_copy(y, x, oh, ow):
    grid, block = _grid(y.size)
    launch(_window_kernel, grid, block, y, x, oh, ow)


zero_padding2d_forward = zero_padding2d_backward = window_copy
cropping2d_forward = cropping2d_backward = window_copy
