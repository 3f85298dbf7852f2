"""keras.utils.PyDataset / Sequence: the base class, its workers, and fit/evaluate/predict
reading it (same weights as the same batches given as arrays)."""

import threading
import time
import traceback

import numpy as np
import pytest

import kerasish as keras
from kerasish.data import SequenceAdapter, make_loader

X = np.random.default_rng(0).normal(size=(23, 4)).astype(np.float32)
Y = (X.sum(axis=1) > 0).astype(np.int64)


class Batches(keras.utils.PyDataset):
    """Batch i of X/Y (size 5, the last one short), recording where it was made."""

    def __init__(self, batch_size=5, delay=0.0, fail_at=None, **kwargs):
        super().__init__(**kwargs)
        self.batch_size, self.delay, self.fail_at = batch_size, delay, fail_at
        self.threads, self.calls, self.begins, self.ends = set(), [], 0, 0
        self.lock = threading.Lock()

    def __len__(self):
        return -(-len(X) // self.batch_size)

    def __getitem__(self, i):
        with self.lock:
            self.threads.add(threading.current_thread().name)
            self.calls.append(i)
        if i == self.fail_at:
            raise KeyError(f"batch {i} is broken")
        time.sleep(self.delay * (len(self) - i))  # later batches finish first
        rows = slice(i * self.batch_size, (i + 1) * self.batch_size)
        return X[rows], Y[rows]

    def on_epoch_begin(self):
        self.begins += 1

    def on_epoch_end(self):
        self.ends += 1


def _model():
    keras.utils.set_random_seed(3)
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(5, activation="relu"),
                              keras.layers.Dense(2, activation="softmax")])
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy",
                  metrics=["accuracy"])
    return model


def _labels(loader):
    return [b[1].tolist() for b in loader]


def test_base_class_arguments_and_aliases():
    assert keras.utils.Sequence is keras.utils.PyDataset
    ds = Batches(workers=3, max_queue_size=4)
    assert (ds.workers, ds.use_multiprocessing, ds.max_queue_size) == (3, False, 4)
    assert ds.num_batches == len(ds) == 5
    assert [b[1].tolist() for b in ds] == [Y[i:i + 5].tolist() for i in range(0, 23, 5)]
    plain = Batches()
    assert (plain.workers, plain.max_queue_size) == (1, 10)  # Keras's defaults
    with pytest.raises(ValueError, match="use_multiprocessing=True is not supported"):
        Batches(use_multiprocessing=True)
    with pytest.raises(ValueError, match="workers an int >= 0; received -1"):
        Batches(workers=-1)
    with pytest.raises(ValueError, match="max_queue_size an int >= 1; received 0"):
        Batches(max_queue_size=0)
    with pytest.raises(NotImplementedError, match="__getitem__"):
        keras.utils.PyDataset()[0]
    with pytest.raises(NotImplementedError, match="__len__"):
        keras.utils.PyDataset().num_batches


def test_subclass_without_super_init_warns_and_uses_defaults():
    class NoSuper(keras.utils.PyDataset):
        def __init__(self):
            pass

        def __len__(self):
            return 1

        def __getitem__(self, i):
            return X[:2], Y[:2]

    ds = NoSuper()
    with pytest.warns(UserWarning, match=r"super\(\).__init__"):
        assert ds.workers == 1
    assert ds.max_queue_size == 10 and not ds.use_multiprocessing
    assert [b[0].shape for b in make_loader(ds)] == [(2, 4)]


@pytest.mark.parametrize("workers, thread", [(0, "MainThread"), (1, "kerasish-Sequence"),
                                             (3, "kerasish-PyDataset")])
def test_workers_keep_batch_order_and_call_epoch_hooks(workers, thread):
    ds = Batches(workers=workers, delay=0.004 if workers > 1 else 0.0)
    loader = make_loader(ds, shuffle=False)
    assert isinstance(loader, SequenceAdapter) and loader.num_batches == 5
    expected = [Y[i:i + 5].tolist() for i in range(0, 23, 5)]
    assert _labels(loader) == expected == _labels(loader)
    assert ds.begins == ds.ends == 2
    assert all(name.startswith(thread) for name in ds.threads)
    if workers > 1:
        assert len(ds.threads) > 1  # batches really made in parallel
    shuffled = make_loader(Batches(workers=workers), seed=7)
    e1, e2 = _labels(shuffled), _labels(shuffled)
    assert sorted(e1) == sorted(e2) == sorted(expected) and e1 != e2
    assert _labels(make_loader(Batches(workers=workers), seed=7)) == e1  # seeded


def test_max_queue_size_bounds_read_ahead():
    ds = Batches(workers=2, max_queue_size=3)
    for consumed, _ in enumerate(make_loader(ds, shuffle=False), start=1):
        time.sleep(0.01)  # a slow step: the workers could run far ahead
        assert len(ds.calls) <= consumed + 3


def test_errors_surface_and_early_stop_ends_epoch():
    ds = Batches(workers=3, fail_at=2)
    with pytest.raises(KeyError, match="batch 2 is broken") as e:
        list(make_loader(ds, shuffle=False))
    assert "__getitem__" in [f.name for f in traceback.extract_tb(e.tb)]
    assert ds.ends == 0  # a failed pass is not an epoch end
    ds = Batches(workers=3, delay=0.002)
    for _ in make_loader(ds, shuffle=False):
        break
    assert ds.begins == ds.ends == 1
    assert not [t for t in threading.enumerate() if t.name.startswith("kerasish-PyDataset")]


class Endless(keras.utils.PyDataset):
    def __init__(self):
        super().__init__(workers=0)
        self.calls = []

    @property
    def num_batches(self):
        return None

    def __getitem__(self, i):
        self.calls.append(i)
        rows = slice((i % 4) * 5, (i % 4) * 5 + 5)
        return X[rows], Y[rows]


def test_endless_dataset_needs_steps_per_epoch():
    loader = make_loader(Endless())
    assert loader.num_batches is None
    with pytest.raises(TypeError, match="endless"):
        len(loader)
    for k, _ in enumerate(loader):
        if k == 6:
            break
    assert loader.seq.calls == list(range(7))  # in order, never shuffled
    ds, model = Endless(), _model()
    model.fit(ds, epochs=2, steps_per_epoch=3, verbose=0)
    assert model.optimizer.iterations == 6
    # each epoch restarts at index 0 (the trainer may pull one batch past the steps)
    assert [i for i in ds.calls if i < 3] == [0, 1, 2, 0, 1, 2] and max(ds.calls) <= 3


def test_batch_structures_and_sample_weights():
    w = np.linspace(0, 1, 3)

    class Kinds(keras.utils.PyDataset):
        items = [X[:3], (X[:3],), [X[:3], Y[:3]], (X[:3], Y[:3], w), (X[:3], Y[:3], None),
                 ({"a": X[:3], "b": X[:3, :2]}, Y[:3]), ((X[:3], X[:3, :1]), [Y[:3], Y[:3]])]

        def __len__(self):
            return len(self.items)

        def __getitem__(self, i):
            return self.items[i]

    got = list(make_loader(Kinds(), shuffle=False))
    assert [len(b) for b in got] == [2, 2, 2, 3, 2, 2, 2]
    assert got[0][1] is None and got[1][1] is None and got[3][2] is w
    assert sorted(got[5][0]) == ["a", "b"] and got[5][0]["b"].shape == (3, 2)
    assert [a.shape for a in got[6][0]] == [(3, 4), (3, 1)] and len(got[6][1]) == 2

    class Bad(keras.utils.PyDataset):
        def __init__(self, item):
            super().__init__()
            self.item = item

        def __len__(self):
            return 1

        def __getitem__(self, i):
            return self.item

    with pytest.raises(ValueError, match="x, y and sample weights must have the same"):
        list(make_loader(Bad((X[:3], Y[:3], w[:2]))))
    with pytest.raises(ValueError, match="received a tuple of 4 items"):
        list(make_loader(Bad((X[:3], Y[:3], w, w))))


def test_fit_evaluate_predict_match_arrays():
    ref = _model()
    h_ref = ref.fit(X, Y, batch_size=5, epochs=2, shuffle=False, verbose=0)
    ds = Batches(workers=2)
    model = _model()
    h = model.fit(ds, epochs=2, shuffle=False, verbose=0, validation_data=Batches())
    for a, b in zip(model.get_weights(), ref.get_weights()):
        np.testing.assert_array_equal(a, b)
    assert h.history["loss"] == h_ref.history["loss"]
    assert set(h.history) == {"loss", "accuracy", "val_loss", "val_accuracy"}
    assert ds.begins == ds.ends == 2
    assert model.evaluate(Batches(), verbose=0) == ref.evaluate(X, Y, batch_size=5, verbose=0)

    class Inputs(Batches):
        def __getitem__(self, i):
            return super().__getitem__(i)[0]

    np.testing.assert_array_equal(model.predict(Inputs(workers=3), verbose=0),
                                  ref.predict(X, batch_size=5, verbose=0))
    short = _model()
    short.fit(Batches(), epochs=2, steps_per_epoch=2, verbose=0)
    assert short.optimizer.iterations == 4


def test_fit_two_input_model_from_pydataset():
    def model():
        keras.utils.set_random_seed(5)
        a, b = keras.Input((4,), name="a"), keras.Input((2,), name="b")
        h = keras.layers.Concatenate()([keras.layers.Dense(3)(a), b])
        m = keras.Model([a, b], keras.layers.Dense(1)(h))
        m.compile(optimizer="sgd", loss="mse")
        return m

    class Two(keras.utils.PyDataset):
        def __len__(self):
            return 3

        def __getitem__(self, i):
            rows = slice(i * 8, i * 8 + 8)
            return (X[rows], X[rows, :2]), Y[rows, None].astype(np.float32)

    ref = model()
    ref.fit([X, X[:, :2]], Y[:, None].astype(np.float32), batch_size=8, shuffle=False,
            verbose=0)
    got = model()
    got.fit(Two(), shuffle=False, verbose=0)
    for a, b in zip(got.get_weights(), ref.get_weights()):
        np.testing.assert_array_equal(a, b)


def test_sample_weights_from_pydataset_equal_fit_sample_weight():
    w = np.random.default_rng(1).uniform(0, 2, len(X)).astype(np.float32)

    class Weighted(Batches):
        def __getitem__(self, i):
            rows = slice(i * 5, i * 5 + 5)
            return (*super().__getitem__(i), w[rows])

    ref = _model()
    try:
        h_ref = ref.fit(X, Y, sample_weight=w, batch_size=5, epochs=2, shuffle=False,
                        verbose=0)
    except ValueError as e:
        if "not supported" not in str(e):
            raise
        pytest.skip(f"the trainer has no sample weights yet ({e})")
    model = _model()
    h = model.fit(Weighted(workers=2), epochs=2, shuffle=False, verbose=0)
    assert h.history == h_ref.history
    for a, b in zip(model.get_weights(), ref.get_weights()):
        np.testing.assert_array_equal(a, b)
    assert model.evaluate(Weighted(), verbose=0) == \
        ref.evaluate(X, Y, sample_weight=w, batch_size=5, verbose=0)
