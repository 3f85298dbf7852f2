"""Finding a data set on disk (or downloading it), shared by the named loaders.

A "place" is a directory holding `<name>.npz` (keys x_train, y_train, x_test, y_test)
or the four standard IDX files (gzipped or not), or a single `.npz` file. The loaders
try their places in order; when all fail they raise DatasetNotFoundError listing every
place and the reason it was passed over. A place that HAS the files but whose files are
corrupt raises ValueError naming the file (a broken copy is never silently skipped).
"""

import os
import zipfile
import zlib

import numpy as np

from kerasish.datasets._idx import read_idx
from kerasish.utils.file_utils import get_file

IDX_STEMS = (
    "train-images-idx3-ubyte",
    "train-labels-idx1-ubyte",
    "t10k-images-idx3-ubyte",
    "t10k-labels-idx1-ubyte",
)
NPZ_KEYS = ("x_train", "y_train", "x_test", "y_test")
DATA_DIR_ENV = "KERASISH_DATA_DIR"


class DatasetNotFoundError(FileNotFoundError):
    """No copy of a data set was found and it could not be downloaded."""


class NotHere(Exception):
    """A place does not hold the data set; the message says why (for the final error)."""


def user_cache_dir():
    """~/.kerasish: the root that get_file downloads into for the loaders."""
    return os.path.join(os.path.expanduser("~"), ".kerasish")


def _idx_path(directory, stem):
    for candidate in (stem, stem + ".gz"):
        p = os.path.join(directory, candidate)
        if os.path.isfile(p):
            return p
    return None


def check_splits(splits, source, num_classes):
    """Validate ((x_train, y_train), (x_test, y_test)) read from `source`."""
    for part, (x, y) in zip(("train", "test"), splits):
        if x.ndim != 3 or y.ndim != 1:
            raise ValueError(
                f"load_data: {source}: expected x_{part} of shape (N, H, W) and y_{part} "
                f"of shape (N,); received {x.shape} and {y.shape}"
            )
        if len(x) != len(y):
            raise ValueError(
                f"load_data: {source}: x_{part} has {len(x)} images but y_{part} has "
                f"{len(y)} labels"
            )
        if len(y) and (y.min() < 0 or y.max() >= num_classes):
            raise ValueError(
                f"load_data: {source}: y_{part} labels must lie in [0, {num_classes}); "
                f"received values in [{y.min()}, {y.max()}]"
            )
    return splits


def load_npz(path, num_classes):
    """Read a Keras-style .npz; ValueError naming the file when it is unreadable."""
    try:
        f = np.load(path, allow_pickle=False)
    except (zipfile.BadZipFile, EOFError, OSError, ValueError) as e:
        raise ValueError(f"load_data: {path} is not a readable .npz file: {e}") from e
    if not isinstance(f, np.lib.npyio.NpzFile):
        raise ValueError(f"load_data: {path} holds a single array, not an .npz archive")
    with f:
        missing = [k for k in NPZ_KEYS if k not in f.files]
        if missing:
            raise ValueError(
                f"load_data: {path} lacks the keys {missing} "
                f"(expected {list(NPZ_KEYS)}; found {f.files})"
            )
        try:
            x_train, y_train, x_test, y_test = (f[k] for k in NPZ_KEYS)
        except (zipfile.BadZipFile, zlib.error, EOFError, OSError, ValueError) as e:
            raise ValueError(f"load_data: {path} is corrupt: {e}") from e
    return check_splits(((x_train, y_train), (x_test, y_test)), path, num_classes)


def load_idx_files(paths, num_classes):
    """Read the four IDX files given in IDX_STEMS order."""
    x_train, y_train, x_test, y_test = (read_idx(p) for p in paths)
    return check_splits(((x_train, y_train), (x_test, y_test)),
                        os.path.dirname(paths[0]), num_classes)


def load_dir(directory, npz_names, num_classes):
    """Load from a directory holding one of `npz_names` or the four IDX files.

    Raises:
        NotHere: the directory is missing, empty of data, or lacks some IDX files.
        ValueError: the files are there but corrupt.
    """
    if not os.path.isdir(directory):
        raise NotHere("not found")
    for name in npz_names:
        p = os.path.join(directory, name)
        if os.path.isfile(p):
            return load_npz(p, num_classes)
    paths = [_idx_path(directory, stem) for stem in IDX_STEMS]
    missing = [s + "[.gz]" for s, p in zip(IDX_STEMS, paths) if p is None]
    if len(missing) == len(IDX_STEMS):
        raise NotHere(f"no {' or '.join(npz_names)} and no IDX files in it")
    if missing:
        raise NotHere(f"incomplete: missing {', '.join(missing)}")
    return load_idx_files(paths, num_classes)


def load_path(path, npz_names, num_classes):
    """path= argument: an .npz file or a directory (see load_dir)."""
    path = os.path.expanduser(os.fspath(path))
    if os.path.isfile(path):
        return load_npz(path, num_classes)
    return load_dir(path, npz_names, num_classes)


def download_files(files, mirrors, subdir):
    """Download each (file name, hash) from the first mirror that serves it intact.

    Returns:
        The local paths, in `files` order.

    Raises:
        NotHere: some file could not be fetched from any mirror (all reasons joined).
    """
    paths = []
    for fname, file_hash in files:
        reasons = []
        for base in mirrors:
            try:
                paths.append(get_file(fname, base + fname, file_hash=file_hash,
                                      cache_dir=user_cache_dir(), cache_subdir=subdir))
                break
            except (OSError, ValueError) as e:  # DownloadError, bad hash, unwritable cache
                reasons.append(str(e))
        else:
            # The first file failing on every mirror means offline: don't try the rest.
            raise NotHere("; ".join(reasons))
    return paths


def search(title, places, how_to):
    """Try each (label, attempt) in order; return the first attempt's data.

    Raises:
        DatasetNotFoundError: every place was passed over; lists them with reasons.
    """
    tried = []
    for label, attempt in places:
        try:
            return attempt()
        except NotHere as e:
            tried.append(f"  {len(tried) + 1}. {label}: {e}")
    raise DatasetNotFoundError(
        f"load_data: no copy of {title} was found and it could not be downloaded.\n"
        f"Places tried, in order:\n" + "\n".join(tried) + "\n" + how_to
    )


def standard_places(name, npz_names, num_classes, extra=()):
    """$KERASISH_DATA_DIR/<name>/, then ~/.kerasish/datasets/<name>/, then `extra`."""
    places = []
    env = os.environ.get(DATA_DIR_ENV)
    env_dir = os.path.join(env, name) if env else None

    def from_env():
        if env_dir is None:
            raise NotHere(f"{DATA_DIR_ENV} is not set")
        return load_dir(env_dir, npz_names, num_classes)

    places.append((env_dir or f"${DATA_DIR_ENV}/{name}/", from_env))
    cache = os.path.join(user_cache_dir(), "datasets", name)
    places.append((cache, lambda: load_dir(cache, npz_names, num_classes)))
    return places + list(extra)


def how_to(name, title, extra_lines=()):
    """The closing paragraph of DatasetNotFoundError: how to provide the files offline."""
    lines = [
        f"To use {title} offline, do one of:",
        f"  - load_data(path=...) with an .npz file (keys {', '.join(NPZ_KEYS)}) or a "
        f"directory holding {', '.join(s + '[.gz]' for s in IDX_STEMS)};",
        f"  - put those files in ${DATA_DIR_ENV}/{name}/ or ~/.kerasish/datasets/{name}/;",
        *extra_lines,
        "See datasets/README.md in the kerasish repository.",
    ]
    return "\n".join(lines)

