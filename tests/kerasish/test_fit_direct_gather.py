"""fit's own CPU loader gathers each batch straight into the plan's input buffers
(DataLoader.gather_into, Executor.input_buffers): the same training as copying, and
never for a user's loader, a prefetching one or a transform."""

import numpy as np

import kerasish as keras
import kernels_numba
from kerasish import layers, models
from kerasish.data import DataLoader
from kerasish.utils import set_random_seed


def _model(inputs=1):
    set_random_seed(3)
    if inputs == 1:
        model = models.Sequential([keras.Input((13,)), layers.Dense(7, activation="relu"),
                                   layers.Dense(3)])
    else:
        a, b = keras.Input((13,)), keras.Input((5,))
        h = layers.Concatenate()([layers.Dense(7, activation="relu")(a), b])
        model = models.Model([a, b], layers.Dense(3)(h))
    model.compile(optimizer=keras.optimizers.SGD(0.05),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model


def _data(n=101):  # 101 = 6 batches of 16 and one of 5
    rng = np.random.default_rng(0)
    return (rng.standard_normal((n, 13)).astype(np.float32),
            rng.standard_normal((n, 5)).astype(np.float32), rng.integers(0, 3, n))


def _x_copies(monkeypatch):
    """The x copies load() makes (copy_from_host into an input of 13 or 5 features)."""
    copies = []
    real = kernels_numba.copy_from_host

    def spy(dst, host):
        if dst.ndim == 2:
            copies.append(dst.shape)
        real(dst, host)

    monkeypatch.setattr(kernels_numba, "copy_from_host", spy)
    return copies


def _fit(model, x, y, monkeypatch, direct):
    from kerasish.engine.executor import Executor

    if not direct:
        monkeypatch.setattr(Executor, "input_buffers", lambda self, n: None)
    history = model.fit(x, y, batch_size=16, epochs=2, verbose=0)
    monkeypatch.undo()
    return history.history["loss"], [w.copy() for w in model.get_weights()]


def test_direct_gather_trains_as_the_copy_does_and_skips_the_copies(monkeypatch):
    a, _, y = _data()
    want_loss, want_weights = _fit(_model(), a, y, monkeypatch, direct=False)
    copies = _x_copies(monkeypatch)
    got_loss, got_weights = _fit(_model(), a, y, monkeypatch, direct=True)
    assert got_loss == want_loss
    for got, want in zip(got_weights, want_weights):
        np.testing.assert_array_equal(got, want)
    # only the very first batch is copied: the loader learns the buffers from the
    # executor that batch picked (the last batch of 5 goes into that executor's too)
    assert copies == [(16, 13)]


def test_direct_gather_with_two_inputs(monkeypatch):
    a, b, y = _data()
    want_loss, want_weights = _fit(_model(2), [a, b], y, monkeypatch, direct=False)
    got_loss, got_weights = _fit(_model(2), [a, b], y, monkeypatch, direct=True)
    assert got_loss == want_loss
    for got, want in zip(got_weights, want_weights):
        np.testing.assert_array_equal(got, want)


def test_user_loaders_keep_their_own_batches(monkeypatch):
    a, _, y = _data()
    model = _model()
    for loader in (DataLoader(a, y, batch_size=16, seed=0),  # prefetching, not fit's own
                   DataLoader(a, y, batch_size=16, seed=0, prefetch=0)):
        copies = _x_copies(monkeypatch)
        model.fit(loader, epochs=1, verbose=0)
        monkeypatch.undo()
        assert loader.gather_into is None
        assert len(copies) == len(loader)  # every batch a new array, copied in


def test_gather_target_refuses_mismatched_buffers():
    a, b, y = _data(20)
    loader = DataLoader(a, y, batch_size=8, shuffle=False, prefetch=0)
    wrong = [np.empty((8, 13), np.float64), np.empty((8, 12), np.float32),
             np.empty((13, 8), np.float32).T]
    for buffer in wrong:
        loader.gather_into = lambda n, buffer=buffer: [buffer]
        xb, _ = loader.make_batch(np.arange(8))
        assert xb is not buffer
        np.testing.assert_array_equal(xb, a[:8])
    good = np.empty((8, 13), np.float32)
    loader.gather_into = lambda n: [good]
    xb, _ = loader.make_batch(np.arange(8, 16))
    assert xb is good
    np.testing.assert_array_equal(good, a[8:16])
    loader.transform = lambda xb, yb: (xb * 2, yb)  # a transform: always a new batch
    xb, _ = loader.make_batch(np.arange(8))
    np.testing.assert_array_equal(xb, a[:8] * 2)
    np.testing.assert_array_equal(good, a[8:16])
