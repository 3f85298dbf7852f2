"""Layout ops: a general strided copy (transpose, slicing, concatenate, stack, split,
broadcast_to, and their gradients), a gather along one axis (take) with its gradient,
and one_hot.

strided_copy writes y_flat[y_offset + sum_d i_d * y_strides[d]] = x_flat[x_offset +
sum_d i_d * x_strides[d]] over the index space `shape`, strides in elements (0 where
x is broadcast). y's positions must be distinct (the caller's layout guarantees it:
a slice, a block of a concatenation, a permutation), so every gradient in this family
is a copy or a gather: no atomics, no accumulation order to depend on.

take/one_hot read float32 indices (integers stored as floats, kerasish's convention):
negative take indices count from the end; an index outside the axis (or NaN) gives NaN
for take (a wrong index shows up), a zero row for one_hot (tf/Keras), NaN for a NaN.
"""

from kernels_numba import _check, _strided
from kernels_numba.dispatch import impl

__all__ = ["strided_copy", "take", "take_backward", "one_hot"]
FAMILY = "layout"
_metas = {}


def _span(shape, offset, strides):
    lo = hi = offset
    for s, st in zip(shape, strides):
        if s > 0:
            ext = (s - 1) * st
            lo, hi = (lo + ext, hi) if ext < 0 else (lo, hi + ext)
    return lo, hi


def strided_copy(y, x, *, shape, y_offset, y_strides, x_offset, x_strides):
    """y[positions] = x[positions] over index space `shape` (see the module doc).

    Args:
        y, x: float32 C-contiguous buffers of any shapes (addressed flat).
        shape: tuple of ints, the index space.
        y_offset, x_offset: ints, the flat start positions.
        y_strides, x_strides: tuples of ints (elements), one per dimension of shape.
    """
    op = "strided_copy"
    _check.array(op, "x", x)
    _check.array(op, "y", y)
    key = (tuple(shape), tuple(y_strides), tuple(x_strides))
    meta = _metas.get(key)
    if meta is None:
        if not len(shape) == len(y_strides) == len(x_strides):
            raise ValueError(f"{op}: expected one stride per dimension of shape {tuple(shape)}"
                             f"; received y_strides {tuple(y_strides)}, x_strides "
                             f"{tuple(x_strides)}")
        dims = [(int(s), [int(a), int(b)]) for s, a, b in zip(shape, y_strides, x_strides)]
        meta = _metas[key] = _strided.describe(op, dims, [], 2)
    if min(shape, default=1) > 0:
        for name, buf, off, strides in (("y", y, y_offset, y_strides),
                                        ("x", x, x_offset, x_strides)):
            lo, hi = _span(shape, off, strides)
            if lo < 0 or hi >= buf.size:
                raise ValueError(f"{op}: the index space {tuple(shape)} reaches {name} "
                                 f"positions [{lo}, {hi}]; expected within [0, {buf.size})")
    impl(op, FAMILY, y=y, x=x)(y, x, meta, int(y_offset), int(x_offset))


def _take_dims(op, x_shape, axis):
    nd = len(x_shape)
    if not -nd <= axis < nd:
        raise ValueError(f"{op}: expected axis in [-{nd}, {nd}); received {axis}")
    axis %= nd
    outer = 1
    for s in x_shape[:axis]:
        outer *= s
    inner = 1
    for s in x_shape[axis + 1:]:
        inner *= s
    return outer, x_shape[axis], inner


def take(y, x, indices, *, axis):
    """y = x gathered at `indices` along `axis`: y's shape is x.shape[:axis] +
    indices.shape + x.shape[axis+1:] (any shape with that many elements)."""
    op = "take"
    xs = _check.array(op, "x", x)
    _check.array(op, "indices", indices)
    outer, d, inner = _take_dims(op, xs, axis)
    _check.array(op, "y", y)
    if y.size != outer * indices.size * inner:
        raise ValueError(f"{op}: expected y with {outer * indices.size * inner} elements "
                         f"(x {tuple(xs)}, {indices.size} indices on axis {axis}); received "
                         f"{tuple(y.shape)}")
    impl(op, FAMILY, y=y, x=x, indices=indices)(y, x, indices, outer, d, inner)


def take_backward(dx, dy, indices, *, axis):
    """dx = the gradient of take wrt x (overwritten): each dx element gathers the dy
    elements whose index names it."""
    op = "take_backward"
    xs = _check.array(op, "dx", dx)
    _check.array(op, "indices", indices)
    outer, d, inner = _take_dims(op, xs, axis)
    _check.array(op, "dy", dy)
    if dy.size != outer * indices.size * inner:
        raise ValueError(f"{op}: expected dy with {outer * indices.size * inner} elements; "
                         f"received {tuple(dy.shape)}")
    impl(op, FAMILY, dx=dx, dy=dy, indices=indices)(dx, dy, indices, outer, d, inner)


def one_hot(y, indices, *, num_classes):
    """y[..., c] = 1.0 where indices[...] == c else 0.0.

    Args:
        y: float32, indices.shape + (num_classes,).
        indices: float32 holding integers.
    """
    op = "one_hot"
    shape = _check.array(op, "indices", indices)
    num_classes = _check.positive_int(op, "num_classes", num_classes)
    _check.array(op, "y", y, shape=(*shape, num_classes))
    impl(op, FAMILY, y=y, indices=indices)(y, indices, num_classes)
