"""Merge ops: the elementwise products and extrema of two tensors and column copies,
under Keras's merge layers (Multiply, Maximum, Minimum, Concatenate). Add, Subtract
and Average need nothing more than ops.elementwise (copy, axpy, scale).

maximum/minimum propagate NaN as IEEE says (maximum(NaN, 1) is NaN, either side).
Their backward follows Keras 3's torch and jax backends: the larger (smaller) input
takes dy, a tie splits it in halves, and where a or b is NaN both take dy (TensorFlow
instead gives a tie wholly to a).

Concatenate along axis k views each tensor as (outer, inner) with
outer = prod(shape[:k]) (batch included) and inner = prod(shape[k:]): each input is
a block of columns of the output, at its offset.
"""

import numpy as np

from kernels_numba import _check
from kernels_numba.dispatch import impl

__all__ = ["multiply", "maximum", "minimum", "maximum_backward", "minimum_backward",
           "copy_columns", "take_columns"]
FAMILY = "merge"


def _pair(op, y_name, y, a, b):
    """a, b and y share one shape; returns it."""
    shape = _check.array(op, "a", a)
    _check.array(op, "b", b, shape=shape)
    _check.array(op, y_name, y, shape=shape)
    return shape


def multiply(y, a, b):
    """y = a * b elementwise.  y, a, b: same shape, float32 (y may be a or b)."""
    _pair("multiply", "y", y, a, b)
    impl("multiply", FAMILY, y=y, a=a, b=b)(y, a, b)


def maximum(y, a, b):
    """y = max(a, b) elementwise, NaN if either is NaN.  Same shapes (y may be a or b)."""
    _pair("maximum", "y", y, a, b)
    impl("maximum", FAMILY, y=y, a=a, b=b)(y, a, b)


def minimum(y, a, b):
    """y = min(a, b) elementwise, NaN if either is NaN.  Same shapes (y may be a or b)."""
    _pair("minimum", "y", y, a, b)
    impl("minimum", FAMILY, y=y, a=a, b=b)(y, a, b)


def _extremum_backward(op, da, db, dy, a, b):
    shape = _pair(op, "dy", dy, a, b)
    if da is not None:
        _check.array(op, "da", da, shape=shape)
    if db is not None:
        _check.array(op, "db", db, shape=shape)
    if da is None and db is None:
        return
    impl(op, FAMILY, da=da, db=db, dy=dy, a=a, b=b)(da, db, dy, a, b)


def maximum_backward(da, db, dy, a, b):
    """Gradients of y = maximum(a, b), overwritten.

    da = dy where a > b, dy/2 where a == b, 0 where a < b, dy where a or b is NaN;
    db likewise with the comparisons mirrored.

    Args:
        da, db: same shape as dy, float32, or None (not needed). Either may be dy.
        dy, a, b: same shape, float32.
    """
    _extremum_backward("maximum_backward", da, db, dy, a, b)


def minimum_backward(da, db, dy, a, b):
    """Gradients of y = minimum(a, b), overwritten: maximum_backward with < and > swapped.

    Args:
        da, db: same shape as dy, float32, or None (not needed). Either may be dy.
        dy, a, b: same shape, float32.
    """
    _extremum_backward("minimum_backward", da, db, dy, a, b)


def _columns(op, wide_name, wide, narrow_name, narrow, offset):
    """Checks a 2-D (outer, W) buffer and a 2-D (outer, w) block at column `offset`."""
    outer, width = _check.array(op, narrow_name, narrow, ndim=2)
    total = _check.array(op, wide_name, wide, shape=(outer, None))[1]
    if isinstance(offset, bool) or not isinstance(offset, (int, np.integer)) or offset < 0:
        raise ValueError(f"{op}: expected offset to be an integer >= 0; received {offset!r}")
    if offset + width > total:
        raise ValueError(
            f"{op}: expected offset + {narrow_name}.shape[1] <= {wide_name}.shape[1] == "
            f"{total}; received offset={offset}, {narrow_name}.shape[1]={width}")
    return int(offset)


def copy_columns(y, x, offset):
    """y[:, offset:offset + w] = x (one input's block of a concatenation).

    Args:
        y: (outer, W) float32, written in those columns only.
        x: (outer, w) float32, offset + w <= W.
        offset: first column of the block.
    """
    offset = _columns("copy_columns", "y", y, "x", x, offset)
    impl("copy_columns", FAMILY, y=y, x=x)(y, x, offset)


def take_columns(dx, dy, offset):
    """dx = dy[:, offset:offset + w] (the gradient of one concatenated input).

    Args:
        dx: (outer, w) float32, overwritten.
        dy: (outer, W) float32, offset + w <= W.
        offset: first column of the block.
    """
    offset = _columns("take_columns", "dy", dy, "dx", dx, offset)
    impl("take_columns", FAMILY, dx=dx, dy=dy)(dx, dy, offset)
