"""Reading datasets of untrusted `.h5` files without unbounded memory.

The readers in `h5_format` hand back `DatasetRef`s: a dataset's declared shape and
dtype, read only when asked (`weights_io` checks them against the model first, so a
24 KB file declaring a (1000, 1000000) kernel is refused before a byte is allocated).

A read allocates exactly the declared size. Compressed (filtered) datasets are
decompressed chunk by chunk here, each capped at the chunk's nominal size: HDF5's own
deflate filter grows its buffer until the stream ends, so one tiny chunk could inflate
to gigabytes. Filters other than shuffle, deflate and fletcher32 are refused.
"""

import math
import zlib

import numpy as np
from numpy.lib.mixins import NDArrayOperatorsMixin

# A chunk may not be much larger than the dataset it belongs to (resizable datasets
# have chunks larger than their extent; a crafted one could declare 4 GB chunks).
_CHUNK_SLACK_BYTES = 16 << 20
_FILTER_SHUFFLE, _FILTER_DEFLATE, _FILTER_FLETCHER32 = 2, 1, 3
_SUPPORTED_FILTERS = {_FILTER_SHUFFLE: "shuffle", _FILTER_DEFLATE: "gzip",
                      _FILTER_FLETCHER32: "fletcher32"}


def _corrupt(dset, source, why):
    return OSError(f"Cannot read dataset '{dset.name}' from {source}: the file is "
                   f"truncated or corrupt ({why})")


def _filters(dset, source):
    """[(filter id, name)] in pipeline (write) order, refusing unknown filters."""
    plist = dset.id.get_create_plist()
    out = []
    for i in range(plist.get_nfilters()):
        code = plist.get_filter(i)[0]
        if code not in _SUPPORTED_FILTERS:
            raise ValueError(f"Cannot load dataset '{dset.name}' from {source}: it uses "
                             f"HDF5 filter {code} ({plist.get_filter(i)[3]!r}); only "
                             "gzip, shuffle and fletcher32 are accepted")
        out.append(code)
    return out


def _check_chunks(dset, source, declared):
    if dset.chunks is None:
        return
    chunk_bytes = math.prod(dset.chunks) * dset.dtype.itemsize
    if chunk_bytes > max(4 * declared, _CHUNK_SLACK_BYTES):
        raise ValueError(f"Refusing to load dataset '{dset.name}' from {source}: its "
                         f"chunks of shape {dset.chunks} ({chunk_bytes} bytes) are far "
                         f"larger than the dataset {dset.shape} ({declared} bytes)")


def _unfilter(raw, filters, mask, nbytes, itemsize, dset, source):
    """Undo the pipeline on one stored chunk; the output never exceeds nbytes."""
    for pos in reversed(range(len(filters))):
        if mask & (1 << pos):
            continue  # HDF5 skipped this filter for this chunk
        code = filters[pos]
        if code == _FILTER_FLETCHER32:
            if len(raw) < 4:
                raise _corrupt(dset, source, "a fletcher32 chunk shorter than its checksum")
            raw = raw[:-4]
        elif code == _FILTER_DEFLATE:
            inflater = zlib.decompressobj()
            try:
                out = inflater.decompress(raw, nbytes)
            except zlib.error as e:
                raise _corrupt(dset, source, f"bad gzip chunk: {e}") from e
            if inflater.unconsumed_tail:
                raise ValueError(f"Refusing to load dataset '{dset.name}' from {source}: "
                                 f"a gzip chunk inflates past its {nbytes} bytes "
                                 "(a compression bomb?)")
            raw = out
        elif code == _FILTER_SHUFFLE and itemsize > 1:
            if len(raw) % itemsize:
                raise _corrupt(dset, source, "a shuffled chunk of a partial element")
            b = np.frombuffer(raw, np.uint8)
            raw = b.reshape(itemsize, -1).T.tobytes()
    if len(raw) != nbytes:
        raise _corrupt(dset, source, f"a chunk holds {len(raw)} bytes, expected {nbytes}")
    return raw


def _read_filtered(dset, source, filters):
    shape, dtype, chunks = dset.shape, dset.dtype, dset.chunks
    out = np.empty(shape, dtype)
    fill = dset.fillvalue
    out[...] = fill if fill is not None else 0
    nbytes = math.prod(chunks) * dtype.itemsize
    for i in range(dset.id.get_num_chunks()):
        info = dset.id.get_chunk_info(i)
        if any(o % c or o >= s for o, c, s in zip(info.chunk_offset, chunks, shape)):
            raise _corrupt(dset, source, f"chunk offset {info.chunk_offset} is outside "
                                         f"the dataset {shape} or not on its grid")
        if info.size > nbytes + nbytes // 100 + 4096:
            # deflate expands incompressible data by well under 1%: bigger is junk
            raise _corrupt(dset, source, f"a stored chunk of {info.size} bytes for "
                                         f"{nbytes} bytes of data")
        mask, raw = dset.id.read_direct_chunk(info.chunk_offset)
        raw = _unfilter(bytes(raw), filters, mask, nbytes, dtype.itemsize, dset, source)
        block = np.frombuffer(raw, dtype).reshape(chunks)
        where = tuple(slice(o, min(o + c, s)) for o, c, s in
                      zip(info.chunk_offset, chunks, shape))
        out[where] = block[tuple(slice(0, w.stop - w.start) for w in where)]
    return out


def read_dataset(dset, source):
    """The whole dataset as an array, allocating only its declared size."""
    declared = math.prod(dset.shape) * dset.dtype.itemsize
    _check_chunks(dset, source, declared)
    filters = _filters(dset, source) if dset.chunks is not None else []
    try:
        if filters and dset.shape and declared:
            return _read_filtered(dset, source, filters)
        return np.asarray(dset[()])
    except (OSError, RuntimeError, KeyError, ValueError, TypeError) as e:
        if source in str(e):
            raise
        raise _corrupt(dset, source, e) from e


class DatasetRef(NDArrayOperatorsMixin):
    """A dataset's name, declared shape and dtype; its data is read on demand.

    Works as an array where one is needed (`np.asarray`, arithmetic, `int()`); the
    first such use reads it. When the file was closed in between, it is reopened
    (with the same safety checks) and the dataset must still have the same shape.
    """

    def __init__(self, dset, source):
        self.source = source  # for messages; the real path (for a reopen) is `filename`
        self.filename = dset.file.filename
        self.name = dset.name
        self.shape = tuple(int(s) for s in dset.shape)
        self.dtype = dset.dtype
        self._dset = dset
        self._value = None

    ndim = property(lambda self: len(self.shape))
    size = property(lambda self: math.prod(self.shape))
    nbytes = property(lambda self: self.size * self.dtype.itemsize)

    def __repr__(self):
        return f"DatasetRef({self.source}:{self.name}, shape={self.shape}, dtype={self.dtype})"

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of a scalar dataset")
        return self.shape[0]

    def read(self):
        """The data (read once, then kept)."""
        if self._value is None:
            if self._dset.id.valid:
                self._value = read_dataset(self._dset, self.source)
            else:
                read_all([self])
        return self._value

    def __array__(self, dtype=None, copy=None):
        value = self.read()
        return value if dtype is None else value.astype(dtype)

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        inputs = [x.read() if isinstance(x, DatasetRef) else x for x in inputs]
        return getattr(ufunc, method)(*inputs, **kwargs)

    def __getitem__(self, key):
        return self.read()[key]

    def __int__(self):
        return int(self.read())

    def __float__(self):
        return float(self.read())


def read_all(values):
    """Materialize the DatasetRefs among `values` (other values pass through), reopening
    each closed file once. Returns the list of arrays."""
    from kerasish.saving import h5_safety  # h5_safety imports this module

    pending = {}
    for v in values:
        if isinstance(v, DatasetRef) and v._value is None:
            if v._dset.id.valid:
                v._value = read_dataset(v._dset, v.source)
            else:
                pending.setdefault((v.filename, v.source), []).append(v)
    for (filename, source), refs in pending.items():
        with h5_safety.open_for_read(filename) as f:
            for ref in refs:
                dset = h5_safety.get_dataset(f, ref.name.lstrip("/"), source)
                if tuple(dset.shape) != ref.shape or dset.dtype != ref.dtype:
                    raise ValueError(f"Cannot load {source}: dataset '{ref.name}' changed "
                                     f"while it was being loaded (was {ref.shape} "
                                     f"{ref.dtype}, now {dset.shape} {dset.dtype})")
                ref._value = read_dataset(dset, source)
    return [v.read() if isinstance(v, DatasetRef) else v for v in values]
