"""The one place an op call becomes either a graph node or an eager computation.

`run(op, inputs, as_list)`: when any input is symbolic (a KerasTensor) every input
becomes a tensor (`as_tensor`: Variables read their buffer, arrays and Python numbers
become Constants) and the op records a node, returning KerasTensor(s). Otherwise the
call is eager: inputs become float32 NumPy arrays, the op is built for their exact
shapes (eager inputs are all fixed-size: no batch axis, so `ops.reshape(np.arange(6),
(2, 3))` works as in NumPy), outputs and scratch are allocated with NumPy, the op's
forward runs on the CPU twins and NumPy array(s) come back.

Shape rules shared by the ops: a first dimension None is the batch (any size at run
time); it broadcasts against None or 1 only, and ops refuse to move it from the front.
"""

import numpy as np

from kerasish.ops.operation import as_array, as_tensor, eager, is_symbolic
from kerasish.tape import recording


def run(op, inputs, as_list=False):
    """Apply Operation `op` to `inputs` (a list of op arguments, in order)."""
    if recording.ANY and recording.records_op(inputs):  # a GradientTape records
        tensors = [as_tensor(recording.op_argument(v)) for v in inputs]
        return recording.active().mark(op(tensors if as_list else tensors[0]), op, tensors)
    if is_symbolic(*inputs):
        tensors = [as_tensor(v) for v in inputs]
        return op(tensors if as_list else tensors[0])
    arrays = [_contiguous(as_array(v)) for v in inputs]
    shapes = [tuple(a.shape) for a in arrays]
    out = op._build_once(shapes if as_list else shapes[0])
    multi = isinstance(out, list)
    outs = [np.empty(s, np.float32) for s in (out if multi else [out])]
    op.scratch = {name: np.empty(shape, dtype)
                  for name, (shape, dtype) in op.scratch_shapes(1).items()}
    op.forward(outs if multi else outs[0], arrays if as_list else arrays[0], False)
    return eager(outs if multi else outs[0])


def _contiguous(a):
    return a if a.flags.c_contiguous else a.copy(order="C")  # keeps 0-d arrays 0-d


def is_batched(shape):
    return len(shape) > 0 and shape[0] is None


def broadcast_shapes(name, *shapes):
    """NumPy broadcasting with a None batch dimension; errors name the op and shapes.
    A None past the batch axis is a size known only from the data (keras.Input((None,
    None, 3))): it stays None here, and the call traced again with the data's sizes
    checks it."""
    nd = max(len(s) for s in shapes)
    out = []
    for d in range(nd):
        dims = [s[d - (nd - len(s))] for s in shapes if d - (nd - len(s)) >= 0]
        fixed = {v for v in dims if v is not None and v != 1}
        unknown_size = d > 0 and None in dims and all(
            not (is_batched(s) and d == nd - len(s)) for s in shapes)
        if unknown_size and len(fixed) <= 1:
            out.append(None)
            continue
        if len(fixed) > 1 or (fixed and None in dims):
            listed = " and ".join(str(tuple(s)) for s in shapes)
            why = " (None is the batch axis: it broadcasts only against None or 1)" \
                if None in dims else ""
            raise ValueError(f"ops.{name}: incompatible shapes for broadcasting: {listed}{why}")
        out.append(None if None in dims else (fixed.pop() if fixed else 1))
    if any(is_batched(s) and len(s) < nd for s in shapes):
        raise ValueError(f"ops.{name}: the batch axis (None) of {shapes} would not be the "
                         f"first axis of the result; expected batched inputs of the "
                         f"highest rank")
    return tuple(out)


def axis_of(name, axis, ndim, arg="axis"):
    """A non-negative axis of an ndim-dimensional input, or a ValueError naming op/arg."""
    if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)) or \
            not -ndim <= axis < max(ndim, 1):
        raise ValueError(f"ops.{name}: expected {arg} in [-{ndim}, {ndim}) for an input of "
                         f"rank {ndim}; received {arg}={axis!r}")
    return int(axis) % max(ndim, 1)


def axes_of(name, axis, ndim):
    """`axis` None (all), an int or a tuple of ints -> sorted tuple of axes."""
    if axis is None:
        return tuple(range(ndim))
    items = tuple(axis) if isinstance(axis, (list, tuple)) else (axis,)
    out = tuple(sorted({axis_of(name, a, ndim) for a in items}))
    if len(out) != len(items):
        raise ValueError(f"ops.{name}: repeated axis in axis={axis!r}")
    return out


def dims(shape, n):
    """A shape with the batch (None) replaced by n."""
    return tuple(n if s is None else s for s in shape)


def contiguous_strides(shape):
    strides, acc = [], 1
    for s in reversed(shape):
        strides.append(acc)
        acc *= int(s)
    return tuple(reversed(strides))


def refuse_dtype(name, dtype):
    if dtype is not None and str(np.dtype(dtype) if not isinstance(dtype, str) else dtype) \
            not in ("float32",):
        raise ValueError(f"ops.{name}: only dtype float32 is supported; received "
                         f"dtype={dtype!r}")
