"""Named data sets, Keras style: `kerasish.datasets.mnist.load_data()` returns
`(x_train, y_train), (x_test, y_test)` as uint8 NumPy arrays.

Sources are searched offline first (path=, $KERASISH_DATA_DIR/<name>/,
~/.kerasish/datasets/<name>/, Keras's cache, system packages) and downloaded last;
see datasets/README.md in the repository.
"""

from kerasish.datasets import fashion_mnist, imdb, mnist, reuters
from kerasish.datasets._files import DatasetNotFoundError
from kerasish.datasets._idx import read_idx, write_idx

__all__ = ["DatasetNotFoundError", "fashion_mnist", "imdb", "mnist", "reuters", "read_idx",
           "write_idx"]
