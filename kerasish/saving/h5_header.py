"""The bytes a variable-length HDF5 attribute would take when read, from its object header.

h5py reads a variable-length attribute whole, following every item's global-heap ID, so a
crafted file can point thousands of items at one large heap object (a small file, gigabytes
read). Each stored item carries its own length (4 bytes, then the heap ID), so the sum of
those lengths is what a read allocates, and it is known from the attribute message alone.

Only version-1 object headers (what h5py and Keras write by default) with the attribute
stored in the header are read here; anything else (version-2 headers, dense attribute
storage, shared datatypes) answers None and the caller falls back to its conservative
bound. Reads are bounded by the header's own declared sizes and the file's size.
"""

import numpy as np

_ATTRIBUTE, _CONTINUATION = 0x000C, 0x0010
_VLEN = 9  # datatype class
_MAX_CHUNKS = 1024
_MAX_CHUNK_BYTES = 1 << 26


def _pad8(n):
    return (n + 7) & ~7


def _u(data, offset, size):
    if offset + size > len(data):
        raise ValueError("truncated")
    return int.from_bytes(data[offset:offset + size], "little")


def _read(f, file_size, address, length):
    if address < 0 or length < 0 or length > _MAX_CHUNK_BYTES or address + length > file_size:
        raise ValueError("outside the file")
    f.seek(address)
    data = f.read(length)
    if len(data) != length:
        raise ValueError("truncated")
    return data


def _attribute_bytes(message, name, sizeof_size):
    """The summed item bytes of attribute `name` in one attribute message, or None."""
    version = message[0]
    if version not in (1, 2, 3) or message[1] & 0x03:  # shared datatype/dataspace
        return None
    name_size, dt_size, ds_size = (_u(message, 2, 2), _u(message, 4, 2), _u(message, 6, 2))
    pos = 9 if version == 3 else 8
    pad = _pad8 if version == 1 else (lambda n: n)
    found = message[pos:pos + name_size].rstrip(b"\0")
    if found != name:
        return False
    pos += pad(name_size)
    dtype = message[pos:pos + dt_size]
    pos += pad(dt_size)
    space = message[pos:pos + ds_size]
    pos += pad(ds_size)
    if len(dtype) < 8 or dtype[0] & 0x0F != _VLEN or len(space) < 4:
        return None
    # a string's base is one byte a character; a sequence's base type follows the header
    base_size = 1 if dtype[1] & 0x0F == 1 else _u(dtype, 12, 4)
    rank = space[1]
    if space[0] == 1:
        dims_at = 8
    elif space[0] == 2:
        if space[3] == 2:  # null dataspace
            return 0
        dims_at = 4
    else:
        return None
    items = 1
    for d in range(rank):
        items *= _u(space, dims_at + d * sizeof_size, sizeof_size)
    return items, pos, base_size


def vlen_attribute_bytes(path, address, name, sizeof_addr=8, sizeof_size=8, base=0):
    """Bytes the variable-length attribute `name` of the object whose header is at
    `address` would take when read (its items' declared lengths summed), or None when the
    header is not one this reader knows (the caller then bounds it otherwise)."""
    name = name.encode("utf8") if isinstance(name, str) else bytes(name)
    try:
        with open(path, "rb") as f:
            f.seek(0, 2)
            file_size = f.tell()
            prefix = _read(f, file_size, base + address, 16)
            if prefix[0] != 1:
                return None
            messages_left = _u(prefix, 2, 2)
            chunks = [(base + address + 16, _u(prefix, 8, 4))]
            seen = set()
            while chunks and messages_left > 0:
                start, length = chunks.pop(0)
                if (start, length) in seen or len(seen) >= _MAX_CHUNKS:
                    return None
                seen.add((start, length))
                chunk = _read(f, file_size, start, length)
                pos = 0
                while pos + 8 <= len(chunk) and messages_left > 0:
                    kind, size = _u(chunk, pos, 2), _u(chunk, pos + 2, 2)
                    body = chunk[pos + 8:pos + 8 + size]
                    pos += 8 + size
                    messages_left -= 1
                    if kind == _CONTINUATION:
                        chunks.append((base + _u(body, 0, sizeof_addr),
                                       _u(body, sizeof_addr, sizeof_size)))
                    elif kind == _ATTRIBUTE and len(body) >= 8:
                        parsed = _attribute_bytes(body, name, sizeof_size)
                        if parsed is False:
                            continue
                        if parsed is None or isinstance(parsed, int):
                            return parsed
                        items, data_at, base_size = parsed
                        element = 4 + sizeof_addr + 4  # length, heap collection, index
                        data = body[data_at:data_at + items * element]
                        if element % 4 or len(data) < items * element:
                            return None
                        words = np.frombuffer(data, "<u4").reshape(items, element // 4)
                        return int(words[:, 0].sum(dtype=np.int64)) * base_size
            return None
    except (OSError, ValueError):
        return None
