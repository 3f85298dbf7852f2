"""kerasish.data: DataLoader batching, shuffling, transforms, the prefetch thread's
lifetime and error reporting, and make_loader's adapters."""

import gc
import os
import signal
import subprocess
import sys
import threading
import time
import traceback

import numpy as np
import pytest

from kerasish.data import DataLoader, GeneratorAdapter, SequenceAdapter, make_loader
from kerasish.data import loader as loader_module
from kerasish.data import transforms as T


def _live():
    return [t for t in threading.enumerate() if t.name.startswith("kerasish-")]


@pytest.fixture(autouse=True)
def no_leaked_threads():
    yield
    if _live():
        gc.collect()  # only when needed: a full collection is slow with numba loaded
    assert _live() == []


def _data(n=10, hw=(3, 2)):
    x = np.arange(n * hw[0] * hw[1], dtype=np.uint8).reshape(n, *hw)
    return x, np.arange(n) % 7


def _epoch(loader):
    return [(xb.copy(), None if yb is None else yb.copy()) for xb, yb in loader]


# ---- batching and order

@pytest.mark.parametrize("prefetch", [0, 1, 2])
def test_batches_in_order_with_remainder(prefetch):
    x, y = _data(10)
    dl = DataLoader(x, y, batch_size=3, shuffle=False, prefetch=prefetch)
    batches = _epoch(dl)
    assert len(dl) == dl.num_batches == 4 and [len(b[0]) for b in batches] == [3, 3, 3, 1]
    np.testing.assert_array_equal(np.concatenate([b[0] for b in batches]), x)
    np.testing.assert_array_equal(np.concatenate([b[1] for b in batches]), y)


def test_drop_remainder_and_no_targets():
    x, _ = _data(10)
    dl = DataLoader(x, batch_size=3, shuffle=False, drop_remainder=True)
    batches = _epoch(dl)
    assert len(dl) == 3 and [b[0].shape for b in batches] == [(3, 3, 2)] * 3
    assert all(b[1] is None for b in batches)
    assert len(DataLoader(x, batch_size=1)) == 10 and len(DataLoader(x, batch_size=64)) == 1


def test_batches_are_copies():
    x, y = _data(4)
    for xb, _ in DataLoader(x, y, batch_size=4, shuffle=False):
        xb[...] = 0
    assert x.sum() > 0


def test_shuffle_is_a_permutation_fresh_each_epoch_and_seeded():
    x, y = _data(23)
    a, b = DataLoader(x, y, batch_size=4, seed=7), DataLoader(x, y, batch_size=4, seed=7)
    epochs_a = [np.concatenate([yb for _, yb in _epoch(a)]) for _ in range(3)]
    epochs_b = [np.concatenate([yb for _, yb in _epoch(b)]) for _ in range(3)]
    for ea, eb in zip(epochs_a, epochs_b):
        np.testing.assert_array_equal(ea, eb)  # same seed: same sequence of epochs
        assert sorted(ea.tolist()) == sorted(y.tolist())
    assert not np.array_equal(epochs_a[0], epochs_a[1])
    assert not np.array_equal(epochs_a[0], np.concatenate([yb for _, yb in _epoch(
        DataLoader(x, y, batch_size=4, seed=8))]))
    # x and y stay paired under shuffling
    for xb, yb in DataLoader(x, y, batch_size=5, seed=1):
        np.testing.assert_array_equal(xb[:, 0, 0] // 6 % 7, yb)
    assert a.epoch == 3


class _Indexable:
    """Only __len__ and integer __getitem__ (no fancy indexing)."""

    def __init__(self, arr):
        self.arr = arr

    def __len__(self):
        return len(self.arr)

    def __getitem__(self, i):
        if not isinstance(i, int):
            raise TypeError("ints only")
        return self.arr[i]


class _SortedOnly(_Indexable):
    """h5py-like: fancy indexing only with increasing indices."""

    def __getitem__(self, idx):
        idx = np.asarray(idx)
        if idx.ndim and np.any(np.diff(idx) <= 0):
            raise TypeError("Indexing elements must be in increasing order")
        return self.arr[idx]


@pytest.mark.parametrize("wrap", [list, _Indexable, _SortedOnly])
def test_any_indexable(wrap):
    x, y = _data(9)
    src = wrap(list(x)) if wrap is list else wrap(x)
    got = _epoch(DataLoader(src, wrap(list(y)) if wrap is list else wrap(y), batch_size=4,
                            seed=3))
    want = _epoch(DataLoader(x, y, batch_size=4, seed=3))
    for (gx, gy), (wx, wy) in zip(got, want):
        np.testing.assert_array_equal(gx, wx)
        np.testing.assert_array_equal(gy, wy)


@pytest.mark.parametrize("kwargs, msg", [
    (dict(x=np.zeros((0, 3))), "at least one sample"),
    (dict(x=np.zeros((5, 3)), y=np.zeros(4)), "x with 5 and y with 4"),
    (dict(x=np.zeros((5, 3)), batch_size=0), "batch_size"),
    (dict(x=np.zeros((5, 3)), batch_size=-2), "batch_size"),
    (dict(x=np.zeros((5, 3)), batch_size=2.0), "batch_size"),
    (dict(x=np.zeros((5, 3)), batch_size=True), "batch_size"),
    (dict(x=np.zeros((5, 3)), prefetch=-1), "prefetch"),
    (dict(x=np.zeros((5, 3)), batch_size=8, drop_remainder=True), "leaves no batch"),
    (dict(x=np.float32(3)), "0-d"),
])
def test_invalid_arguments(kwargs, msg):
    with pytest.raises(ValueError, match=msg):
        DataLoader(**kwargs)
    with pytest.raises(ValueError, match=msg):
        make_loader(**kwargs)


def test_invalid_types():
    with pytest.raises(TypeError, match="transform"):
        DataLoader(np.zeros((2, 1)), transform=3)
    with pytest.raises(TypeError, match="indexable"):
        DataLoader(object())
    with pytest.raises(TypeError, match="None"):
        make_loader(None)


# ---- transforms

def test_normalize_one_hot_reshape_compose():
    x, y = _data(5, hw=(2, 2))
    tf = T.compose(T.normalize(mean=0.5, std=0.25), T.reshape((4,)), T.one_hot(7))
    (xb, yb), = DataLoader(x, y, batch_size=5, shuffle=False, transform=tf)
    assert xb.dtype == np.float32 and xb.shape == (5, 4)
    np.testing.assert_allclose(xb, ((x / 255.0 - 0.5) / 0.25).reshape(5, 4), rtol=1e-6)
    assert yb.dtype == np.float32 and yb.shape == (5, 7)
    np.testing.assert_array_equal(yb.argmax(1), y)
    assert yb.sum() == 5
    plain, _ = T.normalize()(np.array([[0, 255]], np.uint8), None)
    np.testing.assert_array_equal(plain, np.array([[0.0, 1.0]], np.float32))
    per_channel, _ = T.normalize(mean=[0, 1], std=[1, 2], scale=1)(np.ones((1, 2)), None)
    np.testing.assert_allclose(per_channel, [[1.0, 0.0]])


def test_transform_errors():
    with pytest.raises(ValueError, match="std > 0"):
        T.normalize(std=0)
    with pytest.raises(ValueError, match=r"\[0, 3\)"):
        T.one_hot(3)(None, np.array([0, 3]))
    with pytest.raises(ValueError, match="integer labels"):
        T.one_hot(3)(None, np.array([0.5]))
    with pytest.raises(ValueError, match="cannot reshape"):
        T.reshape((5,))(np.zeros((2, 4)), None)
    with pytest.raises(ValueError, match="max_pixels"):
        T.random_shift(-1)
    with pytest.raises(TypeError, match="callables"):
        T.compose(T.normalize(), 1)
    np.testing.assert_array_equal(T.one_hot(3)(None, np.array([[2]]))[1], [[0, 0, 1]])
    assert T.one_hot(3)(1, None) == (1, None)


def test_random_shift():
    x = np.zeros((40, 5, 4, 1), np.uint8)
    x[:, 2, 1, 0] = 9  # one bright pixel per image, 2 px from every border but the left
    y = np.arange(40)
    a, ya = T.random_shift(1, seed=5)(x, y)
    b, _ = T.random_shift(1, seed=5)(x, y)
    np.testing.assert_array_equal(a, b)  # seeded
    assert ya is y and a.shape == x.shape and a.dtype == x.dtype and x.sum() == 40 * 9
    assert (a.sum(axis=(1, 2, 3)) == 9).all()  # shifted, never lost (border is 1 px)
    pos = np.argwhere(a[..., 0] == 9)[:, 1:]
    assert (np.abs(pos - [2, 1]) <= 1).all() and len(np.unique(pos, axis=0)) > 3
    np.testing.assert_array_equal(T.random_shift(0)(x, None)[0], x)
    huge, _ = T.random_shift(7, seed=0, fill=3)(np.ones((30, 2, 3), np.uint8), None)
    assert set(np.unique(huge)) <= {1, 3} and (huge == 3).any()


# ---- the worker thread

def _failing_at(k, exc=ValueError):
    calls = []

    def boom_transform(x, y):
        calls.append(1)
        if len(calls) == k:
            raise exc("bad batch")
        return x, y

    return boom_transform


def test_worker_error_surfaces_with_original_traceback():
    x, y = _data(10)
    dl = DataLoader(x, y, batch_size=2, shuffle=False, transform=_failing_at(3))
    got = []
    with pytest.raises(ValueError, match="bad batch") as e:
        for xb, _ in dl:
            got.append(xb)
    assert len(got) == 2
    names = [f.name for f in traceback.extract_tb(e.tb)]
    assert "boom_transform" in names and "make_batch" in names
    assert names.index("test_worker_error_surfaces_with_original_traceback") < \
        names.index("boom_transform")


def test_keyboard_interrupt_in_worker_and_in_loop():
    x, y = _data(10)
    with pytest.raises(KeyboardInterrupt):
        for _ in DataLoader(x, y, batch_size=2, transform=_failing_at(2, KeyboardInterrupt)):
            pass
    assert _live() == []
    with pytest.raises(KeyboardInterrupt):
        for _ in DataLoader(x, y, batch_size=2):
            raise KeyboardInterrupt
    assert _live() == []


@pytest.mark.skipif(not hasattr(signal, "SIGINT") or os.name != "posix", reason="POSIX")
def test_ctrl_c_while_waiting_for_a_batch():
    x, y = _data(20)
    slow = DataLoader(x, y, batch_size=2, transform=lambda a, b: (time.sleep(0.3), (a, b))[1])
    timer = threading.Timer(0.1, os.kill, (os.getpid(), signal.SIGINT))
    # A shell that starts us in the background leaves SIGINT ignored: restore Python's
    # Ctrl-C handler for this test.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    t0 = time.perf_counter()
    try:
        with pytest.raises(KeyboardInterrupt):
            timer.start()
            for _ in slow:  # 10 batches x 0.3 s: the signal lands in here
                pass
    finally:
        timer.cancel()
        signal.signal(signal.SIGINT, previous)
    assert time.perf_counter() - t0 < 2.5  # stopped, not run to the end
    assert _live() == []


def test_no_hang_at_exit_with_an_unfinished_epoch():
    """A process that leaves an epoch half-read (iterator still referenced) exits."""
    code = (
        "import importlib.util, numpy as np\n"
        f"spec = importlib.util.spec_from_file_location('L', {loader_module.__file__!r})\n"
        "L = importlib.util.module_from_spec(spec); spec.loader.exec_module(L)\n"
        "it = iter(L.DataLoader(np.zeros((999, 4), np.uint8), batch_size=1))\n"
        "next(it)\n"
        "print('done')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "done", out.stderr


def test_thread_stops_on_break_close_and_error():
    x, y = _data(50)
    dl = DataLoader(x, y, batch_size=2, prefetch=2)
    for _ in dl:
        assert len(_live()) == 1  # prefetching while we "compute"
        break
    assert _live() == []
    it = iter(dl)
    next(it)
    it.close()
    assert _live() == []
    with pytest.raises(RuntimeError):
        for _ in dl:
            raise RuntimeError("model blew up")
    assert _live() == []  # CPython drops the loop's iterator on the way out
    assert len(_epoch(dl)) == 25 and _live() == []  # still usable afterwards


def test_prefetch_is_bounded():
    x, y = _data(40)
    calls = []
    dl = DataLoader(x, y, batch_size=1, prefetch=2,
                    transform=lambda a, b: (calls.append(1), (a, b))[1])
    it = iter(dl)
    next(it)
    time.sleep(0.3)  # a slow training step: the worker must stop 2 batches ahead
    assert 2 <= len(calls) <= 1 + 2 + 1  # taken + queued + one blocked in put
    it.close()


# ---- make_loader and adapters

def test_make_loader_arrays_and_passthrough():
    x, y = _data(10)
    dl = make_loader(x, y, batch_size=4, seed=0)
    assert isinstance(dl, DataLoader) and len(dl) == 3
    assert make_loader(dl) is dl
    assert len(make_loader(list(x), list(y), batch_size=None)) == 1  # None -> 32
    with pytest.raises(ValueError, match="y must be None"):
        make_loader(dl, y)
    tail = _epoch(make_loader(x, y, batch_size=4, drop_remainder=True, shuffle=False))
    assert [len(b[0]) for b in tail] == [4, 4]


def test_generator_adapter():
    def gen():
        for i in range(5):
            yield np.full((2, 3), i), np.array([i, i])

    g = make_loader(gen())
    assert isinstance(g, GeneratorAdapter) and g.num_batches is None
    with pytest.raises(TypeError):
        len(g)
    first = []
    for xb, yb in g:
        first.append(int(yb[0]))
        if len(first) == 2:
            break  # steps_per_epoch-style stop: nothing is lost
    assert first == [0, 1] and [int(b[1][0]) for b in g] == [2, 3, 4]
    assert list(g) == []  # exhausted one-shot generator
    with pytest.raises(ValueError, match="y must be None"):
        make_loader(gen(), np.zeros(2))

    class Reiterable:
        def __iter__(self):
            return iter([(np.zeros((1, 2)),), [np.ones((2, 2)), np.ones(2)]])

    r = make_loader(Reiterable())
    for _ in range(2):  # restarted every epoch
        (x0, y0), (x1, y1) = list(r)
        assert y0 is None and x1.shape == (2, 2) and y1.shape == (2,)
    with pytest.raises(ValueError, match="sample weights"):
        list(make_loader(iter([(1, 2, 3)])))
    with pytest.raises(ValueError, match="same number of samples"):
        list(make_loader(iter([(np.zeros(3), np.zeros(2))])))


class _Seq:
    def __init__(self, n=5, fail_at=None):
        self.n, self.fail_at, self.ends = n, fail_at, 0

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if i == self.fail_at:
            raise IndexError(f"batch {i} is broken")
        return np.full((3, 2), i, np.float32), np.full(3, i)

    def on_epoch_end(self):
        self.ends += 1


def test_sequence_adapter():
    seq = _Seq()
    s = make_loader(seq, seed=4)
    assert isinstance(s, SequenceAdapter) and len(s) == s.num_batches == 5
    e1, e2 = ([int(b[1][0]) for b in s] for _ in range(2))
    assert sorted(e1) == sorted(e2) == list(range(5)) and e1 != e2 and seq.ends == 2
    again = make_loader(_Seq(), seed=4)
    assert [int(b[1][0]) for b in again] == e1  # seeded batch order
    ordered = make_loader(_Seq(), shuffle=False, prefetch=0)
    assert [int(b[1][0]) for b in ordered] == [0, 1, 2, 3, 4]
    for _ in s:
        break  # stopped early: still an epoch end
    assert seq.ends == 3
    with pytest.raises(ValueError, match="y must be None"):
        make_loader(seq, np.zeros(3))


def test_sequence_error_surfaces_and_skips_on_epoch_end():
    seq = _Seq(fail_at=2)
    with pytest.raises(IndexError, match="batch 2 is broken") as e:
        list(make_loader(seq, shuffle=False))
    assert "__getitem__" in [f.name for f in traceback.extract_tb(e.tb)]
    assert seq.ends == 0
    with pytest.raises(ValueError, match="no batches"):
        make_loader(_Seq(n=0))
