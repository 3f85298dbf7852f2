"""Block sizes that differ between the CUDA simulator and hardware, in one place.

The simulator runs one Python thread per CUDA thread, so reductions and row kernels get
small blocks there; hardware gets full ones. Both configurations must be correct, so a
simulator run can take the hardware sizes: KERNELS_NUMBA_BLOCKS=hardware for a whole
process, or `kernels_numba.testing.block_sizes("hardware")` for one test (it rebinds the
names in every loaded kernels_numba.gpu module; the simulator reads a kernel's globals
when it runs, so the kernels see the new sizes too). On hardware the sizes are compiled
into the kernels: only the hardware set exists there.
"""

import os

from kernels_numba._cuda import SIMULATOR

# name -> (simulator, hardware). BLOCK: threads of a 1-D reduction block (a power of two;
# gpu/reduction.py, shared by normalization, norms, regularize, loss, metric,
# pointwise_loss). TILE_ROWS: batch_sum's row lanes (32 columns x TILE_ROWS rows).
# ROW_BLOCK: threads per block of the one-thread-per-row loss and metric kernels.
SIZES = {
    "BLOCK": (64, 256),
    "TILE_ROWS": (2, 8),
    "ROW_BLOCK": (32, 128),
}
KINDS = ("simulator", "hardware")

_ENV = "KERNELS_NUMBA_BLOCKS"


def _kind():
    forced = os.environ.get(_ENV, "")
    if forced and forced not in KINDS:
        raise ValueError(f"{_ENV}: expected one of {', '.join(KINDS)}; received {forced!r}")
    if not SIMULATOR:
        return "hardware"
    return forced or "simulator"


KIND = _kind()


def size(name, kind=None):
    """The block constant `name` for `kind` (default: this process's)."""
    return SIZES[name][KINDS.index(kind or KIND)]
