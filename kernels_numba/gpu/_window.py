"""Helpers shared by the one-thread-per-element NHWC image kernels (resample,
augment_geometric): the flat index -> (b, i, j, ch) decode, the zero-outside read, and
the grid-stride launcher. Channels are fastest, so neighbouring threads touch
neighbouring addresses (coalesced)."""

from numba import float32

from kernels_numba._cuda import device_function, grid_1d, launch

MAX_THREADS = 65536 * 256  # a grid-stride loop covers the rest


@device_function
def nhwc_index(a, idx):
    """(b, i, j, ch) of flat element `idx` of the C-contiguous (N, H, W, C) array `a`."""
    c = a.shape[3]
    ch = idx % c
    p = idx // c
    j = p % a.shape[2]
    p = p // a.shape[2]
    return p // a.shape[1], p % a.shape[1], j, ch


@device_function
def read_or_zero(x, b, i, j, ch):
    """x[b, i, j, ch], or 0 where (i, j) is outside the image (padding, cropped-away dy)."""
    if i >= 0 and i < x.shape[1] and j >= 0 and j < x.shape[2]:
        return x[b, i, j, ch]
    return float32(0.0)


def launch_elements(k, n, *args):
    """Launch grid-stride kernel `k` over `n` work items (at least one block)."""
    grid, block = grid_1d(min(max(n, 1), MAX_THREADS))
    launch(k, grid, block, *args)
