"""Finding a data set on disk (or downloading it), shared by the named loaders.

A "place" is a directory holding `<name>.npz` (keys x_train, y_train, x_test, y_test)
or the four standard IDX files (gzipped or not), or a single `.npz` file. The loaders
try their places in order; when all fail they raise DatasetNotFoundError listing every
place and the reason it was passed over. A place that HAS the files but whose files are
corrupt raises ValueError naming the file (a broken copy is never silently skipped).
"""

import math
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


IMAGE_SHAPE = (28, 28)  # MNIST and Fashion-MNIST, as Keras returns them
MAX_SAMPLES = 1 << 20  # 17x MNIST's 60,000: more is a corrupt header or a bomb


def check_splits(splits, source, num_classes, image_shape=IMAGE_SHAPE):
    """Validate ((x_train, y_train), (x_test, y_test)) read from `source`: uint8
    images (N, *image_shape) and integer labels in [0, num_classes), returned as
    uint8 (Keras's dtypes)."""
    out = []
    for part, (x, y) in zip(("train", "test"), splits):
        if x.ndim != 1 + len(image_shape) or x.shape[1:] != tuple(image_shape) or y.ndim != 1:
            raise ValueError(
                f"load_data: {source}: expected x_{part} of shape (N, "
                f"{', '.join(map(str, image_shape))}) and y_{part} of shape (N,); "
                f"received {x.shape} and {y.shape}"
            )
        if x.dtype != np.uint8:
            raise ValueError(f"load_data: {source}: expected x_{part} of dtype uint8 (as "
                             f"Keras returns it); received {x.dtype}")
        if y.dtype.kind not in "iu":
            raise ValueError(f"load_data: {source}: expected integer labels in y_{part}; "
                             f"received dtype {y.dtype}")
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
        out.append((x, y.astype(np.uint8, copy=False)))
    return tuple(out)


def _npz_header(zf, member, path, key):
    """(shape, dtype) of one .npy member, read from its header only."""
    try:
        with zf.open(member) as fp:
            version = np.lib.format.read_magic(fp)
            if version == (1, 0):
                shape, fortran, dtype = np.lib.format.read_array_header_1_0(fp)
            elif version in ((2, 0), (3, 0)):
                shape, fortran, dtype = np.lib.format.read_array_header_2_0(fp)
            else:
                raise ValueError(f"unsupported .npy version {version}")
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError, ValueError,
            NotImplementedError, SyntaxError, TypeError) as e:
        raise ValueError(f"load_data: {path} is corrupt: {key}: {e}") from e
    if dtype.hasobject:
        raise ValueError(f"load_data: {path}: {key} holds Python objects (pickles are "
                         "not loaded); expected numeric arrays")
    return tuple(shape), dtype


def _check_npz_member(path, key, shape, dtype, image_shape):
    want = (1 + len(image_shape)) if key.startswith("x") else 1
    if len(shape) != want or (key.startswith("x") and shape[1:] != tuple(image_shape)):
        what = f"(N, {', '.join(map(str, image_shape))})" if want > 1 else "(N,)"
        raise ValueError(f"load_data: {path}: expected {key} of shape {what}; received "
                         f"{shape}")
    if key.startswith("x") and dtype != np.uint8:
        raise ValueError(f"load_data: {path}: expected {key} of dtype uint8 (as Keras "
                         f"returns it); received {dtype}")
    if key.startswith("y") and dtype.kind not in "iu":
        raise ValueError(f"load_data: {path}: expected integer labels in {key}; received "
                         f"dtype {dtype}")
    if shape[0] > MAX_SAMPLES:
        raise ValueError(f"load_data: {path}: {key} declares {shape[0]} samples, over "
                         f"the limit of {MAX_SAMPLES} (a corrupt header?)")


def load_npz(path, num_classes, image_shape=IMAGE_SHAPE):
    """Read a Keras-style .npz; ValueError naming the file when it is unreadable.

    Each member's .npy header (shape, dtype) is checked before its data is read, and
    only the declared bytes are inflated, so a small zip cannot demand gigabytes."""
    try:
        zf = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, EOFError, OSError, ValueError) as e:
        if zipfile.is_zipfile(path) or not os.path.isfile(path):
            raise ValueError(f"load_data: {path} is not a readable .npz file: {e}") from e
        raise ValueError(f"load_data: {path} is not an .npz archive (a single .npy "
                         f"array or another format): {e}") from e
    with zf:
        members = {n[:-4] if n.endswith(".npy") else n: n for n in zf.namelist()}
        missing = [k for k in NPZ_KEYS if k not in members]
        if missing:
            raise ValueError(
                f"load_data: {path} lacks the keys {missing} "
                f"(expected {list(NPZ_KEYS)}; found {sorted(members)})"
            )
        for key in NPZ_KEYS:
            _check_npz_member(path, key, *_npz_header(zf, members[key], path, key),
                              image_shape)
        arrays = []
        for key in NPZ_KEYS:
            try:
                with zf.open(members[key]) as fp:
                    arrays.append(np.lib.format.read_array(fp, allow_pickle=False))
            except (zipfile.BadZipFile, zlib.error, EOFError, OSError, ValueError) as e:
                raise ValueError(f"load_data: {path} is corrupt: {key}: {e}") from e
    x_train, y_train, x_test, y_test = arrays
    return check_splits(((x_train, y_train), (x_test, y_test)), path, num_classes,
                        image_shape)


def load_idx_files(paths, num_classes, image_shape=IMAGE_SHAPE):
    """Read the four IDX files given in IDX_STEMS order (headers checked first)."""
    limit = MAX_SAMPLES * math.prod(image_shape)
    x_train, y_train, x_test, y_test = (
        read_idx(p, dtype=np.uint8, ndim=1 + len(image_shape), item_shape=image_shape,
                 max_bytes=limit) if i % 2 == 0 else
        read_idx(p, dtype=np.uint8, ndim=1, max_bytes=MAX_SAMPLES)
        for i, p in enumerate(paths))
    for p, y in ((paths[1], y_train), (paths[3], y_test)):  # name the file at fault
        if len(y) and y.max() >= num_classes:
            raise ValueError(f"load_data: {p}: labels must lie in [0, {num_classes}); "
                             f"received values in [{y.min()}, {y.max()}]")
    return check_splits(((x_train, y_train), (x_test, y_test)),
                        os.path.dirname(paths[0]), num_classes, image_shape)


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

