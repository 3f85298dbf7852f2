"""IMDB sentiment reviews (keras.datasets.imdb): word-index sequences and 0/1 labels.

Same file, checksum and preprocessing as Keras (shuffle with seed, start_char,
index_from, maxlen filtering, num_words / skip_top with oov_char). `path` is a file
name in the cache (~/.kerasish/datasets/, as Keras's is in ~/.keras/datasets/): a
cached copy is used only when its hash is the known one, else it is downloaded
(hash verified); an absolute path is the user's own copy, read as it is. A relative
path with a directory part is refused: it never means the working directory. The
file is read without unpickling anything (see `_sequences`).
"""

import os

import numpy as np

from kerasish.datasets import _sequences
from kerasish.utils.file_utils import get_file

ORIGIN = "https://storage.googleapis.com/tensorflow/tf-keras-datasets/"
IMDB_HASH = "69664113be75683a8fe16e3ed0ab59fda8886cb3cd7ada244f7d9544e4676b9f"


def _locate(path, name, file_hash, loader):
    path = os.fspath(path)
    expanded = os.path.expanduser(path)
    if os.path.isabs(expanded):
        if not os.path.isfile(expanded):
            raise FileNotFoundError(f"{loader}.load_data: no such file {expanded}")
        return expanded
    if os.path.basename(path) != path or path in ("", ".", ".."):
        raise ValueError(f"{loader}.load_data: expected `path` to be a file name in the "
                         f"cache (like {name!r}) or an absolute path; received "
                         f"path={path!r} (a relative path never means the working "
                         "directory)")
    return get_file(fname=path, origin=ORIGIN + name, file_hash=file_hash)


def _splits(xs, labels, fpath, part):
    if len(xs) != len(labels):
        raise ValueError(f"load_data: {fpath}: x{part} has {len(xs)} sequences but "
                         f"y{part} has {len(labels)} labels")


def _preprocess(xs, labels, *, num_words, skip_top, maxlen, start_char, oov_char, index_from,
                where):
    """Keras's shared steps; xs a list of lists of ints."""
    if start_char is not None:
        xs = [[start_char] + [w + index_from for w in x] for x in xs]
    elif index_from:
        xs = [[w + index_from for w in x] for x in xs]
    if maxlen:
        kept = [(x, y) for x, y in zip(xs, labels) if len(x) < maxlen]
        if not kept:
            raise ValueError(f"After filtering for sequences shorter than maxlen={maxlen}, no "
                             f"sequence was kept. Increase maxlen. ({where})")
        xs, labels = [x for x, _ in kept], np.asarray([y for _, y in kept])
    if not num_words:
        num_words = max(max(x) for x in xs if x)
    if oov_char is not None:
        xs = [[w if skip_top <= w < num_words else oov_char for w in x] for x in xs]
    else:
        xs = [[w for w in x if skip_top <= w < num_words] for x in xs]
    return xs, np.asarray(labels)


def _objects(seqs):
    out = np.empty(len(seqs), dtype=object)
    out[:] = [list(s) for s in seqs]
    return out


def load_data(path="imdb.npz", num_words=None, skip_top=0, maxlen=None, seed=113, start_char=1,
              oov_char=2, index_from=3, **kwargs):
    """(x_train, y_train), (x_test, y_test); x are object arrays of int lists."""
    if kwargs:
        raise TypeError(f"imdb.load_data: unrecognized keyword arguments: {sorted(kwargs)}")
    fpath = _locate(path, "imdb.npz", IMDB_HASH, "imdb")
    f = _sequences.load_npz(fpath, ("x_train", "y_train", "x_test", "y_test"))
    x_train, labels_train = f["x_train"], f["y_train"]
    x_test, labels_test = f["x_test"], f["y_test"]
    _splits(x_train, labels_train, fpath, "_train")
    _splits(x_test, labels_test, fpath, "_test")
    rng = np.random.RandomState(seed)
    indices = np.arange(len(x_train))
    rng.shuffle(indices)
    x_train, labels_train = x_train[indices], labels_train[indices]
    indices = np.arange(len(x_test))
    rng.shuffle(indices)
    x_test, labels_test = x_test[indices], labels_test[indices]
    xs = [list(x) for x in x_train] + [list(x) for x in x_test]
    labels = np.concatenate([labels_train, labels_test])
    n_train = len(x_train)
    if maxlen:  # Keras filters each split separately, then joins them
        tr, ltr = _preprocess(xs[:n_train], labels[:n_train], num_words=None, skip_top=0,
                              maxlen=maxlen, start_char=start_char, oov_char=None,
                              index_from=index_from, where=fpath)
        te, lte = _preprocess(xs[n_train:], labels[n_train:], num_words=None, skip_top=0,
                              maxlen=maxlen, start_char=start_char, oov_char=None,
                              index_from=index_from, where=fpath)
        xs, labels, n_train = tr + te, np.concatenate([ltr, lte]), len(tr)
        start_char, index_from = None, 0  # already applied
    xs, labels = _preprocess(xs, labels, num_words=num_words, skip_top=skip_top, maxlen=None,
                             start_char=start_char, oov_char=oov_char, index_from=index_from,
                             where=fpath)
    return ((_objects(xs[:n_train]), labels[:n_train]),
            (_objects(xs[n_train:]), labels[n_train:]))
