"""Axis reductions (kerasish.ops' sum, mean, max, min, argmax, argmin, logsumexp) and
their gradients.

x: float32, any shape; `axes`: the reduced axes (ints, any order, negatives allowed;
empty = none). y: float32 holding prod(kept dims) values, in x's shape with the
reduced axes either removed or kept as 1 (keepdims); both layouts are the same
memory. One thread (CPU: one loop) per output walks its reduced axes in order: the
result does not depend on the launch (no atomics). Sums accumulate in float64 on the
CPU, float32 on CUDA.

max/min/logsumexp propagate NaN; argmax/argmin return the first maximum (minimum)
as a float32 index, or the first NaN (NumPy's rule), and have no gradient. The max/min
gradient splits dy evenly over the tied maxima (a NaN maximum: over the NaNs), as
torch and jax do. mean over zero elements is NaN, sum 0; max/min/arg* refuse it.
"""

import numpy as np

from kernels_numba import _check
from kernels_numba.dispatch import impl
from kernels_numba.ops.broadcast import gather_meta

__all__ = ["reduce_axes", "reduce_axes_backward", "REDUCE_KINDS", "reduced_shape"]
FAMILY = "reduce"

REDUCE_CODES = {"sum": 0, "mean": 1, "max": 2, "min": 3, "argmax": 4, "argmin": 5,
                "logsumexp": 6}
REDUCE_KINDS = tuple(REDUCE_CODES)
_PER_OUTPUT_BACKWARD = ("max", "min")  # the others: one thread per input element


def _axes(op, axes, ndim):
    out = set()
    for a in axes:
        if isinstance(a, bool) or not isinstance(a, (int, np.integer)) or not -ndim <= a < ndim:
            raise ValueError(f"{op}: expected axes in [-{ndim}, {ndim}) for an input of "
                             f"{ndim} dimensions; received axes={tuple(axes)}")
        out.add(int(a) % ndim)
    if len(out) != len(axes):
        raise ValueError(f"{op}: repeated axis in axes={tuple(axes)}")
    return tuple(sorted(out))


def reduced_shape(shape, axes, keepdims):
    """x's shape with `axes` (non-negative) removed or set to 1."""
    if keepdims:
        return tuple(1 if d in axes else s for d, s in enumerate(shape))
    return tuple(s for d, s in enumerate(shape) if d not in axes)


def _plan(op, kind, x, y, axes):
    code = REDUCE_CODES.get(kind)
    if code is None:
        raise ValueError(f"{op}: expected kind in {list(REDUCE_KINDS)}; received {kind!r}")
    shape = _check.array(op, "x", x)
    axes = _axes(op, tuple(axes), len(shape))
    keep = reduced_shape(shape, axes, True)
    want = (keep, reduced_shape(shape, axes, False))
    got = _check.array(op, "y", y)
    if tuple(got) not in want and not (got == (1,) and want[1] == ()):
        raise ValueError(f"{op}: expected y.shape == {want[1]} (or {want[0]} with keepdims) "
                         f"for x {tuple(shape)} reduced over axes {axes}; received {tuple(got)}")
    count = int(np.prod([shape[a] for a in axes], dtype=np.int64))
    if count == 0 and kind not in ("sum", "mean"):
        raise ValueError(f"{op}: {kind} over zero elements (x {tuple(shape)}, axes {axes}) "
                         f"has no value; expected at least one element per output")
    return code, shape, keep, count


def reduce_axes(y, x, *, kind, axes):
    """y = kind(x) over `axes`.

    Args:
        y: float32, x's shape reduced over axes (keepdims or not).
        x: float32, any shape.
        kind: one of REDUCE_KINDS.
        axes: tuple of ints (the reduced axes of x).
    """
    op = "reduce_axes"
    code, shape, keep, count = _plan(op, kind, x, y, axes)
    meta = gather_meta(op, shape, keep, (shape,))
    impl(op, FAMILY, y=y, x=x)(y, x, meta, code, np.float32(1.0 / max(count, 1)))


def reduce_axes_backward(dx, dy, x, y, *, kind, axes):
    """dx = d kind(x) / dx * dy, overwritten (zeros for argmax/argmin).

    Args:
        dx: float32, x's shape.
        dy: float32, y's shape.
        x, y: the forward input and output.
        kind, axes: as in reduce_axes.
    """
    op = "reduce_axes_backward"
    code, shape, keep, count = _plan(op, kind, x, y, axes)
    _check.array(op, "dy", dy, shape=y.shape)
    _check.array(op, "dx", dx, shape=shape)
    if kind in _PER_OUTPUT_BACKWARD:
        meta = gather_meta(op, shape, keep, (shape,))
    else:
        meta = gather_meta(op, shape, shape, (keep, shape, keep))
    impl(op, FAMILY, dx=dx, dy=dy, x=x, y=y)(dx, dy, x, y, meta, code,
                                             np.float32(1.0 / max(count, 1)))
