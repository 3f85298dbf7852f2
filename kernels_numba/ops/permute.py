"""Permute the non-batch axes (Keras's Permute): y.shape[1 + k] = x.shape[1 + perm[k]].

Both directions are one gather: each output element reads its input element through
the permuted strides (up to 4 axes after the batch; shorter shapes get leading 1s).
The backward is the inverse permutation. Conventions: outputs first; ops never allocate.
"""

from kernels_numba import _check
from kernels_numba.dispatch import impl

__all__ = ["permute_axes", "permute_axes_backward"]
FAMILY = "permute"
MAX_AXES = 4


def _perm(op, perm, rank):
    try:
        p = tuple(perm)
    except TypeError:
        p = None
    if p is None or sorted(p) != list(range(rank)) or \
            not all(isinstance(v, int) and not isinstance(v, bool) for v in p):
        raise ValueError(f"{op}: expected perm to be a permutation of {tuple(range(rank))} "
                         f"(the axes after the batch); received {perm!r}")
    if rank > MAX_AXES:
        raise ValueError(f"{op}: expected at most {MAX_AXES} axes after the batch; "
                         f"received {rank}")
    return p


def _plan(x_shape, perm):
    """(out dims, input strides along each out axis), padded to MAX_AXES with leading 1s."""
    dims = x_shape[1:]
    strides = [1] * len(dims)
    for k in range(len(dims) - 2, -1, -1):
        strides[k] = strides[k + 1] * dims[k + 1]
    pad = MAX_AXES - len(dims)
    out = (1,) * pad + tuple(dims[p] for p in perm)
    step = (0,) * pad + tuple(strides[p] for p in perm)
    return out, step


def _run(op, y_name, y, x_name, x, perm):
    shape = _check.array(op, x_name, x)
    if len(shape) < 2:
        raise ValueError(f"{op}: expected {x_name} with at least 2 dimensions (batch, ...); "
                         f"received shape {shape}")
    p = _perm(op, perm, len(shape) - 1)
    _check.array(op, y_name, y, shape=(shape[0], *(shape[1 + k] for k in p)))
    out, step = _plan(shape, p)
    impl(op, FAMILY, y=y, x=x)(y, x, *out, *step)


def permute_axes(y, x, *, perm):
    """y[n, i_0, .., i_k] = x[n, ...] with y's axis 1+k being x's axis 1+perm[k].

    Args:
        y: (N, *[x.shape[1 + p] for p in perm]) float32, output.
        x: (N, d_1, ..., d_r) float32, 1 <= r <= 4.
        perm: a permutation of range(r) (Keras's dims minus 1).
    """
    _run("permute_axes", "y", y, "x", x, perm)


def permute_axes_backward(dx, dy, *, perm):
    """dx = dy permuted back (overwritten); dx has x's shape, dy the permuted one."""
    op = "permute_axes_backward"
    shape = _check.array(op, "dx", dx)
    p = _perm(op, perm, len(shape) - 1)
    inverse = tuple(p.index(k) for k in range(len(p)))
    _run(op, "dx", dx, "dy", dy, inverse)
