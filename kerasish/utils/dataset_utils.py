"""`split_dataset`: Keras 3's left/right split, for NumPy arrays and tuples of arrays.

Keras returns tf.data or torch Datasets; kerasish has neither, so each half comes back
in the structure it went in (an array, or a tuple/list/dict of arrays), ready for
`model.fit(*left)` or `validation_data=right`.
"""

import numbers
import random

import numpy as np

from kerasish import random as kerasish_random

__all__ = ["split_dataset"]


def _leaves(data, path="dataset"):
    """(path, array) for every array in a nested tuple/list/dict."""
    if isinstance(data, dict):
        for key, value in data.items():
            yield from _leaves(value, f"{path}[{key!r}]")
    elif isinstance(data, (tuple, list)) and not _is_array_leaf(data):
        for k, value in enumerate(data):
            yield from _leaves(value, f"{path}[{k}]")
    else:
        yield path, data


def _is_array_leaf(data):
    """A list/tuple of numbers (one array written as Python lists), not of arrays."""
    return bool(data) and not any(isinstance(v, (tuple, list, dict)) or
                                  len(getattr(v, "shape", ())) > 0 for v in data)


def _take(data, rows):
    if isinstance(data, dict):
        return {key: _take(value, rows) for key, value in data.items()}
    if isinstance(data, (tuple, list)) and not _is_array_leaf(data):
        return type(data)(_take(value, rows) for value in data)
    return np.asarray(data)[rows]


def _is_fraction(value):
    return isinstance(value, numbers.Real) and not isinstance(value, numbers.Integral)


def _size(name, value, total):
    """Keras's checks of one split size; returns it as a count (or None)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (numbers.Integral, numbers.Real)):
        raise TypeError(f"split_dataset: expected {name} an int, a float or None; "
                        f"received {value!r} of type {type(value).__name__}")
    if isinstance(value, numbers.Integral):
        if not 0 < value < total:
            raise ValueError(f"split_dataset: expected {name} a positive int smaller than "
                             f"the {total} samples, or a float in (0, 1); received {value}")
        return int(value)
    if not 0 < value < 1:
        raise ValueError(f"split_dataset: expected {name} a float in (0, 1) or a positive "
                         f"int smaller than the {total} samples; received {value}")
    return round(float(value) * total)


def split_dataset(dataset, left_size=None, right_size=None, shuffle=False, seed=None,
                  preferred_backend=None):
    """Split samples into a left part and a right part (e.g. train / test), as Keras 3.

    Args:
        dataset: a NumPy array, or a tuple/list (nested, dicts allowed) of arrays with
            the same number of samples, e.g. `(x, y)`.
        left_size: a float in (0, 1): that fraction of the samples (rounded), or an int
            in [1, n): that many samples; None: what `right_size` leaves.
        right_size: the same for the right part; None: what `left_size` leaves. When
            both are given and sum to less than n, the samples between are dropped.
        shuffle: split a random permutation of the samples (Python's `random.Random(seed)`,
            the order Keras's tf.data path uses); False keeps their order.
        seed: shuffling seed; None draws one from `kerasish.utils.set_random_seed`'s
            generator.
        preferred_backend: must be None (kerasish always returns NumPy arrays).

    Returns:
        `(left, right)`, each in `dataset`'s structure holding its samples: with
        `dataset=(x, y)`, `left = (x_left, y_left)` (Keras returns Datasets instead).

    Raises:
        TypeError: a dataset that is not an array/tuple/list, or sizes that are not
            int/float.
        ValueError: no size given, sizes out of range, a side left empty, arrays of
            different lengths or without a sample axis, or preferred_backend given.
    """
    if preferred_backend is not None:
        raise ValueError(f"split_dataset: preferred_backend is not supported (kerasish "
                         f"returns NumPy arrays); received {preferred_backend!r}")
    if not isinstance(dataset, (np.ndarray, tuple, list)):
        raise TypeError(f"split_dataset: expected dataset a NumPy array or a tuple/list of "
                        f"arrays; received {type(dataset).__name__}")
    leaves = list(_leaves(dataset))
    if not leaves:
        raise ValueError("split_dataset: the dataset holds no arrays")
    lengths = {}
    for path, leaf in leaves:
        shape = np.shape(leaf)
        if not shape:
            raise ValueError(f"split_dataset: {path} has no sample axis (a 0-d value of "
                             f"type {type(leaf).__name__})")
        lengths[path] = shape[0]
    if len(set(lengths.values())) > 1:
        raise ValueError(f"split_dataset: every array must have the same number of "
                         f"samples; received {lengths}")
    if left_size is None and right_size is None:
        raise ValueError("split_dataset: at least one of left_size and right_size must be "
                         "given; received left_size=None and right_size=None")
    total = next(iter(lengths.values()))
    left = _size("left_size", left_size, total)
    right = _size("right_size", right_size, total)
    if _is_fraction(left_size) and _is_fraction(right_size) and left_size + right_size > 1:
        raise ValueError(f"split_dataset: left_size + right_size must be <= 1; received "
                         f"{left_size} + {right_size}")
    left = total - right if left is None else left
    right = total - left if right is None else right
    if left + right > total:
        raise ValueError(f"split_dataset: left_size + right_size must be at most the {total} "
                         f"samples; received {left} + {right}")
    if left == 0 or right == 0:
        raise ValueError(f"split_dataset: with {total} samples, left_size={left_size} and "
                         f"right_size={right_size} leave the {'left' if not left else 'right'}"
                         f" side empty")
    order = list(range(total))
    if shuffle:
        random.Random(kerasish_random.new_seed() if seed is None else seed).shuffle(order)
    order = np.asarray(order, dtype=np.int64)
    return _take(dataset, order[:left]), _take(dataset, order[total - right:])
