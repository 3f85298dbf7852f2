"""CUDA kernels for kernels_numba.ops.resample: one thread per output element
(grid-stride), consecutive threads on consecutive channels (coalesced)."""

from numba import float32

from kernels_numba._cuda import cuda, kernel
from kernels_numba.gpu._window import launch_elements, nhwc_index, read_or_zero

F32_4D = "float32[:, :, :, ::1]"


# kernels

@kernel(f"void({F32_4D}, {F32_4D}, int64, int64)")
def _upsample_kernel(y, x, sh, sw):
    for idx in range(cuda.grid(1), y.size, cuda.gridsize(1)):
        b, i, j, ch = nhwc_index(y, idx)
        y[b, i, j, ch] = x[b, i // sh, j // sw, ch]


@kernel(f"void({F32_4D}, {F32_4D}, int64, int64)")
def _upsample_backward_kernel(dx, dy, sh, sw):
    for idx in range(cuda.grid(1), dx.size, cuda.gridsize(1)):
        b, i, j, ch = nhwc_index(dx, idx)
        s = float32(0.0)
        for a in range(sh):
            for e in range(sw):
                s += dy[b, i * sh + a, j * sw + e, ch]
        dx[b, i, j, ch] = s


@kernel(f"void({F32_4D}, {F32_4D}, int64, int64)")
def _window_kernel(y, x, oh, ow):
    for idx in range(cuda.grid(1), y.size, cuda.gridsize(1)):
        b, i, j, ch = nhwc_index(y, idx)
        y[b, i, j, ch] = read_or_zero(x, b, i + oh, j + ow, ch)


# launchers

def upsampling2d_forward(y, x, sh, sw):
    launch_elements(_upsample_kernel, y.size, y, x, sh, sw)


def upsampling2d_backward(dx, dy, sh, sw):
    launch_elements(_upsample_backward_kernel, dx.size, dx, dy, sh, sw)


def window_copy(y, x, oh, ow):
    launch_elements(_window_kernel, y.size, y, x, oh, ow)


zero_padding2d_forward = zero_padding2d_backward = window_copy
cropping2d_forward = cropping2d_backward = window_copy
