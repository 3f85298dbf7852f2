"""Helpers for op tests: buffers on a device, float64 finite differences, tolerant compares.

Op tests compare forward results with a float64 NumPy reference, and backward
results with central finite differences of that reference (in float64).
"""

import contextlib
import sys

import numpy as np

from kernels_numba.device import to_device, to_host


def rng(seed=0):
    return np.random.default_rng(seed)


def randn(shape, seed=0, dtype=np.float32, scale=1.0):
    return (rng(seed).standard_normal(shape) * scale).astype(dtype)


def on(device, *arrays):
    """Copies of host arrays as buffers on `device` (one array -> one buffer)."""
    bufs = [to_device(np.ascontiguousarray(a), device) for a in arrays]
    return bufs[0] if len(bufs) == 1 else bufs


def host(*bufs):
    out = [to_host(b) for b in bufs]
    return out[0] if len(out) == 1 else out


def numeric_grad(f, x, eps=1e-6):
    """d f(x) / dx by central differences; f maps a float64 array to a scalar."""
    x = np.array(x, dtype=np.float64)
    g = np.zeros_like(x)
    flat, gflat = x.reshape(-1), g.reshape(-1)
    for i in range(flat.size):
        old = flat[i]
        flat[i] = old + eps
        hi = f(x)
        flat[i] = old - eps
        lo = f(x)
        flat[i] = old
        gflat[i] = (hi - lo) / (2 * eps)
    return g


def assert_close(actual, expected, rtol=1e-5, atol=1e-5, what=""):
    """allclose with a message giving the worst element."""
    actual = np.asarray(actual, dtype=np.float64)
    expected = np.asarray(expected, dtype=np.float64)
    if actual.shape != expected.shape:
        raise AssertionError(f"{what}: shape {actual.shape} != {expected.shape}")
    err = np.abs(actual - expected) - (atol + rtol * np.abs(expected))
    if err.size and err.max() > 0:
        i = np.unravel_index(np.argmax(err), err.shape)
        raise AssertionError(
            f"{what}: mismatch at {i}: got {actual[i]!r}, expected {expected[i]!r} "
            f"(max abs diff {np.abs(actual - expected).max():.3g}, rtol={rtol}, atol={atol})"
        )


@contextlib.contextmanager
def block_sizes(kind):
    """Run the block under `kind`'s block constants ("simulator" or "hardware",
    kernels_numba/gpu/_blocks.py): every loaded kernels_numba.gpu module's BLOCK,
    TILE_ROWS, ROW_BLOCK are rebound, then restored. Simulator only: on hardware the
    sizes are compiled into the kernels, and only the hardware set exists."""
    from kernels_numba import _cuda
    from kernels_numba.gpu import _blocks

    if kind not in _blocks.KINDS:
        raise ValueError(f"block_sizes: expected one of {_blocks.KINDS}; received {kind!r}")
    if not _cuda.SIMULATOR:
        if kind != "hardware":
            raise RuntimeError("block_sizes: the simulator's sizes exist only under "
                               "NUMBA_ENABLE_CUDASIM=1 (hardware kernels compile theirs in)")
        yield
        return
    saved = []
    for name, mod in list(sys.modules.items()):
        if mod is None or not name.startswith("kernels_numba.gpu."):
            continue
        for const in _blocks.SIZES:
            if isinstance(getattr(mod, const, None), int):
                saved.append((mod, const, getattr(mod, const)))
                setattr(mod, const, _blocks.size(const, kind))
    try:
        yield
    finally:
        for mod, const, value in reversed(saved):
            setattr(mod, const, value)
