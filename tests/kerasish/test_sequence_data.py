"""pad_sequences (checked against keras.utils.pad_sequences when Keras is installed) and
the imdb / reuters loaders on small files the test writes (no download)."""

import os

import numpy as np
import pytest

from kerasish.datasets import imdb, reuters
from kerasish.utils import pad_sequences

SEQS = [[1, 2, 3], [4, 5], [6, 7, 8, 9, 10], []]


@pytest.mark.parametrize("kw", [{}, {"maxlen": 3}, {"maxlen": 4, "padding": "post"},
                                {"maxlen": 2, "truncating": "post", "value": -1},
                                {"dtype": "float32", "padding": "post"}])
def test_pad_sequences_matches_keras(kw):
    os.environ.setdefault("KERAS_BACKEND", "torch")
    real = pytest.importorskip("keras")
    got = pad_sequences(SEQS, **kw)
    want = real.utils.pad_sequences(SEQS, **kw)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


def test_pad_sequences_rules():
    np.testing.assert_array_equal(pad_sequences([[1, 2, 3]], maxlen=2), [[2, 3]])
    np.testing.assert_array_equal(pad_sequences([[1]], maxlen=3, padding="post"), [[1, 0, 0]])
    with pytest.raises(ValueError, match="padding must be 'pre' or 'post'"):
        pad_sequences(SEQS, padding="middle")


def _write(path, **arrays):
    packed = {}
    for k, v in arrays.items():
        if k.startswith("x"):
            a = np.empty(len(v), dtype=object)
            a[:] = v
            packed[k] = a
        else:
            packed[k] = np.asarray(v)
    np.savez(path, **packed)
    return str(path)


def test_imdb_keras_preprocessing(tmp_path):
    xtr = [[1, 5, 9], [2, 2], [7, 1, 1, 1, 1]]
    xte = [[3], [8, 8, 8]]
    path = _write(tmp_path / "imdb.npz", x_train=xtr, y_train=[1, 0, 1], x_test=xte,
                  y_test=[0, 1])
    (x1, y1), (x2, y2) = imdb.load_data(path=path, seed=0, num_words=100)
    rng = np.random.RandomState(0)
    i = np.arange(3)
    rng.shuffle(i)
    j = np.arange(2)
    rng.shuffle(j)
    assert [list(x) for x in x1] == [[1] + [w + 3 for w in xtr[k]] for k in i]
    np.testing.assert_array_equal(y1, np.array([1, 0, 1])[i])
    assert [list(x) for x in x2] == [[1] + [w + 3 for w in xte[k]] for k in j]
    # Keras's default num_words is the largest index, itself mapped to oov_char (w < num_words)
    (x1, _), _ = imdb.load_data(path=path, seed=0)
    assert 12 not in [w for x in x1 for w in x]
    (x1, _), _ = imdb.load_data(path=path, seed=0, num_words=6, skip_top=2)
    assert all(all(w == 2 or 2 <= w < 6 for w in x) for x in x1)
    (x1, y1), (x2, _) = imdb.load_data(path=path, seed=0, maxlen=4)
    assert all(len(x) < 4 for x in list(x1) + list(x2)) and len(x1) == 1
    with pytest.raises(ValueError, match="Increase maxlen"):
        imdb.load_data(path=path, maxlen=1)


def test_reuters_split(tmp_path):
    xs = [[k, k + 1] for k in range(10)]
    path = _write(tmp_path / "reuters.npz", x=xs, y=list(range(10)))
    (x1, y1), (x2, y2) = reuters.load_data(path=path, test_split=0.3, seed=1, start_char=None,
                                           index_from=0, num_words=100)
    assert len(x1) == 7 and len(x2) == 3
    for x, y in zip(list(x1) + list(x2), list(y1) + list(y2)):
        assert list(x) == [y, y + 1]
