"""make_loader: one iteration protocol over arrays, DataLoaders, generators and
Keras-style Sequences (see kerasish.data for the protocol)."""

import numpy as np

from kerasish import random as kerasish_random
from kerasish.data.loader import DataLoader, _check_int, background

__all__ = ["GeneratorAdapter", "SequenceAdapter", "make_loader"]


def as_pair(item, owner):
    """A batch as yielded by user code -> (x, y) NumPy arrays (y may be None).

    Accepts (x, y), (x,) or a bare x; a 3-tuple (sample weights) is refused.
    """
    if isinstance(item, (tuple, list)):
        if len(item) == 2:
            x, y = item
        elif len(item) == 1:
            x, y = item[0], None
        else:
            raise ValueError(f"{owner}: expected each batch as (x, y) or (x,); received a "
                             f"{type(item).__name__} of {len(item)} items (sample weights "
                             f"are not supported)")
    else:
        x, y = item, None
    x = np.asarray(x)
    if y is not None:
        y = np.asarray(y)
        if x.ndim == 0 or y.ndim == 0 or len(x) != len(y):
            raise ValueError(f"{owner}: a batch's x and y must have the same number of "
                             f"samples; received shapes {x.shape} and {y.shape}")
    return x, y


class GeneratorAdapter:
    """Batches from a Python generator / iterator, or from an iterable without len().

    A one-shot iterator (a generator) is shared across epochs: each `iter()` continues
    it, and an epoch ends when it is exhausted (or when the caller stops, e.g. after
    steps_per_epoch). A re-iterable object is restarted with `iter()` every epoch.
    Batches are pulled on demand in the caller's thread (no read-ahead, so stopping
    early never loses items).
    """

    num_batches = None

    def __init__(self, source):
        self.source = source

    def __iter__(self):
        it = iter(self.source)
        return (as_pair(item, "generator") for item in it)


class SequenceAdapter:
    """Batches from a Keras-style Sequence: `len(seq)` batches, `seq[i] -> (x, y)`.

    With `shuffle` the batch order is a fresh permutation every epoch (seeded).
    `seq.on_epoch_end()`, when defined, is called after each epoch: when the pass
    completes or the caller stops early (e.g. after steps_per_epoch), not when
    `__getitem__` raised.
    """

    def __init__(self, seq, shuffle=True, seed=None, prefetch=2):
        n = len(seq)
        if n == 0:
            raise ValueError("make_loader: the Sequence has no batches (len() == 0)")
        self.seq = seq
        self.shuffle = bool(shuffle)
        self.prefetch = _check_int("make_loader", "prefetch", prefetch, 0)
        self.num_batches = n
        self._rng = np.random.default_rng(kerasish_random.new_seed() if seed is None else seed)

    def __len__(self):
        return self.num_batches

    def __iter__(self):
        n = self.num_batches
        order = self._rng.permutation(n) if self.shuffle else np.arange(n)
        return self._epoch(order)

    def _epoch(self, order):
        def produce():
            return (as_pair(self.seq[int(i)], "Sequence") for i in order)

        source = background(produce, self.prefetch, "kerasish-Sequence") \
            if self.prefetch else produce()
        ended = False
        try:
            yield from source
            ended = True
        except GeneratorExit:  # the caller stopped early: still an epoch end
            ended = True
            raise
        finally:
            if ended and callable(getattr(self.seq, "on_epoch_end", None)):
                self.seq.on_epoch_end()


def _is_array_like(x):
    return isinstance(x, (np.ndarray, list, tuple)) or (
        hasattr(x, "shape") and hasattr(x, "dtype") and hasattr(x, "__getitem__"))


def _is_sequence(x):
    return (hasattr(x, "__len__") and hasattr(x, "__getitem__")
            and (callable(getattr(x, "on_epoch_end", None)) or not _is_array_like(x)))


def make_loader(x, y=None, batch_size=32, shuffle=True, seed=None, drop_remainder=False,
                transform=None, prefetch=2):
    """Adapt training data to the loader protocol (what `fit`/`evaluate`/`predict` use).

    Args:
        x: NumPy array (or list, or indexable with len()) of samples; a DataLoader
            (returned as is); a Keras-style Sequence (has `__len__` and `__getitem__`
            returning batches, optionally `on_epoch_end`); or a generator / iterable
            without len() yielding `(x, y)` batches.
        y: targets for array x; must be None for the other kinds (they carry their own).
        batch_size: samples per batch for arrays (None means 32); ignored otherwise.
        shuffle: shuffle samples (arrays) or batch order (Sequence) every epoch.
        seed: shuffling seed.
        drop_remainder: arrays only: drop the last incomplete batch.
        transform: arrays only: per-batch `f(x, y) -> (x, y)`.
        prefetch: batches prepared ahead in a thread (arrays and Sequences).

    Returns:
        A DataLoader, SequenceAdapter or GeneratorAdapter.

    Raises:
        ValueError: empty data, x/y length mismatch, batch_size <= 0, or y given with a
            DataLoader / Sequence / generator.
        TypeError: x is none of the above.
    """
    if isinstance(x, (DataLoader, SequenceAdapter, GeneratorAdapter)) or _is_sequence(x) \
            or (hasattr(x, "__iter__") and not hasattr(x, "__len__")):
        if y is not None:
            raise ValueError(f"make_loader: y must be None when x is a "
                             f"{type(x).__name__} (it yields its own (x, y) batches); "
                             f"received y of type {type(y).__name__}")
    if isinstance(x, (DataLoader, SequenceAdapter, GeneratorAdapter)):
        return x
    if _is_sequence(x):
        return SequenceAdapter(x, shuffle=shuffle, seed=seed, prefetch=prefetch)
    if hasattr(x, "__iter__") and not hasattr(x, "__len__"):
        return GeneratorAdapter(x)
    if x is None:
        raise TypeError("make_loader: expected x an array, DataLoader, Sequence or "
                        "generator; received None")
    if batch_size is None:
        batch_size = 32
    return DataLoader(x, y, batch_size=batch_size, shuffle=shuffle,
                      drop_remainder=drop_remainder, transform=transform,
                      prefetch=prefetch, seed=seed)
