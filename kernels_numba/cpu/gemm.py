"""The CPU twins' GEMM: single-threaded BLAS calls on disjoint output blocks, in parallel.

Why not let BLAS thread itself: OpenBLAS's workers synchronise inside every call by
spinning and yielding, and spin on after it, so between two GEMMs numba's parallel
loops wait for a core; on a 2-core machine with any other busy process the
reference CNN step went from 25 ms to 170-490 ms. Here OpenBLAS runs one thread per
call (kernels_numba._blas sets that) and we split the output C into one block per
thread, rows or columns, whichever dimension is larger: each block is a plain BLAS
call on views (no copies), the only synchronisation is one join per GEMM, and each C
element is computed by one call over the full K, so results do not depend on timing.

When the BLAS's thread count cannot be set (not OpenBLAS), every GEMM is one
np.matmul call and the BLAS threads itself as before.
"""

import threading
from concurrent.futures import ThreadPoolExecutor, wait

import numba
import numpy as np

from kernels_numba import _blas

# Names of the persistent pool threads (idle between GEMMs; joined at exit).
THREAD_PREFIX = "kernels_numba-gemm"

# Below this many multiply-adds a thread handoff (~20 us) costs more than it saves.
SPLIT_MIN_MACS = 1 << 20

_local = threading.local()
_pool = {"size": 0, "executor": None}
_pool_lock = threading.Lock()
# One split GEMM at a time: a pool thread's partial product must not be overwritten
# by another caller's block before this caller has added it.
_gemm_lock = threading.Lock()


def _thread_buffer(name, shape):
    """A float32 view of `shape` into this thread's reusable buffer `name` (grows only)."""
    size = int(np.prod(shape))
    buf = getattr(_local, name, None)
    if buf is None or buf.size < size:
        buf = np.empty(max(size, 1), np.float32)
        setattr(_local, name, buf)
    return buf[:size].reshape(shape)


def product_scratch(shape):
    """This thread's reusable float32 scratch for a product (for callers of gemm)."""
    return _thread_buffer("product", shape)


def _block(c, a, b, accumulate):
    if not accumulate:
        np.matmul(a, b, out=c)  # beta = 0: the old c (even NaN) is never read
        return
    prod = _thread_buffer("block", c.shape)
    np.matmul(a, b, out=prod)
    c += prod


def _partial(a, b):
    out = _thread_buffer("block", (a.shape[0], b.shape[1]))
    np.matmul(a, b, out=out)
    return out


def _executor(workers):
    with _pool_lock:
        if _pool["size"] != workers:
            if _pool["executor"] is not None:
                _pool["executor"].shutdown(wait=True)
            _pool["executor"] = ThreadPoolExecutor(workers, thread_name_prefix=THREAD_PREFIX)
            _pool["size"] = workers
        return _pool["executor"]


def _cuts(size, parts):
    return [size * i // parts for i in range(parts + 1)]


def _blocks(c, a, b, parts):
    """Disjoint blocks of c: rows, or columns when c is wide."""
    m, n = c.shape
    if m >= n:
        cuts = _cuts(m, parts)
        return [(c[r0:r1], a[r0:r1], b) for r0, r1 in zip(cuts, cuts[1:])]
    cuts = _cuts(n, parts)
    return [(c[:, c0:c1], a, b[:, c0:c1]) for c0, c1 in zip(cuts, cuts[1:])]


def _split_output(c, a, b, accumulate, parts):
    blocks = _blocks(c, a, b, parts)
    futures = [_executor(parts - 1).submit(_block, *blk, accumulate) for blk in blocks[1:]]
    try:
        _block(*blocks[0], accumulate)
    finally:
        wait(futures)  # no worker may still write into c once we return or raise
    for f in futures:
        f.result()  # re-raises a worker's exception here


def _split_reduction(c, a, b, accumulate, parts):
    # Weight gradients (c small, K = batch*pixels huge): splitting c would make every
    # thread stream all of a or b; split K instead and add the partial products in a
    # fixed order, so the sum does not depend on timing.
    cuts = _cuts(a.shape[1], parts)
    blocks = [(a[:, k0:k1], b[k0:k1]) for k0, k1 in zip(cuts, cuts[1:])]
    futures = [_executor(parts - 1).submit(_partial, *blk) for blk in blocks[1:]]
    try:
        _block(c, *blocks[0], accumulate)
    finally:
        wait(futures)
    for f in futures:
        c += f.result()


def gemm(c, a, b, *, accumulate=False):
    """c = a @ b, or c += a @ b; a and b may be transposed views (BLAS flags, no copy)."""
    if c.size == 0:
        return
    m, n = c.shape
    k = a.shape[1]
    threads = numba.get_num_threads() if _blas.single_threaded() else 1
    if threads < 2 or m * n * k < SPLIT_MIN_MACS:
        _block(c, a, b, accumulate)
        return
    with _gemm_lock:
        if k > 4 * max(m, n):
            _split_reduction(c, a, b, accumulate, min(threads, k))
        else:
            _split_output(c, a, b, accumulate, min(threads, max(m, n)))
