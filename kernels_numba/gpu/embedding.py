"""CUDA kernels for kernels_numba.ops.embedding.

The table gradient runs one thread per embedding column, each looping over the tokens
in order: no atomics, so the sum order (and the result) is fixed for any launch.
"""

from numba import float32

from kernels_numba._cuda import cuda, device_function, grid_1d, kernel, launch
from kernels_numba.cpu import embedding as _cpu

F32_1D = "float32[::1]"
F32_2D = "float32[:, ::1]"
F32_3D = "float32[:, :, ::1]"

_token_row = device_function(_cpu.token_row)
_NAN = _cpu._NAN


# kernels


@kernel(f"void({F32_2D}, {F32_1D}, {F32_2D})")
def _embedding_forward_kernel(y, ids, table):
    rows, d = table.shape
    for k in range(cuda.grid(1), y.size, cuda.gridsize(1)):
        m = k // d
        j = k % d
        r = _token_row(ids[m], rows)
        y[m, j] = table[r, j] if r >= 0 else _NAN


@kernel(f"void({F32_2D}, {F32_2D}, {F32_1D})")
def _embedding_backward_kernel(dtable, dy, ids):
    rows, d = dtable.shape
    for j in range(cuda.grid(1), d, cuda.gridsize(1)):
        for m in range(ids.size):
            r = _token_row(ids[m], rows)
            if r >= 0:
                dtable[r, j] += dy[m, j]


@kernel(f"void({F32_1D}, {F32_1D})")
def _embedding_mask_kernel(mask, ids):
    for m in range(cuda.grid(1), ids.size, cuda.gridsize(1)):
        mask[m] = float32(1.0) if ids[m] != float32(0.0) else float32(0.0)


@kernel(f"void({F32_3D}, {F32_2D}, {F32_3D}, float32)")
def _masking_forward_kernel(y, mask, x, mask_value):
    n, t_len, f = x.shape
    for k in range(cuda.grid(1), n * t_len, cuda.gridsize(1)):
        i = k // t_len
        t = k % t_len
        keep = False
        for c in range(f):
            if x[i, t, c] != mask_value:
                keep = True
        m = float32(1.0) if keep else float32(0.0)
        mask[i, t] = m
        for c in range(f):
            y[i, t, c] = x[i, t, c] * m


@kernel(f"void({F32_3D}, {F32_3D}, {F32_2D})")
def _masking_backward_kernel(dx, dy, mask):
    n, t_len, f = dy.shape
    for k in range(cuda.grid(1), dy.size, cuda.gridsize(1)):
        i = k // (t_len * f)
        t = (k // f) % t_len
        dx[i, t, k % f] = dy[i, t, k % f] * mask[i, t]


# launchers


def _go(k, size, *args):
    grid, block = grid_1d(min(max(size, 1), 65536 * 256))
    launch(k, grid, block, *args)


def embedding_forward(y, ids, table):
    _go(_embedding_forward_kernel, y.size, y, ids, table)


def embedding_backward(dtable, dy, ids):
    grid, block = grid_1d(dtable.shape[1], block=64)
    launch(_embedding_backward_kernel, grid, block, dtable, dy, ids)


def embedding_mask(mask, ids):
    _go(_embedding_mask_kernel, ids.size, mask, ids)


def masking_forward(y, mask, x, mask_value):
    _go(_masking_forward_kernel, x.shape[0] * x.shape[1], y, mask, x, mask_value)


def masking_backward(dx, dy, mask):
    _go(_masking_backward_kernel, dy.size, dx, dy, mask)
