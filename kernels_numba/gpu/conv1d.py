"""CUDA kernels for kernels_numba.ops.conv1d: one thread per column entry (im2col), per
input element (col2im, a gather over the kernel taps: no atomics), per output element."""

from numba import float32

from kernels_numba._cuda import cuda, grid_1d, kernel, launch

F32_2D = "float32[:, ::1]"
F32_3D = "float32[:, :, ::1]"


# kernels


@kernel(f"void({F32_2D}, {F32_3D}, int32, int32, int32, int32)")
def _im2col_kernel(cols, x, kernel_size, stride, dilation, pad_left):
    n, t_len, c = x.shape
    width = kernel_size * c
    t_out = cols.shape[0] // n
    for e in range(cuda.grid(1), cols.size, cuda.gridsize(1)):
        row = e // width
        col = e % width
        i = row // t_out
        o = row % t_out
        k = col // c
        t = o * stride + k * dilation - pad_left
        cols[row, col] = x[i, t, col % c] if (t >= 0 and t < t_len) else float32(0.0)


@kernel(f"void({F32_3D}, {F32_2D}, int32, int32, int32, int32)")
def _col2im_kernel(dx, cols, kernel_size, stride, dilation, pad_left):
    n, t_len, c = dx.shape
    t_out = cols.shape[0] // n
    for e in range(cuda.grid(1), dx.size, cuda.gridsize(1)):
        i = e // (t_len * c)
        t = (e // c) % t_len
        ch = e % c
        acc = float32(0.0)
        for k in range(kernel_size):
            q = t + pad_left - k * dilation
            if q >= 0 and q % stride == 0 and q // stride < t_out:
                acc += cols[i * t_out + q // stride, k * c + ch]
        dx[i, t, ch] = acc


@kernel(f"void({F32_3D}, {F32_3D}, int32)")
def _upsample_kernel(y, x, size):
    n, t_big, c = y.shape
    for e in range(cuda.grid(1), y.size, cuda.gridsize(1)):
        i = e // (t_big * c)
        t = (e // c) % t_big
        y[i, t, e % c] = x[i, t // size, e % c]


@kernel(f"void({F32_3D}, {F32_3D}, int32)")
def _upsample_backward_kernel(dx, dy, size):
    n, t_len, c = dx.shape
    for e in range(cuda.grid(1), dx.size, cuda.gridsize(1)):
        i = e // (t_len * c)
        t = (e // c) % t_len
        acc = float32(0.0)
        for j in range(size):
            acc += dy[i, t * size + j, e % c]
        dx[i, t, e % c] = acc


# launchers


def _go(k, size, *args):
    grid, block = grid_1d(min(max(size, 1), 65536 * 256))
    launch(k, grid, block, *args)


def conv1d_im2col(cols, x, kernel_size, stride, dilation, pad_left):
    _go(_im2col_kernel, cols.size, cols, x, kernel_size, stride, dilation, pad_left)


def conv1d_col2im(dx, cols, kernel_size, stride, dilation, pad_left):
    _go(_col2im_kernel, dx.size, dx, cols, kernel_size, stride, dilation, pad_left)


def upsampling1d_forward(y, x, size):
    _go(_upsample_kernel, y.size, y, x, size)


def upsampling1d_backward(dx, dy, size):
    _go(_upsample_backward_kernel, dx.size, dx, dy, size)
