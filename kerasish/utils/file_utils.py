"""`get_file`: download into a local cache, verified and atomic (Keras's `get_file`).

A download goes to a temporary file next to its destination and is renamed into place
only after its length and hash check out, so an interrupted transfer, a truncated
response or a bad hash never leaves a file in the cache.
"""

import hashlib
import http.client
import os
import shutil
import socket
import tarfile
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
import zipfile

from tqdm.auto import tqdm

__all__ = ["DownloadError", "get_file", "hash_file", "validate_file"]

_CHUNK = 1 << 16
_TIMEOUT_S = 30
# Sleep before each retry; tests shorten it. len + 1 attempts in all.
_RETRY_DELAYS = (0.5, 1.5)


class DownloadError(OSError):
    """A download failed for good (after retries); the message names the URL and cause."""


def _resolve_hasher(file_hash, algorithm):
    if algorithm not in ("auto", "sha256", "md5"):
        raise ValueError(
            f"get_file: expected hash_algorithm in ('auto', 'sha256', 'md5'); "
            f"received {algorithm!r}"
        )
    if algorithm == "auto":
        algorithm = "sha256" if file_hash is not None and len(file_hash) == 64 else "md5"
    return algorithm


def hash_file(path, algorithm="sha256"):
    """Hex digest of a file (`algorithm` "sha256" or "md5")."""
    h = hashlib.new(algorithm)
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def validate_file(path, file_hash, algorithm="auto"):
    """True when the file's hash equals `file_hash` (case-insensitive)."""
    algorithm = _resolve_hasher(file_hash, algorithm)
    return hash_file(path, algorithm) == str(file_hash).lower()


def _default_cache_dir():
    home = os.path.join(os.path.expanduser("~"), ".kerasish")
    try:
        os.makedirs(home, exist_ok=True)
        if os.access(home, os.W_OK):
            return home
    except OSError:
        pass
    return os.path.join(tempfile.gettempdir(), ".kerasish")  # read-only home: like Keras


def _is_transient(exc):
    """Worth retrying: timeouts, resets, truncated bodies, 5xx/429; not DNS or 4xx."""
    if isinstance(exc, urllib.error.HTTPError):
        return exc.code >= 500 or exc.code == 429
    if isinstance(exc, urllib.error.URLError):
        return not isinstance(exc.reason, socket.gaierror)  # no DNS: offline, don't wait
    return isinstance(exc, (OSError, http.client.HTTPException))


def _fetch(origin, tmp_path, desc):
    """One attempt: stream origin into tmp_path; raise on a short body."""
    req = urllib.request.Request(origin, headers={"User-Agent": "kerasish"})
    with urllib.request.urlopen(req, timeout=_TIMEOUT_S) as resp:
        length = resp.headers.get("Content-Length")
        total = int(length) if length and length.isdigit() else None
        got = 0
        with open(tmp_path, "wb") as out, tqdm(
            total=total, unit="B", unit_scale=True, desc=desc, leave=False,
            disable=None,  # off when stderr is not a terminal (tests, logs)
        ) as bar:
            while True:
                chunk = resp.read(_CHUNK)
                if not chunk:
                    break
                out.write(chunk)
                got += len(chunk)
                bar.update(len(chunk))
    if total is not None and got != total:
        raise http.client.IncompleteRead(b"", total - got)


def _download(origin, fpath, file_hash, algorithm):
    datadir, fname = os.path.split(fpath)
    fd, tmp = tempfile.mkstemp(prefix=f".{fname}.", suffix=".part", dir=datadir)
    os.close(fd)
    try:
        for attempt in range(len(_RETRY_DELAYS) + 1):
            try:
                _fetch(origin, tmp, fname)
                break
            except (OSError, http.client.HTTPException) as e:
                if not _is_transient(e) or attempt == len(_RETRY_DELAYS):
                    raise DownloadError(
                        f"get_file: could not download {fname!r} from {origin} "
                        f"({attempt + 1} attempt(s)): {_describe(e)}"
                    ) from e
                time.sleep(_RETRY_DELAYS[attempt])
        if file_hash is not None and not validate_file(tmp, file_hash, algorithm):
            raise ValueError(
                f"get_file: the file downloaded from {origin} is incomplete or corrupted: "
                f"its {algorithm} hash {hash_file(tmp, algorithm)} does not match the "
                f"expected {file_hash}; nothing was kept in the cache"
            )
        os.replace(tmp, fpath)  # atomic on one filesystem: readers see all or nothing
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)  # bad hash, error or KeyboardInterrupt: leave nothing behind


def _describe(exc):
    if isinstance(exc, urllib.error.HTTPError):
        return f"HTTP {exc.code} {exc.reason}"
    if isinstance(exc, urllib.error.URLError):
        return str(exc.reason)
    if isinstance(exc, http.client.IncompleteRead):
        return f"connection closed early ({exc.expected} bytes missing)"
    return f"{type(exc).__name__}: {exc}"


def _extract(fpath):
    """Extract a tar/zip archive into <fpath without its suffix>/, atomically."""
    base = os.path.basename(fpath)
    for suffix in (".tar.gz", ".tar.bz2", ".tar.xz", ".tgz", ".tar", ".zip"):
        if base.endswith(suffix):
            base = base[: -len(suffix)]
            break
    else:
        base += "_extracted"
    target = os.path.join(os.path.dirname(fpath), base)
    if os.path.isdir(target):
        return target
    tmp = tempfile.mkdtemp(prefix=f".{base}.", dir=os.path.dirname(fpath))
    try:
        if tarfile.is_tarfile(fpath):
            with tarfile.open(fpath) as tar:
                if hasattr(tarfile, "data_filter"):  # refuses absolute paths and ..
                    tar.extractall(tmp, filter="data")
                else:
                    tar.extractall(tmp)  # noqa: S202 (Python without extraction filters)
        elif zipfile.is_zipfile(fpath):
            with zipfile.ZipFile(fpath) as z:
                z.extractall(tmp)
        else:
            raise ValueError(
                f"get_file: extract=True expects a tar or zip archive; {fpath} is neither"
            )
        os.replace(tmp, target)
    finally:
        if os.path.isdir(tmp):
            shutil.rmtree(tmp, ignore_errors=True)
    return target


def get_file(fname=None, origin=None, file_hash=None, cache_dir=None,
             cache_subdir="datasets", hash_algorithm="auto", extract=False):
    """Download a file from a URL unless it is already in the cache.

    The file lands in `<cache_dir>/<cache_subdir>/<fname>`. A cached copy whose hash
    does not match `file_hash` is downloaded again.

    Args:
        fname: file name in the cache (an absolute path is used as is); None takes the
            last component of the URL.
        origin: URL to download from.
        file_hash: expected hex digest (sha256 or md5); None skips verification.
        cache_dir: cache root; default `~/.kerasish` (a temp dir when home is read-only).
        cache_subdir: folder under the cache root (may be nested, e.g. "datasets/mnist").
        hash_algorithm: "auto" (sha256 for 64 hex digits, else md5), "sha256" or "md5".
        extract: extract a tar/zip archive next to it and return that folder instead.

    Returns:
        Path of the cached file (or of the extracted folder when `extract`).

    Raises:
        DownloadError: the download failed after retries (the message says why).
        ValueError: bad arguments, or the downloaded file fails the hash check.
    """
    if not origin:
        raise ValueError(f"get_file: expected a URL in origin; received {origin!r}")
    algorithm = _resolve_hasher(file_hash, hash_algorithm)
    if fname is None:
        fname = os.path.basename(urllib.parse.urlparse(origin).path)
        if not fname:
            raise ValueError(f"get_file: cannot derive a file name from origin {origin!r}")
    cache_dir = os.path.expanduser(cache_dir) if cache_dir else _default_cache_dir()
    fpath = os.path.join(cache_dir, cache_subdir, os.fspath(fname))
    os.makedirs(os.path.dirname(fpath), exist_ok=True)
    fresh = os.path.exists(fpath) and (
        file_hash is None or validate_file(fpath, file_hash, algorithm)
    )
    if not fresh:
        _download(origin, fpath, file_hash, algorithm)
    return _extract(fpath) if extract else fpath
