"""Gradient norms for clipping (Keras clipnorm / global_clipnorm), on the device.

`sum_squares` reduces each segment of a flat buffer (one per variable of a parameter
block, or the whole buffer) to its sum of squares, deterministically: the CUDA path
splits each segment over a fixed number of blocks, each reducing its strided share
with a fixed tree, and one thread per segment adds the block partials in index
order (no float atomics); the CPU path adds each segment in order in float64.
`clip_norm_scales` turns those sums into the factors the optimizer kernels multiply
each gradient by (kernels_numba.ops.optim's `grad_scale`), with Keras 3's formulas
and NaN/Inf behaviour, so a clipped step needs no host round trip.
"""

import math

import numpy as np

from kernels_numba import _check
from kernels_numba.dispatch import impl

__all__ = ["sum_squares", "sum_squares_workspace_shape", "clip_norm_scales"]
FAMILY = "norms"

# CUDA launch shape (gpu.norms): up to MAX_PARTS blocks per segment, ITEMS elements per
# thread before another block is added.
MAX_PARTS = 128
ITEMS_PER_THREAD = 8
BLOCK_FOR_SIZING = 256


def parts_for(size):
    """Blocks per segment for a flat buffer of `size` elements (depends on the size only,
    so a result's bits depend on the shapes, never on scheduling)."""
    return max(1, min(MAX_PARTS, -(-int(size) // (BLOCK_FOR_SIZING * ITEMS_PER_THREAD))))


def sum_squares_workspace_shape(size, n_segments):
    """(S,) float32 for sum_squares over `size` elements in `n_segments` segments."""
    return (max(1, parts_for(size) * int(n_segments)),)


def sum_squares(out, x, segments=None, workspace=None):
    """out[k] = sum of x.flat[j]**2 over segment k (fixed order).

    Args:
        out: (K,) float32, written.
        x: float32 buffer, any shape (read flat).
        segments: int64 (K, 2) of [start, end) ranges into x.flat (clamped to it), on
            x's device; None: K = 1, the whole buffer.
        workspace: optional (S,) float32 from sum_squares_workspace_shape (CUDA only;
            a shared scratch buffer is used when omitted).
    """
    op = "sum_squares"
    shape = _check.array(op, "x", x)
    size = int(np.prod(shape, dtype=np.int64))
    if segments is None:
        _check.array(op, "out", out, shape=(1,))
    else:
        (k, _) = _check.array(op, "segments", segments, shape=(None, 2), dtype=np.int64)
        if k < 1:
            raise ValueError(f"{op}: expected at least one segment; received shape (0, 2)")
        _check.array(op, "out", out, shape=(k,))
    if workspace is not None:
        _check.array(op, "workspace", workspace, ndim=1)
        want = sum_squares_workspace_shape(size, out.shape[0])[0]
        if workspace.shape[0] < want:
            raise ValueError(f"{op}: expected workspace with >= {want} elements; received "
                             f"{workspace.shape[0]}")
    fn = impl(op, FAMILY, out=out, x=x, segments=segments, workspace=workspace)
    fn(out, x, segments, workspace)


def clip_norm_scales(scales, sum_squares, *, clipnorm, global_norm=False):
    """Gradient factors from sums of squares s (Keras 3's clipping).

    Per variable (global_norm=False): scales[k] = clipnorm / max(sqrt(s[k]), clipnorm)
    (so g*scale = g*clipnorm/max(norm, clipnorm), Keras's `_clip_by_norm`; a NaN norm
    gives NaN, an infinite one 0).
    Global (global_norm=True): n = sqrt(s[0] + s[1] + ...) in order, scales[0] =
    clipnorm * min(1/n, 1/clipnorm), NaN when n is NaN or infinite (Keras's
    clip_by_global_norm). `scales` may then also have K elements, all set to that factor
    (so a parameter block's update can use it with its segments: gaps stay 0).

    Args:
        scales: (K,) float32 (per variable), or (1,) or (K,) (global), written.
        sum_squares: (K,) float32 from sum_squares.
        clipnorm: > 0, finite.
        global_norm: one norm over all segments.
    """
    op = "clip_norm_scales"
    (k,) = _check.array(op, "sum_squares", sum_squares, ndim=1)
    if not (global_norm and _check.array(op, "scales", scales, ndim=1) == (1,)):
        _check.array(op, "scales", scales, shape=(k,))
    try:
        c = float(clipnorm)
    except (TypeError, ValueError):
        raise TypeError(f"{op}: expected clipnorm to be a number; received {clipnorm!r}") \
            from None
    if not (math.isfinite(c) and c > 0.0):
        raise ValueError(f"{op}: expected clipnorm > 0 and finite; received {clipnorm!r}")
    fn = impl(op, FAMILY, scales=scales, sum_squares=sum_squares)
    fn(scales, sum_squares, clipnorm=np.float32(c), global_norm=bool(global_norm))
