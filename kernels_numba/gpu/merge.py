"""CUDA kernels for kernels_numba.ops.merge. Grid-stride 1-D loops over flat views;
the column copies map one thread to one element of the narrow (outer, w) block.

The extrema are written as selects, not max()/min(): those lower to fmaxf/fminf,
which return the non-NaN operand.
"""

from numba import float32

from kernels_numba._cuda import cuda, device_function, grid_1d, kernel, launch

F32_1D = "float32[::1]"
F32_2D = "float32[:, ::1]"
_MAX_THREADS = 65536 * 256


# kernels

@kernel(f"void({F32_1D}, {F32_1D}, {F32_1D})")
def _multiply_kernel(y, a, b):
    for i in range(cuda.grid(1), y.size, cuda.gridsize(1)):
        y[i] = a[i] * b[i]


@kernel(f"void({F32_1D}, {F32_1D}, {F32_1D}, int32)")
def _extremum_kernel(y, a, b, is_max):
    for i in range(cuda.grid(1), y.size, cuda.gridsize(1)):
        u = a[i]
        v = b[i]
        a_wins = u > v if is_max else u < v
        y[i] = u if (a_wins or u != u) else v  # b NaN: a does not win, y = b = NaN


@device_function
def _share(g, u, v, is_max):
    """(da, db) of max(u, v) (is_max) or min(u, v) for upstream g (torch's rule)."""
    if u == v:
        h = g * float32(0.5)
        return h, h
    a_loses = u < v if is_max else u > v
    b_loses = v < u if is_max else v > u
    return (float32(0.0) if a_loses else g), (float32(0.0) if b_loses else g)


@kernel(f"void({F32_1D}, {F32_1D}, {F32_1D}, {F32_1D}, {F32_1D}, int32, int32, int32)")
def _extremum_backward_kernel(da, db, dy, a, b, want_a, want_b, is_max):
    for i in range(cuda.grid(1), dy.size, cuda.gridsize(1)):
        ga, gb = _share(dy[i], a[i], b[i], is_max)
        if want_a:
            da[i] = ga
        if want_b:
            db[i] = gb


@kernel(f"void({F32_2D}, {F32_2D}, int64)")
def _copy_columns_kernel(y, x, offset):
    w = x.shape[1]
    for i in range(cuda.grid(1), x.size, cuda.gridsize(1)):
        r = i // w
        c = i - r * w
        y[r, offset + c] = x[r, c]


@kernel(f"void({F32_2D}, {F32_2D}, int64)")
def _take_columns_kernel(dx, dy, offset):
    w = dx.shape[1]
    for i in range(cuda.grid(1), dx.size, cuda.gridsize(1)):
        r = i // w
        c = i - r * w
        dx[r, c] = dy[r, offset + c]


# launchers

def _flat(a):
    return a.reshape(a.size)


def _grid(n):
    return grid_1d(min(n, _MAX_THREADS))


def multiply(y, a, b):
    grid, block = _grid(y.size)
    launch(_multiply_kernel, grid, block, _flat(y), _flat(a), _flat(b))


def _extremum(y, a, b, is_max):
    grid, block = _grid(y.size)
    launch(_extremum_kernel, grid, block, _flat(y), _flat(a), _flat(b), is_max)


def maximum(y, a, b):
    _extremum(y, a, b, 1)


def minimum(y, a, b):
    _extremum(y, a, b, 0)


def _extremum_backward(da, db, dy, a, b, is_max):
    # A gradient not wanted is replaced by dy and a flag: one signature for all cases.
    g = _flat(dy)
    grid, block = _grid(dy.size)
    launch(_extremum_backward_kernel, grid, block, g if da is None else _flat(da),
           g if db is None else _flat(db), g, _flat(a), _flat(b),
           int(da is not None), int(db is not None), is_max)


def maximum_backward(da, db, dy, a, b):
    _extremum_backward(da, db, dy, a, b, 1)


def minimum_backward(da, db, dy, a, b):
    _extremum_backward(da, db, dy, a, b, 0)


def copy_columns(y, x, offset):
    grid, block = _grid(x.size)
    launch(_copy_columns_kernel, grid, block, y, x, offset)


def take_columns(dx, dy, offset):
    grid, block = _grid(dx.size)
    launch(_take_columns_kernel, grid, block, dx, dy, offset)
