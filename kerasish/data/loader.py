"""DataLoader: shuffled (x, y) mini-batches from arrays, prepared ahead in a thread.

The worker thread gathers and transforms the next `prefetch` batches into a bounded
queue while the consumer (the training loop) computes. Its lifetime is tied to one
epoch's iterator: exhausting, closing or dropping the iterator (a `break`, an
exception, KeyboardInterrupt) sets a stop event and joins the thread, and the thread
is a daemon, so a worker stuck in user code can never keep the process alive at exit.
"""

import copy
import queue
import threading
import warnings

import numpy as np

from kerasish import random as kerasish_random
from kerasish.data.columns import Columns

__all__ = ["DataLoader", "background"]

_POLL_S = 0.05  # how often a blocked put/get re-checks the stop event / the worker
_JOIN_S = 5.0  # wait this long for a worker busy in user code, then leave it (daemon)
_END = object()


class _Failure:
    """An exception raised in the worker, carried to the consumer with its traceback."""

    __slots__ = ("exc",)

    def __init__(self, exc):
        self.exc = exc


def background(produce, depth, name="kerasish-prefetch"):
    """Run `produce()` (an iterator factory) in a daemon thread, `depth` items ahead.

    A generator: the thread starts on the first `next()` and is stopped and joined when
    the generator finishes, raises or is closed. An exception in the worker is
    re-raised here with its original traceback (the worker frames follow this one).

    Args:
        produce: zero-argument callable returning an iterator; runs in the worker.
        depth: queue size (>= 1): how many items may wait ready.
        name: thread name (shows in `threading.enumerate()` and tracebacks).
    """
    q = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def put(item):
        while not stop.is_set():
            try:
                q.put(item, timeout=_POLL_S)
                return True
            except queue.Full:
                continue
        return False

    def work():
        try:
            for item in produce():
                if not put(item):
                    return
            put(_END)
        except BaseException as e:  # noqa: BLE001 (anything, even SystemExit, goes back)
            put(_Failure(e))

    thread = threading.Thread(target=work, name=name, daemon=True)
    thread.start()
    try:
        while True:
            try:
                item = q.get(timeout=_POLL_S)
            except queue.Empty:
                if not thread.is_alive() and q.empty():
                    raise RuntimeError(f"{name}: worker thread died without a result") from None
                continue
            if item is _END:
                return
            if isinstance(item, _Failure):
                exc, item = item.exc, None
                raise exc  # keeps exc.__traceback__: the worker's frames stay visible
            yield item
    finally:
        stop.set()
        thread.join(_JOIN_S)
        if thread.is_alive():
            warnings.warn(
                f"{name}: the worker is still busy in a transform or __getitem__ after "
                f"{_JOIN_S:.0f} s; leaving it (a daemon thread, it cannot block exit)",
                RuntimeWarning, stacklevel=2,
            )


def _check_int(owner, name, value, minimum):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ValueError(f"{owner}: expected {name} an int >= {minimum}; received {value!r}")
    return int(value)


def _as_data(owner, name, data):
    """Arrays stay as they are; lists/tuples become arrays; other indexables are kept."""
    if isinstance(data, (list, tuple, np.generic)):
        data = np.asarray(data)
    if isinstance(data, np.ndarray):
        if data.ndim == 0:
            raise ValueError(f"{owner}: expected {name} with a leading sample axis; "
                             f"received a 0-d array")
        return data
    if not (hasattr(data, "__len__") and hasattr(data, "__getitem__")):
        raise TypeError(f"{owner}: expected {name} a NumPy array or an indexable with "
                        f"len(); received {type(data).__name__}")
    return data


def _gather(data, idx):
    """data[idx] along the first axis, for arrays and for any indexable."""
    if isinstance(data, np.ndarray):
        return np.take(data, idx, axis=0)
    if hasattr(data, "take_rows"):  # data.columns.Columns: several arrays at once
        return data.take_rows(idx)
    try:  # h5py-like: fancy indexing that wants increasing indices
        pos = np.argsort(idx, kind="stable")
        got = np.asarray(data[idx[pos]])
        if len(got) == len(idx):
            out = np.empty_like(got)
            out[pos] = got
            return out
    except (TypeError, IndexError, KeyError, ValueError):
        pass
    return np.stack([np.asarray(data[int(i)]) for i in idx])


class DataLoader:
    """Mini-batches `(x_batch, y_batch)` over arrays, one pass per `iter()`.

    Each epoch (each `iter(loader)`) draws a fresh permutation from a generator seeded
    once with `seed`, so the sequence of epochs is reproducible while epochs differ.
    Batches are new arrays (the data is never aliased), prepared `prefetch` batches
    ahead in a background thread.

    Args:
        x: NumPy array (N, ...) or any indexable with len() (lists become arrays).
        y: targets with the same N, or None (then y_batch is None).
        batch_size: samples per batch (> 0).
        shuffle: new random order every epoch; False keeps the data order.
        drop_remainder: drop the last batch when it has fewer than batch_size samples.
        transform: `f(x_batch, y_batch) -> (x_batch, y_batch)`, run per batch in the
            worker (see kerasish.data.transforms).
        prefetch: batches prepared ahead; 0 prepares each batch on demand, no thread.
        seed: int seed of the shuffling (None: drawn from kerasish's shared generator,
            so `kerasish.utils.set_random_seed` makes the order reproducible).

    Raises:
        ValueError: empty data, x/y length mismatch, batch_size <= 0, prefetch < 0, or
            drop_remainder leaving no batch.
    """

    def __init__(self, x, y=None, batch_size=32, shuffle=True, drop_remainder=False,
                 transform=None, prefetch=2, seed=None):
        self.x = _as_data("DataLoader", "x", x)
        self.y = None if y is None else _as_data("DataLoader", "y", y)
        self.batch_size = _check_int("DataLoader", "batch_size", batch_size, 1)
        self.prefetch = _check_int("DataLoader", "prefetch", prefetch, 0)
        n = len(self.x)
        if n == 0:
            raise ValueError("DataLoader: expected at least one sample; received empty x")
        if self.y is not None and len(self.y) != n:
            raise ValueError(f"DataLoader: x and y must have the same number of samples; "
                             f"received x with {n} and y with {len(self.y)}")
        if drop_remainder and n < self.batch_size:
            raise ValueError(f"DataLoader: drop_remainder=True with {n} samples and "
                             f"batch_size={self.batch_size} leaves no batch")
        if transform is not None and not callable(transform):
            raise TypeError(f"DataLoader: expected transform callable or None; "
                            f"received {type(transform).__name__}")
        self.num_samples = n
        self.shuffle = bool(shuffle)
        self.drop_remainder = bool(drop_remainder)
        self.transform = transform
        self.seed = seed
        self.epoch = 0  # epochs started
        # fit's own loader on the CPU: n -> arrays to gather x into (the plan's input
        # buffers) or None; set by the trainer (see _gather_target)
        self.gather_into = None
        self._gather_checked = None  # (list, n): the last buffers found to match
        self._rng = np.random.default_rng(kerasish_random.new_seed() if seed is None else seed)
        self._epoch_start = self._snapshot()

    def __len__(self):
        if self.drop_remainder:
            return self.num_samples // self.batch_size
        return -(-self.num_samples // self.batch_size)

    @property
    def num_batches(self):
        """Batches per epoch (the make_loader protocol; never None here)."""
        return len(self)

    def __repr__(self):
        return (f"DataLoader(num_samples={self.num_samples}, batch_size={self.batch_size}, "
                f"shuffle={self.shuffle}, drop_remainder={self.drop_remainder}, "
                f"prefetch={self.prefetch})")

    def batch_indices(self):
        """The next epoch's list of per-batch index arrays (advances the shuffle RNG)."""
        n, bs = self.num_samples, self.batch_size
        order = self._rng.permutation(n) if self.shuffle else np.arange(n)
        return [order[i:i + bs] for i in range(0, len(self) * bs, bs)]

    def make_batch(self, idx):
        """Gather and transform one batch (what the worker runs)."""
        out = self._gather_target(len(idx))
        xb = _gather(self.x, idx) if out is None else self._gather_into(idx, out)
        yb = None if self.y is None else _gather(self.y, idx)
        if self.transform is not None:
            xb, yb = self.transform(xb, yb)
        return xb, yb

    def _gather_target(self, n):
        """Where x's rows go straight to, skipping a copy (the reference MLP's fit epoch
        0.391 -> 0.378 s, alternating): gather_into's arrays when they match x's columns
        (one array for an array x, one per column for Columns), else None (a new batch).
        A plan hands back the same list every step: it is checked once."""
        if self.gather_into is None or self.transform is not None:
            return None
        out = self.gather_into(n)
        checked = self._gather_checked
        if out is None or (checked is not None and checked[0] is out and checked[1] == n):
            return out
        arrays = [self.x] if isinstance(self.x, np.ndarray) else \
            self.x.arrays if isinstance(self.x, Columns) else None
        if arrays is None or len(out) != len(arrays) or not all(
                isinstance(o, np.ndarray) and o.dtype == a.dtype and
                o.shape == (n,) + a.shape[1:] and o.flags.c_contiguous
                for o, a in zip(out, arrays)):
            return None
        self._gather_checked = (out, n)
        return out

    def _gather_into(self, idx, out):
        if isinstance(self.x, Columns):
            return self.x.take_rows(idx, out)
        np.take(self.x, idx, axis=0, out=out[0], mode="clip")  # "raise" copies first
        return out[0]

    def _snapshot(self):
        return {"epoch": self.epoch, "rng": copy.deepcopy(self._rng.bit_generator.state)}

    def get_state(self, epoch_start=False):
        """The shuffling state, JSON-serializable: `{"epoch", "rng"}` (epochs started,
        the permutation generator's state). `epoch_start=True` gives it as it was
        before the current epoch drew its order (to redo that epoch on resume)."""
        return copy.deepcopy(self._epoch_start if epoch_start else self._snapshot())

    def set_state(self, state):
        """Restore a `get_state()` result, so the next epochs draw the same orders as
        the run it was taken from (BackupAndRestore's bit-identical resume).

        Raises:
            ValueError: a state that is not one `get_state()` of this kind returns.
        """
        try:
            epoch, rng = state["epoch"], state["rng"]
            if isinstance(epoch, bool) or not isinstance(epoch, int) or epoch < 0:
                raise ValueError(f"epoch must be an int >= 0; received {epoch!r}")
            kind = type(self._rng.bit_generator).__name__
            if not isinstance(rng, dict) or rng.get("bit_generator") != kind:
                raise ValueError(f"rng must be a {kind} state; received {rng!r:.80}")
            self._rng.bit_generator.state = copy.deepcopy(rng)
        except (KeyError, TypeError, ValueError, OverflowError) as e:
            raise ValueError(f"DataLoader.set_state: expected a dict from get_state(); "
                             f"{e}") from e
        self.epoch = epoch
        self._epoch_start = self._snapshot()

    def __iter__(self):
        self._epoch_start = self._snapshot()
        batches = self.batch_indices()  # drawn now, in the caller's thread: reproducible
        self.epoch += 1
        if self.prefetch == 0:
            return (self.make_batch(idx) for idx in batches)
        return background(lambda: map(self.make_batch, batches), self.prefetch,
                          name="kerasish-DataLoader")
