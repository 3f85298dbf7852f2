"""L1/L2 penalties (Keras's weight and activity regularizers) and their gradients.

Keras 3 (keras/src/regularizers/regularizers.py, L1L2): penalty = l1*sum|x| + l2*sum x^2,
a term skipped when its factor is 0; autograd gives d/dx = l1*sign(x) + 2*l2*x with
sign(0) = 0 and sign(NaN) = NaN. An activity regularizer's penalty is divided by the
batch size (keras/src/layers/layer.py, `divide_no_nan(loss, batch_size)` in __call__):
the caller passes scale = 1/batch_size.

Deterministic sums: the buffer is cut into a fixed number of parts that depends on its
size only; each part is reduced (CUDA: a block's strided share and a fixed tree; CPU: in
order in float64), then the partials are added in index order by one thread. No float
atomics, so a penalty's bits depend on the shapes, never on scheduling.
"""

import math

import numpy as np

from kernels_numba import _check
from kernels_numba.dispatch import impl

__all__ = ["weight_penalty", "activity_penalty", "penalty_workspace_shape"]
FAMILY = "regularize"

# Up to MAX_PARTS parts per buffer, one more for every ITEMS_PER_PART elements.
MAX_PARTS = 128
ITEMS_PER_PART = 2048


def parts_for(size):
    """Parts a buffer of `size` elements is reduced in (a function of the size only)."""
    return max(1, min(MAX_PARTS, -(-int(size) // ITEMS_PER_PART)))


def penalty_workspace_shape(size):
    """(S,) float32 scratch for weight_penalty/activity_penalty over `size` elements:
    two partial sums (|x| and x^2) per part."""
    return (2 * parts_for(size),)


def weight_penalty(penalty, grad, w, *, l1, l2, workspace=None):
    """penalty += l1*sum|w| + l2*sum w^2; grad += l1*sign(w) + 2*l2*w.

    Args:
        penalty: (1,) float32, accumulated.
        grad: float32 with w's number of elements (any shape, read flat), accumulated;
            None: the penalty only.
        w: float32, any shape.
        l1, l2: factors >= 0, finite (a 0 factor's term is skipped, as Keras's L1L2).
        workspace: optional (S,) float32 from penalty_workspace_shape(w.size) (a shared
            scratch buffer is used when omitted).
    """
    _penalty("weight_penalty", penalty, grad, w, l1, l2, 1.0, workspace, "w", "grad")


def activity_penalty(penalty, dy, y, *, l1, l2, scale, workspace=None):
    """penalty += scale*(l1*sum|y| + l2*sum y^2); dy += scale*(l1*sign(y) + 2*l2*y).

    For a layer's activity regularizer: Keras divides its penalty by the batch size, so
    pass scale = 1/batch_size (times any loss scaling the caller applies to dy).

    Args:
        penalty: (1,) float32, accumulated.
        dy: float32 with y's number of elements, accumulated (the gradient flowing into the
            layer's output); None: the penalty only.
        y: float32, any shape (the layer's output).
        l1, l2: factors >= 0, finite.
        scale: finite float (1/batch_size in Keras).
        workspace: optional (S,) float32 from penalty_workspace_shape(y.size).
    """
    _penalty("activity_penalty", penalty, dy, y, l1, l2, scale, workspace, "y", "dy")


def _factor(op, name, value, nonneg=True):
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise TypeError(f"{op}: expected {name} to be a number; received {value!r}") from None
    if not math.isfinite(v) or (nonneg and v < 0.0):
        want = ">= 0 and finite" if nonneg else "finite"
        raise ValueError(f"{op}: expected {name} {want}; received {value!r}")
    return np.float32(v)


def _penalty(op, penalty, grad, x, l1, l2, scale, workspace, xname, gname):
    shape = _check.array(op, xname, x)
    size = int(np.prod(shape, dtype=np.int64))
    _check.array(op, "penalty", penalty, shape=(1,))
    if grad is not None:
        gshape = _check.array(op, gname, grad)
        if int(np.prod(gshape, dtype=np.int64)) != size:
            raise ValueError(f"{op}: expected {gname} with {size} elements ({xname}.shape == "
                             f"{shape}); received shape {gshape}")
    if workspace is not None:
        _check.array(op, "workspace", workspace, ndim=1)
        want = penalty_workspace_shape(size)[0]
        if workspace.shape[0] < want:
            raise ValueError(f"{op}: expected workspace with >= {want} elements; received "
                             f"{workspace.shape[0]}")
    a, b = _factor(op, "l1", l1), _factor(op, "l2", l2)
    s = _factor(op, "scale", scale, nonneg=False)
    fn = impl("penalty", FAMILY, penalty=penalty, grad=grad, x=x, workspace=workspace)
    fn(penalty, grad, x, a, b, s, workspace)
