"""CUDA kernels for kernels_numba.ops.elementwise. Grid-stride 1-D loops over flat views."""

from numba import float32

from kernels_numba._cuda import cuda, grid_1d, kernel, launch

F32_1D = "float32[::1]"
F16_1D = "float16[::1]"


# kernels

@kernel(f"void({F32_1D}, float32)", f"void({F16_1D}, float16)")
def _fill_kernel(y, value):
    for i in range(cuda.grid(1), y.size, cuda.gridsize(1)):
        y[i] = value


@kernel(f"void({F32_1D}, {F32_1D})", f"void({F16_1D}, {F16_1D})")
def _copy_kernel(y, x):
    for i in range(cuda.grid(1), y.size, cuda.gridsize(1)):
        y[i] = x[i]


@kernel(f"void({F32_1D}, {F32_1D}, float32)")
def _scale_kernel(y, x, alpha):
    for i in range(cuda.grid(1), y.size, cuda.gridsize(1)):
        y[i] = alpha * x[i]


@kernel(f"void({F32_1D}, {F32_1D}, float32)")
def _axpy_kernel(y, x, alpha):
    for i in range(cuda.grid(1), y.size, cuda.gridsize(1)):
        y[i] += alpha * x[i]


@kernel(f"void({F16_1D}, {F32_1D})")
def _cast_f32_to_f16_kernel(y, x):
    for i in range(cuda.grid(1), y.size, cuda.gridsize(1)):
        y[i] = x[i]


@kernel(f"void({F32_1D}, {F16_1D})")
def _cast_f16_to_f32_kernel(y, x):
    for i in range(cuda.grid(1), y.size, cuda.gridsize(1)):
        y[i] = x[i]


@kernel("void(float32[:, ::1], float32[::1])")
def _scale_rows_kernel(y, w):
    start, stride = cuda.grid(1), cuda.gridsize(1)
    cols = y.shape[1]
    for i in range(start, y.shape[0] * cols, stride):
        r = i // cols
        y[r, i - r * cols] *= w[r]


@kernel("void(float32[::1], int32[::1])")
def _cast_i32_to_f32_kernel(y, x):
    start, stride = cuda.grid(1), cuda.gridsize(1)
    for i in range(start, y.shape[0], stride):
        y[i] = float32(x[i])


# launchers

def _flat(a):
    return a.reshape(a.size)


def _launch_flat(k, y, *args):
    grid, block = grid_1d(min(y.size, 65536 * 256))
    launch(k, grid, block, _flat(y), *args)


def fill(y, value):
    _launch_flat(_fill_kernel, y, y.dtype.type(value))


def cast_i32_to_f32(y, x):
    _launch_flat(_cast_i32_to_f32_kernel, y, _flat(x))


def scale_rows(y, w):
    grid, block = grid_1d(min(y.size, 65536 * 256))
    launch(_scale_rows_kernel, grid, block, y, w)


def copy(y, x):
    _launch_flat(_copy_kernel, y, _flat(x))


def scale(y, x, alpha):
    _launch_flat(_scale_kernel, y, _flat(x), alpha)


def axpy(y, x, alpha):
    _launch_flat(_axpy_kernel, y, _flat(x), alpha)


def cast_f32_to_f16(y, x):
    _launch_flat(_cast_f32_to_f16_kernel, y, _flat(x))


def cast_f16_to_f32(y, x):
    _launch_flat(_cast_f16_to_f32_kernel, y, _flat(x))
