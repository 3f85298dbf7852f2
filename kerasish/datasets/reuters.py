"""Reuters newswire topics (keras.datasets.reuters): 46 classes, word-index sequences.

Keras's file, checksum and preprocessing (one shuffle of x and labels with seed, then
start_char / index_from / maxlen / num_words / skip_top / oov_char, then the split).
`path` as in imdb: a cache file name (hash checked) or an absolute path; no pickles.
"""

import numpy as np

from kerasish.datasets import _sequences
from kerasish.datasets.imdb import _locate, _objects, _preprocess, _splits

REUTERS_HASH = "d6586e694ee56d7a4e65172e12b3e987c03096cb01eab99753921ef915959916"


def load_data(path="reuters.npz", num_words=None, skip_top=0, maxlen=None, test_split=0.2,
              seed=113, start_char=1, oov_char=2, index_from=3, **kwargs):
    """(x_train, y_train), (x_test, y_test); the last test_split of samples is the test set."""
    if kwargs:
        raise TypeError(f"reuters.load_data: unrecognized keyword arguments: {sorted(kwargs)}")
    if not 0 <= test_split < 1:
        raise ValueError(f"reuters.load_data: test_split must be in [0, 1); received "
                         f"{test_split!r}")
    fpath = _locate(path, "reuters.npz", REUTERS_HASH, "reuters")
    f = _sequences.load_npz(fpath, ("x", "y"))
    xs, labels = f["x"], f["y"]
    _splits(xs, labels, fpath, "")
    rng = np.random.RandomState(seed)
    indices = np.arange(len(xs))
    rng.shuffle(indices)
    xs, labels = [list(x) for x in xs[indices]], labels[indices]
    xs, labels = _preprocess(xs, labels, num_words=num_words, skip_top=skip_top, maxlen=maxlen,
                             start_char=start_char, oov_char=oov_char, index_from=index_from,
                             where=fpath)
    idx = int(len(xs) * (1 - test_split))
    return (_objects(xs[:idx]), labels[:idx]), (_objects(xs[idx:]), labels[idx:])
