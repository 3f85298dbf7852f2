"""Reading the imdb / reuters `.npz` files without running code from them.

Those files hold ragged word-index sequences as NumPy object arrays, which NumPy can
only store as a pickle, and unpickling runs whatever the pickle names (an `imdb.npz`
whose arrays pickle `os.system` ran it under `np.load(allow_pickle=True)`). Here:
numeric members load with `allow_pickle=False`; an object member is unpickled by an
unpickler that resolves only the three globals an object array needs (`ndarray`,
`dtype`, `multiarray._reconstruct`, as Keras 3's npz_utils does), and the result must
be a 1-D array of lists (or 1-D integer arrays) of Python ints, whose total length
may not exceed the pickle's size (each int costs a pickle at least one byte, so shared
references cannot multiply memory). Each member's size is checked before it is read.
Every error names the file and the member.
"""

import io
import pickle
import zipfile
import zlib

import numpy as np

# imdb's largest member inflates to ~40 MB; a member past this is not a data set
MAX_MEMBER_BYTES = 1 << 30
_MAX_RATIO = 200  # and deflate of int lists stays far below this
_RATIO_FLOOR = 1 << 20

_ALLOWED_GLOBALS = frozenset({
    ("numpy", "ndarray"),
    ("numpy", "dtype"),
    ("numpy.core.multiarray", "_reconstruct"),
    ("numpy._core.multiarray", "_reconstruct"),
})


class _ArraysOnly(pickle.Unpickler):
    """Resolves only what an object ndarray of lists needs; anything else refused."""

    def find_class(self, module, name):
        if (module, name) in _ALLOWED_GLOBALS:
            return super().find_class(module, name)
        raise pickle.UnpicklingError(f"it names {module}.{name:.80}, and only NumPy "
                                     "array reconstruction is allowed")

    def persistent_load(self, pid):
        raise pickle.UnpicklingError("it uses a persistent id")


def _bad(path, key, why):
    return ValueError(f"load_data: {path}: member {key} {why}")


def _read_header(fp, path, key):
    version = np.lib.format.read_magic(fp)
    if version == (1, 0):
        return np.lib.format.read_array_header_1_0(fp)
    if version in ((2, 0), (3, 0)):  # 3.0 differs only in the header's text encoding
        return np.lib.format.read_array_header_2_0(fp)
    raise _bad(path, key, f"has unsupported .npy version {version}")


def _check_sequences(arr, budget, path, key):
    """The object array as a list of lists of ints; refuse anything else."""
    if not isinstance(arr, np.ndarray) or arr.dtype != object or arr.ndim != 1:
        raise _bad(path, key, "must be a 1-D object array of integer sequences; received "
                   f"{type(arr).__name__} {getattr(arr, 'shape', '')} "
                   f"{getattr(arr, 'dtype', '')}")
    out, total = [], 0
    for i, seq in enumerate(arr):
        if isinstance(seq, np.ndarray):
            if seq.ndim != 1 or seq.dtype.kind not in "iu":
                raise _bad(path, key, f"entry {i} is an array of {seq.dtype} {seq.shape}; "
                           "expected a 1-D integer sequence")
            seq = seq.tolist()
        elif not isinstance(seq, list):
            raise _bad(path, key, f"entry {i} is a {type(seq).__name__}; expected a list "
                       "of ints")
        total += len(seq)
        if total > budget:
            raise _bad(path, key, f"holds more than {budget} ints in {budget} pickled "
                       "bytes (shared references: a memory bomb?)")
        if not all(type(w) is int for w in seq):
            bad = next(w for w in seq if type(w) is not int)
            raise _bad(path, key, f"entry {i} holds a {type(bad).__name__}; expected ints")
        out.append(seq)
    return out


def _read_member(zf, info, path, key):
    if info.flag_bits & 0x1:
        raise _bad(path, key, "is encrypted")
    if info.file_size > MAX_MEMBER_BYTES:
        raise _bad(path, key, f"declares {info.file_size} bytes; expected at most "
                   f"{MAX_MEMBER_BYTES}")
    if info.file_size > _RATIO_FLOOR and info.file_size > _MAX_RATIO * max(
            info.compress_size, 1):
        raise _bad(path, key, f"declares {info.file_size} bytes but stores "
                   f"{info.compress_size} (a decompression bomb?)")
    with zf.open(info) as fp:
        raw = fp.read(info.file_size + 1)  # zipfile stops at the declared size
    if len(raw) != info.file_size:
        raise _bad(path, key, f"holds {len(raw)} bytes, not its declared "
                   f"{info.file_size} (truncated or corrupt)")
    fp = io.BytesIO(raw)
    shape, _, dtype = _read_header(fp, path, key)
    if not dtype.hasobject:
        fp.seek(0)
        return np.lib.format.read_array(fp, allow_pickle=False)
    if dtype != object:
        raise _bad(path, key, f"has a structured dtype with objects ({dtype})")
    budget = len(raw) - fp.tell()
    try:
        arr = _ArraysOnly(fp).load()
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError,
            IndexError, KeyError, OverflowError, MemoryError, RecursionError) as e:
        raise _bad(path, key, f"is not a plain array of integer sequences; the pickle "
                   f"was refused: {type(e).__name__}: {e}") from None
    if getattr(arr, "shape", None) != tuple(shape):
        raise _bad(path, key, f"declares shape {shape} but holds "
                   f"{getattr(arr, 'shape', type(arr).__name__)}")
    seqs = np.empty(len(arr), dtype=object)
    seqs[:] = _check_sequences(arr, budget, path, key)
    return seqs


def load_npz(path, keys):
    """{key: array} for the named members of an imdb/reuters-style `.npz`."""
    try:
        zf = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, EOFError, OSError, ValueError) as e:
        raise ValueError(f"load_data: {path} is not a readable .npz file: {e}") from e
    out = {}
    with zf:
        names = {n[:-4] if n.endswith(".npy") else n: n for n in zf.namelist()}
        missing = [k for k in keys if k not in names]
        if missing:
            raise ValueError(f"load_data: {path} lacks the keys {missing} (expected "
                             f"{list(keys)}; found {sorted(names)[:20]})")
        for key in keys:
            try:
                out[key] = _read_member(zf, zf.getinfo(names[key]), path, key)
            except (zipfile.BadZipFile, zlib.error, EOFError, OSError) as e:
                raise _bad(path, key, f"is truncated or corrupt ({e})") from e
            except ValueError as e:
                if str(path) in str(e):
                    raise
                raise _bad(path, key, f"is corrupt ({e})") from e
    for key in keys:
        if not key.startswith("x") and (out[key].dtype.kind not in "iu" or
                                        out[key].ndim != 1):
            raise _bad(path, key, f"must hold integer labels of shape (N,); received "
                       f"{out[key].dtype} {out[key].shape}")
    return out
