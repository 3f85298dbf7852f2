"""Opening untrusted `.h5` files: signature and structure checks before anything is
read, and link-safe lookups (soft links, external links, external or virtual datasets
and shape bombs are refused, as Keras 3's `safe_get_h5_group/_dataset` do). Per load
(`open_for_read`): each group is reached once by its object address (`reach_once`),
and attributes are checked before they are opened and counted as read, against
`load_limits`.

Every error names the file and the problem: OSError for I/O (missing, unreadable,
truncated), ValueError for content.
"""

import contextlib
import contextvars
import math
import os

import h5py
import numpy as np

from kerasish.saving import h5_arrays, h5_header, load_limits

_HDF5_SIGNATURE = b"\x89HDF\r\n\x1a\n"
# Datasets whose declared size is above this floor must not exceed 1000x the bytes
# actually stored (a compressed fill-value "shape bomb" would allocate terabytes).
_BOMB_FLOOR_BYTES = 1 << 32
_MAX_EXPANSION = 1000
_MAX_OBJECTS = 1_000_000
# per load: attribute bytes read so far and the objects already reached
_LOAD = contextvars.ContextVar("kerasish_h5_load", default=None)

_LINK_KINDS = {h5py.h5l.TYPE_SOFT: "a soft link", h5py.h5l.TYPE_EXTERNAL: "an external link"}


def _describe(path):
    """A short guess at what a non-HDF5 file is, for the error message."""
    with open(path, "rb") as fh:
        head = fh.read(8)
    if head.startswith(b"PK\x03\x04"):
        return "a zip archive (a Keras .keras file? kerasish reads .h5 files)"
    if head.lstrip()[:1] in (b"{", b"["):
        return "a JSON text file (use model_from_json for architecture JSON)"
    if head.startswith(b"\x93NUMPY"):
        return "a NumPy .npy file"
    return f"not an HDF5 file (first bytes {head!r})"


def _has_signature(path):
    """HDF5's superblock signature sits at 0, 512, 1024, 2048, ... (user block)."""
    size = os.path.getsize(path)
    with open(path, "rb") as fh:
        offset = 0
        while offset + 8 <= size:
            fh.seek(offset)
            if fh.read(8) == _HDF5_SIGNATURE:
                return True
            offset = 512 if offset == 0 else offset * 2
    return False


def scan(f, source):
    """Reject links other than hard links and datasets stored outside the file.

    Walks every link once (HDF5's own link iteration, which is cycle-safe).
    """
    found = []

    def visit_link(name, info):
        visit_link.count += 1
        if info.type != h5py.h5l.TYPE_HARD:
            found.append((name.decode("utf8", "replace"),
                          _LINK_KINDS.get(info.type, "a user-defined link")))
            return 1  # stop iterating
        if visit_link.count > _MAX_OBJECTS:
            found.append((name.decode("utf8", "replace"), f"more than {_MAX_OBJECTS} links"))
            return 1
        return None

    visit_link.count = 0
    f.id.links.visit(visit_link, info=True)
    if found:
        name, what = found[0]
        raise ValueError(f"Refusing to load {source}: it contains {what} at '/{name}' "
                         "(only self-contained HDF5 files are accepted)")

    def visit_object(name, obj):
        if isinstance(obj, h5py.Dataset):
            _check_storage(obj, source)
        return None

    f.visititems(visit_object)


def _check_storage(dset, source):
    where = f"dataset '{dset.name}' in {source}"
    if dset.external:
        raise ValueError(f"Refusing to load {source}: {where} is stored in external "
                         f"file(s) {[e[0] for e in dset.external]}")
    if dset.is_virtual:
        raise ValueError(f"Refusing to load {source}: {where} is a virtual dataset")


def check_dataset(dset, source):
    """Refuse external, virtual, non-numeric and shape-bomb datasets."""
    _check_storage(dset, source)
    where = f"dataset '{dset.name}' in {source}"
    if dset.dtype.kind not in "biuf":
        raise ValueError(f"Cannot load {where}: expected a numeric dataset; "
                         f"received dtype {dset.dtype}")
    if dset.shape is None:
        raise ValueError(f"Cannot load {where}: the dataset has no shape (null dataspace)")
    declared = math.prod(dset.shape) * dset.dtype.itemsize
    if declared > _BOMB_FLOOR_BYTES and declared > _MAX_EXPANSION * dset.id.get_storage_size():
        raise ValueError(f"Refusing to load {where}: it declares {declared} bytes but "
                         f"stores only {dset.id.get_storage_size()} (a shape bomb?)")


def get_group(parent, name, source):
    """`parent[name]` as a Group, refusing links, like Keras's safe_get_h5_group."""
    current = parent
    for part in name.split("/"):
        if not part:
            raise ValueError(f"Cannot load {source}: invalid group path '{name}'")
        if part not in current:
            raise ValueError(f"Cannot load {source}: group '{current.name}' has no "
                             f"member '{part}' (looking up '{name}'); the file is not a "
                             "complete kerasish/Keras checkpoint")
        link = current.get(part, getlink=True)
        if not isinstance(link, h5py.HardLink):
            raise ValueError(f"Refusing to load {source}: '{current.name}/{part}' is "
                             f"{type(link).__name__}")
        current = current[part]
        if not isinstance(current, h5py.Group):
            raise ValueError(f"Cannot load {source}: expected '{current.name}' to be a "
                             f"group; received {type(current).__name__}")
    return current


def get_dataset(group, name, source):
    """`group[name]` as a checked Dataset (a `/` in the name walks subgroups)."""
    if "/" in name:
        parent, name = name.rsplit("/", 1)
        group = get_group(group, parent, source)
    if not name or name not in group:
        raise ValueError(f"Cannot load {source}: group '{group.name}' has no dataset "
                         f"'{name}' (listed in weight_names but missing)")
    link = group.get(name, getlink=True)
    if not isinstance(link, h5py.HardLink):
        raise ValueError(f"Refusing to load {source}: '{group.name}/{name}' is "
                         f"{type(link).__name__}")
    dset = group[name]
    if not isinstance(dset, h5py.Dataset):
        raise ValueError(f"Cannot load {source}: expected '{dset.name}' to be a dataset; "
                         f"received {type(dset).__name__}")
    check_dataset(dset, source)
    return dset


def read_array(dset, source):
    """Read a whole dataset into a NumPy array (bounded: see h5_arrays), naming the
    file on failure."""
    return h5_arrays.read_dataset(dset, source)


class _LoadState:
    """What one `open_for_read` has read: attribute bytes, objects checked, groups
    reached (by HDF5 object address, so hard links sharing a group are seen)."""

    def __init__(self, path=None):
        self.path = path
        self.size = os.path.getsize(path) if path is not None else 0
        self.attr_read = 0
        self.attr_objects = set()
        self.reached = {}


def _state():
    state = _LOAD.get()
    if state is None:  # a read outside open_for_read (tests, tools): fresh budget
        state = _LoadState()
    return state


def _address(obj):
    info = h5py.h5o.get_info(obj.id)
    return (info.fileno, info.addr), info


def reach_once(group, source):
    """Record that a reader reached `group`; ValueError when it was reached before by
    another path (groups shared by hard links: a DAG read as a tree is exponential,
    and a Keras file is always a tree)."""
    state = _state()
    key, _ = _address(group)
    first = state.reached.get(key)
    if first is not None:
        raise ValueError(f"Refusing to load {source}: group '{group.name}' is the same "
                         f"HDF5 object as '{first}' (groups shared by hard links; a "
                         "weights file is a tree)")
    state.reached[key] = group.name


def _check_object_attrs(group, source):
    """All attributes of one object, as stored, against max_attr_bytes: read from the
    object's header info, before any attribute is opened (opening one reads it)."""
    state = _state()
    key, info = _address(group)
    if key in state.attr_objects:
        return
    limit = load_limits.LIMITS.max_attr_bytes
    try:  # dense attribute storage, plus the object header holding compact ones
        stored = int(info.meta_size.attr.heap_size) + int(info.hdr.space.total)
    except AttributeError:  # an h5py without these fields: each attribute is still checked
        stored = 0
    if stored > limit:
        raise ValueError(f"Refusing to load {source}: the attributes of '{group.name}' "
                         f"take {stored:,} bytes, over the {limit:,} allowed "
                         "(load_limits.LIMITS.max_attr_bytes)")
    state.attr_objects.add(key)


def check_attr(group, name, source):
    """Refuse an attribute whose declared size its stored bytes cannot back, or that
    could take more than the load's attribute budget (checked before h5py allocates
    it: a variable-length list's items may each be as large as the file)."""
    try:
        _check_object_attrs(group, source)
        attr = h5py.h5a.open(group.id, name.encode("utf8"))
        shape, dtype = attr.shape, attr.dtype
        items = math.prod(shape or ())
        declared = items * dtype.itemsize
        stored = attr.get_storage_size() if declared > 4096 else declared
    except (OSError, RuntimeError, KeyError, ValueError, TypeError) as e:
        if isinstance(e, ValueError) and source in str(e):
            raise  # a limit of _check_object_attrs
        raise OSError(f"Cannot load {source}: attribute '{name}' of '{group.name}' is "
                      f"corrupt ({e})") from e
    if declared > load_limits.LIMITS.max_attr_bytes or declared > 16 * stored + 4096:
        raise ValueError(f"Refusing to load {source}: attribute '{name}' of "
                         f"'{group.name}' declares {declared} bytes ({shape} "
                         f"{dtype}) but stores {stored}")
    state = _state()
    left = load_limits.LIMITS.max_attr_read_bytes - state.attr_read
    if dtype.kind == "O" and items > 1:
        needed = _vlen_bytes(group, name, state)
        if needed is None and items * max(state.size, 1) > left:
            raise ValueError(f"Refusing to load {source}: attribute '{name}' of "
                             f"'{group.name}' is a variable-length list of {items} items in a "
                             f"{state.size:,}-byte file; reading it could take up to "
                             f"{items * state.size:,} bytes, over the {left:,} left of "
                             "load_limits.LIMITS.max_attr_read_bytes")
        # every item's bytes are stored once in the file unless items share one heap
        # object (which no writer does): more than the file holds is a crafted file
        if needed is not None and (needed > left or needed > state.size + 4096):
            raise ValueError(f"Refusing to load {source}: attribute '{name}' of "
                             f"'{group.name}' is a variable-length list of {items} items "
                             f"whose stored lengths come to {needed:,} bytes, more than the "
                             f"file's {state.size:,} bytes or the {left:,} left of "
                             "load_limits.LIMITS.max_attr_read_bytes")


def _vlen_bytes(group, name, state):
    """What reading a variable-length attribute allocates, from the lengths its object
    header stores (h5_header), or None where that header cannot be read that way."""
    if state.path is None:
        return None
    try:
        fcpl = group.file.id.get_create_plist()
        sizeof_addr, sizeof_size = fcpl.get_sizes()
        address = h5py.h5o.get_info(group.id).addr
        base = fcpl.get_userblock()
    except (OSError, RuntimeError, ValueError, AttributeError):
        return None
    return h5_header.vlen_attribute_bytes(state.path, address, name, sizeof_addr,
                                          sizeof_size, base)


def count_attr_read(value, group, name, source):
    """Add an attribute's bytes as read (variable-length items included) to the load's
    budget; ValueError when over it."""
    arr = np.asarray(value) if not isinstance(value, (bytes, str)) else None
    if arr is None:
        nbytes = len(value)
    elif arr.dtype.kind == "O":
        nbytes = sum(len(v) if isinstance(v, (bytes, str, np.ndarray)) else 8
                     for v in arr.reshape(-1))
    else:
        nbytes = arr.nbytes
    state = _state()
    state.attr_read += nbytes
    limit = load_limits.LIMITS.max_attr_read_bytes
    if state.attr_read > limit:
        raise ValueError(f"Refusing to load {source}: its attributes (the last read: "
                         f"'{name}' of '{group.name}') come to {state.attr_read:,} bytes, "
                         f"over the {limit:,} allowed "
                         "(load_limits.LIMITS.max_attr_read_bytes)")


@contextlib.contextmanager
def open_for_read(filepath):
    """Open an untrusted `.h5` for reading after validating it; yield the h5py.File.

    h5py/HDF5 failures inside the block are re-raised as OSError/ValueError that name
    the file, so callers see one kind of error for any damaged input.
    """
    path = os.fspath(filepath)
    if not os.path.exists(path):
        raise FileNotFoundError(f"Cannot load {path}: no such file")
    if os.path.isdir(path):
        raise IsADirectoryError(f"Cannot load {path}: it is a directory, not an .h5 file")
    if os.path.getsize(path) == 0:
        raise ValueError(f"Cannot load {path}: the file is empty (0 bytes)")
    if not _has_signature(path):
        raise ValueError(f"Cannot load {path}: it is {_describe(path)}")
    try:
        f = h5py.File(path, "r")
    except (OSError, RuntimeError, ValueError) as e:
        raise OSError(f"Cannot load {path}: the HDF5 file is truncated or corrupt "
                      f"({e})") from e
    token = _LOAD.set(_LoadState(path))
    try:
        try:
            scan(f, path)
        except (OSError, RuntimeError, KeyError) as e:
            raise OSError(f"Cannot load {path}: the HDF5 file is corrupt ({e})") from e
        except ValueError as e:  # e.g. UnicodeDecodeError on a damaged object name
            if path in str(e):
                raise
            raise ValueError(f"Cannot load {path}: the HDF5 file is corrupt "
                             f"({type(e).__name__}: {e})") from e
        try:
            yield f
        except (KeyError, RuntimeError, TypeError) as e:
            raise ValueError(f"Cannot load {path}: {type(e).__name__}: {e}") from e
        except ValueError as e:  # h5py's own ValueErrors do not name the file
            if path in str(e):
                raise
            raise ValueError(f"Cannot load {path}: {e}") from e
        except OSError as e:
            if isinstance(e, (FileNotFoundError, PermissionError)) or path in str(e):
                raise
            raise OSError(f"Cannot load {path}: the HDF5 file is truncated or corrupt "
                          f"({e})") from e
    finally:
        _LOAD.reset(token)
        with contextlib.suppress(Exception):
            f.close()
