"""CPU helpers for the strided descriptors of kernels_numba._strided.

Loops walk a descriptor as rows: every kept dimension but the last is unravelled once
per row, the last kept dimension is the inner loop (a plain strided loop LLVM can
vectorize for the common strides 0 and 1). Work is split into (row, chunk) items so
a one-dimensional buffer still spreads over the threads.
"""

import numba

PARALLEL_MIN_SIZE = 1 << 18  # below this, waking the thread pool costs more than it saves
# (measured on 2 shared cores: a 64K-element bias add is 8x slower in parallel)
CHUNK = 4096


@numba.njit(cache=True, error_model="numpy", inline="always")
def offset(meta, lin, first, num, j):
    """Offset of operand j for linear index `lin` over dimensions [first, first + num)."""
    n = meta[0] + meta[1]
    base = 3 + n * (1 + j)
    o = 0
    for d in range(first + num - 1, first - 1, -1):
        size = meta[3 + d]
        o += (lin % size) * meta[base + d]
        lin //= size
    return o


@numba.njit(cache=True, error_model="numpy", inline="always")
def extent(meta, first, num):
    total = 1
    for d in range(first, first + num):
        total *= meta[3 + d]
    return total


@numba.njit(cache=True, error_model="numpy", inline="always")
def inner(meta, j):
    """(length, stride of operand j) of the last kept dimension; (1, 0) when none."""
    nk = meta[0]
    if nk == 0:
        return 1, 0
    n = nk + meta[1]
    return meta[3 + nk - 1], meta[3 + n * (1 + j) + nk - 1]


@numba.njit(cache=True, error_model="numpy", inline="always")
def items(meta):
    """(rows, inner length, chunks per row) of the kept dimensions."""
    nk = meta[0]
    length = meta[3 + nk - 1] if nk > 0 else 1
    rows = extent(meta, 0, nk - 1) if nk > 1 else 1
    chunks = (length + CHUNK - 1) // CHUNK
    return rows, length, chunks
