"""fit/evaluate/predict accept a DataLoader, a generator and a Keras-style Sequence."""

import threading

import numpy as np
import pytest

import kerasish as keras
from kerasish import layers, models
from kerasish.data import DataLoader
from kerasish.data.transforms import normalize


def data(n=40):
    rng = np.random.default_rng(0)
    x = rng.integers(0, 255, (n, 4, 4, 1)).astype(np.uint8)
    y = (x.reshape(n, -1).mean(axis=1) > 127).astype(np.int64)
    return x, y


def small_model():
    model = models.Sequential([keras.Input((4, 4, 1)), layers.Flatten(),
                               layers.Dense(2, activation="softmax")])
    model.compile("adam", "sparse_categorical_crossentropy", metrics=["accuracy"])
    return model


def test_fit_with_dataloader_and_transform():
    x, y = data()
    loader = DataLoader(x, y, batch_size=16, seed=1, transform=normalize())
    model = small_model()
    history = model.fit(loader, epochs=2, verbose=0)
    assert len(history.history["loss"]) == 2
    assert model.evaluate(DataLoader(x, y, batch_size=8, shuffle=False,
                                     transform=normalize()), verbose=0)[1] >= 0
    assert threading.active_count() <= 2


def test_fit_with_generator_and_steps_per_epoch():
    x, y = data()

    def batches():
        while True:
            for i in range(0, len(x), 10):
                yield x[i:i + 10] / 255.0, y[i:i + 10]

    model = small_model()
    history = model.fit(batches(), epochs=2, steps_per_epoch=3, verbose=0)
    assert len(history.history["loss"]) == 2
    assert model.predict(batches(), steps=2, verbose=0).shape == (20, 2)


class Batches:
    """A Keras-style Sequence: __len__ and __getitem__ returning (x, y) batches."""

    def __init__(self, x, y, size):
        self.x, self.y, self.size = x, y, size
        self.epochs_ended = 0

    def __len__(self):
        return (len(self.x) + self.size - 1) // self.size

    def __getitem__(self, i):
        s = slice(i * self.size, (i + 1) * self.size)
        return self.x[s] / 255.0, self.y[s]

    def on_epoch_end(self):
        self.epochs_ended += 1


def test_fit_with_sequence():
    x, y = data()
    seq = Batches(x, y, 12)
    model = small_model()
    model.fit(seq, epochs=3, verbose=0)
    assert seq.epochs_ended == 3


def test_generator_with_bad_labels_is_rejected():
    x, y = data()

    def batches():
        yield x[:8] / 255.0, y[:8] + 7

    with pytest.raises(ValueError, match=r"labels must be in \[0, 2\)"):
        small_model().fit(batches(), epochs=1, verbose=0)


def test_generator_of_scalars_is_rejected_by_name():
    with pytest.raises(ValueError, match="fit: expected input data with a batch axis; "
                                         "received a scalar"):
        small_model().fit((i for i in range(3)), steps_per_epoch=2, verbose=0)


def test_one_axis_less_or_more_of_size_one_is_adjusted_like_keras():
    """Issue 34: Keras's Functional._adjust_input_rank: a 1-D array for a (None, 1) input
    is expanded, an extra trailing axis of size 1 squeezed; other ranks are refused."""
    model = keras.Sequential([keras.Input((1,)), layers.Dense(2)])
    x = np.arange(5, dtype="float32")
    np.testing.assert_allclose(model.predict(x, verbose=0), model.predict(x[:, None], verbose=0))
    np.testing.assert_allclose(model.predict(x[:, None, None], verbose=0),
                               model.predict(x[:, None], verbose=0))
    wide = keras.Sequential([keras.Input((2,)), layers.Dense(2)])
    with pytest.raises(ValueError, match=r"expected shape \(None, 2\), received shape \(None,\)"):
        wide.predict(x, verbose=0)
