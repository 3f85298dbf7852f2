"""`normalize`: Keras's L-p normalisation of NumPy arrays along one axis."""

import numpy as np

__all__ = ["normalize"]


def normalize(x, axis=-1, order=2):
    """`x` divided by its `order`-norm along `axis` (`numpy.linalg.norm` orders: 1, 2,
    np.inf, ...); zero norms count as 1, so all-zero slices stay zero. NaN and Inf follow
    IEEE division (a slice holding Inf becomes 0 and NaN).

    As in Keras, a 1-D `x` comes back with shape (1, n); integer input gives float64.
    Unlike Keras 3.15 (which then fails to broadcast), `axis` other than -1 works.

    Args:
        x: array-like with at least one axis (lists are converted; a NumPy array is
            returned in every case).
        axis: int, the axis to normalise along.
        order: the norm's order.
    """
    x = np.asarray(x)
    if x.ndim == 0:
        raise ValueError("normalize: expected x with at least one axis; received a 0-d value")
    if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)) or \
            not -x.ndim <= axis < x.ndim:
        raise ValueError(f"normalize: expected axis an int in [{-x.ndim}, {x.ndim}) for x of "
                         f"shape {x.shape}; received {axis!r}")
    try:
        norm = np.linalg.norm(x, order, int(axis))
    except (ValueError, TypeError) as e:
        raise ValueError(f"normalize: order={order!r} is not a vector norm order "
                         f"({e})") from None
    norm = np.atleast_1d(norm)
    norm[norm == 0] = 1
    if x.ndim == 1:  # Keras: a 1-D x gives a (1, n) result
        return x / np.expand_dims(norm, -1)
    return x / np.expand_dims(norm, int(axis))
