"""CUDA kernels for kernels_numba.ops.reduction, deterministic: no float atomics.

A sum over many blocks is done in two fixed-order stages: each block reduces its
grid-strided share in shared memory (a fixed tree) and stores its total in a
workspace slot; one finishing block adds the slots in index order. With one block
the first stage adds into the output directly (one launch). So a result depends on
the launch configuration only, never on block scheduling: same bits run to run.
Workspaces are caller-supplied (`*_workspace_shape` in ops.reduction); when the
caller passes none, `cached_scratch` lends a process-wide buffer, allocated on first
use and grown when a larger one is needed (every kernel runs on one stream, so one
buffer serves all ops in turn). `block_sum` and BLOCK are also used by the
normalization kernels; `column_sums_into` by the dense and conv bias gradients.
"""

from numba import float32

from kernels_numba import device
from kernels_numba._cuda import ceil_div, cuda, device_function, kernel, launch
from kernels_numba.gpu._blocks import size as block_size
from kernels_numba.ops.reduction import MAX_ROW_BLOCKS, MAX_SUM_BLOCKS, ROWS_PER_BLOCK

# Threads per 1-D reduction block (a power of two). The simulator runs one Python
# thread per CUDA thread, so it gets small blocks; the code path is the same
# (gpu/_blocks.py; a simulator run can take the hardware sizes).
BLOCK = block_size("BLOCK")
# batch_sum tiles: 32 consecutive columns (coalesced) x TILE_ROWS rows per block.
# Kernels accept any block up to these sizes (and do nothing for larger ones).
TILE_COLS = 32
TILE_ROWS = block_size("TILE_ROWS")

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


@device_function(inline="always")
def _store_total(acc, part, total):
    """Thread 0's block total: into acc with one block, else into the block's slot."""
    if cuda.gridDim.x == 1:
        acc[0] += total
    elif cuda.blockIdx.x < part.size:
        part[cuda.blockIdx.x] = total


# kernels


@kernel(f"void({F32_1D}, {F32_2D}, {F32_2D})")
def _column_partials_kernel(y, part, x):
    # Block (bx, by) sums rows by, by + gridDim.y, ... (times the block's row lanes) of
    # its columns. gridDim.y == 1: y += the sums; else part[by, col] = the partial.
    buf = cuda.shared.array((TILE_ROWS, TILE_COLS), float32)
    cols = cuda.blockDim.x
    rows = cuda.blockDim.y
    if cols > TILE_COLS or rows > TILE_ROWS:  # larger than the shared tile: refuse, never overrun
        return
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    n, f = x.shape
    by = cuda.blockIdx.y
    # Uniform loop bounds across the block: syncthreads inside is safe.
    for col0 in range(cuda.blockIdx.x * cols, f, cuda.gridDim.x * cols):
        col = col0 + tx
        s = _ZERO
        if col < f:
            for r in range(by * rows + ty, n, cuda.gridDim.y * rows):
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
            if cuda.gridDim.y == 1:
                y[col] += buf[0, tx]
            elif by < part.shape[0] and col < part.shape[1]:
                part[by, col] = buf[0, tx]
        cuda.syncthreads()


@kernel(f"void({F32_1D}, {F32_2D})")
def _add_column_partials_kernel(y, part):
    # y[col] += part[0, col] + part[1, col] + ... in row order: one thread per column.
    for col in range(cuda.grid(1), min(y.size, part.shape[1]), cuda.gridsize(1)):
        s = _ZERO
        for r in range(part.shape[0]):
            s += part[r, col]
        y[col] += s


@kernel(f"void({F32_1D}, {F32_1D}, {F32_1D})")
def _sum_partials_kernel(acc, part, x):
    buf = cuda.shared.array(BLOCK, float32)
    if cuda.blockDim.x > BLOCK:  # larger than the shared buffer: refuse, never overrun
        return
    s = _ZERO
    for i in range(cuda.grid(1), x.size, cuda.gridsize(1)):
        s += x[i]
    total = block_sum(buf, s)
    if cuda.threadIdx.x == 0:
        _store_total(acc, part, total)


@kernel(f"void({F32_1D}, {F32_1D}, int32)")
def _add_partials_kernel(acc, part, count):
    # ONE block: thread t adds slots t, t + blockDim, ... in order, then the fixed tree.
    buf = cuda.shared.array(BLOCK, float32)
    if cuda.blockDim.x > BLOCK:  # larger than the shared buffer: refuse, never overrun
        return
    s = _ZERO
    for i in range(cuda.threadIdx.x, min(count, part.size), cuda.blockDim.x):
        s += part[i]
    total = block_sum(buf, s)
    if cuda.threadIdx.x == 0 and cuda.blockIdx.x == 0:
        acc[0] += total


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


@kernel(f"void({F32_1D}, {F32_1D}, {F32_2D}, int32[::1])")
def _count_argmax_kernel(acc, part, probs, labels):
    buf = cuda.shared.array(BLOCK, float32)
    if cuda.blockDim.x > BLOCK:  # larger than the shared buffer: refuse, never overrun
        return
    count = _ZERO
    for r in range(cuda.grid(1), probs.shape[0], cuda.gridsize(1)):
        if _argmax_row(probs, r) == labels[r]:
            count += _ONE
    total = block_sum(buf, count)
    if cuda.threadIdx.x == 0:
        _store_total(acc, part, total)


@kernel(f"void({F32_1D}, {F32_1D}, {F32_2D}, {F32_2D})")
def _count_argmax_onehot_kernel(acc, part, probs, targets):
    buf = cuda.shared.array(BLOCK, float32)
    if cuda.blockDim.x > BLOCK:  # larger than the shared buffer: refuse, never overrun
        return
    count = _ZERO
    for r in range(cuda.grid(1), probs.shape[0], cuda.gridsize(1)):
        if _argmax_row(probs, r) == _argmax_row(targets, r):
            count += _ONE
    total = block_sum(buf, count)
    if cuda.threadIdx.x == 0:
        _store_total(acc, part, total)


@kernel(f"void({F32_1D}, {F32_1D}, {F32_1D}, {F32_1D}, float32)")
def _count_binary_kernel(acc, part, probs, targets, threshold):
    buf = cuda.shared.array(BLOCK, float32)
    if cuda.blockDim.x > BLOCK:  # larger than the shared buffer: refuse, never overrun
        return
    count = _ZERO
    for i in range(cuda.grid(1), probs.size, cuda.gridsize(1)):
        predicted = _ONE if probs[i] > threshold else _ZERO
        if predicted == targets[i]:
            count += _ONE
    total = block_sum(buf, count)
    if cuda.threadIdx.x == 0:
        _store_total(acc, part, total)


# launchers

_scratch = [None]


def cached_scratch(size):
    """A float32 device buffer of >= size elements, shared by every op that got no
    workspace: allocated once (counted by device.allocation_count), grown if needed."""
    buf = _scratch[0]
    if buf is None or buf.size < size:
        buf = _scratch[0] = device.empty((max(size, 1),), device=device.CUDA)
    return buf


def _flat(a):
    return a.reshape(a.size)


def _blocks(n):
    return max(1, min(ceil_div(n, BLOCK), MAX_SUM_BLOCKS))


def column_sums_into(y, x, workspace=None):
    """y(F) += column sums of x(N, F) in a fixed order (bias gradients, batch_sum)."""
    n, f = x.shape
    if n == 0 or f == 0:
        return
    want = max(1, min(ceil_div(n, ROWS_PER_BLOCK), MAX_ROW_BLOCKS))
    rows = 1
    if want > 1:
        ws = cached_scratch(want * f) if workspace is None else workspace
        rows = min(want, ws.size // f)
    block = (TILE_COLS, TILE_ROWS)
    if rows <= 1:
        launch(_column_partials_kernel, (ceil_div(f, TILE_COLS), 1), block, y, x, x)
        return
    part = ws[: rows * f].reshape(rows, f)
    launch(_column_partials_kernel, (ceil_div(f, TILE_COLS), rows), block, y, part, x)
    launch(_add_column_partials_kernel, (ceil_div(f, BLOCK), 1), BLOCK, y, part)


def _two_stage(k, acc, workspace, n, *args):
    """Launch counting/summing kernel k over n items with per-block slots, then finish."""
    want = _blocks(n)
    blocks, part = 1, acc
    if want > 1:
        ws = cached_scratch(want) if workspace is None else workspace
        blocks = max(1, min(want, ws.size))
        part = ws
    launch(k, blocks, BLOCK, acc, part, *args)
    if blocks > 1:
        launch(_add_partials_kernel, 1, BLOCK, acc, part, blocks)


def batch_sum(y, x, workspace=None):
    column_sums_into(y, x, workspace)


def sum_into(acc, x, workspace=None):
    _two_stage(_sum_partials_kernel, acc, workspace, x.size, _flat(x))


def mean(y, x):
    launch(_mean_kernel, 1, BLOCK, y, _flat(x), float32(1.0 / x.size))


def count_argmax_matches(acc, probs, labels, workspace=None):
    _two_stage(_count_argmax_kernel, acc, workspace, probs.shape[0], probs, labels)


def count_argmax_matches_onehot(acc, probs, targets, workspace=None):
    _two_stage(_count_argmax_onehot_kernel, acc, workspace, probs.shape[0], probs, targets)


def count_binary_matches(acc, probs, targets, threshold, workspace=None):
    _two_stage(_count_binary_kernel, acc, workspace, probs.size, _flat(probs),
               _flat(targets), threshold)
