"""The `.keras` zip archive: written atomically, read as untrusted input.

Layout (Keras 3 `saving_lib`): `metadata.json`, `config.json`, `model.weights.h5`
(the native `.weights.h5` layout), members stored uncompressed. Only those three
members are ever read, and none is extracted by its own name. Before a byte is read:
member names with absolute or `..` paths and duplicate names refuse the file,
encrypted members and compression other than stored/deflate are refused, the JSON
members are capped at 64 MiB, and a member declaring far more bytes than it stores
(a decompression bomb) is refused. Every error names the file (and the member).
"""

import contextlib
import os
import re
import zipfile
import zlib

from kerasish.saving import atomic, json_utils

CONFIG, METADATA, WEIGHTS = "config.json", "metadata.json", "model.weights.h5"
MAX_JSON_BYTES = 64 << 20
_BOMB_FLOOR_BYTES = 1 << 20  # below this a member may expand any amount
_MAX_EXPANSION = 100  # Keras's limit; deflate cannot exceed ~1032:1 anyway
_MAX_MEMBERS = 100_000
_CHUNK = 1 << 20
_COMPRESSION = {zipfile.ZIP_STORED: "stored", zipfile.ZIP_DEFLATED: "deflate"}
_ZIP_SIGNATURE = b"PK\x03\x04"


def is_zip(path):
    """True when the file starts like a zip archive (a `.keras` file)."""
    try:
        with open(path, "rb") as fh:
            return fh.read(4) == _ZIP_SIGNATURE
    except OSError:
        return False


def write_archive(filepath, config_json, metadata_json, weights_bytes, overwrite=True,
                  assets=None):
    """Write the three members (and `assets`, {member name: bytes}: the layers'
    save_assets files) to `filepath` atomically (temp file, fsync, rename)."""
    with atomic.atomic_path(filepath, overwrite) as tmp:
        with open(tmp, "wb") as fh:
            with zipfile.ZipFile(fh, "w", zipfile.ZIP_STORED) as zf:
                zf.writestr(METADATA, metadata_json)
                zf.writestr(CONFIG, config_json)
                zf.writestr(WEIGHTS, weights_bytes)
                for name, data in (assets or {}).items():
                    zf.writestr(name, data)
            fh.flush()


def _unsafe_name(name):
    parts = re.split(r"[\\/]", name)
    return (name.startswith(("/", "\\")) or re.match(r"^[A-Za-z]:", name) is not None
            or ".." in parts or "\x00" in name)


def _check_members(zf, source):
    infos = zf.infolist()
    if len(infos) > _MAX_MEMBERS:
        raise ValueError(f"Refusing to load {source}: the archive lists {len(infos)} "
                         f"members; a .keras file has 3 (at most {_MAX_MEMBERS} accepted)")
    seen = set()
    for info in infos:
        if _unsafe_name(info.filename):
            raise ValueError(f"Refusing to load {source}: archive member "
                             f"{info.filename!r:.200} has an absolute or parent-directory "
                             "path (a path traversal attempt?)")
        if info.filename in seen:
            raise ValueError(f"Refusing to load {source}: archive member "
                             f"{info.filename!r:.200} appears twice")
        seen.add(info.filename)
    missing = [name for name in (CONFIG, WEIGHTS) if name not in seen]
    if missing:
        listed = sorted(seen)[:10]
        raise ValueError(f"Cannot load {source}: the archive has no {missing[0]}; this is "
                         f"not a complete .keras file (members: {listed})")


@contextlib.contextmanager
def open_archive(filepath):
    """Open an untrusted `.keras` file after checking its member list; yield the
    ZipFile. Zip-level failures become OSError/ValueError naming the file."""
    path = os.fspath(filepath)
    if not os.path.exists(path):
        raise FileNotFoundError(f"Cannot load {path}: no such file")
    if os.path.isdir(path):
        raise IsADirectoryError(f"Cannot load {path}: it is a directory, not a .keras file")
    if os.path.getsize(path) == 0:
        raise ValueError(f"Cannot load {path}: the file is empty (0 bytes)")
    if not is_zip(path):
        with open(path, "rb") as fh:
            head = fh.read(8)
        what = "an HDF5 file (load it as .h5)" if head.startswith(b"\x89HDF") else \
            f"not a zip archive (first bytes {head!r})"
        raise ValueError(f"Cannot load {path}: a .keras file is a zip archive; this is {what}")
    try:
        zf = zipfile.ZipFile(path, "r")
    except (zipfile.BadZipFile, EOFError, ValueError, NotImplementedError) as e:
        raise ValueError(f"Cannot load {path}: not a readable .keras zip archive; it is "
                         f"truncated or corrupt ({e})") from e
    except OSError as e:
        if isinstance(e, PermissionError):
            raise
        raise OSError(f"Cannot load {path}: the zip archive is truncated or corrupt "
                      f"({e})") from e
    with zf:
        _check_members(zf, path)
        yield zf


def _check_member(zf, name, cap, source):
    info = zf.getinfo(name)
    where = f"member {name} of {source}"
    if info.flag_bits & 0x1:
        raise ValueError(f"Cannot load {where}: it is encrypted")
    if info.compress_type not in _COMPRESSION:
        raise ValueError(f"Cannot load {where}: it uses zip compression method "
                         f"{info.compress_type}; only {sorted(_COMPRESSION.values())} are "
                         "accepted")
    if cap is not None and info.file_size > cap:
        raise ValueError(f"Refusing to load {where}: it declares {info.file_size} bytes; "
                         f"expected at most {cap}")
    if info.file_size > _BOMB_FLOOR_BYTES and \
            info.file_size > _MAX_EXPANSION * max(info.compress_size, 1):
        raise ValueError(f"Refusing to load {where}: it declares {info.file_size} bytes but "
                         f"stores only {info.compress_size} (a decompression bomb?)")
    archive_size = os.path.getsize(zf.filename) if zf.filename else None
    if archive_size is not None and info.compress_size > archive_size:
        raise ValueError(f"Cannot load {where}: it claims {info.compress_size} stored bytes "
                         f"in a {archive_size}-byte file (truncated or corrupt)")
    return info


def _corrupt(name, source, e):
    return OSError(f"Cannot load member {name} of {source}: it is truncated or corrupt "
                   f"({type(e).__name__}: {e})")


_READ_ERRORS = (zipfile.BadZipFile, EOFError, OSError, ValueError, NotImplementedError,
                RuntimeError)


def _stream(zf, info, name, source, sink):
    """Copy a member's bytes to `sink` in chunks, never past its declared size; the
    zip module checks the CRC at the end."""
    total = 0
    try:
        with zf.open(info, "r") as fh:
            while True:
                chunk = fh.read(min(_CHUNK, info.file_size - total + 1))
                if not chunk:
                    break
                total += len(chunk)
                if total > info.file_size:
                    raise ValueError(f"Refusing to load member {name} of {source}: it "
                                     f"inflates past its declared {info.file_size} bytes")
                sink(chunk)
    except zlib.error as e:
        raise _corrupt(name, source, e) from e
    except _READ_ERRORS as e:
        if source in str(e):
            raise
        raise _corrupt(name, source, e) from e
    if total != info.file_size:
        raise _corrupt(name, source, EOFError(f"read {total} of {info.file_size} bytes"))


def read_json(zf, name, source):
    """A JSON member (config.json, metadata.json), size-capped, as Python objects."""
    info = _check_member(zf, name, MAX_JSON_BYTES, source)
    parts = []
    _stream(zf, info, name, source, parts.append)
    try:
        text = b"".join(parts).decode("utf-8")
    except UnicodeDecodeError as e:
        raise ValueError(f"Cannot load {name} in {source}: it is not UTF-8 text ({e})") from e
    return json_utils.loads(text, f"{name} in {source}")


def extract_weights(zf, dest, source):
    """Copy model.weights.h5 to the path `dest` (a private temporary file)."""
    info = _check_member(zf, WEIGHTS, None, source)
    with open(dest, "wb") as out:
        _stream(zf, info, WEIGHTS, source, out.write)
