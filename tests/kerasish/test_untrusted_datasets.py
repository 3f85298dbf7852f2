"""Issue 40 item 1: the imdb and reuters loaders never unpickle code, never read a
relative `path` from the working directory, and use a cached file only when its hash
is the known one. The crafted files are made here (a pickle whose object would call
os.mkdir on a marker path: loading must refuse it, naming the file, and the marker
must not appear)."""

import os
import pickle

import numpy as np
import pytest

from kerasish.datasets import imdb, reuters
from kerasish.utils import file_utils


class _Payload:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.mkdir, (self.marker,))


def _objects(items):
    arr = np.empty(len(items), dtype=object)
    arr[:] = items
    return arr


def _evil_imdb(path, marker):
    x = _objects([[1, 2], _Payload(str(marker))])
    np.savez(path, x_train=x, y_train=np.array([0, 1]), x_test=_objects([[3], [4]]),
             y_test=np.array([1, 0]))
    return str(path)


def test_imdb_refuses_a_pickled_call(tmp_path):
    marker = tmp_path / "ran"
    path = _evil_imdb(tmp_path / "imdb.npz", marker)
    with pytest.raises(ValueError, match="posix.mkdir|os.mkdir|only NumPy") as e:
        imdb.load_data(path=path)
    assert path in str(e.value) and "x_train" in str(e.value)
    assert not marker.exists()


def test_reuters_refuses_a_pickled_call(tmp_path):
    marker = tmp_path / "ran"
    path = str(tmp_path / "reuters.npz")
    np.savez(path, x=_objects([_Payload(str(marker)), [1]]), y=np.array([0, 1]))
    with pytest.raises(ValueError, match="only NumPy") as e:
        reuters.load_data(path=path)
    assert path in str(e.value)
    assert not marker.exists()


def test_shared_references_cannot_multiply_memory(tmp_path):
    big = list(range(300, 20_300))  # one list, referenced 2,000 times by the pickle
    path = str(tmp_path / "reuters.npz")
    np.savez(path, x=_objects([big] * 2000), y=np.zeros(2000, np.int64))
    with pytest.raises(ValueError, match="memory bomb") as e:
        reuters.load_data(path=path)
    assert path in str(e.value)


def test_sequences_of_other_objects_are_refused(tmp_path):
    path = str(tmp_path / "reuters.npz")
    np.savez(path, x=_objects([[1, 2], ["a"]]), y=np.array([0, 1]))
    with pytest.raises(ValueError, match="entry 1 holds a str"):
        reuters.load_data(path=path)


def test_relative_paths_never_mean_the_working_directory(tmp_path, monkeypatch):
    marker = tmp_path / "ran"
    work, home = tmp_path / "work", tmp_path / "home"
    (work / "data").mkdir(parents=True)
    _evil_imdb(work / "imdb.npz", marker)
    _evil_imdb(work / "data" / "imdb.npz", marker)
    cache = home / ".kerasish" / "datasets"
    cache.mkdir(parents=True)
    _evil_imdb(cache / "imdb.npz", marker)  # a cached copy with the wrong hash
    monkeypatch.chdir(work)
    monkeypatch.setenv("HOME", str(home))
    downloads = []

    def offline(origin, fpath, file_hash, algorithm):
        downloads.append((origin, fpath, file_hash))
        raise file_utils.DownloadError(f"offline test: {origin}")

    monkeypatch.setattr(file_utils, "_download", offline)
    with pytest.raises(file_utils.DownloadError):
        imdb.load_data()  # path="imdb.npz": the cache, whose copy fails the hash
    assert downloads == [(imdb.ORIGIN + "imdb.npz", str(cache / "imdb.npz"), imdb.IMDB_HASH)]
    with pytest.raises(ValueError, match="relative path never means the working directory"):
        imdb.load_data(path="data/imdb.npz")
    with pytest.raises(ValueError, match="relative path never means"):
        reuters.load_data(path="./reuters.npz")
    assert not marker.exists()


def test_plain_sequence_files_still_load(tmp_path):
    path = str(tmp_path / "reuters.npz")
    np.savez(path, x=_objects([[1, 2], np.array([3, 4, 5])]), y=np.array([0, 1]))
    (x1, y1), (x2, y2) = reuters.load_data(path=path, test_split=0.5, start_char=None,
                                           index_from=0, num_words=100)
    assert sorted(map(list, list(x1) + list(x2))) == [[1, 2], [3, 4, 5]]
    assert pickle.dumps(x1)  # plain object arrays of lists, as Keras returns
