"""Embedding lookups and sequence masks (Embedding(mask_zero=True), Masking).

ids: float32 token ids, flattened (M,) (the engine feeds inputs as float32; exact below
2**24). An id that is not an integer in [0, V) gives a NaN output row and no gradient.
Masks are float32 (N, T) buffers of 0/1, as the recurrent ops read them.
"""

import numpy as np

from kernels_numba import _check
from kernels_numba.dispatch import impl

__all__ = ["embedding_forward", "embedding_backward", "embedding_mask", "masking_forward",
           "masking_backward"]
FAMILY = "embedding"


def embedding_forward(y, ids, table):
    """y[m] = table[ids[m]].

    Args:
        y: (M, D) float32, output.
        ids: (M,) float32 token ids.
        table: (V, D) float32, the embeddings.
    """
    op = "embedding_forward"
    (m,) = _check.array(op, "ids", ids, ndim=1)
    d = _check.array(op, "table", table, ndim=2)[1]
    _check.array(op, "y", y, shape=(m, d))
    impl(op, FAMILY, y=y, ids=ids, table=table)(y, ids, table)


def embedding_backward(dtable, dy, ids):
    """dtable[ids[m]] += dy[m] for every token, in token order (deterministic).

    Args:
        dtable: (V, D) float32, accumulates.
        dy: (M, D) float32.
        ids: (M,) float32 token ids.
    """
    op = "embedding_backward"
    (m,) = _check.array(op, "ids", ids, ndim=1)
    d = _check.array(op, "dtable", dtable, ndim=2)[1]
    _check.array(op, "dy", dy, shape=(m, d))
    impl(op, FAMILY, dtable=dtable, dy=dy, ids=ids)(dtable, dy, ids)


def embedding_mask(mask, ids):
    """mask = 1 where ids != 0 else 0 (Keras's mask_zero).

    Args:
        mask: (M,) float32, output (a flat view of the (N, T) mask).
        ids: (M,) float32.
    """
    op = "embedding_mask"
    (m,) = _check.array(op, "ids", ids, ndim=1)
    _check.array(op, "mask", mask, shape=(m,))
    impl(op, FAMILY, mask=mask, ids=ids)(mask, ids)


def masking_forward(y, mask, x, *, mask_value=0.0):
    """Keras's Masking: mask[n, t] = any(x[n, t, :] != mask_value); y = x * mask.

    Args:
        y: (N, T, F) float32, output. mask: (N, T) float32, output. x: (N, T, F) float32.
        mask_value: float.
    """
    op = "masking_forward"
    n, t, f = _check.array(op, "x", x, ndim=3)
    _check.array(op, "y", y, shape=(n, t, f))
    _check.array(op, "mask", mask, shape=(n, t))
    impl(op, FAMILY, y=y, mask=mask, x=x)(y, mask, x, np.float32(mask_value))


def masking_backward(dx, dy, mask):
    """dx = dy * mask (broadcast over features); dx (N, T, F) overwritten."""
    op = "masking_backward"
    n, t, f = _check.array(op, "dy", dy, ndim=3)
    _check.array(op, "dx", dx, shape=(n, t, f))
    _check.array(op, "mask", mask, shape=(n, t))
    impl(op, FAMILY, dx=dx, dy=dy, mask=mask)(dx, dy, mask)
