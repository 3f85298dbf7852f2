"""Reductions: sum, mean, max, min, argmax, argmin, logsumexp (one kernels_numba
reduce_axes launch each way), var and std (composed of mean/subtract/square/sqrt,
so their gradients come from those ops). Keras 3 arguments: axis None (all), an int
or a tuple; keepdims. argmax/argmin return float32 arrays holding integer indices
(the flat index for axis=None, as NumPy) and pass no gradient. Reducing the batch
axis of a batched tensor gives a fixed-size result.
"""

from kernels_numba import ops as K
from kerasish.ops.dispatch import axes_of, axis_of, run
from kerasish.ops.elementwise import sqrt, square, subtract
from kerasish.ops.operation import Operation


class ReduceOp(Operation):
    def __init__(self, kind, axis=None, keepdims=False):
        super().__init__()
        self.kind, self.axis, self.keepdims = kind, axis, bool(keepdims)

    def compute_output_shape(self, input_shape):
        nd = len(input_shape)
        if self.kind in ("argmax", "argmin") and self.axis is not None:
            self.axes = (axis_of(self.kind, self.axis, nd),)
        else:
            self.axes = axes_of(self.kind, self.axis, nd)
        for a in self.axes:
            if input_shape[a] == 0 and self.kind not in ("sum", "mean"):
                raise ValueError(f"ops.{self.kind}: cannot reduce an empty axis {a} of "
                                 f"shape {tuple(input_shape)}")
        if self.keepdims:
            return tuple(1 if d in self.axes else s for d, s in enumerate(input_shape))
        return tuple(s for d, s in enumerate(input_shape) if d not in self.axes)

    def forward(self, y, x, training):
        K.reduce_axes(y, x, kind=self.kind, axes=self.axes)

    def backward(self, dx, dy, x, y):
        if dx is None:
            return
        if self.kind in ("argmax", "argmin"):
            K.fill(dx, 0.0)
        else:
            K.reduce_axes_backward(dx, dy, x, y, kind=self.kind, axes=self.axes)


def _reduce(kind, x, axis, keepdims):
    return run(ReduceOp(kind, axis, keepdims), [x])


def sum(x, axis=None, keepdims=False):  # noqa: A001 - Keras's name
    return _reduce("sum", x, axis, keepdims)


def mean(x, axis=None, keepdims=False):
    return _reduce("mean", x, axis, keepdims)


def max(x, axis=None, keepdims=False, initial=None):  # noqa: A001
    _no_initial("max", initial)
    return _reduce("max", x, axis, keepdims)


def min(x, axis=None, keepdims=False, initial=None):  # noqa: A001
    _no_initial("min", initial)
    return _reduce("min", x, axis, keepdims)


amax, amin = max, min


def argmax(x, axis=None, keepdims=False):
    return _reduce("argmax", x, axis, keepdims)


def argmin(x, axis=None, keepdims=False):
    return _reduce("argmin", x, axis, keepdims)


def logsumexp(x, axis=None, keepdims=False):
    return _reduce("logsumexp", x, axis, keepdims)


def var(x, axis=None, keepdims=False):
    """Population variance (ddof 0), as Keras 3."""
    m = mean(x, axis=axis, keepdims=True)
    return mean(square(subtract(x, m)), axis=axis, keepdims=keepdims)


def std(x, axis=None, keepdims=False):
    return sqrt(var(x, axis=axis, keepdims=keepdims))


def _no_initial(name, initial):
    if initial is not None:
        raise ValueError(f"ops.{name}: initial= is not supported; received "
                         f"initial={initial!r}")
