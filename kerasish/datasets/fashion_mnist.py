"""Fashion-MNIST (Zalando article images), Keras's `keras.datasets.fashion_mnist.load_data`
with offline sources, including Debian's dataset-fashion-mnist package.

Labels: 0 T-shirt/top, 1 Trouser, 2 Pullover, 3 Dress, 4 Coat, 5 Sandal, 6 Shirt,
7 Sneaker, 8 Bag, 9 Ankle boot.
"""

import os

from kerasish.datasets import _files

NAME = "fashion_mnist"
DEBIAN_DIR = "/usr/share/datasets/fashion-mnist"
# Tried in order; each file is checked against the MD5 that Zalando publishes for its
# .gz (README of zalandoresearch/fashion-mnist), so a mirror serving different bytes is
# rejected and the next one tried. (Debian's package recompresses: its .gz differ, the
# decompressed IDX data is what is validated there.)
MIRRORS = (
    "https://storage.googleapis.com/tensorflow/tf-keras-datasets/",
    "http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/",
)
FILES = (  # IDX_STEMS order
    ("train-images-idx3-ubyte.gz", "8d4fb7e6c68d591d4c3dfef9ec88bf0d"),
    ("train-labels-idx1-ubyte.gz", "25c81989df183df01b3e8a0aad5dffbe"),
    ("t10k-images-idx3-ubyte.gz", "bef4ecab320f06d8554ea6380940ec79"),
    ("t10k-labels-idx1-ubyte.gz", "bb300cfdad3c16e7a12a480ee83cd310"),
)
_NPZ = ("fashion_mnist.npz", "fashion-mnist.npz")


def load_data(path=None):
    """Load Fashion-MNIST: 60,000 training and 10,000 test 28x28 grayscale images.

    Looked for, in order (the first place holding the files wins):
      1. `path`, when given: an `.npz` file (keys x_train, y_train, x_test, y_test) or a
         directory with the four IDX files (`train-images-idx3-ubyte`, ...,
         optionally `.gz`). Nothing else is tried.
      2. `$KERASISH_DATA_DIR/fashion_mnist/` (or `.../fashion-mnist/`);
      3. `~/.kerasish/datasets/fashion_mnist/` (where downloads go);
      4. Keras's cache `~/.keras/datasets/fashion-mnist/`;
      5. `/usr/share/datasets/fashion-mnist/` (Debian/Ubuntu package dataset-fashion-mnist);
      6. a download of the four .gz files (MD5-verified) into place 3.

    Args:
        path: optional .npz file or directory (see 1).

    Returns:
        `(x_train, y_train), (x_test, y_test)`: uint8 arrays of shapes (N, 28, 28) and
        (N,), labels 0..9.

    Raises:
        DatasetNotFoundError: no place held the data and the download failed; the
            message lists every place tried and how to provide the files.
        ValueError: a file was found but is corrupt or truncated (the file is named).
    """
    title = "Fashion-MNIST"
    how = _files.how_to(NAME, title, [
        "  - install Debian's package: apt-get install dataset-fashion-mnist "
        f"(files in {DEBIAN_DIR});",
    ])
    if path is not None:
        where = os.path.expanduser(os.fspath(path))
        return _files.search(title, [(where, lambda: _files.load_path(where, _NPZ, 10))], how)

    def from_dir(d):
        return d, lambda: _files.load_dir(d, _NPZ, 10)

    def from_download():
        paths = _files.download_files(FILES, MIRRORS, os.path.join("datasets", NAME))
        return _files.load_idx_files(paths, 10)

    places = _files.standard_places(NAME, _NPZ, 10, [
        from_dir(os.path.join(os.path.expanduser("~"), ".keras", "datasets", "fashion-mnist")),
        from_dir(DEBIAN_DIR),
        (f"download from {' or '.join(MIRRORS)}", from_download),
    ])
    env = os.environ.get(_files.DATA_DIR_ENV)
    if env:  # Keras's and Debian's spelling too, right after $KERASISH_DATA_DIR/fashion_mnist
        places.insert(1, from_dir(os.path.join(env, "fashion-mnist")))
    return _files.search(title, places, how)
