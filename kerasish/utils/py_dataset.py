"""`PyDataset` (alias `Sequence`): Keras 3's base class for batch-indexed datasets.

`fit`/`evaluate`/`predict` read one through `kerasish.data.SequenceAdapter`:
`workers=0` fetches in the training thread, `workers=1` (the default) in one prefetch
thread, `workers=N` in N threads (batches still come in order); at most
`max_queue_size` batches are ready or being prepared ahead. Multiprocessing is refused.
"""

import itertools
import warnings

__all__ = ["PyDataset", "Sequence"]

_DEFAULTS = {"_workers": 1, "_use_multiprocessing": False, "_max_queue_size": 10}


def _check_count(name, value, minimum):
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"PyDataset: expected {name} an int >= {minimum}; received {value!r}")
    return value


def _check_multiprocessing(value):
    if value:
        raise ValueError("PyDataset: use_multiprocessing=True is not supported by kerasish "
                         "(batches are prepared in threads); use workers=N threads instead, "
                         "received use_multiprocessing=True")
    return False


class PyDataset:
    """Base class for a dataset of batches: implement `__len__` (number of batches) and
    `__getitem__(index)` returning one whole batch: `x`, `(x,)`, `(x, y)` or
    `(x, y, sample_weight)`, where x and y may be arrays, lists of arrays (several
    inputs/outputs) or dicts by name. Optionally `on_epoch_begin()` / `on_epoch_end()`
    (called around every pass `fit`, `evaluate` or `predict` makes), and `num_batches`
    (return None for an endless dataset: then give `fit` a `steps_per_epoch`).

    Args:
        workers: threads that call `__getitem__` during `fit` (0: the training thread
            itself; with more than one, `__getitem__` must be thread-safe).
        use_multiprocessing: must be False (kerasish has no process workers; refused).
        max_queue_size: batches prepared ahead of the training step (>= 1).

    Subclasses should call `super().__init__(**kwargs)`; when they don't, the defaults
    are used with a warning, as in Keras. Iterating a PyDataset by hand (`for batch in
    ds`) runs in the caller without threads.
    """

    def __init__(self, workers=1, use_multiprocessing=False, max_queue_size=10):
        self._workers = _check_count("workers", workers, 0)
        self._use_multiprocessing = _check_multiprocessing(use_multiprocessing)
        self._max_queue_size = _check_count("max_queue_size", max_queue_size, 1)

    def _setting(self, name):
        if name not in self.__dict__:  # super().__init__() was not called
            warnings.warn(
                f"{type(self).__name__}: your PyDataset class should call "
                f"`super().__init__(**kwargs)` in its constructor (kwargs may include "
                f"workers, use_multiprocessing, max_queue_size); using the defaults",
                UserWarning, stacklevel=3)
            for key, value in _DEFAULTS.items():
                self.__dict__.setdefault(key, value)
        return self.__dict__[name]

    @property
    def workers(self):
        return self._setting("_workers")

    @workers.setter
    def workers(self, value):
        self._workers = _check_count("workers", value, 0)

    @property
    def use_multiprocessing(self):
        return self._setting("_use_multiprocessing")

    @use_multiprocessing.setter
    def use_multiprocessing(self, value):
        self._use_multiprocessing = _check_multiprocessing(value)

    @property
    def max_queue_size(self):
        return self._setting("_max_queue_size")

    @max_queue_size.setter
    def max_queue_size(self, value):
        self._max_queue_size = _check_count("max_queue_size", value, 1)

    def __getitem__(self, index):
        """The batch at position `index` (override)."""
        raise NotImplementedError(f"{type(self).__name__} must implement __getitem__(index) "
                                  f"returning one batch")

    @property
    def num_batches(self):
        """Batches per epoch: `len(self)`; override to return None for an endless dataset."""
        if hasattr(self, "__len__"):
            return len(self)
        raise NotImplementedError(f"{type(self).__name__} must implement __len__ (or the "
                                  f"num_batches property; None means endless)")

    def __iter__(self):
        n = self.num_batches
        for index in (itertools.count() if n is None else range(n)):
            yield self[index]

    def on_epoch_begin(self):
        """Called at the start of every pass over the data."""

    def on_epoch_end(self):
        """Called at the end of every pass over the data (also when stopped early)."""


Sequence = PyDataset  # Keras 3 exports the same class under both names
