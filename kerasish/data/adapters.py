"""make_loader: one iteration protocol over arrays, DataLoaders, generators and
Keras-style Sequences (see kerasish.data for the protocol)."""

import collections
import itertools
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from kerasish import random as kerasish_random
from kerasish.data.loader import DataLoader, _check_int, background

__all__ = ["GeneratorAdapter", "SequenceAdapter", "make_loader"]


def _arrays(data):
    """User batch data as NumPy: an array, a list of arrays (several inputs or outputs,
    given as a list or tuple of arrays) or a dict of arrays by name."""
    if isinstance(data, dict):
        return {k: np.asarray(v) for k, v in data.items()}
    if isinstance(data, (list, tuple)) and data and all(
            len(getattr(a, "shape", ())) > 0 for a in data):
        return [np.asarray(a) for a in data]
    return np.asarray(data)


def _rows(data):
    """Samples in a batch part (its first array's length); None for a 0-d array."""
    first = next(iter(data.values()), None) if isinstance(data, dict) else \
        data[0] if isinstance(data, list) else data
    return None if first is None or np.ndim(first) == 0 else len(first)


def _shapes(parts):
    return ", ".join(str({k: v.shape for k, v in p.items()} if isinstance(p, dict) else
                         [a.shape for a in p] if isinstance(p, list) else p.shape)
                     for p in parts)


def as_batch(item, owner):
    """A batch as yielded by user code -> `(x, y)` or `(x, y, sample_weight)` of NumPy
    arrays (y may be None; x and y may be lists or dicts of arrays).

    Accepts a bare x (an array or a dict), `(x,)`, `(x, y)` or `(x, y, sample_weight)`
    as Keras does; a sample_weight of None gives a pair.
    """
    if isinstance(item, (tuple, list)):
        if not 1 <= len(item) <= 3:
            raise ValueError(f"{owner}: expected each batch as x, (x,), (x, y) or "
                             f"(x, y, sample_weight); received a {type(item).__name__} of "
                             f"{len(item)} items")
        parts = list(item)
    else:
        parts = [item]
    if len(parts) == 3 and parts[2] is None:
        parts.pop()
    if len(parts) == 2 and parts[1] is None:
        parts.pop()
    parts = [_arrays(p) for p in parts]
    if len(parts) > 1:
        rows = [_rows(p) for p in parts]
        if None in rows or len(set(rows)) > 1:
            what = "x and y" if len(parts) == 2 else "x, y and sample weights"
            raise ValueError(f"{owner}: a batch's {what} must have the same number of "
                             f"samples; received shapes {_shapes(parts)}")
    return tuple(parts) if len(parts) > 1 else (parts[0], None)


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
        return (as_batch(item, "generator") for item in it)


class SequenceAdapter:
    """Batches from a Keras-style Sequence or a `kerasish.utils.PyDataset`:
    `num_batches` (or `len(seq)`) batches, `seq[i]` -> x, (x, y) or (x, y, sample_weight).

    With `shuffle` the batch order is a fresh permutation every epoch (seeded).
    `seq.on_epoch_begin()`, when defined, is called before each epoch's first batch;
    `seq.on_epoch_end()` after each epoch: when the pass completes or the caller stops
    early (e.g. after steps_per_epoch), not when `__getitem__` raised.

    A PyDataset's own settings replace `prefetch`: `workers=0` fetches in the caller's
    thread, `workers=1` in one prefetch thread, more in that many threads (batches keep
    their order); `max_queue_size` batches at most are ready or in flight. A PyDataset
    whose `num_batches` is None is endless: indices 0, 1, 2, ... until the caller stops.
    """

    def __init__(self, seq, shuffle=True, seed=None, prefetch=2):
        from kerasish.utils.py_dataset import PyDataset

        self.workers = 1
        self.prefetch = _check_int("make_loader", "prefetch", prefetch, 0)
        if isinstance(seq, PyDataset):
            if seq.use_multiprocessing:  # set by a subclass bypassing the setter
                raise ValueError(f"make_loader: {type(seq).__name__}.use_multiprocessing="
                                 f"True is not supported (kerasish uses threads: workers=N)")
            self.workers = _check_int("make_loader", "workers", seq.workers, 0)
            depth = _check_int("make_loader", "max_queue_size", seq.max_queue_size, 1)
            self.prefetch = depth if self.workers else 0
            n = seq.num_batches
        else:
            n = len(seq)
        if n is not None:
            n = _check_int("make_loader", "the number of batches", n, 0)
            if n == 0:
                raise ValueError("make_loader: the Sequence has no batches (len() == 0)")
        self.seq = seq
        self.shuffle = bool(shuffle)
        self.num_batches = n
        self._rng = np.random.default_rng(kerasish_random.new_seed() if seed is None else seed)

    def __len__(self):
        if self.num_batches is None:
            raise TypeError(f"make_loader: {type(self.seq).__name__} is endless "
                            f"(num_batches is None): it has no len()")
        return self.num_batches

    def __iter__(self):
        n = self.num_batches
        if n is None:
            order = itertools.count()
        else:
            order = self._rng.permutation(n) if self.shuffle else np.arange(n)
        return self._epoch(order)

    def _fetch(self, i):
        return as_batch(self.seq[int(i)], type(self.seq).__name__)

    def _source(self, order):
        if self.workers > 1:
            return _ordered_pool(self._fetch, order, self.workers, self.prefetch)
        produce = lambda: (self._fetch(i) for i in order)  # noqa: E731
        return background(produce, self.prefetch, "kerasish-Sequence") \
            if self.prefetch else produce()

    def _epoch(self, order):
        if callable(getattr(self.seq, "on_epoch_begin", None)):
            self.seq.on_epoch_begin()
        source = self._source(order)
        ended = False
        try:
            yield from source
            ended = True
        except GeneratorExit:  # the caller stopped early: still an epoch end
            ended = True
            raise
        finally:
            if hasattr(source, "close"):
                source.close()  # joins the prefetch threads before on_epoch_end
            if ended and callable(getattr(self.seq, "on_epoch_end", None)):
                self.seq.on_epoch_end()


def _ordered_pool(fetch, order, workers, depth):
    """`fetch(i)` for each i of `order` on `workers` threads, yielded in order, with at
    most `depth` (>= workers) batches ready or in flight. A worker's exception is
    re-raised here; closing the generator cancels what has not started."""
    pool = ThreadPoolExecutor(workers, thread_name_prefix="kerasish-PyDataset")
    pending = collections.deque()
    try:
        for i in order:
            pending.append(pool.submit(fetch, i))
            if len(pending) >= max(depth, workers):
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _is_array_like(x):
    return isinstance(x, (np.ndarray, list, tuple)) or (
        hasattr(x, "shape") and hasattr(x, "dtype") and hasattr(x, "__getitem__"))


def _is_sequence(x):
    from kerasish.utils.py_dataset import PyDataset

    return isinstance(x, PyDataset) or (hasattr(x, "__len__") and hasattr(x, "__getitem__")
            and (callable(getattr(x, "on_epoch_end", None)) or not _is_array_like(x)))


def make_loader(x, y=None, batch_size=32, shuffle=True, seed=None, drop_remainder=False,
                transform=None, prefetch=2):
    """Adapt training data to the loader protocol (what `fit`/`evaluate`/`predict` use).

    Args:
        x: NumPy array (or list, or indexable with len()) of samples; a DataLoader
            (returned as is); a `kerasish.utils.PyDataset` or a Keras-style Sequence
            (has `__len__` and `__getitem__` returning batches, optionally
            `on_epoch_end`); or a generator / iterable without len() yielding batches.
            Batches are x, (x,), (x, y) or (x, y, sample_weight).
        y: targets for array x; must be None for the other kinds (they carry their own).
        batch_size: samples per batch for arrays (None means 32); ignored otherwise.
        shuffle: shuffle samples (arrays) or batch order (Sequence) every epoch.
        seed: shuffling seed.
        drop_remainder: arrays only: drop the last incomplete batch.
        transform: arrays only: per-batch `f(x, y) -> (x, y)`.
        prefetch: batches prepared ahead in a thread (arrays and Sequences; a
            PyDataset uses its own workers and max_queue_size instead).

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
