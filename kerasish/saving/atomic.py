"""Atomic file replacement: write a temporary file beside the target, flush and fsync
it, then `os.replace` it over the target, so a crash at any moment leaves either the
old file or the new one, never a half-written checkpoint."""

import contextlib
import os
import secrets
import stat

import h5py

from kerasish.utils import stale_temps

_TMP_MARKER = ".kerasish-tmp-"


def temp_path_for(filepath):
    """A fresh temporary name in the target's directory (same filesystem, so
    `os.replace` is atomic). Hidden, and tagged with the pid for post-mortems."""
    directory, base = os.path.split(os.path.abspath(filepath))
    return os.path.join(directory, f".{base}{_TMP_MARKER}{os.getpid()}-{secrets.token_hex(4)}")


def fsync_path(path):
    """fsync a file (or a directory, to persist a rename) by path."""
    flags = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) if os.path.isdir(path) else os.O_RDWR
    try:
        fd = os.open(path, flags)
    except OSError:
        if os.path.isdir(path):  # some filesystems refuse to open directories
            return
        raise
    try:
        os.fsync(fd)
    except OSError:
        if not os.path.isdir(path):  # directory fsync is best-effort (e.g. on Windows)
            raise
    finally:
        os.close(fd)


def _check_target(filepath, overwrite):
    # Through a symlink, replace the file it points to (as a plain open would).
    filepath = os.path.realpath(os.fspath(filepath))
    if os.path.isdir(filepath):
        raise IsADirectoryError(f"Cannot save to {filepath}: it is a directory")
    if not overwrite and os.path.exists(filepath):
        raise FileExistsError(
            f"Cannot save to {filepath}: the file exists and overwrite=False")
    directory = os.path.dirname(os.path.abspath(filepath))
    parent = directory
    while not os.path.exists(parent) and os.path.dirname(parent) != parent:
        parent = os.path.dirname(parent)
    if not os.path.isdir(parent):
        raise NotADirectoryError(f"Cannot save to {filepath}: {parent} is a file, not a "
                                 "directory")
    try:
        os.makedirs(directory, exist_ok=True)
    except OSError as e:
        raise type(e)(e.errno, f"Cannot save to {filepath}: cannot create its directory "
                               f"{directory} ({e.strerror})") from e
    return filepath


def remove_stale_temps(filepath):
    """Remove the temporary files that killed saves to `filepath` left behind: those
    named `.<base>.kerasish-tmp-<pid>-<hex>` whose writer process is gone. A live
    writer's file (or one we cannot tell about) is never touched. Returns the paths
    removed."""
    directory, base = os.path.split(os.path.abspath(filepath))
    prefix = f".{base}{_TMP_MARKER}"
    removed = []
    try:
        names = os.listdir(directory)
    except OSError:
        return removed
    for name in names:
        if not name.startswith(prefix):
            continue
        pid, sep, tag = name[len(prefix):].partition("-")
        if not (sep and pid.isdigit() and tag and all(c in "0123456789abcdef" for c in tag)):
            continue
        if stale_temps.pid_alive(int(pid)):
            continue
        path = os.path.join(directory, name)
        try:
            if os.path.isfile(path) and not os.path.islink(path):
                os.unlink(path)
                removed.append(path)
        except OSError:  # gone already, or not ours to remove
            pass
    return removed


@contextlib.contextmanager
def atomic_path(filepath, overwrite=True):
    """Yield a temporary path to write; on success it atomically replaces `filepath`.

    The caller writes and closes the temporary file inside the block. On an error the
    temporary file is removed and the target is left untouched. Temporary files of
    earlier saves to the same path whose writer was killed are removed first.
    """
    filepath = _check_target(filepath, overwrite)
    remove_stale_temps(filepath)
    tmp = temp_path_for(filepath)
    # Created here (O_EXCL, mode 0o666 & ~umask) so a new file gets the usual
    # permissions rather than mkstemp's 0o600.
    os.close(os.open(tmp, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o666))
    try:
        if os.path.exists(filepath):  # keep the permissions of the file we replace
            os.chmod(tmp, stat.S_IMODE(os.stat(filepath).st_mode))
        yield tmp
        fsync_path(tmp)
        os.replace(tmp, filepath)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    fsync_path(os.path.dirname(os.path.abspath(filepath)))


@contextlib.contextmanager
def atomic_h5(filepath, overwrite=True):
    """Yield a writable `h5py.File` whose contents replace `filepath` atomically."""
    with atomic_path(filepath, overwrite) as tmp:
        f = h5py.File(tmp, "w")
        try:
            yield f
            f.flush()
        finally:
            f.close()
