"""IDX files (the MNIST container format), gzipped or raw, read with full validation.

Layout: two zero bytes, a type code, the number of dimensions D, then D big-endian
uint32 sizes, then the data in C order, big-endian. A file whose header, size or
compression does not add up raises ValueError naming the file, never a reshape error.
"""

import gzip
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
_MAX_DIMS = 8  # MNIST uses 1 or 3; anything above this is a corrupt header


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
        raise ValueError(f"read_idx: {path} has a corrupt header: {ndim} dimensions")
    dims = struct.unpack(f">{ndim}I", _read_exact(f, 4 * ndim, path, "dimensions"))
    return _DTYPES[magic[2]], tuple(int(d) for d in dims)


def _read_payload(f, path, dtype, dims):
    nbytes = int(np.prod(dims, dtype=np.int64)) * dtype.itemsize
    out = np.empty(nbytes, dtype=np.uint8)
    view, got = memoryview(out), 0
    while got < nbytes:  # readinto straight into the array: no extra copy of 47 MB
        n = f.readinto(view[got:])
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
    return out.view(dtype).reshape(dims)


def read_idx(path):
    """Read one IDX file (gzip detected from its content) into a native-endian array.

    Args:
        path: file path, gzipped or raw.

    Returns:
        np.ndarray with the header's shape and dtype (uint8 for MNIST), writable.

    Raises:
        ValueError: bad magic number, impossible dimensions, truncated or overlong data,
            or a corrupt gzip stream; the message names the file.
    """
    path = os.fspath(path)
    try:
        opener = gzip.open if is_gzip(path) else open
        with opener(path, "rb") as f:
            dtype, dims = _read_header(f, path)
            arr = _read_payload(f, path, dtype, dims)
    except (EOFError, zlib.error, gzip.BadGzipFile) as e:
        raise ValueError(f"read_idx: {path} is a corrupt or truncated gzip file: {e}") from e
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
