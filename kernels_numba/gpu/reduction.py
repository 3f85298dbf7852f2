"""CUDA kernels for kernels_numba.ops.reduction.

Each block reduces its share in shared memory and adds the block total with one
atomic add, so any grid size is correct and contention stays at one atomic per block.
`block_sum` and BLOCK are also used by the normalization kernels.
"""

from numba import float32

from kernels_numba._cuda import SIMULATOR, ceil_div, cuda, device_function, kernel, launch

# Threads per 1-D reduction block (a power of two). The simulator runs one Python
# thread per CUDA thread, so it gets small blocks; the code path is the same.
BLOCK = 64 if SIMULATOR else 256
# batch_sum tiles: 32 consecutive columns (coalesced) x TILE_ROWS rows per block.
# Kernels accept any block up to these sizes (and do nothing for larger ones).
TILE_COLS = 32
TILE_ROWS = 2 if SIMULATOR else 8
MAX_GRID = 1024

F32_1D = "float32[::1]"
F32_2D = "float32[:, ::1]"
_ZERO = float32(0.0)
_ONE = float32(1.0)


# device helpers


@device_function(inline="always")
def block_sum(buf, value):
    """Sum of `value` over a 1-D block of any size <= BLOCK (buf: BLOCK floats in shared memory).

    Every thread of the block must call it; all get the total.
    """
    tid = cuda.threadIdx.x
    buf[tid] = value
    cuda.syncthreads()
    size = cuda.blockDim.x
    while size > 1:  # fold the upper half onto the lower; odd sizes keep their middle element
        half = (size + 1) // 2
        if tid < size - half:
            buf[tid] += buf[tid + half]
        cuda.syncthreads()
        size = half
    total = buf[0]
    cuda.syncthreads()  # buf may be reused right away by the caller
    return total


@device_function(inline="always")
def _argmax_row(a, r):
    """First index of the row maximum (np.argmax's tie rule)."""
    best = a[r, 0]
    arg = 0
    for j in range(1, a.shape[1]):
        if a[r, j] > best:
            best = a[r, j]
            arg = j
    return arg


# kernels


@kernel(f"void({F32_1D}, {F32_2D})")
def _batch_sum_kernel(y, x):
    buf = cuda.shared.array((TILE_ROWS, TILE_COLS), float32)
    cols = cuda.blockDim.x
    rows = cuda.blockDim.y
    if cols > TILE_COLS or rows > TILE_ROWS:  # larger than the shared tile: refuse, never overrun
        return
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    n, f = x.shape
    # Uniform loop bounds across the block: syncthreads inside is safe.
    for col0 in range(cuda.blockIdx.x * cols, f, cuda.gridDim.x * cols):
        col = col0 + tx
        s = _ZERO
        if col < f:
            for r in range(cuda.blockIdx.y * rows + ty, n, cuda.gridDim.y * rows):
                s += x[r, col]
        buf[ty, tx] = s
        cuda.syncthreads()
        size = rows
        while size > 1:
            half = (size + 1) // 2
            if ty < size - half:
                buf[ty, tx] += buf[ty + half, tx]
            cuda.syncthreads()
            size = half
        if ty == 0 and col < f:
            cuda.atomic.add(y, col, buf[0, tx])
        cuda.syncthreads()


@kernel(f"void({F32_1D}, {F32_1D})")
def _sum_into_kernel(acc, x):
    buf = cuda.shared.array(BLOCK, float32)
    if cuda.blockDim.x > BLOCK:  # larger than the shared buffer: refuse, never overrun
        return
    s = _ZERO
    for i in range(cuda.grid(1), x.size, cuda.gridsize(1)):
        s += x[i]
    total = block_sum(buf, s)
    if cuda.threadIdx.x == 0:
        cuda.atomic.add(acc, 0, total)


@kernel(f"void({F32_1D}, {F32_1D}, float32)")
def _mean_kernel(y, x, inv_n):
    # Launched as ONE block: y is overwritten, so no cross-block accumulation.
    buf = cuda.shared.array(BLOCK, float32)
    if cuda.blockDim.x > BLOCK:  # larger than the shared buffer: refuse, never overrun
        return
    s = _ZERO
    for i in range(cuda.threadIdx.x, x.size, cuda.blockDim.x):
        s += x[i]
    total = block_sum(buf, s)
    if cuda.threadIdx.x == 0 and cuda.blockIdx.x == 0:
        y[0] = total * inv_n


@kernel(f"void({F32_1D}, {F32_2D}, int32[::1])")
def _count_argmax_kernel(acc, probs, labels):
    buf = cuda.shared.array(BLOCK, float32)
    if cuda.blockDim.x > BLOCK:  # larger than the shared buffer: refuse, never overrun
        return
    count = _ZERO
    for r in range(cuda.grid(1), probs.shape[0], cuda.gridsize(1)):
        if _argmax_row(probs, r) == labels[r]:
            count += _ONE
    total = block_sum(buf, count)
    if cuda.threadIdx.x == 0 and total != _ZERO:
        cuda.atomic.add(acc, 0, total)


@kernel(f"void({F32_1D}, {F32_2D}, {F32_2D})")
def _count_argmax_onehot_kernel(acc, probs, targets):
    buf = cuda.shared.array(BLOCK, float32)
    if cuda.blockDim.x > BLOCK:  # larger than the shared buffer: refuse, never overrun
        return
    count = _ZERO
    for r in range(cuda.grid(1), probs.shape[0], cuda.gridsize(1)):
        if _argmax_row(probs, r) == _argmax_row(targets, r):
            count += _ONE
    total = block_sum(buf, count)
    if cuda.threadIdx.x == 0 and total != _ZERO:
        cuda.atomic.add(acc, 0, total)


@kernel(f"void({F32_1D}, {F32_1D}, {F32_1D}, float32)")
def _count_binary_kernel(acc, probs, targets, threshold):
    buf = cuda.shared.array(BLOCK, float32)
    if cuda.blockDim.x > BLOCK:  # larger than the shared buffer: refuse, never overrun
        return
    count = _ZERO
    for i in range(cuda.grid(1), probs.size, cuda.gridsize(1)):
        predicted = _ONE if probs[i] > threshold else _ZERO
        if predicted == targets[i]:
            count += _ONE
    total = block_sum(buf, count)
    if cuda.threadIdx.x == 0 and total != _ZERO:
        cuda.atomic.add(acc, 0, total)


# launchers


def _flat(a):
    return a.reshape(a.size)


def _grid(n):
    return max(1, min(ceil_div(n, BLOCK), MAX_GRID))


def batch_sum(y, x):
    n, f = x.shape
    # Enough row chunks to fill the GPU, each thread summing >= 16 rows.
    grid = (ceil_div(f, TILE_COLS), max(1, min(ceil_div(n, TILE_ROWS * 16), 256)))
    launch(_batch_sum_kernel, grid, (TILE_COLS, TILE_ROWS), y, x)


def sum_into(acc, x):
    launch(_sum_into_kernel, _grid(x.size), BLOCK, acc, _flat(x))


def mean(y, x):
    launch(_mean_kernel, 1, BLOCK, y, _flat(x), float32(1.0 / x.size))


def count_argmax_matches(acc, probs, labels):
    launch(_count_argmax_kernel, _grid(probs.shape[0]), BLOCK, acc, probs, labels)


def count_argmax_matches_onehot(acc, probs, targets):
    launch(_count_argmax_onehot_kernel, _grid(probs.shape[0]), BLOCK, acc, probs, targets)


def count_binary_matches(acc, probs, targets, threshold):
    launch(
        _count_binary_kernel, _grid(probs.size), BLOCK, acc, _flat(probs), _flat(targets), threshold
    )
