"""`get_file`: download into a local cache, verified and atomic (Keras's `get_file`).

A download goes to a temporary file next to its destination and is renamed into place
only after its length and hash check out, so an interrupted transfer, a truncated
response or a bad hash never leaves a file in the cache.
"""

import errno
import hashlib
import http.client
import os
import secrets
import shutil
import socket
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

from tqdm.auto import tqdm

from kerasish.utils import archive_extract, stale_temps

__all__ = ["DownloadError", "ExtractLimits", "get_file", "hash_file", "validate_file"]

ExtractLimits = archive_extract.ExtractLimits

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


_TRANSIENT_ERRNOS = {errno.ETIMEDOUT, errno.ECONNRESET, errno.ECONNABORTED, errno.ECONNREFUSED,
                     errno.EPIPE, errno.ENETUNREACH, errno.EHOSTUNREACH, errno.ENETDOWN,
                     errno.EAGAIN}


def _is_transient(exc):
    """Worth retrying: timeouts, resets, refused connections, truncated bodies, HTTP
    5xx/429. Not: DNS failures (offline), 4xx, unknown URL types, a missing or
    unreadable local file (file:// URLs, ENOENT, EISDIR), a full or read-only disk."""
    if isinstance(exc, urllib.error.HTTPError):
        return exc.code >= 500 or exc.code == 429
    if isinstance(exc, urllib.error.URLError):
        reason = exc.reason
        return isinstance(reason, BaseException) and not isinstance(
            reason, urllib.error.URLError) and _is_transient(reason)
    if isinstance(exc, socket.gaierror):
        return False
    if isinstance(exc, (TimeoutError, socket.timeout, ConnectionError,
                        http.client.HTTPException)):
        return True
    return isinstance(exc, OSError) and exc.errno in _TRANSIENT_ERRNOS


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
    tmp = os.path.join(datadir, f".{fname}.{secrets.token_hex(6)}.part")
    # O_EXCL with 0o666: the umask decides the mode, as for any new file (mkstemp's
    # would be 0o600 and stay so after the rename).
    os.close(os.open(tmp, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o666))
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


def _extract(fpath, limits):
    """Extract a tar/zip archive into <fpath without its suffix>/, atomically, by
    `archive_extract`'s rules (members validated, size and ratio limited)."""
    base = os.path.basename(fpath)
    for suffix in (".tar.gz", ".tar.bz2", ".tar.xz", ".tgz", ".tar", ".zip"):
        if base.endswith(suffix):
            base = base[: -len(suffix)]
            break
    else:
        base += "_extracted"
    directory = os.path.dirname(fpath)
    target = os.path.join(directory, base)
    if os.path.isdir(target):
        return target
    prefix = f".{base}.extract-"
    stale_temps.remove_dead(directory, prefix)  # left by a killed extraction
    tmp = os.path.join(directory, stale_temps.name(prefix))
    os.mkdir(tmp, 0o777)  # mode per the umask (mkdtemp's 0o700 would stay after the rename)
    try:
        archive_extract.extract_into(fpath, tmp, limits)
        try:
            os.rename(tmp, target)
        except OSError:
            if not os.path.isdir(target):  # else another process extracted it first
                raise
    finally:
        if os.path.isdir(tmp):
            shutil.rmtree(tmp, ignore_errors=True)
    return target


def get_file(fname=None, origin=None, file_hash=None, cache_dir=None,
             cache_subdir="datasets", hash_algorithm="auto", extract=False,
             extract_limits=None):
    """Download a file from a URL unless it is already in the cache.

    The file lands in `<cache_dir>/<cache_subdir>/<fname>`. A cached copy whose hash
    does not match `file_hash` is downloaded again.

    Args:
        fname: file name in the cache, without any directory part (as Keras 3 refuses
            paths here: use cache_dir/cache_subdir); None takes the URL's last component.
        origin: URL to download from.
        file_hash: expected hex digest (sha256 or md5); None skips verification.
        cache_dir: cache root; default `~/.kerasish` (a temp dir when home is read-only).
        cache_subdir: folder under the cache root (may be nested, e.g. "datasets/mnist";
            an absolute path is used as is, as in Keras; ".." components are refused).
        hash_algorithm: "auto" (sha256 for 64 hex digits, else md5), "sha256" or "md5".
        extract: extract a tar/zip archive next to it and return that folder instead
            (kerasish's own extraction: see `archive_extract`).
        extract_limits: an `ExtractLimits` (total size, compression ratio, member
            count, links); default `archive_extract.DEFAULT_LIMITS`: 4 GiB, 200x past
            64 MiB, 100,000 members, no links.

    Returns:
        Path of the cached file (or of the extracted folder when `extract`).

    Raises:
        DownloadError: the download failed after retries (the message says why).
        ValueError: bad arguments (a file name with a directory part or "..", a
            cache_subdir leaving the cache), the downloaded file fails the hash check,
            or an archive to extract breaks a rule or a limit.
    """
    if not origin:
        raise ValueError(f"get_file: expected a URL in origin; received {origin!r}")
    algorithm = _resolve_hasher(file_hash, hash_algorithm)
    if fname is None:
        fname = os.path.basename(urllib.parse.urlparse(origin).path)
        if not fname:
            raise ValueError(f"get_file: cannot derive a file name from origin {origin!r}")
    fname = _check_fname(fname)
    cache_dir = os.path.expanduser(os.fspath(cache_dir)) if cache_dir else _default_cache_dir()
    fpath = os.path.join(cache_dir, _check_subdir(cache_subdir), fname)
    os.makedirs(os.path.dirname(fpath), exist_ok=True)
    fresh = os.path.exists(fpath) and (
        file_hash is None or validate_file(fpath, file_hash, algorithm)
    )
    if not fresh:
        _download(origin, fpath, file_hash, algorithm)
    return _extract(fpath, extract_limits) if extract else fpath


def _check_fname(fname):
    fname = os.fspath(fname)
    seps = {"/", os.sep, os.altsep} - {None}
    if any(sep in fname for sep in seps) or fname in ("", ".", ".."):
        raise ValueError(f"get_file: fname must be a plain file name (paths are not "
                         f"accepted, as in Keras 3: use cache_dir / cache_subdir for the "
                         f"folder); received fname={fname!r}")
    return fname


def _check_subdir(cache_subdir):
    sub = os.fspath(cache_subdir) if cache_subdir is not None else ""
    parts = sub.replace(os.sep, "/").split("/") if os.sep != "/" else sub.split("/")
    if ".." in parts:
        raise ValueError(f"get_file: cache_subdir must stay inside the cache directory; "
                         f"received cache_subdir={sub!r} (a '..' component)")
    return sub
