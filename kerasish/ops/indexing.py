"""`x[key]` on symbolic tensors: basic indexing with ints, slices (any step), Ellipsis
and None, as one strided copy; its gradient zero-fills dx and copies dy into the
indexed positions (distinct positions: no accumulation). On a batched tensor the batch
axis takes `:` (all samples) or an int (one sample: a fixed-size result). Tensors or
lists as keys (advanced indexing) are refused: use ops.take.
"""

from kernels_numba import ops as K
from kerasish.ops.dispatch import contiguous_strides, run
from kerasish.ops.operation import Operation


def _normalize(key, ndim):
    key = key if isinstance(key, tuple) else (key,)
    for k in key:
        if not (k is None or k is Ellipsis or isinstance(k, slice) or
                (isinstance(k, int) and not isinstance(k, bool)) or
                type(k).__name__ in ("int64", "int32")):
            raise TypeError(f"ops.getitem: only ints, slices, Ellipsis and None index a "
                            f"symbolic tensor; received {k!r} in key {key!r} (use ops.take "
                            f"for gathers by index tensors)")
    used = sum(1 for k in key if k is not None and k is not Ellipsis)
    if used > ndim:
        raise IndexError(f"ops.getitem: too many indices for a tensor of rank {ndim}: "
                         f"{key!r}")
    if sum(1 for k in key if k is Ellipsis) > 1:
        raise IndexError(f"ops.getitem: an index can only have a single Ellipsis: {key!r}")
    out = []
    for k in key:
        if k is Ellipsis:
            out.extend([slice(None)] * (ndim - used))
        else:
            out.append(int(k) if not isinstance(k, slice) and k is not None else k)
    if Ellipsis not in key:
        out.extend([slice(None)] * (ndim - used))
    return out


class GetItemOp(Operation):
    def __init__(self, key):
        super().__init__()
        self.key = key
        self._plans = {}

    def compute_output_shape(self, input_shape):
        shape = tuple(input_shape)
        self.entries = _normalize(self.key, len(shape))
        out, dim = [], 0
        for k in self.entries:
            if k is None:
                out.append(1)
                continue
            size = shape[dim]
            if size is None:  # the batch axis
                if isinstance(k, int):
                    pass  # one sample: the dimension goes
                elif k == slice(None) or k == slice(None, None, 1):
                    out.append(None)
                else:
                    raise ValueError(f"ops.getitem: the batch axis of {shape} takes `:` or "
                                     f"an int; received {k!r}")
            elif isinstance(k, int):
                if not -size <= k < size:
                    raise IndexError(f"ops.getitem: index {k} is out of bounds for axis "
                                     f"{dim} with size {size}")
            else:
                out.append(len(range(*k.indices(size))))
            dim += 1
        if None in out and out[0] is not None:
            raise ValueError(f"ops.getitem: {self.key!r} would move the batch axis of "
                             f"{shape} from the front")
        return tuple(out)

    def _plan(self, x_shape):
        plan = self._plans.get(x_shape)
        if plan is None:
            xs = contiguous_strides(x_shape)
            offset, shape, strides, dim = 0, [], [], 0
            for k in self.entries:
                if k is None:
                    shape.append(1)
                    strides.append(0)
                    continue
                n = x_shape[dim]
                if isinstance(k, int):
                    i = k + n if k < 0 else k
                    if not 0 <= i < n:
                        raise IndexError(f"ops.getitem: index {k} is out of bounds for axis "
                                         f"{dim} with size {n}")
                    offset += i * xs[dim]
                else:
                    start, _, step = k.indices(n)
                    count = len(range(*k.indices(n)))
                    offset += start * xs[dim] if count else 0
                    shape.append(count)
                    strides.append(step * xs[dim])
                dim += 1
            plan = self._plans[x_shape] = (tuple(shape), contiguous_strides(shape),
                                           offset, tuple(strides))
        return plan

    def forward(self, y, x, training):
        shape, ys, off, xs = self._plan(tuple(x.shape))
        K.strided_copy(y, x, shape=shape, y_offset=0, y_strides=ys, x_offset=off,
                       x_strides=xs)

    def backward(self, dx, dy, x, y):
        if dx is None:
            return
        shape, ys, off, xs = self._plan(tuple(x.shape))
        K.fill(dx, 0.0)
        K.strided_copy(dx, dy, shape=shape, y_offset=off, y_strides=xs, x_offset=0,
                       x_strides=ys)


def getitem(x, key):
    """x[key] (basic indexing) as an op: symbolic tensors record a node, arrays index."""
    return run(GetItemOp(key), [x])

