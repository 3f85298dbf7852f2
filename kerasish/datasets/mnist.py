"""MNIST handwritten digits, Keras's `keras.datasets.mnist.load_data` with offline sources."""

import os

from kerasish.datasets import _files

ORIGIN = "https://storage.googleapis.com/tensorflow/tf-keras-datasets/mnist.npz"
SHA256 = "731c5ac602752760c8e48fbffcf8c3b850d9dc2a2aedcf2cc48468fc17b673d1"
NAME = "mnist"
_NPZ = ("mnist.npz",)


def load_data(path=None):
    """Load MNIST: 60,000 training and 10,000 test 28x28 grayscale digits.

    Looked for, in order (the first place holding the files wins):
      1. `path`, when given: an `.npz` file (keys x_train, y_train, x_test, y_test) or a
         directory with `mnist.npz` or the four IDX files (`train-images-idx3-ubyte`,
         `train-labels-idx1-ubyte`, `t10k-images-idx3-ubyte`, `t10k-labels-idx1-ubyte`,
         each optionally `.gz`). Any image count works (e.g. the 5,000-digit
         mnist-small) as long as images and labels agree. Nothing else is tried.
      2. `$KERASISH_DATA_DIR/mnist/`;
      3. `~/.kerasish/datasets/mnist/` (where downloads go);
      4. Keras's cache `~/.keras/datasets/mnist.npz`;
      5. a download of Keras's `mnist.npz` (sha256-verified) into place 3.

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
    title = "MNIST"
    how = _files.how_to(NAME, title)
    if path is not None:
        where = os.path.expanduser(os.fspath(path))
        return _files.search(title, [(where, lambda: _files.load_path(where, _NPZ, 10))], how)
    keras_npz = os.path.join(os.path.expanduser("~"), ".keras", "datasets", "mnist.npz")

    def from_keras_cache():
        if not os.path.isfile(keras_npz):
            raise _files.NotHere("not found")
        return _files.load_npz(keras_npz, 10)

    def from_download():
        (npz,) = _files.download_files([("mnist.npz", SHA256)], [ORIGIN[: -len("mnist.npz")]],
                                       os.path.join("datasets", NAME))
        return _files.load_npz(npz, 10)

    places = _files.standard_places(NAME, _NPZ, 10, extra=[
        (keras_npz, from_keras_cache),
        (f"download {ORIGIN}", from_download),
    ])
    return _files.search(title, places, how)
