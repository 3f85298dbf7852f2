"""IDX files (the MNIST container format), gzipped or raw, read with full validation.

Layout: two zero bytes, a type code, the number of dimensions D, then D big-endian
uint32 sizes, then the data in C order, big-endian. A file whose header, size or
compression does not add up raises ValueError naming the file, never a reshape error.
"""

import gzip
import math
import os
import struct
import zlib

import numpy as np

# type code -> big-endian dtype (the IDX spec's table).
_DTYPES = {
    0x08: np.dtype(">u1"),
    0x09: np.dtype(">i1"),
    0x0B: np.dtype(">i2"),
    0x0C: np.dtype(">i4"),
    0x0D: np.dtype(">f4"),
    0x0E: np.dtype(">f8"),
}
_CODES = {dt.newbyteorder("="): code for code, dt in _DTYPES.items()}
_GZIP_MAGIC = b"\x1f\x8b"
_MAX_DIMS = 4  # MNIST uses 1 or 3, NORB-style files 4; more is a corrupt header
MAX_BYTES = 1 << 30  # 1 GiB: 20x MNIST's images; more is a corrupt header or a bomb
_FIRST_BUFFER = 1 << 20


def is_gzip(path):
    """True when the file starts with the gzip magic bytes (the suffix is not trusted)."""
    with open(path, "rb") as f:
        return f.read(2) == _GZIP_MAGIC


def _read_exact(f, n, path, what):
    data = f.read(n)
    if len(data) != n:
        raise ValueError(
            f"read_idx: {path} is truncated: expected {n} bytes of {what}, got {len(data)}"
        )
    return data


def _read_header(f, path):
    magic = _read_exact(f, 4, path, "header")
    if magic[0] != 0 or magic[1] != 0 or magic[2] not in _DTYPES:
        raise ValueError(
            f"read_idx: {path} is not an IDX file: bad magic number 0x{magic.hex()} "
            f"(expected 0x0000TTDD with type TT in "
            f"{', '.join(f'{c:02x}' for c in _DTYPES)})"
        )
    ndim = magic[3]
    if not 1 <= ndim <= _MAX_DIMS:
        raise ValueError(f"read_idx: {path} has a corrupt header: {ndim} dimensions "
                         f"(expected 1 to {_MAX_DIMS})")
    dims = struct.unpack(f">{ndim}I", _read_exact(f, 4 * ndim, path, "dimensions"))
    return _DTYPES[magic[2]], tuple(int(d) for d in dims)


def _check_header(path, dtype, dims, expect_dtype, expect_ndim, expect_tail, max_bytes):
    """The header against the caller's expectations and the size limit, before any
    data is read (Python ints: no overflow)."""
    if expect_ndim is not None and len(dims) != expect_ndim:
        raise ValueError(f"read_idx: {path}: expected a {expect_ndim}-D array; the "
                         f"header says {len(dims)}-D {dims}")
    if expect_tail is not None and tuple(dims[1:]) != tuple(expect_tail):
        raise ValueError(f"read_idx: {path}: expected items of shape {tuple(expect_tail)}; "
                         f"the header says {dims} (items {tuple(dims[1:])})")
    if expect_dtype is not None and dtype.newbyteorder("=") != np.dtype(expect_dtype):
        raise ValueError(f"read_idx: {path}: expected {np.dtype(expect_dtype).name} data; "
                         f"the header says {dtype.name}")
    nbytes = math.prod(dims) * dtype.itemsize
    if nbytes > max_bytes:
        raise ValueError(f"read_idx: {path}: the header declares {dims} {dtype.name} = "
                         f"{nbytes} bytes, over the limit of {max_bytes} bytes (a corrupt "
                         "header or a decompression bomb)")
    return nbytes


def _read_payload(f, path, dtype, dims, nbytes, stored=None):
    """Read exactly `nbytes`. The buffer grows with the data actually read (never to
    the header's claim up front), so a short file costs only what it holds."""
    if stored is not None and stored != nbytes:  # raw file: its size is known
        raise ValueError(
            f"read_idx: {path} is {'truncated' if stored < nbytes else 'corrupt'}: header "
            f"says {dims} {dtype.name} ({nbytes} data bytes) but {stored} follow"
            + ("" if stored < nbytes else " (more data than its header announces)"))
    size = nbytes if stored is not None else min(nbytes, _FIRST_BUFFER)
    buf = bytearray(size)
    got = 0
    while got < nbytes:
        if got == len(buf):  # double, capped at what the header says
            buf.extend(bytes(min(len(buf), nbytes - len(buf))))
        n = f.readinto(memoryview(buf)[got:])
        if not n:
            break
        got += n
    if got != nbytes:
        raise ValueError(
            f"read_idx: {path} is truncated: header says {dims} {dtype.name} "
            f"({nbytes} data bytes) but only {got} follow"
        )
    if f.read(1):
        raise ValueError(
            f"read_idx: {path} is corrupt: more data than its header {dims} announces"
        )
    return np.frombuffer(buf, dtype=dtype).reshape(dims)


def read_idx(path, dtype=None, ndim=None, item_shape=None, max_bytes=MAX_BYTES):
    """Read one IDX file (gzip detected from its content) into a native-endian array.

    The header is checked before any data is read; gzip data is inflated only up to
    the size the header declares (plus one byte, to detect overlong data).

    Args:
        path: file path, gzipped or raw.
        dtype, ndim, item_shape: optional expectations (e.g. uint8, 3, (28, 28)).
        max_bytes: refuse headers declaring more data than this (default 1 GiB).

    Returns:
        np.ndarray with the header's shape and dtype (uint8 for MNIST), writable.

    Raises:
        ValueError: bad magic number, impossible or unexpected dimensions or dtype,
            a declared size over `max_bytes`, truncated or overlong data, or a corrupt
            gzip stream; the message names the file.
    """
    path = os.fspath(path)
    try:
        gz = is_gzip(path)
        with (gzip.open if gz else open)(path, "rb") as f:
            dt, dims = _read_header(f, path)
            nbytes = _check_header(path, dt, dims, dtype, ndim, item_shape, max_bytes)
            stored = None if gz else os.path.getsize(path) - 4 - 4 * len(dims)
            arr = _read_payload(f, path, dt, dims, nbytes, stored)
    except (EOFError, zlib.error, gzip.BadGzipFile) as e:
        raise ValueError(f"read_idx: {path} is a corrupt or truncated gzip file: {e}") from e
    except OSError as e:
        if path in str(e):
            raise
        raise OSError(e.errno, f"read_idx: cannot read {path}: {e.strerror or e}") from e
    if arr.dtype.byteorder not in ("=", "|"):
        arr = arr.astype(arr.dtype.newbyteorder("="))
    return arr


def write_idx(path, array, compress=None):
    """Write an array as an IDX file (used by tests and datasets/scripts).

    Args:
        path: destination; gzipped when `compress` is True, or when None and the
            name ends in ".gz".
        array: ndarray of one of the IDX dtypes (uint8, int8, int16, int32, float32, float64).
        compress: force gzip on/off.
    """
    array = np.ascontiguousarray(array)
    code = _CODES.get(array.dtype.newbyteorder("="))
    if code is None or array.ndim < 1:
        raise ValueError(
            f"write_idx: expected a >=1-D array of dtype in "
            f"{sorted(d.name for d in _CODES)}; received {array.ndim}-D {array.dtype}"
        )
    header = bytes([0, 0, code, array.ndim]) + struct.pack(f">{array.ndim}I", *array.shape)
    body = array.astype(array.dtype.newbyteorder(">"), copy=False).tobytes()
    path = os.fspath(path)
    if compress is None:
        compress = path.endswith(".gz")
    opener = gzip.open if compress else open
    with opener(path, "wb") as f:
        f.write(header)
        f.write(body)
