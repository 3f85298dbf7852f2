"""Shape and layout ops: reshape, expand_dims, squeeze, transpose, concatenate, stack,
split, take and indexing (`x[...]` with ints, slices, Ellipsis and None).

Copies are kernels_numba.ops.strided_copy launches (or ops.copy for reshapes); every
gradient is a copy or a gather into disjoint positions (no accumulation order). A
batched tensor's batch axis (None, first) stays first: reshape keeps it, transpose
and concatenate/stack/split refuse to move or cut it, indexing takes all of it or one
sample (then the result has a fixed size).
"""

import numpy as np

from kernels_numba import ops as K
from kerasish.ops.dispatch import axis_of, contiguous_strides, is_batched, run
from kerasish.ops.operation import Operation


def _size(shape):
    return int(np.prod(shape, dtype=np.int64))


class ReshapeOp(Operation):
    """A new shape over the same elements (one copy each way)."""

    def __init__(self, name, shape_fn):
        super().__init__()
        self.op_name, self.shape_fn = name, shape_fn

    def compute_output_shape(self, input_shape):
        return tuple(self.shape_fn(tuple(input_shape)))

    def forward(self, y, x, training):
        K.copy(y, x.reshape(y.shape))

    def backward(self, dx, dy, x, y):
        if dx is not None:
            K.copy(dx, dy.reshape(dx.shape))


def _resolve(name, shape, new_shape):
    new_shape = tuple(new_shape) if isinstance(new_shape, (list, tuple)) else (new_shape,)
    batched = is_batched(shape)
    if batched:  # the batch stays the first axis: (-1 or None, fixed dims...)
        if not new_shape or new_shape[0] not in (-1, None):
            raise ValueError(f"ops.{name}: a batched input {shape} keeps its batch axis "
                             f"first; expected newshape=(-1, ...) or (None, ...); received "
                             f"{new_shape}")
        rest = _resolve(name, shape[1:], new_shape[1:])
        return (None, *rest)
    new = [None if s is None else int(s) for s in new_shape]
    unknown = [i for i, s in enumerate(new) if s in (-1, None)]
    total = _size(shape)
    if len(unknown) > 1:
        raise ValueError(f"ops.{name}: at most one -1 in newshape; received {new_shape}")
    known = _size([s for s in new if s not in (-1, None)])
    if unknown:
        if known == 0 or total % known:
            raise ValueError(f"ops.{name}: cannot reshape {shape} ({total} elements) into "
                             f"{new_shape}")
        new[unknown[0]] = total // known
    if _size(new) != total:
        raise ValueError(f"ops.{name}: cannot reshape {shape} ({total} elements) into "
                         f"{new_shape} ({_size(new)} elements)")
    return tuple(new)


def reshape(x, newshape):
    return run(ReshapeOp("reshape", lambda s: _resolve("reshape", s, newshape)), [x])


def expand_dims(x, axis):
    def shape_fn(s):
        axes = axis if isinstance(axis, (list, tuple)) else (axis,)
        nd = len(s) + len(axes)
        pos = sorted(axis_of("expand_dims", a, nd) for a in axes)
        out = list(s)
        for p in pos:
            out.insert(p, 1)
        if is_batched(s) and out[0] is not None:
            raise ValueError(f"ops.expand_dims: axis={axis} would move the batch axis of "
                             f"{s}; expected an axis after it")
        return out
    return run(ReshapeOp("expand_dims", shape_fn), [x])


def squeeze(x, axis=None):
    def shape_fn(s):
        if axis is None:
            return [d for d in s if d != 1]
        axes = {axis_of("squeeze", a, len(s)) for a in
                (axis if isinstance(axis, (list, tuple)) else (axis,))}
        for a in axes:
            if s[a] != 1:
                raise ValueError(f"ops.squeeze: cannot squeeze axis {a} of shape {s}: "
                                 f"expected size 1, received {s[a]}")
        return [d for i, d in enumerate(s) if i not in axes]
    return run(ReshapeOp("squeeze", shape_fn), [x])


class TransposeOp(Operation):
    def __init__(self, axes):
        super().__init__()
        self.axes_arg = axes
        self._plans = {}

    def compute_output_shape(self, input_shape):
        nd = len(input_shape)
        axes = tuple(reversed(range(nd))) if self.axes_arg is None else \
            tuple(axis_of("transpose", a, nd, "axes") for a in self.axes_arg)
        if sorted(axes) != list(range(nd)):
            raise ValueError(f"ops.transpose: expected axes to be a permutation of "
                             f"{list(range(nd))}; received {self.axes_arg}")
        if is_batched(input_shape) and axes[0] != 0:
            raise ValueError(f"ops.transpose: axes={self.axes_arg} would move the batch "
                             f"axis of {tuple(input_shape)}; expected axes[0] == 0")
        self.perm = axes
        return tuple(input_shape[a] for a in axes)

    def _plan(self, x_shape):
        plan = self._plans.get(x_shape)
        if plan is None:
            xs = contiguous_strides(x_shape)
            out = tuple(x_shape[a] for a in self.perm)
            plan = self._plans[x_shape] = (out, contiguous_strides(out),
                                           tuple(xs[a] for a in self.perm))
        return plan

    def forward(self, y, x, training):
        shape, ys, xs = self._plan(tuple(x.shape))
        K.strided_copy(y, x, shape=shape, y_offset=0, y_strides=ys, x_offset=0, x_strides=xs)

    def backward(self, dx, dy, x, y):
        if dx is not None:  # scatter-by-permutation: every dx position written once
            shape, ys, xs = self._plan(tuple(x.shape))
            K.strided_copy(dx, dy, shape=shape, y_offset=0, y_strides=xs, x_offset=0,
                           x_strides=ys)


def transpose(x, axes=None):
    return run(TransposeOp(axes), [x])


class ConcatenateOp(Operation):
    """concatenate (each input a block along axis) or stack (each a new index)."""

    def __init__(self, axis, stack=False):
        super().__init__()
        self.axis_arg, self.stack = axis, stack
        self.name_ = "stack" if stack else "concatenate"

    def compute_output_shape(self, input_shape):
        shapes = [tuple(s) for s in input_shape]
        first = shapes[0]
        nd = len(first) + (1 if self.stack else 0)
        self.ax = axis_of(self.name_, self.axis_arg, nd)
        for s in shapes[1:]:
            same = s == first if self.stack else (len(s) == len(first) and all(
                a == b for d, (a, b) in enumerate(zip(s, first)) if d != self.ax))
            if not same:
                raise ValueError(f"ops.{self.name_}: expected inputs of matching shapes "
                                 f"(but for axis {self.axis_arg}); received {shapes}")
        if self.ax == 0 and any(is_batched(s) for s in shapes):
            raise ValueError(f"ops.{self.name_}: cannot join batched tensors along their "
                             f"batch axis (axis 0); received {shapes}")
        if self.stack:
            return (*first[:self.ax], len(shapes), *first[self.ax:])
        return (*first[:self.ax], int(np.sum([s[self.ax] for s in shapes])),
                *first[self.ax + 1:])

    def _blocks(self, shapes):
        """(outer, width of the output row, [(offset, width) per input]) in elements."""
        ax = self.ax
        outer = _size(shapes[0][:ax])
        widths = [_size(s[ax:]) if not self.stack else _size(s[ax:]) for s in shapes]
        offsets = np.cumsum([0] + widths[:-1])
        return outer, int(np.sum(widths)), list(zip(offsets.tolist(), widths))

    def forward(self, y, x, training):
        outer, row, blocks = self._blocks([tuple(a.shape) for a in x])
        for xi, (off, w) in zip(x, blocks):
            K.strided_copy(y, xi, shape=(outer, w), y_offset=off, y_strides=(row, 1),
                           x_offset=0, x_strides=(w, 1))

    def backward(self, dx, dy, x, y):
        outer, row, blocks = self._blocks([tuple(a.shape) for a in x])
        for d, (off, w) in zip(dx, blocks):
            if d is not None:
                K.strided_copy(d, dy, shape=(outer, w), y_offset=0, y_strides=(w, 1),
                               x_offset=off, x_strides=(row, 1))


def concatenate(xs, axis=0):
    return run(ConcatenateOp(axis), list(xs), as_list=True)


def stack(x, axis=0):
    return run(ConcatenateOp(axis, stack=True), list(x), as_list=True)


class SplitOp(Operation):
    def __init__(self, indices_or_sections, axis):
        super().__init__()
        self.spec, self.axis_arg = indices_or_sections, axis

    def compute_output_shape(self, input_shape):
        s = tuple(input_shape)
        self.ax = axis_of("split", self.axis_arg, len(s))
        n = s[self.ax]
        if n is None:
            raise ValueError(f"ops.split: cannot split the batch axis of {s}")
        if isinstance(self.spec, (int, np.integer)):
            if self.spec <= 0 or n % self.spec:
                raise ValueError(f"ops.split: axis {self.ax} of size {n} does not split into "
                                 f"{self.spec} equal sections")
            cuts = [n // self.spec * k for k in range(1, self.spec)]
        else:
            cuts = [int(c) for c in self.spec]
        edges = [0] + [min(max(c, 0), n) for c in cuts] + [n]
        self.widths = [max(b - a, 0) for a, b in zip(edges[:-1], edges[1:])]
        return [(*s[:self.ax], w, *s[self.ax + 1:]) for w in self.widths]

    def _blocks(self, x_shape):
        outer = _size(x_shape[:self.ax])
        inner = _size(x_shape[self.ax + 1:])
        offs = np.cumsum([0] + self.widths[:-1]) * inner
        return outer, x_shape[self.ax] * inner, [(int(o), w * inner)
                                                 for o, w in zip(offs, self.widths)]

    def forward(self, y, x, training):
        outer, row, blocks = self._blocks(tuple(x.shape))
        for yi, (off, w) in zip(y, blocks):
            K.strided_copy(yi, x, shape=(outer, w), y_offset=0, y_strides=(w, 1),
                           x_offset=off, x_strides=(row, 1))

    def backward(self, dx, dy, x, y):
        if dx is None:
            return
        outer, row, blocks = self._blocks(tuple(x.shape))
        for di, (off, w) in zip(dy, blocks):
            K.strided_copy(dx, di, shape=(outer, w), y_offset=off, y_strides=(row, 1),
                           x_offset=0, x_strides=(w, 1))


def split(x, indices_or_sections, axis=0):
    out = run(SplitOp(indices_or_sections, axis), [x])
    return out if isinstance(out, list) else [out]


class TakeOp(Operation):
    """take(x, indices, axis): indices are a tensor of float32-held integers."""

    def __init__(self, axis):
        super().__init__()
        self.axis_arg = axis

    def compute_output_shape(self, input_shape):
        xs, ids = (tuple(s) for s in input_shape)
        if self.axis_arg is None:
            if is_batched(xs):
                raise ValueError(f"ops.take: axis=None flattens the batch axis of {xs}; "
                                 f"expected an axis")
            self.ax = 0
            return ids
        self.ax = axis_of("take", self.axis_arg, len(xs))
        if xs[self.ax] is None:
            raise ValueError(f"ops.take: cannot gather along the batch axis of {xs}")
        out = (*xs[:self.ax], *ids, *xs[self.ax + 1:])
        if None in out[1:]:
            raise ValueError(f"ops.take: batched indices {ids} must index the first axis of "
                             f"a fixed-size x (an embedding lookup); received x {xs}, "
                             f"axis {self.axis_arg}")
        return out

    def _x(self, a):
        return a.reshape(a.size) if self.axis_arg is None else a

    def forward(self, y, x, training):
        K.take(y, self._x(x[0]), x[1], axis=self.ax)

    def backward(self, dx, dy, x, y):
        if dx[0] is not None:
            K.take_backward(self._x(dx[0]), dy, x[1], axis=self.ax)
        if dx[1] is not None:
            K.fill(dx[1], 0.0)


def take(x, indices, axis=None):
    return run(TakeOp(axis), [x, indices], as_list=True)


from kerasish.ops.indexing import GetItemOp, getitem  # noqa: E402,F401
